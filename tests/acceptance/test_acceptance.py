"""Every case of cases.txt: a command line, its exit code, and fragments its output must (or must not) hold.

The file is the list of what a user tried and what kvplan must answer; a case is a block of lines::

    # why (a comment, optional)
    kvplan check --device pixel8 --model 7b --ctx 4k --os-reserve 2
    exit: 2
    err: did you mean 2 GB?
    out: …            (a fragment of stdout)
    not: …            (a fragment that must appear in neither stream)

``{data}`` in a command is tests/data, ``{tmp}`` a fresh temporary folder. Commands run in-process.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path

import pytest

HERE = Path(__file__).parent
DATA = HERE.parent / "data"


@dataclass
class Case:
    line: int
    argv: list[str]
    exit: int | None = None
    out: list[str] = field(default_factory=list)
    err: list[str] = field(default_factory=list)
    absent: list[str] = field(default_factory=list)


def load_cases(path: Path = HERE / "cases.txt") -> list[Case]:
    cases: list[Case] = []
    current = None
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            current = None if not line else current
            continue
        if line.startswith("kvplan "):
            current = Case(number, shlex.split(line)[1:])
            cases.append(current)
            continue
        key, _, value = line.partition(":")
        if current is None or key not in ("exit", "out", "err", "not"):
            raise ValueError(f"cases.txt line {number}: expected a kvplan command or exit/out/err/not: …")
        value = value.strip()
        if key == "exit":
            current.exit = int(value)
        else:
            {"out": current.out, "err": current.err, "not": current.absent}[key].append(value)
    for case in cases:
        if case.exit is None:
            raise ValueError(f"cases.txt line {case.line}: the case gives no exit code")
    return cases


CASES = load_cases()


@pytest.mark.parametrize("case", CASES, ids=[f"line{c.line}-{' '.join(c.argv[:1])}" for c in CASES])
def test_case(case: Case, tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from kvplan.cli.app import app

    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.delenv("KVPLAN_PROFILES", raising=False)
    monkeypatch.chdir(tmp_path)
    argv = [a.replace("{data}", str(DATA)).replace("{tmp}", str(tmp_path)) for a in case.argv]
    result = CliRunner().invoke(app, argv, catch_exceptions=False)
    said = f"$ kvplan {' '.join(argv)}\n--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}"
    assert result.exit_code == case.exit, said
    for fragment in case.out:
        assert fragment in result.stdout, said
    for fragment in case.err:
        assert fragment in result.stderr, said
    for fragment in case.absent:
        assert fragment not in result.stdout and fragment not in result.stderr, said
    if case.exit == 2:
        assert "Traceback" not in result.stderr, said
