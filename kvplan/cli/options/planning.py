"""Options shared by the planning commands (sweep, compare, fit): repeatable devices and models,
value lists and the output file."""

from __future__ import annotations

from typing import Annotated

import typer



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
OutputOpt = Annotated[str | None, typer.Option("--output", "-o", help="Write the output to this file (whole, "
                                               "atomically) instead of stdout.")]
