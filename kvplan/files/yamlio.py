"""Reading YAML safely, keeping where every value stood in the file.

Safety: only the YAML core types are built (SafeLoader; any other tag, such as
``!!python/object/apply``, is an error and constructs nothing). Aliases are bounded
both in number and in the size they expand to, so a "billion laughs" document is
refused at once instead of being expanded. Nesting depth and file size are bounded
too. Duplicate keys, which YAML would silently resolve to the last one, are errors.

Plain scalars are read as YAML 1.2 reads them (its core schema), not as pyyaml's YAML 1.1: ``true``/``false``
are the only booleans (``yes``/``no``/``on``/``off`` are text, which a true/false field refuses), ``5:1`` and a
date are text. The numbers the two versions read differently — a leading zero (``040``: octal 32 in 1.1, 40 in
1.2), ``_`` between digits (``3_2``), ``0x``/``0o``/``0b`` prefixes — are refused with the decimal to write
instead, so a file means the same in every YAML tool; quoting one makes it text. A number of more digits than
Python converts (4,300) is refused, not an internal error.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from kvplan.errors import ProfileError
from kvplan.files.inputs import note_input

MAX_FILE_BYTES = 1 << 20
MAX_ALIASES = 200
MAX_EXPANDED_NODES = 200_000
MAX_DEPTH = 64
MAX_DIGITS = 4300  # Python's int-string conversion limit (sys.get_int_max_str_digits): beyond it int() fails

Loc = tuple


@dataclass(frozen=True)
class YamlDocument:
    """Plain data from one YAML file plus the 1-based line of every key and value."""

    data: object
    path: str
    lines: dict[Loc, int] = field(default_factory=dict)

    def line_of(self, loc: Loc) -> int | None:
        """Line of the deepest known prefix of ``loc`` (a missing key points at its mapping)."""
        loc = tuple(loc)
        while True:
            if loc in self.lines:
                return self.lines[loc]
            if not loc:
                return None
            loc = loc[:-1]

    def where(self, loc: Loc = ()) -> str:
        line = self.line_of(loc)
        return f"{self.path}:{line}" if line else self.path


_BOOL_RE = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
_NULL_RE = re.compile(r"^(?:~|null|Null|NULL|)$")
_INT_RE = re.compile(r"^[-+]?[0-9]+$")
# Floats with a point; an exponent without one (``1e6``) stays text, as pyyaml has always read it, so the field's
# own reader sees the spelling (a count takes ``7e9``; a token count refuses ``1e6`` and says what to write).
_FLOAT_RE = re.compile(r"^(?:[-+]?(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][-+][0-9]+)?"
                       r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$")
# Plain numbers YAML 1.1 reads as something other than what YAML 1.2 reads (or than a reader expects).
_LEADING_ZERO_RE = re.compile(r"^[-+]?0[0-9]+$")
_UNDERSCORE_RE = re.compile(r"^[-+]?(?:[0-9][0-9_]*_[0-9_]*(?:\.[0-9_]*)?|[0-9_]*\.[0-9_]*_[0-9_]*)(?:[eE][-+]?[0-9]+)?$")
_BASE_RE = re.compile(r"^[-+]?0(?:x[0-9a-fA-F_]+|o[0-7_]+|b[01_]+)$")
_DIGITS_RE = re.compile(r"[0-9]")


def _yaml11_hint(value: str) -> str | None:
    """Why a plain scalar is refused (a form YAML 1.1 and 1.2 read differently), with what to write; or None."""
    if _LEADING_ZERO_RE.match(value):
        decimal, octal = int(value, 10), (int(value, 8) if re.fullmatch(r"[-+]?[0-7]+", value) else None)
        read = f"octal {octal}" if octal is not None else "not a number"
        return (f"{value!r}: a number with a leading zero is {read} in YAML 1.1 and {decimal} in YAML 1.2: "
                f"write {decimal} (or quote it for the text)")
    if _UNDERSCORE_RE.match(value):
        plain = value.replace("_", "")
        return (f"{value!r}: '_' between digits is YAML 1.1 only (YAML 1.2 reads text): write {plain} "
                "(or quote it for the text)")
    if _BASE_RE.match(value):
        sign, digits = (value[0], value[1:]) if value[0] in "+-" else ("", value)
        number = int(sign + digits.replace("_", ""), 0)
        return f"{value!r}: write numbers in decimal ({number}), or quote it for the text"
    return None


def _resolvers() -> dict:
    """YAML 1.2 core schema: null, true/false, decimal int and float; everything else plain is a string."""
    table: dict = {}
    for tag, regex, first in (
        ("tag:yaml.org,2002:null", _NULL_RE, ["~", "n", "N", ""]),
        ("tag:yaml.org,2002:bool", _BOOL_RE, list("tTfF")),
        ("tag:yaml.org,2002:int", _INT_RE, list("-+0123456789")),
        ("tag:yaml.org,2002:float", _FLOAT_RE, list("-+.0123456789")),
        ("tag:yaml.org,2002:merge", re.compile(r"^(?:<<)$"), ["<"]),
    ):
        for ch in first:
            table.setdefault(ch, []).append((tag, regex))
    return table


def _construct_int(loader, node):
    value = loader.construct_scalar(node)  # its digits are bounded by _check_nodes before constructing
    if not _INT_RE.match(value):  # an explicit !!int on something else
        raise _not_a(node, value, "a whole number")
    return int(value)


def _construct_float(loader, node):
    value = loader.construct_scalar(node)
    lowered = value.lower()
    if lowered.endswith(".inf") and _FLOAT_RE.match(value):
        return float("-inf") if value.startswith("-") else float("inf")
    if lowered == ".nan":
        return float("nan")
    if not (_FLOAT_RE.match(value) or _INT_RE.match(value) or re.fullmatch(r"[-+]?[0-9]+[eE][-+]?[0-9]+", value)):
        raise _not_a(node, value, "a number")
    return float(value)


def _construct_bool(loader, node):
    value = loader.construct_scalar(node)
    if not _BOOL_RE.match(value):
        raise _not_a(node, value, "true or false")
    return value.lower() == "true"


def _construct_null(loader, node):
    value = loader.construct_scalar(node)
    if not _NULL_RE.match(value):
        raise _not_a(node, value, "null")
    return None


def _not_a(node, value: str, what: str) -> yaml.constructor.ConstructorError:
    return yaml.constructor.ConstructorError(None, None, f"tagged {node.tag.replace('tag:yaml.org,2002:', '!!')} "
                                             f"but {str(value)[:40]!r} is not {what}", node.start_mark)


# Tags of YAML 1.1's wider schema that no kvplan file needs (and whose constructors fail on bad text):
# refused as unsupported tags, as a !!python/… tag is.
_NOT_CONSTRUCTED = tuple(f"tag:yaml.org,2002:{t}" for t in ("timestamp", "binary", "set", "omap", "pairs"))


def _yaml12(cls):
    """``cls`` reading plain scalars by the YAML 1.2 core schema (see the module docstring)."""
    constructors = {tag: f for tag, f in cls.yaml_constructors.items() if tag not in _NOT_CONSTRUCTED}
    loader = type(cls.__name__ + "12", (cls,), {"yaml_implicit_resolvers": _resolvers(),
                                                "yaml_constructors": constructors})
    for tag, construct in (("int", _construct_int), ("float", _construct_float), ("bool", _construct_bool),
                           ("null", _construct_null)):
        loader.add_constructor(f"tag:yaml.org,2002:{tag}", construct)
    return loader


class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader that counts aliases and nesting while composing."""

    def __init__(self, stream):
        super().__init__(stream)
        self._aliases = 0
        self._depth = 0

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_ALIASES:
                raise _Refused(self.peek_event().start_mark, f"more than {MAX_ALIASES} aliases")
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise _Refused(self.peek_event().start_mark, f"nested deeper than {MAX_DEPTH} levels")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


_BoundedLoader = _yaml12(_BoundedLoader)
# libyaml, when pyyaml was built with it: the same YAML, parsed ~10× faster (gate files are long).
_CLoader = _yaml12(yaml.CSafeLoader) if hasattr(yaml, "CSafeLoader") else None
# For readers that need no positions or bounds (the name index): the same reading of plain scalars.
FAST_LOADER = _CLoader or _BoundedLoader


def reads_back_plain(text: str) -> bool:
    """True when ``text`` written unquoted reads back as the same text, in YAML 1.1 tools and in kvplan."""
    try:
        return yaml.safe_load(text) == text and parse_yaml(f"v: {text}").data == {"v": text}
    except ProfileError:
        return False


def _prescan(text: str) -> None:
    """Refuse deep nesting and alias floods from the event stream, which libyaml produces iteratively."""
    depth = aliases = 0
    parser = _CLoader(text)
    try:
        while parser.check_event():
            event = parser.get_event()
            if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                depth += 1
                if depth > MAX_DEPTH:
                    raise _Refused(event.start_mark, f"nested deeper than {MAX_DEPTH} levels")
            elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                depth -= 1
            elif isinstance(event, yaml.AliasEvent):
                aliases += 1
                if aliases > MAX_ALIASES:
                    raise _Refused(event.start_mark, f"more than {MAX_ALIASES} aliases")
    finally:
        parser.dispose()


class _Refused(Exception):
    def __init__(self, mark, message):
        self.mark, self.message = mark, message


def read_bounded(path: str | os.PathLike, limit_bytes: int, where: str) -> bytes:
    """The bytes of an input file, at most ``limit_bytes``; every OS failure a ProfileError ``{where}problem``.

    Bounded by reading, not by the size the file reports: a pipe or /dev/zero reports 0 and never ends.
    """
    p = Path(path)
    try:
        if p.is_dir():
            raise ProfileError([f"{where}is a directory, not a file"])
        size = p.stat().st_size
        if size > limit_bytes:
            raise ProfileError([f"{where}file is too large ({size:,} bytes; the limit is {limit_bytes:,})"])
        with open(p, "rb") as handle:
            raw = handle.read(limit_bytes + 1)
    except FileNotFoundError:
        raise ProfileError([f"{where}no such file"]) from None
    except PermissionError:
        raise ProfileError([f"{where}permission denied"]) from None
    except OSError as exc:
        raise ProfileError([f"{where}cannot read: {exc.strerror or exc}"]) from None
    if len(raw) > limit_bytes:
        raise ProfileError([f"{where}file is too large (more than the limit of {limit_bytes:,} bytes)"])
    note_input(p)  # read: no output of this run may replace it
    return raw


def read_text(path: str | os.PathLike) -> str:
    """Read a small UTF-8 text file, turning every OS and encoding failure into a ProfileError."""
    name = str(path)
    raw = read_bounded(path, MAX_FILE_BYTES, f"{name}: ")
    if raw[:2] in (b"\xff\xfe", b"\xfe\xff"):  # Windows editors save UTF-16 with a byte-order mark
        raise ProfileError([f"{name}: UTF-16 text; save it as UTF-8"])
    if b"\x00" in raw:
        raise ProfileError([f"{name}: binary file, not text"])
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ProfileError([f"{name}: not UTF-8 text (bad byte at offset {exc.start})"]) from None


def load_yaml(path: str | os.PathLike) -> YamlDocument:
    """Load one YAML document from ``path`` with line positions; every failure is a ProfileError."""
    return parse_yaml(read_text(path), str(path))


def parse_yaml(text: str, name: str = "<string>") -> YamlDocument:
    """Parse YAML text (see :func:`load_yaml`)."""
    if len(text.encode("utf-8", "surrogatepass")) > MAX_FILE_BYTES:
        raise ProfileError([f"{name}: document is too large (limit {MAX_FILE_BYTES:,} bytes)"])
    loader = None
    try:
        if _CLoader is not None:
            _prescan(text)  # bound depth and aliases on libyaml's event stream before composing in C
            loader = _CLoader(text)
        else:
            loader = _BoundedLoader(text)  # counts while composing, in Python
        node = loader.get_single_node()
        if node is None:
            raise ProfileError([f"{name}: empty file, expected a YAML mapping"])
        _check_size(node, name)
        problems = _check_nodes(node, name)
        if problems:
            raise ProfileError(problems)
        data = loader.construct_document(node)
    except _Refused as exc:
        raise ProfileError([f"{name}:{exc.mark.line + 1}: refused: {exc.message}"]) from None
    except yaml.MarkedYAMLError as exc:
        raise ProfileError([_yaml_message(exc, name)]) from None
    except yaml.reader.ReaderError as exc:
        raise ProfileError([f"{name}: invalid character {exc.character!r} at offset {exc.position}: "
                            "YAML text cannot contain control characters"]) from None
    except yaml.YAMLError as exc:
        raise ProfileError([f"{name}: invalid YAML: {exc}"]) from None
    except RecursionError:
        raise ProfileError([f"{name}: refused: nested too deeply"]) from None
    finally:
        if loader is not None:
            loader.dispose()
    lines: dict[Loc, int] = {}
    _record_lines(node, (), lines)
    return YamlDocument(data, name, lines)


def _yaml_message(exc: yaml.MarkedYAMLError, name: str) -> str:
    mark = exc.problem_mark or exc.context_mark
    where = f"{name}:{mark.line + 1}" if mark else name
    problem = exc.problem or exc.context or "invalid YAML"
    if "nesting depth" in str(problem):  # libyaml's own limit, met before our event count reaches it
        return f"{where}: refused: nested deeper than {MAX_DEPTH} levels"
    if "expected a single document" in str(exc.context or "") or "expected a single document" in str(problem):
        return f"{where}: several YAML documents in one file; expected exactly one"
    if "constructor" in str(problem):
        tag = re.search(r"tag '([^']*)'", str(problem))
        shown = tag.group(1).replace("tag:yaml.org,2002:", "!!") if tag else "?"
        return f"{where}: unsupported YAML tag {shown!r}: only plain YAML values are allowed (nothing is constructed)"
    return f"{where}: invalid YAML: {problem}"


def _check_size(root: yaml.Node, name: str) -> None:
    memo: dict[int, int] = {}

    def size(node: yaml.Node) -> int:
        key = id(node)
        if key in memo:
            return memo[key]
        memo[key] = 1  # a self-referencing alias counts once rather than looping forever
        if isinstance(node, yaml.MappingNode):
            total = 1 + sum(size(k) + size(v) for k, v in node.value)
        elif isinstance(node, yaml.SequenceNode):
            total = 1 + sum(size(v) for v in node.value)
        else:
            total = 1
        memo[key] = min(total, MAX_EXPANDED_NODES + 1)
        return memo[key]

    if size(root) > MAX_EXPANDED_NODES:
        raise ProfileError([f"{name}: refused: aliases expand to more than {MAX_EXPANDED_NODES:,} values"])


def _check_nodes(node: yaml.Node, name: str, seen: set[int] | None = None, path: tuple = ()) -> list[str]:
    """``file:line: configurations.0.device: duplicate key …`` for every key given twice in one mapping, and
    ``file:line: layers: …`` for every plain scalar YAML 1.1 and 1.2 read differently or too long a number."""
    seen = set() if seen is None else seen
    if id(node) in seen:
        return []
    seen.add(id(node))
    problems: list[str] = []
    if isinstance(node, yaml.ScalarNode):
        problem = _scalar_problem(node)
        if problem:
            where = ".".join(map(str, path)) or "value"
            problems.append(f"{name}:{node.start_mark.line + 1}: {where}: {problem}")
    elif isinstance(node, yaml.MappingNode):
        keys: dict[str, int] = {}
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else "?"
            if isinstance(key_node, yaml.ScalarNode) and key_node.tag != "tag:yaml.org,2002:merge":
                line = key_node.start_mark.line + 1
                if key in keys:
                    where = ".".join(map(str, path + (key,)))
                    problems.append(f"{name}:{line}: {where}: duplicate key (first given on line {keys[key]})")
                else:
                    keys[key] = line
            if isinstance(key_node, yaml.ScalarNode) and _scalar_problem(key_node):
                problems.append(f"{name}:{key_node.start_mark.line + 1}: {'.'.join(map(str, path + (key,)))}: "
                                f"key {_scalar_problem(key_node)}")
            problems += _check_nodes(value_node, name, seen, path + (key,))
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            problems += _check_nodes(item, name, seen, path + (i,))
    return problems


def _scalar_problem(node: yaml.ScalarNode) -> str | None:
    if node.style not in (None, ""):  # quoted or a block scalar: text, as the user wrote it
        return None
    value = node.value
    if node.tag in ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float") and len(value) > MAX_DIGITS:
        digits = len(_DIGITS_RE.findall(value))
        if digits > MAX_DIGITS:
            return f"a number of {digits:,} digits is far beyond any figure kvplan reads (at most {MAX_DIGITS:,})"
    return _yaml11_hint(value) if len(value) <= 64 else None


def _record_lines(node: yaml.Node, loc: Loc, lines: dict[Loc, int], depth: int = 0) -> None:
    if depth > MAX_DEPTH:
        return
    lines.setdefault(loc, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            if isinstance(key_node, yaml.ScalarNode):
                key = _scalar_key(key_node)
                lines[loc + (key,)] = key_node.start_mark.line + 1
                _record_lines(value_node, loc + (key,), lines, depth + 1)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _record_lines(item, loc + (index,), lines, depth + 1)


def _scalar_key(node: yaml.ScalarNode):
    # Keys are looked up by the value pydantic reports in an error's loc: str or int.
    if node.tag == "tag:yaml.org,2002:int":
        try:
            return int(node.value)
        except ValueError:
            return node.value
    return node.value
