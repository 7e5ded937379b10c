"""One text form for the numbers of every CSV kvplan writes (sweep, compare, fit).

Whole figures (bytes, tokens, counts) are integers. Rates and seconds have :data:`FLOAT_DECIMALS`
fixed decimals (µs and 10⁻⁶ tok/s). Bits per weight are a setting, not a measurement: the shortest
text that reads back as the same number (``4``, not ``4.0``; ``4.5``; ``4.8359375``). Empty: none.
"""

from __future__ import annotations

import math

FLOAT_DECIMALS = 6


def fixed(x: float | None) -> str:
    """``8.4123456789`` → ``8.412346``; None, NaN and infinity → empty."""
    if x is None or not math.isfinite(x):
        return ""
    return f"{x:.{FLOAT_DECIMALS}f}"


def bits(x: float | None) -> str:
    """``4.0`` → ``4``, ``4.5`` → ``4.5`` (exact: ``repr`` of the float, without a trailing ``.0``)."""
    if x is None:
        return ""
    x = float(x)
    return str(int(x)) if x.is_integer() else repr(x)
