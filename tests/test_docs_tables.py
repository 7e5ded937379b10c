"""Markdown tables in the docs render: a table starts with a header and a separator row, and no paragraph or blank
line splits one (a row after a break would render as a stray paragraph of pipes)."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
DOCS = sorted([*(ROOT / "docs").glob("*.md"), ROOT / "README.md", ROOT / "CONTRIBUTING.md"])


def broken_rows(text: str) -> list[int]:
    """Line numbers of table rows that begin a table without a separator row under them."""
    lines = text.splitlines()
    bad, fenced = [], False
    for i, line in enumerate(lines):
        if line.startswith("```"):
            fenced = not fenced
        if fenced or not line.startswith("|"):
            continue
        starts_table = i == 0 or not lines[i - 1].startswith("|")
        next_line = lines[i + 1] if i + 1 < len(lines) else ""
        if starts_table and not next_line.replace(" ", "").startswith("|--") and not next_line.startswith("|:"):
            bad.append(i + 1)
    return bad


def test_the_check_finds_a_split_table():
    assert broken_rows("| a | b |\n|---|---|\n| 1 | 2 |\n\ntext\n| 3 | 4 |\n") == [6]


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_tables_render(path):
    assert broken_rows(path.read_text(encoding="utf-8")) == [], f"{path.name}: a table row outside a table"
