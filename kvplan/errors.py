"""The errors kvplan raises for user mistakes.

Only the CLI turns these into messages and exit codes; library callers catch
:class:`KvplanError` (or the precise subclass) like any other exception.
"""

from __future__ import annotations

import re


class KvplanError(Exception):
    """Base of every error caused by the user's input (exit code 2 in the CLI)."""


class QuantityError(KvplanError, ValueError):
    """A quantity string (size, rate, count, tokens) that cannot be understood."""


class ProfileError(KvplanError, ValueError):
    """A profile or configuration file that is invalid.

    ``problems`` holds one ``file:line: field: message`` string per problem, so a
    file with several mistakes is reported in one go.
    """

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


class NotFoundError(KvplanError, LookupError):
    """A profile name, alias or path that does not resolve to a profile."""


class UsageError(KvplanError, ValueError):
    """An option value or combination of options that makes no sense."""


class OutputError(KvplanError, OSError):
    """An output file that cannot be written (bad path, unknown extension)."""


class ProbeError(KvplanError, RuntimeError):
    """A measurement of this machine that failed (``profiles probe``: a worker that could not run, a product
    that came out wrong, a clock that did not advance): the machine's answer, not a bug in kvplan."""


_PLACEHOLDER = re.compile(r"\{([a-z][a-z0-9_.]*)(?:=([^{}]*))?\}")


def field_name(field: str, value: str | None = None) -> str:
    """How a library caller sees a field: its dotted name (``runtime.parallel``), ``runtime=llama.cpp`` with a value."""
    return field if value is None else f"{field}={value}"


def _worded(message: str, names: tuple[str, ...], name) -> str:
    """``message`` with each ``{field}`` / ``{field=value}`` of ``names`` worded by ``name(field, value)``."""
    known = set(names)

    def one(match) -> str:
        field, value = match.group(1), match.group(2)
        return name(field, value) if field in known else match.group(0)

    return _PLACEHOLDER.sub(one, message)


class FieldText(str):
    """A note the core hands to its caller that names fields (``a mixture of experts: … (no {params})``):
    the string itself names the fields as :func:`field_name` does, :meth:`worded` as the reporter does
    (the CLI with its flags, as for :class:`FieldError`)."""

    fields: tuple[str, ...]
    message: str

    def __new__(cls, fields: str | tuple[str, ...], message: str):
        fields = (fields,) if isinstance(fields, str) else tuple(fields)
        text = super().__new__(cls, _worded(message, fields, field_name))
        text.fields, text.message = fields, message
        return text

    def worded(self, name=field_name) -> str:
        """The note with each field worded by ``name(field, value)``."""
        return _worded(self.message, self.fields, name)


class FieldError(UsageError):
    """A usage error about named fields (``ctx``, ``sequences``, ``runtime.parallel``, ``pinned_prefix_tokens``,
    ``kv_policy``, …), worded by whoever reports it: ``str()`` names the fields (``runtime.parallel: must be at
    least 1, got 0``), the CLI names its flags (``--parallel: …``, :mod:`kvplan.cli.options.fieldnames`), a gate file its
    keys, at the line of the key (:mod:`kvplan.gate.spec`).

    ``fields``: what the error is about, best first; named before the message, joined by ``lead``
    (``None``: the message names them itself). ``about``: further fields a file may report it at.
    ``message``: the text without the leading names; it names a field as ``{field}``, or as
    ``{field=value}`` when it asks for that value (``add {runtime=llama.cpp}``), for the fields in
    ``fields``, ``about`` and ``mentions`` only. The CLI words every field with its flag, none by
    its name, so a core check of a value a user may type raises this error, never a plain
    :class:`UsageError` with the field's name in its text.
    """

    def __init__(self, fields: str | tuple[str, ...], message: str, *, lead: str | None = ", ",
                 about: tuple[str, ...] = (), mentions: tuple[str, ...] = ()):
        self.fields = (fields,) if isinstance(fields, str) else tuple(fields)
        self.message, self.lead = message, lead
        self.about, self.mentions = tuple(about), tuple(mentions)
        super().__init__(self.worded())

    @property
    def names(self) -> tuple[str, ...]:
        """Every field the error may name."""
        return tuple(dict.fromkeys(self.fields + self.about + self.mentions))

    def worded(self, name=field_name, lead: bool = True) -> str:
        """The message with each field worded by ``name(field, value)`` (value None: the field alone);
        ``lead=False`` leaves out the leading names (a reporter that places the error at the field)."""
        text = _worded(self.message, self.names, name)
        if lead and self.lead is not None and self.fields:
            return f"{self.lead.join(name(f, None) for f in self.fields)}: {text}"
        return text

    def with_note(self, note: str, mentions: tuple[str, ...] = ()) -> FieldError:
        """The same error with ``note`` (placeholders as in the message) appended to its message."""
        return FieldError(self.fields, self.message + note, lead=self.lead, about=self.about,
                          mentions=self.mentions + tuple(mentions))


class ProfileNotFoundError(FieldError, NotFoundError):
    """A profile reference that resolves to nothing, with a pointer that names a field (the ``kind`` of
    profiles to list)."""
