"""Frozen records without dataclasses: what the check path's result and table types are built on.

Nothing here imports anything, so every layer may use it (``.importlinter``: the bottom layer, beside errors).
"""

from __future__ import annotations


class Figures:
    """A frozen record of named figures: fields by position or keyword, defaults, a repr naming them, and
    assigning a field raises AttributeError — what a frozen dataclass with ``eq=False`` gives.

    kvplan's records on the check path (:class:`kvplan.plan.basis.Basis`, :class:`kvplan.plan.core.Memory`,
    :class:`kvplan.plan.results.Evaluation`, :class:`kvplan.knob_table.Knob`, the layers of
    :mod:`kvplan.engine.schedule` …) are this rather than dataclasses because a check imports them on its way in,
    and on Python 3.11 each dataclass compiles its ``__init__``, ``__repr__`` and frozen ``__setattr__`` /
    ``__delattr__`` from source at import: about 4–5 million instructions, close to a millisecond, for one of
    six fields (docs/performance.md).
    A subclass names its fields in ``_fields`` (in order; also its ``__slots__`` unless it needs a ``__dict__``),
    constant defaults in ``_defaults`` and defaults made per record in ``_factories``.
    """

    __slots__ = ()
    _fields: tuple[str, ...] = ()
    _defaults: dict = {}  # field → its default value (immutable values only)
    _factories: dict = {}  # field → a function making its default, called for each record
    _hidden: tuple[str, ...] = ()  # fields the repr leaves out

    def __init__(self, *args, **kwargs) -> None:
        names = self._fields
        if len(args) > len(names):
            raise TypeError(f"{type(self).__name__}() takes {len(names)} fields, got {len(args)}")
        values = dict(zip(names, args))
        for name, value in kwargs.items():
            if name not in names or name in values:
                raise TypeError(f"{type(self).__name__}() got an unexpected or repeated field {name!r}")
            values[name] = value
        for name in names:
            if name in values:
                value = values[name]
            elif name in self._defaults:
                value = self._defaults[name]
            elif name in self._factories:
                value = self._factories[name]()
            else:
                raise TypeError(f"{type(self).__name__}() missing field {name!r}")
            object.__setattr__(self, name, value)

    def as_dict(self) -> dict:
        """Field → value, in field order (what :func:`dataclasses.asdict` gives for flat fields)."""
        return {name: getattr(self, name) for name in self._fields}

    def with_changes(self, **changes):
        """A copy with ``changes`` (field → value), as :func:`dataclasses.replace` makes one."""
        return type(self)(**{**self.as_dict(), **changes})

    def _values(self) -> tuple:
        return tuple(getattr(self, name) for name in self._fields)

    def __reduce__(self):  # pickle and copy rebuild through __init__ (the frozen __setattr__ refuses state)
        return (type(self), self._values())

    def __setattr__(self, name, value):
        raise AttributeError(f"cannot assign to field {name!r}")

    def __delattr__(self, name):
        raise AttributeError(f"cannot delete field {name!r}")

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields if name not in self._hidden)
        return f"{type(self).__qualname__}({shown})"


class ComparedFigures(Figures):
    """:class:`Figures` that compare and hash by their fields (a frozen dataclass with ``eq=True``)."""

    __slots__ = ()

    def __eq__(self, other):
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())
