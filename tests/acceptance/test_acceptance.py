"""Every case of cases.txt: a command line, its exit code, and fragments its output must (or must not) hold.

The file is the list of what a user tried and what kvplan must answer; a case is a block of lines::

    # why (a comment, optional)
    kvplan check --device pixel8 --model 7b --ctx 4k --os-reserve 2
    exit: 2
    err: did you mean 2 GB?
    out: …            (a fragment of stdout)
    not: …            (a fragment that must appear in neither stream)

Fewer cases need more than the output:

    before: kvplan …  a command run first in the same folder (it must exit 0): a file the case reads or must
                      not overwrite
    env: NAME=VALUE   an environment variable for the case's command (a terminal width, FORCE_COLOR=1 for the
                      table a terminal gets); several are separated by spaces
    file: PATH        the file exists after the command; ``file: PATH :: FRAGMENT``: and holds FRAGMENT
                      (an SVG plot holds its labels as comments: ``<!-- 8k: 4.4 tok/s from RAM -->``)
    nofile: PATH      the file does not exist after the command
    exit: 0|1         either code (a figure of this machine decides, e.g. a probed device)

``{data}`` in a command, path or fragment is tests/data, ``{root}`` the repository, ``{tmp}`` a fresh temporary folder, which
is also the working folder. Commands run in-process with COLUMNS=200 and NO_COLOR=1 (no terminal: the plain tables
of a pipe).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path

import pytest

HERE = Path(__file__).parent
DATA = HERE.parent / "data"
ROOT = HERE.parents[1]
KEYS = ("exit", "out", "err", "not", "before", "env", "file", "nofile")


@dataclass
class Case:
    line: int
    argv: list[str]
    exit: frozenset[int] | None = None
    out: list[str] = field(default_factory=list)
    err: list[str] = field(default_factory=list)
    absent: list[str] = field(default_factory=list)
    before: list[list[str]] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    files: list[tuple[str, str | None]] = field(default_factory=list)
    no_files: list[str] = field(default_factory=list)


def _command(text: str, where: str) -> list[str]:
    if not text.startswith("kvplan "):
        raise ValueError(f"{where}: expected a kvplan command")
    return shlex.split(text)[1:]


def load_cases(path: Path = HERE / "cases.txt") -> list[Case]:
    cases: list[Case] = []
    current = None
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.strip()
        where = f"{path.name} line {number}"
        if not line or line.startswith("#"):
            current = None if not line else current
            continue
        if line.startswith("kvplan "):
            current = Case(number, _command(line, where))
            cases.append(current)
            continue
        key, _, value = line.partition(":")
        if current is None or key not in KEYS:
            raise ValueError(f"{where}: expected a kvplan command or {'/'.join(KEYS)}: …")
        value = value.strip()
        if key == "exit":
            current.exit = frozenset(int(code) for code in value.split("|"))
        elif key == "before":
            current.before.append(_command(value, where))
        elif key == "env":
            current.env.update(item.split("=", 1) for item in shlex.split(value))
        elif key == "file":
            name, _, fragment = value.partition(" :: ")
            current.files.append((name, fragment or None))
        elif key == "nofile":
            current.no_files.append(value)
        else:
            {"out": current.out, "err": current.err, "not": current.absent}[key].append(value)
    for case in cases:
        if case.exit is None:
            raise ValueError(f"{path.name} line {case.line}: the case gives no exit code")
    return cases


CASES = load_cases()


@pytest.mark.parametrize("text, problem", [
    ("kvplan check --ctx 4k\nout: fit\n", "cases.txt line 1: the case gives no exit code"),
    ("out: fit\n", "cases.txt line 1: expected a kvplan command or exit/"),
    ("kvplan check\nexit: 0\nstdout: fit\n", "cases.txt line 3: expected a kvplan command or exit/"),
])
def test_a_malformed_case_file_is_refused(tmp_path, text, problem):
    """The reader refuses a case it cannot run, so a typo in cases.txt fails the suite instead of testing less."""
    path = tmp_path / "cases.txt"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=problem):
        load_cases(path)


def test_every_case_runs_and_checks_something():
    """Each case of cases.txt asserts at least its exit code, and the file holds cases (a parse that lost them
    would pass vacuously)."""
    assert len(CASES) > 10 and all(c.exit for c in CASES)


@pytest.mark.parametrize("case", CASES, ids=[f"line{c.line}-{' '.join(c.argv[:1])}" for c in CASES])
def test_case(case: Case, tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from kvplan.cli.app import app

    def expand(text: str) -> str:
        return text.replace("{data}", str(DATA)).replace("{root}", str(ROOT)).replace("{tmp}", str(tmp_path))

    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.delenv("KVPLAN_PROFILES", raising=False)
    monkeypatch.chdir(tmp_path)
    for before in case.before:
        argv = [expand(a) for a in before]
        result = CliRunner().invoke(app, argv, catch_exceptions=False)
        assert result.exit_code == 0, f"before: $ kvplan {' '.join(argv)}\n{result.stdout}\n{result.stderr}"
    for name, value in case.env.items():
        monkeypatch.setenv(name, value)
    argv = [expand(a) for a in case.argv]
    result = CliRunner().invoke(app, argv, catch_exceptions=False)
    said = f"$ kvplan {' '.join(argv)}\n--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}"
    assert result.exit_code in case.exit, said
    for fragment in map(expand, case.out):
        assert fragment in result.stdout, said
    for fragment in map(expand, case.err):
        assert fragment in result.stderr, said
    for fragment in map(expand, case.absent):
        assert fragment not in result.stdout and fragment not in result.stderr, said
    for name, fragment in case.files:
        path = Path(expand(name))
        assert path.is_file(), f"{path} was not written\n{said}"
        if fragment is not None:
            assert fragment in path.read_text(encoding="utf-8", errors="replace"), f"{path} lacks {fragment!r}"
    for name in case.no_files:
        assert not Path(expand(name)).exists(), f"{expand(name)} was written\n{said}"
    if 2 in case.exit:
        assert "Traceback" not in result.stderr, said
