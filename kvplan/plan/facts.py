"""What a user should know before trusting figures, as facts: a warning's kind and its numbers and names.

The core says *which* warning applies and with what figures (``warning("device_ram", device="pixel8",
ram_bytes=200_000_000)``); :mod:`kvplan.render.warnings` words each kind, for the notes under a table, the
lines on stderr and every JSON document's ``warnings``. Frozen and hashable: evaluations dedupe and compare them.
"""

from __future__ import annotations

from kvplan.caches.facts import Fact


class WarningFact(Fact):  # a plain class, as Fact is (kvplan.caches.facts: no dataclass compiled at import)
    """One warning (named so as not to shadow the builtin ``Warning``)."""

    __slots__ = ()


def warning(kind: str, **values) -> WarningFact:
    """``WarningFact(kind, values)`` with the values as keywords."""
    return WarningFact(kind, tuple(values.items()))
