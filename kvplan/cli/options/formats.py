"""The output formats: ONE enum for every command's ``--format``, and ONE chooser for ``--format`` with ``-o FILE``.

A command offers the formats that make sense for it (:func:`format_option`: ``check`` has no CSV, ``calibrate`` and
``profiles validate`` print lines or JSON), always spelled and ordered as :class:`OutputFormat` says, so
``--format json`` means the same everywhere.
"""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Literal

import typer


class OutputFormat(str, Enum):
    table = "table"
    csv = "csv"
    json = "json"
    markdown = "markdown"


# -o FILE's extension → the format it names (.txt or none: a table)
_EXTENSIONS = {".csv": OutputFormat.csv, ".json": OutputFormat.json, ".md": OutputFormat.markdown,
               ".markdown": OutputFormat.markdown}

TABLE_JSON = (OutputFormat.table, OutputFormat.json)
TABLE_JSON_MARKDOWN = (OutputFormat.table, OutputFormat.json, OutputFormat.markdown)
EVERY = tuple(OutputFormat)


def _as_format(value):
    return None if value is None else OutputFormat(value)


def format_option(accepted: tuple[OutputFormat, ...], help: str = "Output format.", optional: bool = False):
    """The ``--format`` / ``-f`` option offering ``accepted`` (in :class:`OutputFormat`'s order); the command
    receives an :class:`OutputFormat` (or None when ``optional`` and not given)."""
    choices = Literal[tuple(f.value for f in OutputFormat if f in accepted)]  # e.g. <table|json|markdown>
    return Annotated[choices | None if optional else choices,
                     typer.Option("--format", "-f", help=help, callback=_as_format, case_sensitive=False)]


# check, gate, profiles list/show: a table, JSON or Markdown
FormatOpt = format_option(TABLE_JSON_MARKDOWN)
# sweep, compare, fit (which also write CSV): the format -o FILE's extension names unless one is given
FormatByOutputOpt = format_option(EVERY, help="Output format (default: from the -o extension, else table).",
                                  optional=True)


def choose_format(chosen: OutputFormat | None, output: str | None,
                  accepted: tuple[OutputFormat, ...] = EVERY) -> OutputFormat:
    """The format asked for, else the one the output file's extension names (.csv, .json, .md; .txt or none: a
    table); any other extension without ``--format`` is a usage error, raised before anything is evaluated."""
    if chosen is not None:
        return chosen
    if output:
        from pathlib import Path

        suffix = Path(output).suffix.lower()
        known = {s: f for s, f in _EXTENSIONS.items() if f in accepted}
        if suffix and suffix not in known and suffix != ".txt":  # out.xlsx: never a text table
            from kvplan.errors import UsageError

            said = [s for s in (".csv", ".json", ".md") if s in known] + [".txt"]
            raise UsageError(f"--output {output}: unknown extension {suffix!r}; use {', '.join(said[:-1])} or "
                             f"{said[-1]}, or give --format")
        return known.get(suffix, OutputFormat.table)
    return OutputFormat.table
