"""What a runtime's cache model applied for a request, and why it did not do something, as facts: a kind and its
numbers and names.

A cache model says *which* rule applied and with what figures (``Rule("padded_ctx", requested=4096,
padded=4096)``); :mod:`kvplan.render.runtime_rules` words each kind for ``check``'s runtime table and its
JSON ``runtime.rules``. A :class:`Reason` says why a runtime leaves something out (llama.cpp ignoring a window,
buffers it cannot price); :mod:`kvplan.render.reasons` words it. Frozen and hashable, so a cache model that
holds its rules stays memoizable.
"""

from __future__ import annotations

from kvplan.records import ComparedFigures


# Records (kvplan.records), not dataclasses: a check imports these on its way in, and on Python 3.11 each dataclass
# compiles its methods from source at import (Fact and its three subclasses cost about 1 ms of start-up,
# docs/performance.md). They behave as the frozen dataclasses did: positional or keyword fields, equal when of the
# same class with equal fields, hashed on the fields, the same repr.
class Fact(ComparedFigures):
    """One fact: ``kind`` names it, ``values`` are its ``(name, value)`` facts in the order given."""

    __slots__ = _fields = ("kind", "values")
    _defaults = {"values": ()}
    kind: str
    values: tuple[tuple[str, object], ...]

    def facts(self) -> dict:
        """The values by name."""
        return dict(self.values)

    def __getitem__(self, name: str):
        return self.facts()[name]


class Rule(Fact):
    """A rule a runtime's cache model applied."""

    __slots__ = ()


class Reason(Fact):
    """Why a runtime does not do something (keep a window, have its buffers priced)."""

    __slots__ = ()


def rule(kind: str, **values) -> Rule:
    """``Rule(kind, values)`` with the values as keywords."""
    return Rule(kind, tuple(values.items()))


def reason(kind: str, **values) -> Reason:
    """``Reason(kind, values)`` with the values as keywords."""
    return Reason(kind, tuple(values.items()))
