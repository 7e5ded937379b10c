"""Every command has help text and a section in docs/cli.md naming each of its options in that section."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import typer.main

from kvplan.cli.app import app

DOCS = (Path(__file__).parents[2] / "docs" / "cli.md").read_text()


def _commands():
    group = typer.main.get_command(app)
    out = []

    def walk(cmd, path):
        subcommands = getattr(cmd, "commands", None)
        if subcommands:
            for name, sub in subcommands.items():
                walk(sub, path + [name])
        else:
            out.append((" ".join(path), cmd))

    walk(group, [])
    return out


COMMANDS = _commands()


def _sections(text: str) -> dict[str, str]:
    """{heading text: its section}: from the heading to the next heading of the same or a higher level
    (``## kvplan profiles`` holds its ``### kvplan profiles list`` …); lines in code fences are not headings."""
    lines = text.splitlines()
    headings, fenced = [], False
    for i, line in enumerate(lines):
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (m := re.match(r"(#+) (.+)", line)):
            headings.append((i, len(m.group(1)), m.group(2).strip()))
    out = {}
    for k, (i, level, title) in enumerate(headings):
        end = next((j for j, lv, _ in headings[k + 1:] if lv <= level), len(lines))
        out[title] = "\n".join(lines[i + 1:end])
    return out


SECTIONS = _sections(DOCS)


def _section(name: str) -> str | None:
    """The command's own section, or its group's (``kvplan plot memory`` → ``## kvplan plot``)."""
    words = name.split()
    while words:
        if (section := SECTIONS.get("kvplan " + " ".join(words))) is not None:
            return section
        words.pop()
    return None


def _mentions(section: str, opt: str) -> bool:
    """``opt`` inside an inline code span, as a whole option (``--kv-bits`` is not a mention of ``--kv``)."""
    spans = re.findall(r"`([^`\n]+)`", section)
    return any(re.search(r"(?<![\w-])" + re.escape(opt) + r"(?![\w-])", span) for span in spans)


def test_there_are_commands():
    assert any(name == "check" for name, _ in COMMANDS)


@pytest.mark.parametrize("name, cmd", COMMANDS, ids=[n for n, _ in COMMANDS])
def test_command_is_documented(name, cmd):
    assert (cmd.help or "").strip(), f"kvplan {name} has no help text"
    section = _section(name)
    assert section is not None, f"docs/cli.md has no section (heading) for kvplan {name}"
    assert f"kvplan {name}" in DOCS, f"docs/cli.md never shows kvplan {name}"
    missing = []
    for param in cmd.params:
        if getattr(param, "hidden", False):
            continue
        if param.param_type_name == "option":
            assert (param.help or "").strip(), f"kvplan {name} {param.opts[0]} has no help text"
            if not any(_mentions(section, opt) for opt in param.opts):
                missing.append(param.opts[0])
    assert not missing, f"the docs/cli.md section of kvplan {name} does not mention {', '.join(missing)}"


def test_sections_are_found():
    # the parser itself: a command with its own heading, a sub-command sharing its group's, a code-fence comment
    assert "--device" in _section("check") and _section("plot memory") == SECTIONS["kvplan plot"]
    assert not any(title.startswith("yaml-language-server") for title in SECTIONS)
    assert _mentions("| `--kv-bits` |", "--kv-bits") and not _mentions("| `--kv-bits` |", "--kv")
    assert _mentions("`--os-reserve`, `--margin`", "--margin")


@pytest.mark.parametrize("name, cmd", COMMANDS, ids=[n for n, _ in COMMANDS])
def test_help_runs(run, name, cmd):
    result = run(*name.split(), "--help")
    assert result.exit_code == 0
    assert "Usage" in result.stdout
