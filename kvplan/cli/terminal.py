"""All terminal output: tables (Rich on a terminal, plain text in a pipe), JSON, notes and errors.

rich is imported only here and only when a table is printed to a terminal.
"""

from __future__ import annotations

import json
import os
import sys
from enum import IntEnum

from kvplan.render.tables import Table, to_markdown, to_plain


class ExitCode(IntEnum):
    OK = 0  # fits / gate passed
    FAILED = 1  # does not fit / gate failed / threshold missed
    BAD_INPUT = 2  # bad input or usage
    INTERNAL = 3  # a bug in kvplan


def debug_enabled() -> bool:
    return os.environ.get("KVPLAN_DEBUG", "") not in ("", "0", "false", "no")


def display_error(message: str) -> None:
    """One line per problem on stderr, each prefixed so it stands out in CI logs."""
    for line in str(message).splitlines() or [""]:
        sys.stderr.write(f"kvplan: error: {line}\n")


def display_note(message: str) -> None:
    sys.stderr.write(f"kvplan: note: {message}\n")


def display_json(document: object) -> None:
    sys.stdout.write(json.dumps(document, indent=2, allow_nan=False) + "\n")


def display_text(text: str) -> None:
    sys.stdout.write(text if text.endswith("\n") else text + "\n")


def display_tables(tables: list[Table], fmt: str = "table") -> None:
    if fmt == "markdown":
        display_text(to_markdown(tables))
    elif _use_rich():
        _print_rich(tables)
    else:
        display_text(to_plain(tables))


def _use_rich() -> bool:
    if os.environ.get("KVPLAN_PLAIN"):
        return False
    return sys.stdout.isatty() or bool(os.environ.get("FORCE_COLOR"))


def _print_rich(tables: list[Table]) -> None:
    from rich import box
    from rich.console import Console
    from rich.table import Table as RichTable

    console = Console()
    for table in tables:
        rich_table = RichTable(title=table.title, box=box.ROUNDED, title_justify="left",
                               title_style="bold", caption="\n".join(table.notes) or None,
                               caption_justify="left")
        for column, align in zip(table.columns, table.alignment()):
            rich_table.add_column(column, justify=align)
        for row, style in zip(table.rows, table.styles or [None] * len(table.rows)):
            rich_table.add_row(*row, style=style)
        console.print(rich_table)


def display_bytes(chunks) -> None:
    """Write already-encoded output (a big CSV) to stdout chunk by chunk, without decoding it."""
    sys.stdout.flush()
    buffer = getattr(sys.stdout, "buffer", None)
    for chunk in chunks:
        if buffer is not None:
            buffer.write(chunk)
        else:
            sys.stdout.write(chunk.decode("utf-8"))
    if buffer is not None:
        buffer.flush()


class _NoProgress:
    def advance(self, amount: int = 1) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        pass


class _RichProgress:
    def __init__(self, total: int, description: str):
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeRemainingColumn

        self._progress = Progress(TextColumn("{task.description}"), BarColumn(), TaskProgressColumn(),
                                  TimeRemainingColumn(), console=Console(stderr=True), transient=True)
        self._task = self._progress.add_task(description, total=total)

    def advance(self, amount: int = 1) -> None:
        self._progress.advance(self._task, amount)

    def __enter__(self):
        self._progress.start()
        return self

    def __exit__(self, *exc) -> None:
        self._progress.stop()


def progress(total: int, description: str, worth_showing: bool = True):
    """A progress bar on stderr (rich, transient) when stderr is a terminal and the work is long; else a no-op.

    Use as ``with progress(n, "evaluating") as bar: … bar.advance(k)``.
    """
    if worth_showing and sys.stderr.isatty() and not os.environ.get("KVPLAN_PLAIN"):
        return _RichProgress(total, description)
    return _NoProgress()
