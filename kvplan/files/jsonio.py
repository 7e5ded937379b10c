"""Reading JSON strictly: a duplicate key, a number Python cannot convert or nesting it cannot follow is an error.

Python's ``json`` keeps the last of two equal keys in silence (YAML files refuse duplicates, so JSON does too),
raises ``ValueError`` for an integer of more than 4,300 digits and ``RecursionError`` for deep nesting; each is a
:class:`JsonError` here, with the line it is on where that can be known. Nesting is bounded like YAML's
(:data:`kvplan.files.yamlio.MAX_DEPTH`), so no reader of the data recurses without end.
"""

from __future__ import annotations

import json
import re
from json.decoder import JSONObject, scanstring
from json.scanner import py_make_scanner

MAX_DEPTH = 64
MAX_DIGITS = 4300  # Python's int-string conversion limit (sys.get_int_max_str_digits)
_WS = re.compile(r"[ \t\n\r]*")
_LONG_NUMBER = re.compile(r"-?\d{%d,}" % (MAX_DIGITS + 1))


class JsonError(ValueError):
    """What is wrong (``message``) and the 1-based ``line`` it is on, counted from the start of the text;
    ``syntax``: the text is not JSON at all (``message`` is then the parser's, like ``Expecting value``)."""

    def __init__(self, line: int, message: str, syntax: bool = False):
        super().__init__(f"line {line}: {message}")
        self.line, self.message, self.syntax = line, message, syntax

    @property
    def worded(self) -> str:
        return f"not valid JSON: {self.message}" if self.syntax else self.message


class _Duplicate(Exception):
    def __init__(self, key: str):
        self.key = key


def _unique(pairs: list) -> dict:
    out: dict = {}
    for key, value in pairs:
        if key in out:
            raise _Duplicate(key)
        out[key] = value
    return out


def _int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_DIGITS:
        raise _TooLong()
    return int(text)


class _TooLong(Exception):
    pass


_DECODER = json.JSONDecoder(object_pairs_hook=_unique, parse_int=_int)
_PLAIN = json.JSONDecoder()


def loads(text: str) -> object:
    """The JSON document ``text`` (whitespace around it allowed), or :class:`JsonError`."""
    start = _WS.match(text).end()
    value, end = raw_decode(text, start)
    end = _WS.match(text, end).end()
    if end != len(text):
        raise JsonError(_line(text, end), "Extra data", syntax=True)
    return value


def raw_decode(text: str, pos: int = 0) -> tuple[object, int]:
    """One JSON value starting at ``pos``: (value, the offset after it), or :class:`JsonError`."""
    try:
        value, end = _DECODER.raw_decode(text, pos)
    except json.JSONDecodeError as exc:
        raise JsonError(exc.lineno, exc.msg, syntax=True) from None
    except _Duplicate as exc:
        raise _duplicate_error(text, pos, exc.key) from None
    except _TooLong:
        found = _LONG_NUMBER.search(text, pos)
        at = _line(text, found.start()) if found else _line(text, pos)
        digits = len(found.group().lstrip("-")) if found else MAX_DIGITS + 1
        raise JsonError(at, f"a number of {digits:,} digits is far beyond any figure kvplan reads "
                            f"(at most {MAX_DIGITS:,})") from None
    except RecursionError:
        raise JsonError(_line(text, pos), f"refused: nested deeper than {MAX_DEPTH} levels") from None
    if _deeper_than(value, MAX_DEPTH):
        raise JsonError(_line(text, pos), f"refused: nested deeper than {MAX_DEPTH} levels")
    return value, end


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _deeper_than(value: object, limit: int) -> bool:
    """True when lists and objects nest more than ``limit`` levels (walked without recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


def _duplicate_error(text: str, pos: int, key: str) -> JsonError:
    """The error for ``key`` given twice, at the line of its second occurrence, found by parsing again in Python
    (whose scanner shows where each object starts); only a file with a duplicate pays for that."""
    starts: list[int] = []

    def parse_object(s_and_end, *args):
        starts.append(s_and_end[1])
        value = JSONObject(s_and_end, *args)
        starts.pop()
        return value

    decoder = json.JSONDecoder(object_pairs_hook=_unique)
    decoder.parse_object = parse_object
    decoder.scan_once = py_make_scanner(decoder)
    try:
        decoder.scan_once(text, pos)
    except _Duplicate:
        if starts:
            places = _key_offsets(text, starts[-1], key)
            if len(places) >= 2:
                return JsonError(_line(text, places[1]), f"{key}: duplicate key (first given on line "
                                                         f"{_line(text, places[0])})")
    except (ValueError, RecursionError, StopIteration):
        pass
    return JsonError(_line(text, pos), f"{key}: duplicate key")


def _key_offsets(text: str, pos: int, key: str) -> list[int]:
    """Offsets of ``key`` among the members of the object whose ``{`` ends at ``pos`` (its first two)."""
    found: list[int] = []
    while len(found) < 2:
        pos = _WS.match(text, pos).end()
        if text.startswith("}", pos) or not text.startswith('"', pos):
            break
        name, after = scanstring(text, pos + 1)
        if name == key:
            found.append(pos)
        pos = _WS.match(text, after).end() + 1  # past ':'
        _, pos = _PLAIN.raw_decode(text, _WS.match(text, pos).end())
        pos = _WS.match(text, pos).end()
        if text.startswith(",", pos):
            pos += 1
    return found
