"""Options left unset skip typer's value coercion: a check starts without building a validator per option.

typer 0.29 coerces every parameter's value when a command parses its arguments, and builds the parameter's
pydantic ``TypeAdapter`` before it looks at the value — even when the value is None, which the coercion then
returns unchanged (``()`` for a multi-valued option). ``check`` has about 80 options and a user gives a
handful, so most of that building was for nothing (docs/performance.md has the count). :func:`skip_unset`
gives each parameter a coercion that answers None itself and builds typer's own on the first real value.
Typer versions without this lazy coercion (``get_runtime_param``) are left as they are.
"""

from __future__ import annotations


class _UnsetFirst:
    """A parameter's coercion: None (or ``()``) as typer's own would give it; anything else through typer's."""

    __slots__ = ("_param", "_build", "_built")

    def __init__(self, param, build):
        self._param, self._build, self._built = param, build, None

    def coerce(self, value, param, ctx):
        if value is None:
            return () if (param.multiple or param.nargs == -1) else None
        if self._built is None:
            self._built = self._build(self._param.type_descriptor)
        return self._built.coerce(value, param=param, ctx=ctx)


def skip_unset(params) -> None:
    """Give each typer parameter of ``params`` the coercion of :class:`_UnsetFirst` (where typer has one)."""
    try:
        from typer._coercion import build_runtime_param
    except ImportError:  # an older typer: nothing to skip
        return
    for param in params:
        if getattr(param, "_runtime_param", False) is None and hasattr(param, "type_descriptor"):
            param._runtime_param = _UnsetFirst(param, build_runtime_param)
