"""The largest context that fits, in closed form, exact to the token.

Notes
-----
``kv_bytes(c)`` is piecewise linear and non-decreasing in ``c``: between consecutive
windows ``w_j ≤ c ≤ w_{j+1}`` it is ``slope_j · c + const_j`` where ``slope_j`` sums
the bytes/token of the global layers and of the windows not yet full, and ``const_j``
the full windows' ``bytes · w``. For an allowance ``A`` of cache bytes per sequence the
answer is, over the segments whose start still fits, ``min(hi_j, ⌊(A − const_j) / slope_j⌋)``.
When every layer is windowed the cache stops growing past the largest window, so the
answer is unbounded (capped at ``ctx_limit``, the model's trained context, when given).
"""

from __future__ import annotations

import math

from kvplan.engine._ops import floor_div, maximum, minimum, where
from kvplan.engine.kv import Windows, kv_bytes

NO_CONTEXT_FITS = -1


def kv_allowance_bytes(available_bytes, sequences=1):
    """Cache bytes one sequence may use.

    Parameters
    ----------
    available_bytes : numeric [bytes]
        The budget left for the cache of all sequences.
    sequences : numeric [count]
        Sequences sharing it.

    Returns
    -------
    numeric [bytes]
        ``⌊available_bytes / sequences⌋``.
    """
    return floor_div(available_bytes, sequences)


def largest_fitting(fits, lo: int, hi: int) -> int:
    """The largest integer in ``[lo, hi)`` for which ``fits`` holds, by bisection.

    Parameters
    ----------
    fits : callable
        ``fits(n) -> bool``; ``fits(lo)`` holds and ``fits(hi)`` does not.
    lo : int [tokens]
        A value that fits (usually a context length).
    hi : int [tokens]
        A value that does not.

    Returns
    -------
    int [tokens]
        Exact when ``fits`` never turns true again once false; otherwise a value that fits with the next one
        not fitting (a caller that knows its predicate can dip, like llama.cpp's buffers, searches on from there).
    """
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


def max_context_tokens(allowance_bytes, global_bytes_per_token, windows: Windows = (), ctx_limit=math.inf):
    """Largest integer ``c`` with ``kv_bytes(c) ≤ allowance_bytes``.

    Parameters
    ----------
    allowance_bytes : numeric [bytes] cache bytes available to one sequence
    global_bytes_per_token : int [bytes/token]
    windows : sequence of (window [tokens], bytes_per_token [bytes/token])
    ctx_limit : numeric [tokens] upper cap (``inf``: none)

    Returns
    -------
    numeric [tokens]; ``-1`` (:data:`NO_CONTEXT_FITS`) when even an empty cache does
    not fit (the allowance is negative); ``inf`` when unbounded and uncapped.
    """
    windows = sorted((w, b) for w, b in windows if b)
    bounds = [0] + [w for w, _ in windows] + [math.inf]
    best = NO_CONTEXT_FITS
    for j in range(len(bounds) - 1):
        lo, hi = bounds[j], bounds[j + 1]
        slope = global_bytes_per_token + sum(b for w, b in windows if w > lo)
        const = sum(b * w for w, b in windows if w <= lo)
        fits_start = kv_bytes(lo, global_bytes_per_token, windows) <= allowance_bytes
        if slope == 0:
            candidate = hi
        else:
            candidate = minimum(floor_div(allowance_bytes - const, slope), hi)
        best = where(fits_start, maximum(best, candidate), best)
    best = minimum(best, ctx_limit)
    return _exact(best)


def _exact(value):
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value
