"""The files this run has read as input, so that no output replaces one of them.

A gate file names device and model profiles and policy files; an output path that is one of them
(``kvplan gate release.yaml --json phone.yaml``) would silently destroy the user's profile. Every reader of an
input file notes it here, and :mod:`kvplan.files.outfiles` refuses to write over a noted file. The CLI forgets
the notes at the start of each command, so one process running several commands (tests, embedding) does not
carry them over.
"""

from __future__ import annotations

import os
from pathlib import Path

_READ: set[Path] = set()


def note_input(path: str | os.PathLike) -> None:
    try:
        _READ.add(Path(path).resolve())
    except (OSError, RuntimeError):  # an unresolvable path was not read either
        pass


def inputs_read() -> frozenset[Path]:
    return frozenset(_READ)


def forget_inputs() -> None:
    _READ.clear()


def distinct_paths(files) -> list[str]:
    """Each file once, however its path is written (``a.yaml`` and ``./a.yaml``), in the order given."""
    seen: dict[Path, str] = {}
    for file in files:
        seen.setdefault(Path(file).resolve(), str(file))
    return list(seen.values())
