"""A neutral table (title, columns, rows of strings) and its Markdown, CSV and plain-text forms.

Rich rendering lives in :mod:`kvplan.cli.terminal` so that rich is imported only when a
table actually goes to a terminal.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Table:
    title: str
    columns: list[str]
    rows: list[list[str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    align: list[str] | None = None  # "left" | "right" per column; default: first left, rest right
    styles: list[str | None] = field(default_factory=list)  # optional per-row style for terminals
    key_columns: int = 1  # leading name columns a terminal never wraps or truncates

    def add(self, *cells: object, style: str | None = None) -> None:
        self.rows.append(["" if c is None else str(c) for c in cells])
        self.styles.append(style)

    def alignment(self) -> list[str]:
        return self.align or ["left"] + ["right"] * (len(self.columns) - 1)


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def to_markdown(tables: list[Table], heading_level: int = 3) -> str:
    out: list[str] = []
    for table in tables:
        if table.title:
            out.append(f"{'#' * heading_level} {table.title}\n")
        out.append("| " + " | ".join(_md_cell(c) for c in table.columns) + " |")
        out.append("|" + "|".join("---:" if a == "right" else ":---" for a in table.alignment()) + "|")
        for row in table.rows:
            out.append("| " + " | ".join(_md_cell(c) for c in row) + " |")
        out.append("")
        for note in table.notes:
            out.append(f"- {note}")
        if table.notes:
            out.append("")
    return "\n".join(out).rstrip() + "\n"


def to_plain(tables: list[Table]) -> str:
    """Aligned plain text for pipes and logs: no colours, no box drawing."""
    out: list[str] = []
    for table in tables:
        widths = [len(c) for c in table.columns]
        for row in table.rows:
            widths = [max(w, len(cell)) for w, cell in zip(widths, row)]
        align = table.alignment()

        def line(cells: list[str]) -> str:
            parts = [c.ljust(w) if a == "left" else c.rjust(w) for c, w, a in zip(cells, widths, align)]
            return "  ".join(parts).rstrip()

        if table.title:
            out.append(table.title)
        out.append(line(table.columns))
        out.append("  ".join("-" * w for w in widths))
        out.extend(line(row) for row in table.rows)
        out.extend(f"  {note}" for note in table.notes)
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def to_csv(columns: list[str], rows: list[list[object]]) -> str:
    import csv  # only CSV output needs it; `check` starts without it
    import io

    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows(rows)
    return buffer.getvalue()
