"""What a runtime's cache model applied for a request, and why it did not do something, as facts: a kind and its
numbers and names.

A cache model says *which* rule applied and with what figures (``Rule("padded_ctx", requested=4096,
padded=4096)``); :mod:`kvplan.render.runtime_rules` words each kind for ``check``'s runtime table and its
JSON ``runtime.rules``. A :class:`Reason` says why a runtime leaves something out (llama.cpp ignoring a window,
buffers it cannot price); :mod:`kvplan.render.reasons` words it. Frozen and hashable, so a cache model that
holds its rules stays memoizable.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Fact:
    """One fact: ``kind`` names it, ``values`` are its ``(name, value)`` facts in the order given."""

    kind: str
    values: tuple[tuple[str, object], ...] = ()

    def facts(self) -> dict:
        """The values by name."""
        return dict(self.values)

    def __getitem__(self, name: str):
        return self.facts()[name]


@dataclass(frozen=True)
class Rule(Fact):
    """A rule a runtime's cache model applied."""


@dataclass(frozen=True)
class Reason(Fact):
    """Why a runtime does not do something (keep a window, have its buffers priced)."""


def rule(kind: str, **values) -> Rule:
    """``Rule(kind, values)`` with the values as keywords."""
    return Rule(kind, tuple(values.items()))


def reason(kind: str, **values) -> Reason:
    """``Reason(kind, values)`` with the values as keywords."""
    return Reason(kind, tuple(values.items()))
