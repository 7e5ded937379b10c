"""Turning a YAML document into a validated pydantic object, with ``file:line: field: message`` errors."""

from __future__ import annotations

import difflib
import re
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from kvplan.errors import ProfileError
from kvplan.files.yamlio import YamlDocument, load_yaml

M = TypeVar("M", bound=BaseModel)


def validate_document(cls: type[M], doc: YamlDocument, *, what: str = "profile") -> M:
    """Validate ``doc.data`` as ``cls``; every problem of the file is reported at once."""
    if not isinstance(doc.data, dict):
        kind = "a list" if isinstance(doc.data, list) else f"a {type(doc.data).__name__}"
        raise ProfileError([f"{doc.where(())}: expected a mapping of {what} fields, got {kind}"])
    bad_keys = [k for k in doc.data if not isinstance(k, str)]
    if bad_keys:
        raise ProfileError([f"{doc.where((bad_keys[0],))}: {bad_keys[0]!r}: field names must be strings"])
    try:
        return cls.model_validate(doc.data)
    except ValidationError as exc:
        raise ProfileError(format_validation_errors(exc, doc, cls)) from None


def load_model_file(cls: type[M], path, *, what: str = "profile") -> M:
    return validate_document(cls, load_yaml(path), what=what)


def format_validation_errors(exc: ValidationError, doc: YamlDocument, cls: type[BaseModel]) -> list[str]:
    problems: list[tuple[int, str]] = []
    seen: set[tuple] = set()
    for error in exc.errors(include_url=False):
        loc = _clean_loc(error["loc"], doc.data)
        message = _message(error, loc, cls)
        key = (loc, message)
        if key in seen:
            continue
        seen.add(key)
        field = ".".join(str(part) for part in loc) or "(document)"
        problems.append((doc.line_of(loc) or 0, f"{doc.where(loc)}: {field}: {message}"))
    return [text for _, text in sorted(problems, key=lambda p: p[0])]


_INTERNAL = re.compile(r"^(?:[a-z_]+\[.*\]|constrained-\w+|function-\w+|str|int|float|bool|list|dict|none|"
                       r"literal\[.*\]|union\[.*\])$")


def _clean_loc(loc: tuple, data: object) -> tuple:
    """Keep the parts of a pydantic loc that name places in the document; drop union-branch tags."""
    out: list = []
    current = data
    for part in loc:
        if isinstance(current, dict) and part in current:
            current = current[part]
        elif isinstance(current, list) and isinstance(part, int) and 0 <= part < len(current):
            current = current[part]
        elif isinstance(part, str) and _INTERNAL.match(part):
            continue
        else:
            current = None
        out.append(part)
    return tuple(out)


def _message(error: dict, loc: tuple, cls: type[BaseModel]) -> str:
    kind = error["type"]
    msg = error["msg"]
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, "):]
    if kind == "extra_forbidden" and loc:
        names = list(_fields_at(cls, loc[:-1]))
        guess = difflib.get_close_matches(str(loc[-1]), names, n=1)
        hint = f"; did you mean {guess[0]!r}?" if guess else f"; known fields: {', '.join(names)}"
        return f"unknown field{hint}"
    if kind == "missing":
        return "required field is missing"
    if kind in ("model_type", "model_attributes_type", "dict_type"):  # not pydantic's class names: the file's words
        got = error.get("input")
        return "must be a mapping of fields (key: value lines)" + (", got nothing" if got is None else
                                                                  f", got {got!r}")
    words = _string_words(kind, error)
    if words:
        return words
    if msg.startswith("Input should be "):
        msg = "must be " + msg[len("Input should be "):]
    return msg


def _string_words(kind: str, error: dict) -> str | None:
    """pydantic's messages about text (``String should have at least 1 character``) in the file's words."""
    ctx, got = error.get("ctx") or {}, error.get("input")
    if kind == "string_too_short":
        least = ctx.get("min_length", 1)
        return "must not be empty" if least <= 1 else f"must be at least {least:,} characters long"
    if kind == "string_too_long":
        length = f", got {len(got):,}" if isinstance(got, str) else ""
        return f"must be at most {ctx.get('max_length', 0):,} characters long{length}"
    if kind == "string_pattern_mismatch" and ctx.get("pattern") == ONE_LINE_PATTERN:
        return "must be on one line"
    if kind == "string_type":
        return f"expected text, got {got!r}" + (" (quote it to make it text)" if isinstance(got, (int, float)) else "")
    return None


# A name shown in one table row: no line breaks (gate configurations).
ONE_LINE_PATTERN = r"^[^\n\r]+$"


def _fields_at(cls: type[BaseModel], loc: tuple):
    model = cls
    for part in loc:
        info = model.model_fields.get(part) if isinstance(part, str) else None
        annotation = getattr(info, "annotation", None)
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            model = annotation
        else:
            for arg in getattr(annotation, "__args__", ()):
                if isinstance(arg, type) and issubclass(arg, BaseModel):
                    model = arg
    return model.model_fields.keys()
