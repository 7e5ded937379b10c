"""Tiered, compressed and evicting KV caches: tokens per tier and bytes, exact integers.

Notes
-----
Layers are passed grouped into :class:`Tier` s; every layer of a tier caches the same
token counts. A tier's layers see ``c = min(ctx, S)`` tokens (``S`` the model's sliding
window, ``None`` for global layers). A recent window of ``W`` tokens is kept in the
recent format and a fraction ``r = p / q`` of the ``x = max(c − W, 0)`` older tokens in
the history format (the others are evicted)::

    recent(c)   = min(c, W)
    history(c)  = ⌈r · x⌉ = ⌈p · x / q⌉                    (exact integer division)
    kv(c)       = recent(c) · b_recent + history(c) · b_history

``W = None`` means no tiers: every cached token is in the recent format (``kv = c · b``).

Eviction runs once every ``N`` new tokens. Between two passes the tokens that left the
window are not yet evaluated and wait in the recent format; ``d`` tokens after a pass
(``0 ≤ d ≤ N − 1``; the pass runs when the ``N``-th token arrives) the cache holds::

    d(c)        = min(N − 1, x)
    peak(c)     = max(kv(c), (recent(c) + d) · b_recent + ⌈r · (x − d)⌉ · b_history)

i.e. the worst phase ``d = N − 1``. ``peak`` is non-decreasing in ``c`` and equals ``kv``
when ``N = 1``, ``r = 1`` with equal formats, or ``x = 0``. A windowed layer never holds
more than its window: both formulas are taken at ``min(ctx, S)``.

References
----------
Liu et al., "KIVI" (2024) (recent window at full precision, older tokens quantized per
group); Zhang et al., "H2O" (2023) (keep a fraction of the history by importance);
Hooper et al., "KVQuant" (2024) (outlier channels kept at higher precision).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from kvplan.engine._ops import maximum, minimum
from kvplan.engine.maxctx import largest_fitting

NO_CONTEXT_FITS = -1


@dataclass(frozen=True)
class Tier:
    """Layers that cache the same token counts, with their summed bytes per token.

    ``window_tokens``: the model's sliding window (``None``: global layers);
    ``recent_tokens``: the policy's recent window W (``None``: no tiers, no eviction);
    ``ratio_num / ratio_den``: the fraction r of older tokens kept; ``evict_every``: N;
    ``recent_bytes_per_token`` / ``history_bytes_per_token``: K+V bytes one token takes
    in each format, summed over the tier's layers [bytes/token].
    """

    window_tokens: int | None
    recent_tokens: int | None
    ratio_num: int
    ratio_den: int
    evict_every: int
    recent_bytes_per_token: int
    history_bytes_per_token: int
    layers: int = 1

    @property
    def growth_bytes_per_token(self) -> float:
        """Bytes the tier adds per token for very long contexts (0 when it stops growing)."""
        if self.window_tokens is not None:
            return 0.0
        if self.recent_tokens is None:
            return float(self.recent_bytes_per_token)
        return self.ratio_num / self.ratio_den * self.history_bytes_per_token

    @property
    def saturation_tokens(self) -> float:
        """Context past which the tier stops growing [tokens] (``inf`` if it never does)."""
        if self.window_tokens is not None:
            return self.window_tokens
        if self.recent_tokens is not None and self.ratio_num == 0:
            return self.recent_tokens + self.evict_every - 1
        return math.inf


def _seen(ctx, tier: Tier):
    return ctx if tier.window_tokens is None else minimum(ctx, tier.window_tokens)


def _ceil_ratio(x, tier: Tier):
    """⌈p·x/q⌉ exactly for ints (and int arrays)."""
    return -((-tier.ratio_num * x) // tier.ratio_den)


def tier_tokens(ctx, tier: Tier):
    """(recent, history, deferred) tokens one layer of ``tier`` holds at ``ctx``.

    Parameters
    ----------
    ctx : int or ndarray [tokens]
        Context length of the sequence.
    tier : Tier
        The layers and the policy's W, r and N (their bytes per token in [bytes/token]).

    Returns
    -------
    tuple of numeric [tokens]
        ``recent = min(c, W)`` and ``history = ⌈r · x⌉`` (module Notes), the steady state right after an eviction
        pass; ``deferred = d = min(N − 1, x)``, the tokens waiting for the next pass at the peak.
    """
    c = _seen(ctx, tier)
    if tier.recent_tokens is None:
        return c, 0 * c, 0 * c
    older = maximum(c - tier.recent_tokens, 0)
    return c - older, _ceil_ratio(older, tier), minimum(older, tier.evict_every - 1)


def tier_kv_bytes(ctx, tier: Tier):
    """Steady-state bytes of one tier at ``ctx`` (right after an eviction pass).

    Parameters
    ----------
    ctx : int or ndarray [tokens]
        Context length of the sequence.
    tier : Tier
        The layers and the policy's W, r and N (their bytes per token in [bytes/token]).

    Returns
    -------
    numeric [bytes]
        ``recent(c) · b_recent + history(c) · b_history`` (module Notes).
    """
    recent, history, _ = tier_tokens(ctx, tier)
    return recent * tier.recent_bytes_per_token + history * tier.history_bytes_per_token


def tier_kv_peak_bytes(ctx, tier: Tier):
    """Most bytes one tier holds at ``ctx``: ``N − 1`` tokens past the window not yet evicted.

    Parameters
    ----------
    ctx : int or ndarray [tokens]
        Context length of the sequence.
    tier : Tier
        The layers and the policy's W, r and N (their bytes per token in [bytes/token]).

    Returns
    -------
    numeric [bytes]
        ``peak(c)`` of the module Notes (equal to :func:`tier_kv_bytes` when ``N = 1`` or without tiers).
    """
    recent, history, deferred = tier_tokens(ctx, tier)
    steady = recent * tier.recent_bytes_per_token + history * tier.history_bytes_per_token
    if tier.recent_tokens is None or tier.evict_every == 1:
        return steady
    older = maximum(_seen(ctx, tier) - tier.recent_tokens, 0)
    waiting = (recent + deferred) * tier.recent_bytes_per_token
    kept = _ceil_ratio(older - deferred, tier) * tier.history_bytes_per_token
    return maximum(steady, waiting + kept)


def kv_bytes(ctx, tiers: Sequence[Tier]):
    """Steady-state cache of one sequence at ``ctx`` tokens, summed over tiers.

    Parameters
    ----------
    ctx : int or ndarray [tokens]
        Context length of the sequence.
    tiers : sequence of Tier
        Every layer of the model, grouped.

    Returns
    -------
    numeric [bytes]
        ``Σ_tiers`` :func:`tier_kv_bytes`.
    """
    total = 0 * ctx
    for tier in tiers:
        total = total + tier_kv_bytes(ctx, tier)
    return total


def kv_peak_bytes(ctx, tiers: Sequence[Tier]):
    """Peak cache of one sequence at ``ctx`` tokens (tokens awaiting eviction included).

    Parameters
    ----------
    ctx : int or ndarray [tokens]
        Context length of the sequence.
    tiers : sequence of Tier
        Every layer of the model, grouped.

    Returns
    -------
    numeric [bytes]
        ``Σ_tiers`` :func:`tier_kv_peak_bytes`.
    """
    total = 0 * ctx
    for tier in tiers:
        total = total + tier_kv_peak_bytes(ctx, tier)
    return total


def floor_sum(n: int, m: int, a: int, b: int) -> int:
    """Σ_{i=0}^{n−1} ⌊(a·i + b) / m⌋ for integers n ≥ 0, m ≥ 1, a, b ≥ 0, in O(log) steps.

    Parameters
    ----------
    n : int [1]
        Terms.
    m : int [1]
        Divisor.
    a : int [1]
        Slope.
    b : int [1]
        Offset.

    Returns
    -------
    int [1]
        The sum.

    References
    ----------
    AtCoder Library, ``floor_sum`` (math.hpp).
    """
    total = 0
    while True:
        if a >= m:
            total += n * (n - 1) // 2 * (a // m)
            a %= m
        if b >= m:
            total += n * (b // m)
            b %= m
        y_max = a * n + b
        if y_max < m:
            return total
        n, b = divmod(y_max, m)
        m, a = a, m


def _sum_seen(m: int, tier: Tier) -> int:
    """Σ_{c=1..m} kv(c) of one tier for its seen context c (no window applied) [bytes]."""
    if tier.recent_tokens is None:
        return tier.recent_bytes_per_token * m * (m + 1) // 2
    w = tier.recent_tokens
    mm = min(m, w)
    recent = mm * (mm + 1) // 2 + w * (m - mm)
    older = max(m - w, 0)
    # Σ_{x=1..older} ⌈p·x/q⌉ = Σ_{x=0..older} ⌊(p·x + q − 1)/q⌋
    history = floor_sum(older + 1, tier.ratio_den, tier.ratio_num, tier.ratio_den - 1)
    return recent * tier.recent_bytes_per_token + history * tier.history_bytes_per_token


def _sum_over_generation_scalar(n: int, tiers: Sequence[Tier]) -> int:
    total = 0
    for tier in tiers:
        m = n if tier.window_tokens is None else min(n, tier.window_tokens)
        total += _sum_seen(m, tier) + (n - m) * tier_kv_bytes(m, tier)
    return total


def kv_bytes_sum_over_generation(n_tokens, tiers: Sequence[Tier]):
    """Σ_{k=1..n} kv(k): steady-state cache bytes read over a generation of n tokens.

    Parameters
    ----------
    n_tokens : int or ndarray [tokens]
        Tokens generated from an empty cache.
    tiers : sequence of Tier
        Every layer of the model, grouped.

    Returns
    -------
    numeric [bytes]
        Exact for integers (closed form with :func:`floor_sum`); element by element for arrays.
    """
    if isinstance(n_tokens, int | float):
        return _sum_over_generation_scalar(int(n_tokens), tiers)
    import numpy as np

    values = [float(_sum_over_generation_scalar(int(v), tiers)) for v in np.ravel(n_tokens)]
    return np.asarray(values).reshape(np.shape(n_tokens))


def _max_ctx_scalar(allowance: int, tiers: Sequence[Tier], ctx_limit) -> float:
    if allowance < 0:
        return NO_CONTEXT_FITS

    def fits(c: int) -> bool:
        return kv_peak_bytes(c, tiers) <= allowance

    if all(t.growth_bytes_per_token == 0 for t in tiers):
        top = max((t.saturation_tokens for t in tiers), default=0)
        if fits(int(top)):
            return ctx_limit
        lo, hi = 0, int(top)
    else:
        lo, hi = 0, 1
        while fits(hi):
            if hi >= ctx_limit:
                return ctx_limit
            lo, hi = hi, hi * 2
    return min(largest_fitting(fits, lo, hi), ctx_limit)


def max_context_tokens(allowance_bytes, tiers: Sequence[Tier], ctx_limit=math.inf):
    """Largest integer ``c`` with ``peak(c) ≤ allowance_bytes`` (exact integer search).

    Parameters
    ----------
    allowance_bytes : numeric [bytes]
        Cache bytes one sequence may use.
    tiers : sequence of Tier
        Every layer of the model, grouped.
    ctx_limit : numeric [tokens]
        The largest context worth reporting (``inf``: none).

    Returns
    -------
    numeric [tokens]
        ``-1`` when the allowance is negative; ``ctx_limit`` when every tier stops growing and the largest
        cache fits.

    Notes
    -----
    ``peak`` is a non-decreasing step function of ``c`` (the ``⌈r·x⌉`` terms), so the
    answer is found by doubling then bisection over integers, each step evaluated exactly.
    """
    if isinstance(allowance_bytes, int | float):
        best = _max_ctx_scalar(math.floor(allowance_bytes), tiers, ctx_limit)
        return int(best) if isinstance(best, float) and best.is_integer() else best
    import numpy as np

    values = [float(_max_ctx_scalar(math.floor(a), tiers, ctx_limit)) for a in np.ravel(allowance_bytes)]
    return np.asarray(values).reshape(np.shape(allowance_bytes))
