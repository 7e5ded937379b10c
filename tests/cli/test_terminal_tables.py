"""Tables on a terminal (rich): user text is never markup, names are never truncated."""

from __future__ import annotations

import io
import re

from kvplan.render.tables import Table


def _render(tables, width):
    from rich.console import Console

    from kvplan.cli.terminal import _print_rich

    buffer = io.StringIO()
    _print_rich(tables, Console(file=buffer, width=width, color_system=None, force_terminal=False))
    return buffer.getvalue()


def test_markup_in_cells_title_and_notes_prints_literally():
    t = Table("gate [bold]x[/]", ["configuration", "result"])
    t.add("a[/]b", "[red]PASS", style="red")
    t.notes.append("note [/]")
    text = _render([t], 80)
    assert "gate [bold]x[/]" in text and "a[/]b" in text and "[red]PASS" in text and "note [/]" in text


def test_gate_with_markup_in_names_on_a_terminal(run, tmp_path, monkeypatch):
    from tests.conftest import REF_7B, REF_PHONE

    config = tmp_path / "g.yaml"
    config.write_text(f'title: "t [bold]x[/]"\nconfigurations:\n  - name: "a[/]b"\n    device: {REF_PHONE}\n'
                      f"    model: {REF_7B}\n    ctx: 1k\n")
    monkeypatch.setenv("FORCE_COLOR", "1")  # the rich path, as on a terminal
    result = run("gate", config)
    assert result.exit_code == 0, result.stderr
    assert "a[/]b" in result.stdout and "internal error" not in result.stderr


def _wide_table():
    t = Table("wide", ["configuration", "device", "model", "ctx", "total", "headroom", "decode tok/s", "max ctx"],
              align=["left", "left", "left", "right", "right", "right", "right", "right"])
    t.add("autocomplete-iphone-15-pro", "iphone-15-pro", "qwen3-0.6b", "1,024", "360.42 MB", "-5.64 GB", "107",
          "1,339,971")
    t.notes.append("1. kvplan check --device iphone-15-pro --model qwen3-0.6b --ctx 1024 --sliding-window 4096")
    return t


def test_narrow_terminal_splits_columns_into_blocks_keeping_names_and_numbers_whole():
    text = _render([_wide_table()], 60)
    for whole in ("autocomplete-iphone-15-pro", "iphone-15-pro", "qwen3-0.6b", "360.42 MB", "-5.64 GB", "1,339,971"):
        assert whole in text
    assert "…" not in text
    # the name column is repeated in each block: 26 + 2 + 13 + 2 + 10 = 53 of 60 columns leave no room for ctx
    # and the totals next to device and model, so the numbers come in further blocks
    assert len(re.findall(r"^autocomplete-iphone-15-pro", text, re.M)) >= 2
    # every table line fits the terminal; the note (a command) is one line, left for the terminal to fold
    lines = text.splitlines()
    assert all(len(line.rstrip()) <= 60 for line in lines if "kvplan check" not in line)
    assert any(line.strip().startswith("1. kvplan check") and line.rstrip().endswith("4096") for line in lines)


def test_wide_terminal_prints_one_block():
    text = _render([_wide_table()], 120)
    assert len(re.findall(r"^autocomplete-iphone-15-pro", text, re.M)) == 1
