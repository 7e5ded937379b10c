"""Element-wise helpers that keep Python numbers Python and arrays numpy.

``kvplan check`` must not import numpy, yet every engine function also takes arrays
for sweeps. These helpers use the builtins for plain numbers and numpy only when an
array (whose caller already imported numpy) is involved.
"""

from __future__ import annotations

import sys

_SCALARS = (int, float)


def _is_scalar(*values) -> bool:
    return all(isinstance(v, _SCALARS) for v in values)


def _np():
    # numpy is already imported whenever an array reached us; this is a dict lookup.
    return sys.modules.get("numpy") or __import__("numpy")


def minimum(a, b):
    if _is_scalar(a, b):
        return a if a <= b else b
    return _np().minimum(a, b)


def maximum(a, b):
    if _is_scalar(a, b):
        return a if a >= b else b
    return _np().maximum(a, b)


def where(condition, a, b):
    if isinstance(condition, bool) and _is_scalar(a, b):
        return a if condition else b
    return _np().where(condition, a, b)


def floor_div(a, b):
    """Floor of a / b; exact for Python ints, float64 floor for arrays."""
    if isinstance(a, int) and isinstance(b, int):
        return a // b
    if _is_scalar(a, b):
        return float(a // b)
    return _np().floor_divide(a, b)


def ceil(a):
    if isinstance(a, int):
        return a
    if isinstance(a, float):
        return int(-(-a // 1))
    return _np().ceil(a)


def as_int_if_whole(a):
    """Return whole floats as int, leave everything else alone (keeps scalar byte counts exact)."""
    if isinstance(a, float) and a.is_integer() and abs(a) < 2**63:
        return int(a)
    return a
