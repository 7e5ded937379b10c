"""Options shared by the planning commands (sweep, compare, fit): repeatable devices and models,
value lists, output files, and turning the single-valued knobs into :class:`~kvplan.plan.knobs.Knobs`."""

from __future__ import annotations

from enum import Enum
from typing import Annotated

import typer

from kvplan.cli import options as o


class TabularFormat(str, Enum):
    table = "table"
    csv = "csv"
    json = "json"
    markdown = "markdown"


def split_refs(values: list[str] | None, option: str) -> list[str] | None:
    """``-d pixel8,oneplus-12 -d iphone-15-pro`` → the three names: each value split on commas, stripped,
    empties dropped. A value that is an existing file is kept whole, so a profile path with a comma in its
    name works given alone in its own option."""
    if values is None:
        return None
    import os

    refs = [part.strip() for value in values
            for part in ([value] if "," in value and os.path.isfile(value) else value.split(",")) if part.strip()]
    if values and not refs:
        from kvplan.errors import UsageError

        raise UsageError(f"{option}: no name in {', '.join(repr(v) for v in values)}")
    return refs


def split_devices(values: list[str] | None) -> list[str] | None:
    return split_refs(values, "--device")


def split_models(values: list[str] | None) -> list[str] | None:
    return split_refs(values, "--model")


DevicesOpt = Annotated[list[str] | None, typer.Option(
    "--device", "-d", callback=split_devices, help="Device: built-in name, alias, YAML path, or 'this' "
    "(probe this machine) (repeatable, or "
    "comma-separated: -d pixel8,oneplus-12).")]
ModelsOpt = Annotated[list[str] | None, typer.Option(
    "--model", "-m", callback=split_models, help="Model: built-in name, alias, YAML path, or Hub id "
    "hf:ORG/NAME[@REV][:QUANT] (repeatable, or "
    "comma-separated: -m 7b,llama-3.1-8b).")]
TabularFormatOpt = Annotated[TabularFormat | None, typer.Option("--format", "-f", help="Output format (default: "
                                                                "from the -o extension, else table).")]
OutputOpt = Annotated[str | None, typer.Option("--output", "-o", help="Write the output to this file (whole, "
                                               "atomically) instead of stdout.")]

_EXTENSION_FORMATS = {".csv": TabularFormat.csv, ".json": TabularFormat.json, ".md": TabularFormat.markdown,
                      ".markdown": TabularFormat.markdown}


def output_format(chosen: TabularFormat | None, output: str | None) -> TabularFormat:
    """The format asked for, else the one the output file's extension names (.csv, .json, .md; .txt or none: a
    table); any other extension without ``--format`` is a usage error, raised before anything is evaluated."""
    if chosen is not None:
        return chosen
    if output:
        from pathlib import Path

        suffix = Path(output).suffix.lower()
        if suffix and suffix not in _EXTENSION_FORMATS and suffix != ".txt":  # out.xlsx: never a text table
            from kvplan.errors import UsageError

            raise UsageError(f"--output {output}: unknown extension {suffix!r}; use .csv, .json, .md or .txt, "
                             "or give --format")
        return _EXTENSION_FORMATS.get(suffix, TabularFormat.table)
    return TabularFormat.table


def write_or_display_text(text: str, output: str | None) -> None:
    from kvplan.cli import terminal
    from kvplan.files.outfiles import write_text_atomic

    if output:
        write_text_atomic(output, text)
        terminal.display_note(f"wrote {output}")
    else:
        terminal.display_text(text)
