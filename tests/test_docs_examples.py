"""The command examples in README.md and docs/ print what kvplan prints today.

An example is a fenced block whose first line is ``$ kvplan …`` followed by output lines. Each output line
of the block must appear in the command's real output, in order, with runs of spaces treated as one (tables
pad differently as content changes); a line ``…`` stands for lines left out. Blocks holding several
commands, commands that write files (``-o``, ``--plot``, ``--junit``, ``--markdown``) and commands naming a file
the repository does not have (an illustration of the reader's own file) are not run here.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
WRITES = ("-o", "--output", "--plot", "--plot-dir", "--junit", "--markdown")


def examples() -> list[tuple[str, int, str, list[str]]]:
    """(file name, line, command, expected output lines) of every runnable example."""
    found = []
    for path in DOCS:
        lines = path.read_text(encoding="utf-8").splitlines()
        i = 0
        while i < len(lines):
            if lines[i].startswith("```") and i + 1 < len(lines) and lines[i + 1].startswith("$ kvplan "):
                end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
                body = lines[i + 1:end]
                command, output = body[0][2:], body[1:]
                args = shlex.split(command, comments=True)
                runnable = (output and not any(line.startswith("$ ") for line in output)
                            and not any(arg in WRITES for arg in args)
                            and all((ROOT / arg).exists() for arg in args if arg.endswith((".yaml", ".json"))))
                if runnable:
                    found.append((path.name, i + 2, command, output))
                i = end
            i += 1
    return found


def _squeeze(line: str) -> str:
    return re.sub(r"\s+", " ", line).strip()


def missing_lines(expected: list[str], actual: str) -> list[str]:
    """Expected lines not found in ``actual`` in order (``…`` skips any number of lines)."""
    got = [_squeeze(line) for line in actual.splitlines()]
    missing, at = [], 0
    for line in expected:
        want = _squeeze(line)
        if not want or want == "…":
            continue
        try:
            at = got.index(want, at) + 1
        except ValueError:
            missing.append(line)
    return missing


def test_the_check_sees_a_stale_line():
    assert missing_lines(["a  1", "…", "c 3"], "a 1\nb 2\nc 3\n") == []
    assert missing_lines(["a 1", "c 4"], "a 1\nb 2\nc 3\n") == ["c 4"]


EXAMPLES = examples()


@pytest.mark.parametrize("name, line, command, output", EXAMPLES, ids=[f"{e[0]}:{e[1]}" for e in EXAMPLES])
def test_example_output_is_current(name, line, command, output, monkeypatch):
    from typer.testing import CliRunner

    from kvplan.cli.app import app

    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.delenv("KVPLAN_PROFILES", raising=False)
    monkeypatch.chdir(ROOT)
    result = CliRunner().invoke(app, shlex.split(command, comments=True)[1:], catch_exceptions=False)
    stale = missing_lines(output, result.stdout + result.stderr)
    assert not stale, f"{name}:{line} `{command}` no longer prints:\n" + "\n".join(stale)
