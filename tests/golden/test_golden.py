"""The recorded command outputs stay byte-identical (see record.py for how to re-record on purpose)."""

import json

import pytest

from record import EXPECTED, case_name, commands, run


@pytest.mark.parametrize("command", commands())
def test_output_unchanged(command, tmp_path):
    want = json.loads((EXPECTED / f"{case_name(command)}.json").read_text(encoding="utf-8"))
    assert run(command, str(tmp_path)) == want


def test_plot_numbers_unchanged():
    """Every point of the memory, decode and attention curves and the fit map, as curves.py recorded them."""
    import curves

    want = json.loads(curves.EXPECTED.read_text(encoding="utf-8"))
    got = json.loads(json.dumps(curves.record()))
    assert sorted(got) == sorted(want)
    for key in want:
        assert got[key] == want[key], key
