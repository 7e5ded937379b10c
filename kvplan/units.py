"""Parsing quantities with explicit units into base units (bytes, bytes/s, FLOP/s, counts, tokens, fractions).

The one home of kvplan's input rules (docs/profiles.md "Units", docs/cli.md "Numbers and units"):

- **Sizes and rates need a unit.** SI prefixes are powers of 1000 (``8 GB`` = 8,000,000,000 bytes), IEC
  prefixes powers of 1024 (``8 GiB`` = 8,589,934,592 bytes); the two are never confused. A bare number is
  refused (only ``0`` needs no unit), and the message suggests the likely unit by one rule: below 1,000 the
  big unit (``2`` → ``2 GB``, ``50`` → ``50 GB/s``, ``2.1`` → ``2.1 TFLOP/s``), from 1,000 to below a million
  the next one down (``2100`` → ``2100 MB/s``), from a million up the base unit it then looks like
  (``8000000000`` → ``8000000000 B (8 GB)``).
- **Token counts** are ``8192``, ``8,192`` (thousands separators as kvplan prints them), ``8k``/``8K``
  (k = 1,024) or ``1M`` (M = 1,048,576), the convention of runtimes and model cards. Exponent notation
  (``1e6``) is refused, because it reads as 1,000,000 where ``1M`` is 1,048,576; so is a size (``8kb``).
  In a list, ``, `` separates values and a comma followed by three digits groups a number (``1k, 8,192`` is
  1,024 and 8,192); without ``, `` a grouped number is ambiguous (``256,512``) and refused, unless the list also
  has a number of four or more digits without separators (then every comma separates) (:func:`split_token_list`).
- **Counts** (params …) may be bare or use SI ``k``/``M``/``B``/``T`` (``6.74B`` = 6,740,000,000).
- **Fractions** are ``0.6`` or ``60%``; a bare number above 1 is refused with the percentage it probably is.

Parsing goes through :class:`decimal.Decimal`, so ``6.74B`` is exactly 6,740,000,000.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation

from kvplan.errors import QuantityError

_SI = {"": 1, "k": 10**3, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15}
_IEC = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50}
_COUNT = {"": 1, "K": 10**3, "k": 10**3, "M": 10**6, "B": 10**9, "G": 10**9, "T": 10**12}
_TOKENS = {"": 1, "k": 2**10, "K": 2**10, "M": 2**20, "m": 2**20}
TOKENS_RULE = "k = 1,024 tokens, M = 1,048,576: 8k = 8,192 = 8192; no exponents (1e6)"

# Anything beyond this is a typo, not a device or a model (an exabyte of RAM, 10^18 params).
MAX_QUANTITY = 10**18

class _Pattern:
    """A regular expression compiled on its first match: a start that parses one token count (``check``)
    should not compile every pattern here (about 1 ms for all)."""

    __slots__ = ("_source", "_compiled")

    def __init__(self, source: str) -> None:
        self._source, self._compiled = source, None

    def match(self, text: str):
        if self._compiled is None:
            self._compiled = re.compile(self._source)
        return self._compiled.match(text)


_NUMBER = r"(?P<num>[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)"
_SIZE_RE = _Pattern(_NUMBER + r"\s*(?P<prefix>[kKMGTP]i?)?(?P<unit>B)\s*$")
_RATE_RE = _Pattern(_NUMBER + r"\s*(?P<prefix>[kKMGTP]i?)?(?P<unit>B/s|Bps)\s*$")
_FLOPS_RE = _Pattern(_NUMBER + r"\s*(?P<prefix>[kKMGTP])?(?P<unit>FLOP/s|FLOPS)\s*$")
_COUNT_RE = _Pattern(_NUMBER + r"\s*(?P<prefix>[kKMBGT])?\s*$")
_TOKENS_RE = _Pattern(r"(?P<num>[+-]?\d+(?:\.\d*)?|\.\d+)\s*(?P<prefix>[kKMm])?\s*$")
_GROUPED_RE = _Pattern(r"\d{1,3}(?:,\d{3})+$")  # 8,192 and 1,048,576: how kvplan prints token counts
_EXPONENT_RE = _Pattern(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)[eE][+-]?\d+$")
_PLAIN_RE = _Pattern(_NUMBER + r"\s*$")
_GROUPED_NUMBER_RE = _Pattern(r"(?P<num>[+-]?\d{1,3}(?:,\d{3})+(?:\.\d+)?)(?![\d,])")
_PERCENT_RE = _Pattern(_NUMBER + r"\s*%\s*$")

# The unit a bare number probably meant (module docstring): below 1,000, then below a million, then base units.
_BARE_UNITS = {"a size": ("GB", "MB", "B"), "a rate": ("GB/s", "MB/s", "B/s"),
               "a compute throughput": ("TFLOP/s", "GFLOP/s", "FLOP/s")}


def _multiplier(prefix: str | None) -> int:
    prefix = prefix or ""
    return _IEC[prefix] if prefix.endswith("i") else _SI[prefix]


def _check_plain(value: object, what: str) -> Decimal:
    """Return a plain (unitless) YAML/CLI number as Decimal, refusing bools, NaN and infinity."""
    if isinstance(value, bool):
        raise QuantityError(f"expected {what}, got a boolean ({str(value).lower()})")
    if isinstance(value, float) and not math.isfinite(value):
        raise QuantityError(f"expected {what}, got {value}")
    if isinstance(value, (int, float)):
        return Decimal(value) if isinstance(value, int) else Decimal(repr(value))
    raise QuantityError(f"expected {what}, got {type(value).__name__}")


def _decimal(text: str) -> Decimal:
    try:
        return Decimal(text)
    except InvalidOperation as exc:  # pragma: no cover - the regex admits only valid numbers
        raise QuantityError(f"not a number: {text!r}") from exc


def _finish(value: Decimal, what: str, *, integral: bool, positive: bool) -> Decimal:
    if not value.is_finite():
        raise QuantityError(f"{what} must be finite")
    if value < 0 or (positive and value == 0):
        raise QuantityError(f"{what} must be {'positive' if positive else 'zero or more'}, got {value.normalize():f}")
    if value > MAX_QUANTITY:
        raise QuantityError(f"{what} is implausibly large ({value:.3E})")
    if integral and value != value.to_integral_value():
        raise QuantityError(f"{what} must be a whole number, got {value.normalize():f}")
    return value


def _kind_hint(text: str) -> str:
    """Name what a string looks like, so 'a size where a rate is needed' reads clearly."""
    if _RATE_RE.match(text):
        return "a rate"
    if _SIZE_RE.match(text):
        return "a size"
    if _FLOPS_RE.match(text):
        return "a compute throughput"
    if _PLAIN_RE.match(text):
        return "a plain number"
    return "an unknown unit"


_UNIT_SPELLINGS = ("B", "kB", "KB", "MB", "GB", "TB", "KiB", "MiB", "GiB", "TiB", "B/s", "kB/s", "MB/s", "GB/s",
                   "TB/s", "KiB/s", "MiB/s", "GiB/s", "GFLOP/s", "TFLOP/s")


def _case_hint(text: str) -> str:
    """Suggest the spelling when only the letter case is wrong (``2gb`` → ``2 GB``)."""
    m = re.match(r"^\s*([0-9.eE+-]+)\s*([a-zA-Z/]+)\s*$", text)
    if not m:
        return ""
    number, unit = m.groups()
    for candidate_unit in _UNIT_SPELLINGS:
        if unit.lower() == candidate_unit.lower() and unit != candidate_unit:
            return f" (units are case-sensitive: did you mean '{number} {candidate_unit}'?)"
    return ""


def _si_text(value: Decimal, unit: str) -> str:
    """``8000000000`` B → ``8 GB``: a reading of a large base-unit figure (three significant digits)."""
    prefixes = (("P", 10**15), ("T", 10**12), ("G", 10**9), ("M", 10**6), ("k", 10**3))
    prefix, scale = next(((p, s) for p, s in prefixes if abs(value) >= s), ("", 1))
    return f"{float(value) / scale:.3g} {prefix}{unit}"


def _bare_hint(number: Decimal, text: str, what: str) -> str:
    """The unit a bare ``text`` (= ``number``) probably meant, by the rule of the module docstring."""
    big, mid, base = _BARE_UNITS[what]
    if abs(number) >= 10**6:
        return f"{text} {base} ({_si_text(number, base)})"
    return f"{text} {big if abs(number) < 1000 else mid}"


def _refuse_bare(number: Decimal, text: str, what: str, *, positive: bool) -> Decimal:
    """A bare number for a size or rate: zero stands (when allowed), anything else asks for its unit."""
    _finish(number, what, integral=False, positive=positive)
    if number == 0:
        return number
    raise QuantityError(f"{text} has no unit: did you mean {_bare_hint(number, text, what)}?")


def _parse_with_unit(value: object, regex: re.Pattern[str], what: str, example: str, *, positive: bool) -> Decimal:
    """A size, rate or throughput: a string with its unit; a bare number only when it is zero."""
    if not isinstance(value, str):
        number = _check_plain(value, what)
        return _refuse_bare(number, repr(value) if isinstance(value, float) else str(value), what, positive=positive)
    text = value.strip()
    grouped = _GROUPED_NUMBER_RE.match(text)
    if grouped:  # 2,000,000,000 B: how kvplan itself prints sizes (groups of exactly three digits)
        text = grouped["num"].replace(",", "") + text[grouped.end("num"):]
    if _PLAIN_RE.match(text):
        return _refuse_bare(_decimal(text), text, what, positive=positive)
    match = regex.match(text)
    if not match:
        raise QuantityError(f"expected {what} like {example!r}, got {_kind_hint(text)} {value!r}{_case_hint(text)}")
    number = _decimal(match["num"]) * _multiplier(match["prefix"])
    return _finish(number, what, integral=False, positive=positive)


def parse_size_bytes(value: object, *, positive: bool = False) -> int:
    """Parse a size such as ``8 GB``, ``8 GiB``, ``512MB`` or ``8000000000 B``; a bare number only if it is 0.

    Fractions of a byte that a prefix produces (``3.7 GiB``) round up: a buffer of
    3.7 GiB needs every one of its bytes.
    """
    number = _parse_with_unit(value, _SIZE_RE, "a size", "8 GB", positive=positive)
    return int(number.to_integral_value(rounding="ROUND_CEILING"))


def parse_rate_bytes_per_s(value: object) -> float:
    """Parse a transfer rate such as ``51.2 GB/s`` or ``3 GiB/s`` into bytes/s (always positive, unit required)."""
    return float(_parse_with_unit(value, _RATE_RE, "a rate", "51.2 GB/s", positive=True))


def parse_flop_per_s(value: object) -> float:
    """Parse a compute throughput such as ``2.1 TFLOP/s`` (or ``TFLOPS``) into FLOP/s (unit required)."""
    return float(_parse_with_unit(value, _FLOPS_RE, "a compute throughput", "2.1 TFLOP/s", positive=True))


def parse_count(value: object) -> int:
    """Parse a count such as ``6.74B`` (billion), ``494M``, ``7e9`` or a plain integer.

    A bare fraction is refused with the suffix it probably lacks (``6.74`` → "did you mean 6.74B?"); a bare
    whole number that is too small for the model is the profile's check (:mod:`kvplan.profiles.plausible`).
    """
    if not isinstance(value, str):
        number = _check_plain(value, "a count")
        _suggest_suffix(number, repr(value) if isinstance(value, float) else str(value))
        return int(_finish(number, "a count", integral=True, positive=True))
    text = value.strip()
    match = _COUNT_RE.match(text)
    if not match:
        raise QuantityError(f"expected a count like '6.74B', got {_kind_hint(text)} {value!r}{_case_hint(text)}")
    number = _decimal(match["num"]) * _COUNT[match["prefix"] or ""]
    if not match["prefix"]:
        _suggest_suffix(number, match["num"])
    return int(_finish(number, "a count", integral=True, positive=True))


def _suggest_suffix(number: Decimal, text: str) -> None:
    """A bare fraction below 1,000 (``6.74``) is a count missing its suffix: refuse it with ``6.74B``."""
    if number.is_finite() and 0 < number < 1000 and number != number.to_integral_value():
        raise QuantityError(f"a count must be a whole number, got {text}: did you mean {text}B "
                            f"({int(number * 10**9):,})?")


def _token_number(text: str) -> Decimal | None:
    """The tokens ``text`` spells (``8192``, ``8,192``, ``8k``, ``1.5k``, ``1M``), or None."""
    if _GROUPED_RE.match(text):
        return Decimal(text.replace(",", ""))
    match = _TOKENS_RE.match(text)
    if match:
        return _decimal(match["num"]) * _TOKENS[match["prefix"] or ""]
    return None


def _token_mistake(text: str, noun: str) -> str:
    """Why ``text`` is not a token count, in words that say what it looks like instead."""
    if _EXPONENT_RE.match(text):
        number = _decimal(text)
        if number != number.to_integral_value():
            return f"{noun} is a whole number of tokens, got {text!r}"
        binary = {3: "k", 6: "M"}.get(number.adjusted())
        alternative = ""
        if binary is not None:
            mantissa = (number / Decimal(10) ** number.adjusted()).normalize()
            scaled = mantissa * _TOKENS[binary]
            if scaled == scaled.to_integral_value():
                alternative = f" or {mantissa:f}{binary} ({int(scaled):,} tokens)"
        return (f"{text} is exponent notation, which {noun} does not take: write {int(number):d} "
                f"({int(number):,} tokens){alternative}")
    size = _SIZE_RE.match(text) or _RATE_RE.match(text) or re.match(
        r"(?P<num>[0-9.]+)\s*(?P<prefix>[kKMGTPm]i?)?(?P<unit>[bB](?:/s)?|[bB]ytes?)\s*$", text)
    if size:
        prefix = (size["prefix"] or "").rstrip("i")
        prefix = {"K": "k", "m": "M"}.get(prefix, prefix)
        spelled = f"{size['num']}{prefix}" if prefix in ("", "k", "M") else "8k"
        number = _token_number(spelled)
        tokens = f" ({int(number):,} tokens)" if number is not None and number == int(number) and prefix else ""
        if number is None or number != int(number) or number <= 0:
            spelled, tokens = "8k", " (8,192 tokens)"
        if noun == "a token count":
            return f"{text} is a size, not a token count such as {spelled}{tokens}"
        return f"{text} is a size; {noun} is a token count such as {spelled}{tokens}"
    if "," in text:
        parts = [part.strip() for part in text.split(",")]
        if len(parts) > 1 and all(_token_number(p) is not None for p in parts) and any(
                p[-1:].isalpha() for p in parts):  # 1k,2k: no misplaced separator, but a list where one count goes
            return f"{noun} is one value, got a list {text!r}"
        return (f"expected a token count like '8k', '8192' or '8,192', got {text!r} (thousands separators go every "
                "three digits: 8,192)")
    return f"expected a token count like '8k', '8192' or '8,192' (k = 1,024 tokens, M = 1,048,576), got {text!r}"


def parse_tokens(value: object, *, positive: bool = True, noun: str = "a token count") -> int:
    """Parse a token count: ``8192``, ``8,192``, ``8k``/``8K`` (= 8,192), ``1M`` (= 1,048,576).

    Exponent notation and sizes are refused with a message that says why (module docstring); ``noun`` names
    the count in it (``a context``).
    """
    if not isinstance(value, str):
        number = _check_plain(value, "a token count")
        return int(_finish(number, "a token count", integral=True, positive=positive))
    text = value.strip()
    number = _token_number(text)
    if number is None:
        raise QuantityError(_token_mistake(text, noun))
    return int(_finish(number, "a token count", integral=True, positive=positive))


def split_token_list(text: str) -> list[str]:
    """The items of a comma-separated list of token counts, keeping thousands separators inside a number.

    A comma followed by exactly three digits and then the end, another comma, ``..`` or ``:`` is a thousands
    separator (``1k, 8,192`` → ``1k``, ``8,192``; ``1,024..8,192:1,024`` is one range), unless the list also
    holds a number of four or more digits written without separators (``1,255,256,1000``: whoever wrote it
    does not group digits, so every comma separates). Any other comma, and a comma with a space after it,
    separates values (``256, 512`` → two values). A grouped number is kept whole only where the list separates
    its values with ``, `` (``8,192, 16,384``); otherwise ``256,512`` could be one count or two, and is refused.
    """
    ungrouped = re.search(r"(?<![\d.])\d{4,}", text)  # 1000, 4096: digits not grouped by whoever wrote them
    if ungrouped:
        return [item.strip() for item in text.split(",")]
    items = [item.strip() for item in re.split(r",(?!\d{3}(?:$|,|\.\.|:))", text)]
    grouped = next((item for item in items if "," in item and ".." not in item), None)  # a range is unambiguous
    if grouped is not None and ", " not in text and len(items) > 1:  # 1,024,2,048: 2 counts, or 4?
        raise QuantityError(f"{text!r} is ambiguous in a list: a comma both groups digits (8,192) and separates "
                            f"values; write the counts without separators ('{','.join(i.replace(',', '') for i in items)}')"
                            f" or separate the values with a comma and a space ('{', '.join(items)}')")
    if grouped is not None and ", " not in text:  # 256,512: one count or two? Refuse rather than guess
        one = grouped.replace(",", "")
        raise QuantityError(f"{text!r} is ambiguous in a list: {grouped} reads as one count ({one}) or as "
                            f"{len(grouped.split(','))} counts; write {one} for one count, or separate the values "
                            f"with a comma and a space ('{grouped.replace(',', ', ')}')")
    return items


_DURATION_UNITS = {"s": Decimal(1), "ms": Decimal("1e-3"), "us": Decimal("1e-6"), "µs": Decimal("1e-6"),
                   "μs": Decimal("1e-6"), "ns": Decimal("1e-9")}
_DURATION_RE = _Pattern(_NUMBER + r"\s*(?P<unit>s|ms|us|µs|μs|ns)\s*$")
# A per-token latency beyond this is a typo (decode steps take milliseconds, not hours).
_MAX_DURATION_S = 3600


def parse_duration_s(value: object) -> float:
    """Parse a duration such as ``4.69 ms``, ``0.004 s`` or ``250 us`` (``µs``) into seconds (zero or more).

    A number without a unit is refused: ``4.69`` could be seconds or milliseconds.
    """
    if isinstance(value, str):
        text = value.strip()
        match = _DURATION_RE.match(text)
        if match:
            seconds = _finish(_decimal(match["num"]) * _DURATION_UNITS[match["unit"]], "a duration",
                              integral=False, positive=False)
            if seconds > _MAX_DURATION_S:
                raise QuantityError(f"a duration is implausibly long ({value!r})")
            return float(seconds)
        if _PLAIN_RE.match(text):
            raise QuantityError(f"a duration needs a unit, got {value!r}: did you mean '{text} ms'?")
        raise QuantityError(f"expected a duration like '4.69 ms', '0.004 s' or '250 us', got {value!r}")
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value == 0:
        return 0.0  # zero needs no unit
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        raise QuantityError(f"a duration needs a unit, got {value!r}: did you mean '{value} ms'?")
    raise QuantityError(f"expected a duration like '4.69 ms', got {type(value).__name__}")


_FRACTION_RANGES = {(True, True): "between 0 and 1 (or 0–100 %)", (True, False): "at least 0 and below 100 %",
                    (False, True): "above 0 and at most 1 (100 %)", (False, False): "above 0 and below 1 (100 %)"}


def parse_fraction(value: object, *, zero_ok: bool = False, one_ok: bool = True) -> float:
    """Parse a fraction: ``0.6`` or ``60%`` → 0.6, in (0, 1] by default.

    ``zero_ok`` admits 0 (a ratio that keeps nothing, a margin of none); ``one_ok=False`` excludes 1 (a margin
    of the whole budget). A bare number above 1 is refused with the percentage it probably meant
    (``10`` → "did you mean 10%?"), never read as 10 = 1,000 %. Messages start with "must be" or "expected",
    for the caller to put the field or flag in front.
    """
    if isinstance(value, str):
        text = value.strip()
        match = _PERCENT_RE.match(text)
        if match:
            number, percent = _decimal(match["num"]) / 100, True
        elif _PLAIN_RE.match(text):
            number, percent = _decimal(text), False
        else:
            try:
                number, percent = Decimal(text), False  # nan, inf: refused below as out of range
            except InvalidOperation:
                raise QuantityError(f"expected a fraction like 0.6 or a percentage like 60%, got {value!r}") from None
    else:
        number, percent = _check_plain(value, "a fraction like 0.6 or a percentage like 60%"), False
        text = repr(value) if isinstance(value, float) else str(value)
    in_range = number.is_finite() and (0 < number or (zero_ok and number == 0)) and (
        number < 1 or (one_ok and number == 1))
    if not in_range:
        hint = f": did you mean {text}%?" if not percent and number.is_finite() and 1 <= number <= 100 else ""
        raise QuantityError(f"must be {_FRACTION_RANGES[zero_ok, one_ok]}, got {text}{hint}")
    return float(number)
