"""Human formatting of base-unit numbers. SI (GB = 10^9) by default, IEC (GiB = 2^30) on request."""

from __future__ import annotations

import math

_SI = ((10**15, "PB"), (10**12, "TB"), (10**9, "GB"), (10**6, "MB"), (10**3, "kB"))
_IEC = ((2**50, "PiB"), (2**40, "TiB"), (2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB"))


def bytes_(n: float | int, units: str = "si", digits: int = 2) -> str:
    """``4294967296`` → ``4.29 GB`` (or ``4.00 GiB``); negative sizes keep their sign.

    The sign is the ASCII hyphen-minus, as in exact bytes and percentages, so a copied figure
    pastes as a number.
    """
    if n is None:
        return "—"
    sign = "-" if n < 0 else ""
    n = abs(n)
    for scale, unit in _IEC if units == "iec" else _SI:
        if n >= scale:
            return f"{sign}{n / scale:.{digits}f} {unit}"
    return f"{sign}{n:,.0f} B"


def exact_bytes(n: int) -> str:
    return f"{n:,} B"


def rate(n: float, units: str = "si") -> str:
    return bytes_(n, units) + "/s"


def tokens(n: int | None) -> str:
    if n is None:
        return "—"
    return f"{n:,}"


def n_tokens(n: int) -> str:
    """``8,192 tokens``; ``1 token``."""
    return f"{n:,} token" + ("" if n == 1 else "s")


def tokens_short(n: float) -> str:
    """Axis-style token counts: 8192 → 8k, 131072 → 128k, 1048576 → 1M."""
    if n >= 2**20 and n % 2**20 == 0:
        return f"{int(n // 2**20)}M"
    if n >= 2**10 and n % 2**10 == 0:
        return f"{int(n // 2**10)}k"
    return f"{int(n):,}"


def per_s(x: float) -> str:
    if x is None or not math.isfinite(x):
        return "—"
    return f"{x:,.1f}" if x < 100 else f"{x:,.0f}"


# The unit a long duration is printed in: the largest whose count stays at least 2 (120 s is "2.0 min"; a flash read
# of 7.9 years was "4161015.9 min"), with digit groups past that (1,234.5 years).
_LONG_UNITS = ((365.25 * 86400, "years"), (86400, "d"), (3600, "h"), (60, "min"))


def seconds(x: float) -> str:
    if x < 1e-3:
        return f"{x * 1e6:.0f} µs"
    if x < 1:
        return f"{x * 1e3:.0f} ms"
    if x < 120:
        return f"{x:.2f} s"
    scale, unit = next((scale, unit) for scale, unit in _LONG_UNITS if x >= 2 * scale or unit == "min")
    return f"{x / scale:,.1f} {unit}"


def percent(x: float) -> str:
    return f"{x * 100:.1f} %"


def percent_beside(x: float, other: float) -> str:
    """``x`` as a percentage with enough decimals that it never reads equal to ``other`` unless it is
    (a headroom of 9.97 % beside a 10.0 % margin must not show as 10.0 %)."""
    for decimals in range(1, 7):
        text = f"{x * 100:.{decimals}f}"
        if x == other or text != f"{other * 100:.{decimals}f}":
            return f"{text} %"
    return f"{x * 100:.6f} %"


def bits(x: float) -> str:
    return f"{x:g}"
