"""Every command has help text and a section in docs/cli.md naming each of its options."""

from __future__ import annotations

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


def test_there_are_commands():
    assert any(name == "check" for name, _ in COMMANDS)


@pytest.mark.parametrize("name, cmd", COMMANDS, ids=[n for n, _ in COMMANDS])
def test_command_is_documented(name, cmd):
    assert (cmd.help or "").strip(), f"kvplan {name} has no help text"
    assert f"kvplan {name}" in DOCS, f"docs/cli.md has no section for kvplan {name}"
    for param in cmd.params:
        if getattr(param, "hidden", False):
            continue
        if param.param_type_name == "option":
            assert (param.help or "").strip(), f"kvplan {name} {param.opts[0]} has no help text"
            assert any(f"`{opt}" in DOCS for opt in param.opts), f"docs/cli.md does not mention {param.opts[0]}"


@pytest.mark.parametrize("name, cmd", COMMANDS, ids=[n for n, _ in COMMANDS])
def test_help_runs(run, name, cmd):
    result = run(*name.split(), "--help")
    assert result.exit_code == 0
    assert "Usage" in result.stdout
