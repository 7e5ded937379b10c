"""Rules for a value typed on the command line that fills a profile field, checked before any work.

The profile schema (:mod:`kvplan.profiles.spec`) would refuse the same values, but only once a whole
profile has been generated, at a line of a file the user never wrote. These raise a
:class:`~kvplan.errors.FieldError` about the field instead, which the CLI words with its flag
(``--name``, ``--weight-bits``) and the library with the field's name.
"""

from __future__ import annotations

import math
import re

from kvplan.errors import FieldError
from kvplan.profiles.spec import SLUG_PATTERN

_SLUG_RE = re.compile(SLUG_PATTERN)


def suggested_name(text: str) -> str:
    """The nearest valid profile name: lowercase, runs of other characters → '-' (``My Model`` → ``my-model``)."""
    return re.sub(r"[^a-z0-9._-]+", "-", str(text).strip().lower()).strip("-._")


def check_profile_name(name: str) -> str:
    """``name`` when it is a valid profile name (the schema's ``SLUG_PATTERN``), else a FieldError about ``name``."""
    if not isinstance(name, str) or not _SLUG_RE.match(name):
        hint = suggested_name(name) if isinstance(name, str) else ""
        raise FieldError("name", f"{name!r} is not a valid profile name: use lowercase letters, digits, '.', '_' "
                         f"and '-'{f' (e.g. {hint!r})' if hint else ''}")
    return name


def check_weight_bits(bits: float) -> float:
    """``bits`` when it is a width a profile's ``weight_bits`` holds (above 0, at most 32), else a FieldError."""
    if isinstance(bits, bool) or not isinstance(bits, (int, float)) or not math.isfinite(bits) or not 0 < bits <= 32:
        shown = f"{bits:g}" if isinstance(bits, float) else repr(bits)
        raise FieldError("weight_bits", f"must be above 0 and at most 32, got {shown}")
    return bits
