"""Memory totals against the device budget, and the verdict.

Notes
-----
::

    weights   = params · weight_bits / 8            (rounded up to a whole byte)
    budget    = ram − os_reserve
    total     = weights + kv_bytes(ctx) · sequences + pinned prefix KV + runtime overhead
    headroom  = budget − total

Verdict: ``over`` when headroom < 0, ``tight`` when 0 ≤ headroom < margin · budget,
``fit`` otherwise. The margin (default 10 % of the budget) is where activations,
allocator fragmentation and the OS's low-memory killer live.
"""

from __future__ import annotations

from enum import Enum

from kvplan.engine._ops import ceil, where

DEFAULT_MARGIN_FRACTION = 0.10


class Verdict(str, Enum):
    FIT = "fit"
    TIGHT = "tight"
    OVER = "over"


# Numeric codes let sweeps carry verdicts in arrays; index VERDICTS by code.
VERDICTS = (Verdict.FIT, Verdict.TIGHT, Verdict.OVER)


def weights_bytes(params, weight_bits):
    """Bytes of the weights: ``ceil(params · weight_bits / 8)``.

    Parameters
    ----------
    params : numeric [count]
    weight_bits : numeric [bits/param], may be fractional (q4_0 is 4.5)
    """
    return ceil(params * weight_bits / 8)


def embedding_bytes(vocab_size, hidden_size, weight_bits):
    """Bytes of the input-embedding table, ``vocab · hidden · bits / 8``.

    Decode reads one row of it per token, not all of it, so it is left out of the
    bytes streamed per token (when it is not tied to the output layer).
    """
    return ceil(vocab_size * hidden_size * weight_bits / 8)


def budget_bytes(ram_bytes, os_reserve_bytes):
    """Memory the model may use: ``ram − os_reserve`` [bytes]."""
    return ram_bytes - os_reserve_bytes


def total_bytes(weights, kv_bytes_per_sequence, sequences=1, pinned_kv=0, overhead=0):
    """Everything resident: weights + KV · sequences + pinned prefix KV + runtime overhead [bytes]."""
    return weights + kv_bytes_per_sequence * sequences + pinned_kv + overhead


def headroom_bytes(budget, total):
    """``budget − total`` [bytes]; negative when over."""
    return budget - total


def verdict_code(headroom, budget, margin_fraction=DEFAULT_MARGIN_FRACTION):
    """0 fit, 1 tight, 2 over (index :data:`VERDICTS`)."""
    return where(headroom < 0, 2, where(headroom < margin_fraction * budget, 1, 0))
