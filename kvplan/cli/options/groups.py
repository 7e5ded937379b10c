"""Option groups: a set of options declared once and spliced into every command that takes it.

A group is a function whose keyword parameters are typer options (``Annotated[..., typer.Option(...)]``).
:func:`with_groups` replaces a command's parameter of the same name by the group's options (in the group's
order, at that parameter's place) and hands the command a :class:`Given`: the values as typed, built into
the group's result only when the command asks (so a command keeps the order in which it checks its inputs).
Adding a knob is one parameter in one group; every command that takes the group offers it.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Given:
    """The options of one group as the user gave them; :meth:`build` turns them into the group's result."""

    builder: Callable[..., Any]
    values: dict[str, Any]

    def build(self) -> Any:
        return self.builder(**self.values)

    def __getitem__(self, name: str) -> Any:
        return self.values[name]


class OptionGroup:
    """The options of ``builder``'s signature, optionally narrowed to some of them (the rest keep defaults)."""

    def __init__(self, builder: Callable[..., Any], only: tuple[str, ...] | None = None):
        self.builder = builder
        params = inspect.signature(builder, eval_str=True).parameters.values()
        self.parameters = tuple(p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in params
                                if only is None or p.name in only)

    def only(self, *names: str) -> OptionGroup:
        """The same group offering only ``names`` (a command where the others make no sense)."""
        return OptionGroup(self.builder, names)


def with_groups(**groups: OptionGroup) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Splice each group's options into the command in place of the parameter named like the group."""

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        signature = inspect.signature(command, eval_str=True)
        parameters = []
        for p in signature.parameters.values():
            if p.name in groups:
                parameters.extend(groups[p.name].parameters)
            else:
                parameters.append(p.replace(kind=inspect.Parameter.KEYWORD_ONLY))
        names = {group: [p.name for p in g.parameters] for group, g in groups.items()}
        clash = set(groups) & {p.name for p in parameters}
        if clash:  # a group named like an option would be overwritten by it
            raise TypeError(f"{command.__name__}: group name(s) {sorted(clash)} clash with option names")

        @functools.wraps(command)
        def run(**kwargs: Any) -> Any:
            for group, g in groups.items():
                kwargs[group] = Given(g.builder, {name: kwargs.pop(name) for name in names[group]})
            return command(**kwargs)

        run.__signature__ = signature.replace(parameters=parameters)  # what typer reads
        run.__annotations__ = {p.name: p.annotation for p in parameters}
        return run

    return decorate
