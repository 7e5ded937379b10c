"""All terminal output: tables (Rich on a terminal, plain text in a pipe), JSON, notes and errors.

rich is imported only here and only when a table is printed to a terminal.
"""

from __future__ import annotations

import json
import os
import sys
from enum import IntEnum

from kvplan.files.env import env_flag

from kvplan.render.tables import Table, to_markdown, to_plain


class ExitCode(IntEnum):
    OK = 0  # fits / gate passed
    FAILED = 1  # does not fit / gate failed / threshold missed
    BAD_INPUT = 2  # bad input or usage
    INTERNAL = 3  # a bug in kvplan


# What kvplan prints beyond ASCII, spelled in ASCII for a console that cannot show it (a Windows cp1252 console,
# PYTHONIOENCODING=ascii): readable text instead of an encoding error.
_ASCII = {"—": "-", "–": "-", "−": "-", "×": "x", "≥": ">=", "≤": "<=", "→": "->", "←": "<-", "…": "...", "·": "*",
          "≈": "~", "µ": "u", "μ": "u", "²": "^2", "⁶": "^6", "⁹": "^9", "Σ": "sum", "ℓ": "l", "≠": "!=", "±": "+-",
          "‘": "'", "’": "'", "“": '"', "”": '"', "✅": "[ok]", "❌": "[x]", "◀": "<", "■": "#", "▲": "^", "▼": "v"}


def _ascii_fallback(error: UnicodeError):
    text = error.object[error.start:error.end]
    return "".join(_ASCII.get(ch, "?") for ch in text), error.end


def prepare_streams() -> None:
    """Make stdout and stderr survive a console that cannot encode kvplan's symbols (—, ×, ≥): they are spelled in
    ASCII there, never an encoding error (exit 3) after the work is done."""
    import codecs

    try:
        codecs.lookup_error("kvplan-ascii")
    except LookupError:
        codecs.register_error("kvplan-ascii", _ascii_fallback)
    for stream in (sys.stdout, sys.stderr):
        encoding = getattr(stream, "encoding", None) or "ascii"
        try:
            "—×≥→−…".encode(encoding)
        except (UnicodeEncodeError, LookupError):
            reconfigure = getattr(stream, "reconfigure", None)
            if reconfigure is not None:
                reconfigure(errors="kvplan-ascii")


def debug_enabled() -> bool:
    return env_flag("KVPLAN_DEBUG")


def display_error(message: str) -> None:
    """One line per problem on stderr, each prefixed so it stands out in CI logs."""
    for line in str(message).splitlines() or [""]:
        sys.stderr.write(f"kvplan: error: {line}\n")


def display_note(message: str) -> None:
    sys.stderr.write(f"kvplan: note: {message}\n")


def display_written(message: str) -> None:
    """A ``wrote …`` note, said once the command's files are in place (kvplan.files.outfiles.OutputBatch), not
    before: a command that fails later writes none of them and says nothing of them."""
    from kvplan.files.outfiles import STDOUT, current_batch

    if message.endswith(f" {STDOUT}") or f" {STDOUT} " in message:  # -o -: the output itself is the news
        return
    batch = current_batch()
    if batch is None:
        display_note(message)
    else:
        batch.after_commit(lambda: display_note(message))


def display_warning(message: str) -> None:
    """Something the user should know before trusting the output (the command still succeeds)."""
    sys.stderr.write(f"kvplan: warning: {message}\n")


def _stdout_taken() -> bool:
    """An output file of this command is standard output (``-o -``): its bytes are all stdout carries."""
    from kvplan.files.outfiles import stdout_claimed

    return stdout_claimed()


def display_json(document: object) -> None:
    if _stdout_taken():
        return
    with _reader_may_leave():
        sys.stdout.write(json.dumps(document, indent=2, allow_nan=False) + "\n")
        sys.stdout.flush()  # a full disk is reported now, not at interpreter exit


def display_text(text: str) -> None:
    if _stdout_taken():
        return
    with _reader_may_leave():
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        sys.stdout.flush()


def silence_broken_pipe() -> None:
    """After the reader went away (``kvplan … | head``), send the rest to /dev/null quietly."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


class _reader_may_leave:
    """Around a write to stdout: a reader that went away (``kvplan check … | true``) silences the rest of the
    output, and the command goes on — its plots are written and its exit code is still the verdict's."""

    def __enter__(self):
        return self

    def __exit__(self, kind, error, _trace) -> bool:
        if isinstance(error, BrokenPipeError):
            silence_broken_pipe()
            return True
        return False


def display_tables(tables: list[Table], fmt: str = "table") -> None:
    if _stdout_taken():
        return
    if fmt == "markdown":
        display_text(to_markdown(tables))
    elif _use_rich():
        with _reader_may_leave():
            _print_rich(tables)
    else:
        display_text(to_plain(tables))


def text_width() -> int:
    """Columns to wrap long text to: the terminal's width, else ``$COLUMNS``, else 100 (a pipe or a log).

    Tables are never wrapped in a pipe (a line per row stays greppable); only free text that
    would otherwise run to hundreds of characters (a profile's sources) is wrapped to this width.
    """
    if sys.stdout.isatty():
        import shutil

        return max(shutil.get_terminal_size((100, 24)).columns, 40)
    try:
        return max(int(os.environ.get("COLUMNS", "")), 40)
    except ValueError:
        return 100


def _use_rich() -> bool:
    if env_flag("KVPLAN_PLAIN"):
        return False
    return sys.stdout.isatty() or bool(os.environ.get("FORCE_COLOR"))


_GAP = 2  # spaces between columns, as in the plain-text tables


def _column_widths(table: Table) -> tuple[list[int], list[int]]:
    """(narrowest, natural) width of each column.

    Numbers (right-aligned) are never broken: their narrowest width is their longest cell. Text
    (names, labels) and headings may wrap between words, never inside one (names have no spaces).
    """
    narrowest, natural = [], []
    for i, (heading, align) in enumerate(zip(table.columns, table.alignment())):
        cells = [row[i] for row in table.rows if i < len(row)]
        words = [len(word) for word in heading.split()] or [0]
        if align == "right":
            words += [len(cell) for cell in cells]
        else:
            words += [len(word) for cell in cells for word in cell.split()]
        narrowest.append(max(words))
        natural.append(max([len(heading)] + [len(cell) for cell in cells]))
    return narrowest, natural


def _blocks(table: Table, narrowest: list[int], width: int) -> list[list[int]]:
    """Column indices per printed block: all columns when they fit the terminal at their narrowest,
    else the key columns repeated with as many of the others as fit (like pandas' wide frames)."""
    keys = list(range(min(table.key_columns, len(table.columns))))
    others = list(range(len(keys), len(table.columns)))

    def span(columns: list[int]) -> int:
        return sum(narrowest[i] for i in columns) + _GAP * max(len(columns) - 1, 0)

    if span(keys + others) <= width or not others:
        return [keys + others]
    blocks, current = [], []
    for i in others:
        if current and span(keys + current + [i]) > width:
            blocks.append(keys + current)
            current = []
        current.append(i)
    blocks.append(keys + current)
    return blocks


def _fit_widths(columns: list[int], narrowest: list[int], natural: list[int], table: Table,
                width: int) -> list[int]:
    """Widths for ``columns``: the narrowest, grown toward the natural width while space is left
    (wrapped text first, then headings, left to right)."""
    widths = {i: narrowest[i] for i in columns}
    spare = width - sum(widths.values()) - _GAP * (len(columns) - 1)
    align = table.alignment()
    for i in sorted(columns, key=lambda i: align[i] == "right"):
        grow = max(min(spare, natural[i] - widths[i]), 0)
        widths[i] += grow
        spare -= grow
    return [widths[i] for i in columns]


def _print_rich(tables: list[Table], console=None) -> None:
    """Tables on a terminal: a compact box; names and numbers are never truncated or broken.

    Every cell, title and caption is plain text (``rich.text.Text``), never Rich markup: a
    configuration named ``a[/]b`` prints as ``a[/]b``. A table too wide for the terminal is
    printed in blocks of columns, each repeating the leading name column(s). Notes follow the
    table unwrapped, so that a command in a note copies as one line.
    """
    from rich import box
    from rich.console import Console
    from rich.table import Table as RichTable
    from rich.text import Text

    console = console or Console()
    for n, table in enumerate(tables):
        if n:
            console.print()
        narrowest, natural = _column_widths(table)
        blocks = _blocks(table, narrowest, console.width)
        for b, columns in enumerate(blocks):
            widths = _fit_widths(columns, narrowest, natural, table, console.width)
            # a later block says it continues the table above: the columns are split, never dropped
            title = table.title if b == 0 else (f"{table.title} (continued)" if table.title else "(continued)")
            rich_table = RichTable(title=Text(title, style="bold") if title else None, box=box.SIMPLE_HEAD,
                                   show_edge=False, pad_edge=False, padding=(0, _GAP - 1, 0, 0),
                                   title_justify="left")
            align = table.alignment()
            for i, w in zip(columns, widths):
                # Cells fit their width (see _column_widths); headings may wrap between words.
                rich_table.add_column(Text(table.columns[i]), justify=align[i], width=w, overflow="fold")
            for row, style in zip(table.rows, table.styles or [None] * len(table.rows)):
                rich_table.add_row(*(Text(row[i]) if i < len(row) else Text("") for i in columns), style=style)
            console.print(rich_table, crop=False)
            if b < len(blocks) - 1:
                console.print()
        for note in table.notes:  # unwrapped (the terminal folds them), so a command copies whole
            console.print(Text(f"  {note}"), soft_wrap=True)


def display_bytes(chunks) -> None:
    """Write already-encoded output (a big CSV) to stdout chunk by chunk, without decoding it."""
    if _stdout_taken():
        return
    with _reader_may_leave():
        sys.stdout.flush()
    buffer = getattr(sys.stdout, "buffer", None)
    for chunk in chunks:
        with _reader_may_leave():  # once the reader is gone the rest goes to /dev/null, as written
            if buffer is not None:
                buffer.write(chunk)
            else:
                sys.stdout.write(chunk.decode("utf-8"))
    if buffer is not None:
        with _reader_may_leave():
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
    if worth_showing and sys.stderr.isatty() and not env_flag("KVPLAN_PLAIN"):
        return _RichProgress(total, description)
    return _NoProgress()


def write_or_display_text(text: str, output: str | None) -> None:
    """``text`` written whole to ``output`` (with a note saying so), else printed to stdout."""
    from kvplan.files.outfiles import write_text_atomic

    if output:
        write_text_atomic(output, text)
        display_written(f"wrote {output}")
    else:
        display_text(text)
