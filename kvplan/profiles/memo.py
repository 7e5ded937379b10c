"""Memoize what is derived from one model profile (profiles are immutable once loaded): its schedule, cache models.

A gate of 100 configurations over a few models would otherwise walk each model's layers 100 times.
Entries are keyed by the profile object's identity plus the caller's hashable arguments; each entry
holds the profile itself, so its id cannot be reused by another object while the entry lives.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import TypeVar

T = TypeVar("T")


class PerModel:
    """One memo table; ``get(model, key, build)`` returns ``build()``'s value for ``(model, key)``.

    Errors are not memoized: a ``build`` that raises raises again on the next call.
    """

    def __init__(self, limit: int = 512) -> None:
        self._entries: dict[tuple, tuple[object, object]] = {}
        self._limit = limit

    def get(self, model: object, key: Hashable, build: Callable[[], T]) -> T:
        slot = (id(model), key)
        hit = self._entries.get(slot)
        if hit is not None and hit[0] is model:
            return hit[1]  # type: ignore[return-value]
        value = build()
        if len(self._entries) >= self._limit:  # a long sweep over many profiles: start over, never grow unbounded
            self._entries.clear()
        self._entries[slot] = (model, value)
        return value
