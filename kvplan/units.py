"""Parsing quantities with explicit units into base units (bytes, bytes/s, FLOP/s, counts, tokens).

SI prefixes are powers of 1000 (``8 GB`` = 8,000,000,000 bytes), IEC prefixes powers of
1024 (``8 GiB`` = 8,589,934,592 bytes); the two are never confused. Token counts follow
the convention every runtime and model card uses: ``8k`` = 8,192 tokens, ``1M`` = 1,048,576.
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

# Anything beyond this is a typo, not a device or a model (an exabyte of RAM, 10^18 params).
MAX_QUANTITY = 10**18

_NUMBER = r"(?P<num>[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)"
_SIZE_RE = re.compile(_NUMBER + r"\s*(?P<prefix>[kKMGTP]i?)?(?P<unit>B)\s*$")
_RATE_RE = re.compile(_NUMBER + r"\s*(?P<prefix>[kKMGTP]i?)?(?P<unit>B/s|Bps)\s*$")
_FLOPS_RE = re.compile(_NUMBER + r"\s*(?P<prefix>[kKMGTP])?(?P<unit>FLOP/s|FLOPS)\s*$")
_COUNT_RE = re.compile(_NUMBER + r"\s*(?P<prefix>[kKMBGT])?\s*$")
_TOKENS_RE = re.compile(_NUMBER + r"\s*(?P<prefix>[kKMm])?\s*$")
_PLAIN_RE = re.compile(_NUMBER + r"\s*$")


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


def _case_hint(text: str) -> str:
    """Suggest the spelling when only the letter case is wrong (``2gb`` → ``2 GB``)."""
    for regex in (_SIZE_RE, _RATE_RE, _FLOPS_RE):
        m = re.match(r"^\s*([0-9.eE+-]+)\s*([a-zA-Z/]+)\s*$", text)
        if not m:
            return ""
        number, unit = m.groups()
        for candidate_unit in ("B", "kB", "KB", "MB", "GB", "TB", "KiB", "MiB", "GiB", "TiB", "B/s", "kB/s", "MB/s",
                               "GB/s", "TB/s", "KiB/s", "MiB/s", "GiB/s", "GFLOP/s", "TFLOP/s"):
            if unit.lower() == candidate_unit.lower() and unit != candidate_unit:
                return f" (units are case-sensitive: did you mean '{number} {candidate_unit}'?)"
    return ""


def _parse(value: object, regex: re.Pattern[str], table: dict[str, int] | None, what: str,
           example: str, *, integral: bool, positive: bool) -> Decimal:
    if not isinstance(value, str):
        number = _check_plain(value, what)
        return _finish(number, what, integral=integral, positive=positive)
    text = value.strip()
    plain = _PLAIN_RE.match(text)
    if plain:
        return _finish(_decimal(plain["num"]), what, integral=integral, positive=positive)
    match = regex.match(text)
    if not match:
        raise QuantityError(f"expected {what} like {example!r}, got {_kind_hint(text)} {value!r}{_case_hint(text)}")
    scale = table.get(match["prefix"] or "") if table is not None else _multiplier(match["prefix"])
    number = _decimal(match["num"]) * scale
    return _finish(number, what, integral=integral, positive=positive)


def parse_size_bytes(value: object, *, positive: bool = False) -> int:
    """Parse a size such as ``8 GB``, ``8 GiB``, ``512MB`` or a plain number of bytes.

    Fractions of a byte that a prefix produces (``3.7 GiB``) round up: a buffer of
    3.7 GiB needs every one of its bytes. A plain number must be whole: ``1.5`` bytes is
    almost certainly a forgotten unit.
    """
    if isinstance(value, float) or (isinstance(value, str) and _PLAIN_RE.match(value.strip())):
        plain = _check_plain(value, "a size") if not isinstance(value, str) else _decimal(value.strip())
        if plain.is_finite() and plain != plain.to_integral_value():
            raise QuantityError(f"a size without a unit is a number of bytes and must be whole, got {value!r}: "
                                f"did you mean '{value} GB'?")
    number = _parse(value, _SIZE_RE, None, "a size", "8 GB", integral=False, positive=positive)
    return int(number.to_integral_value(rounding="ROUND_CEILING"))


def parse_rate_bytes_per_s(value: object) -> float:
    """Parse a transfer rate such as ``51.2 GB/s`` or ``3 GiB/s`` into bytes/s (always positive)."""
    return float(_parse(value, _RATE_RE, None, "a rate", "51.2 GB/s", integral=False, positive=True))


def parse_flop_per_s(value: object) -> float:
    """Parse a compute throughput such as ``2.1 TFLOP/s`` (or ``TFLOPS``) into FLOP/s."""
    return float(_parse(value, _FLOPS_RE, None, "a compute throughput", "2.1 TFLOP/s",
                        integral=False, positive=True))


def parse_count(value: object) -> int:
    """Parse a count such as ``6.74B`` (billion), ``494M``, ``7e9`` or a plain integer."""
    return int(_parse(value, _COUNT_RE, _COUNT, "a count", "6.74B", integral=True, positive=True))


def parse_tokens(value: object, *, positive: bool = True) -> int:
    """Parse a token count such as ``8192``, ``8k`` (= 8192) or ``32K``; ``1M`` = 1,048,576."""
    return int(_parse(value, _TOKENS_RE, _TOKENS, "a token count", "8k", integral=True, positive=positive))


_DURATION_UNITS = {"s": Decimal(1), "ms": Decimal("1e-3"), "us": Decimal("1e-6"), "µs": Decimal("1e-6"),
                   "μs": Decimal("1e-6"), "ns": Decimal("1e-9")}
_DURATION_RE = re.compile(_NUMBER + r"\s*(?P<unit>s|ms|us|µs|μs|ns)\s*$")
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


_PERCENT_RE = re.compile(_NUMBER + r"\s*%\s*$")


def parse_fraction(value: object) -> float:
    """Parse a fraction in (0, 1]: ``0.6`` or ``60%``."""
    if isinstance(value, str):
        text = value.strip()
        match = _PERCENT_RE.match(text)
        if match:
            number = _decimal(match["num"]) / 100
        elif _PLAIN_RE.match(text):
            number = _decimal(text)
        else:
            raise QuantityError(f"expected a fraction like 0.6 or '60%', got {value!r}")
    else:
        number = _check_plain(value, "a fraction like 0.6 or '60%'")
    if not number.is_finite() or not (0 < number <= 1):
        raise QuantityError(f"a fraction must be above 0 and at most 1 (100%), got {value!r}")
    return float(number)
