"""The recorded command outputs stay byte-identical (see record.py for how to re-record on purpose)."""

import json

import pytest

from record import EXPECTED, case_name, commands, run


@pytest.mark.parametrize("command", commands())
def test_output_unchanged(command, tmp_path):
    want = json.loads((EXPECTED / f"{case_name(command)}.json").read_text(encoding="utf-8"))
    assert run(command, str(tmp_path)) == want
