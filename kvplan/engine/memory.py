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
    """Bytes of the weights at a uniform width.

    Parameters
    ----------
    params : numeric [count]
        Parameter count.
    weight_bits : numeric [bits/param]
        Bits per parameter, may be fractional (q4_0 is 4.5).

    Returns
    -------
    numeric [bytes]
        ``ceil(params · weight_bits / 8)``.
    """
    return ceil(params * weight_bits / 8)


def embedding_bytes(vocab_size, hidden_size, weight_bits):
    """Bytes of the input-embedding table.

    Parameters
    ----------
    vocab_size : numeric [tokens]
        Rows of the table (one per vocabulary entry).
    hidden_size : numeric [values]
        Width of a row.
    weight_bits : numeric [bits/param]
        Bits per stored value.

    Returns
    -------
    numeric [bytes]
        ``ceil(vocab_size · hidden_size · weight_bits / 8)``.

    Notes
    -----
    Decode reads one row of it per token, not all of it, so it is left out of the
    bytes streamed per token (when it is not tied to the output layer).
    """
    return ceil(vocab_size * hidden_size * weight_bits / 8)


def budget_bytes(ram_bytes, os_reserve_bytes, app_limit_bytes=None):
    """Memory the model may use.

    Parameters
    ----------
    ram_bytes : numeric [bytes]
        The device's RAM.
    os_reserve_bytes : numeric [bytes]
        What the OS and other programs keep.
    app_limit_bytes : numeric or None [bytes]
        The most one app (process) may hold before the OS kills it — iOS's per-app limit, a cgroup's
        ``memory.max`` — or None where there is no fixed per-app cap.

    Returns
    -------
    numeric [bytes]
        ``ram_bytes − os_reserve_bytes``, or ``min(ram_bytes − os_reserve_bytes, app_limit_bytes)``.

    References
    ----------
    Apple, ``os_proc_available_memory`` ("the amount of memory available to the current app … before the system
    terminates it"), https://developer.apple.com/documentation/os/os_proc_available_memory ; the Linux kernel's
    cgroup v2 ``memory.max`` ("the OOM killer is invoked" past it),
    https://docs.kernel.org/admin-guide/cgroup-v2.html#memory-interface-files .
    """
    available = ram_bytes - os_reserve_bytes
    if app_limit_bytes is None:
        return available
    from kvplan.engine._ops import minimum

    return minimum(available, app_limit_bytes)


def total_bytes(weights, kv_bytes_per_sequence, sequences=1, pinned_kv=0, overhead=0):
    """Everything resident.

    Parameters
    ----------
    weights : numeric [bytes]
        The weights as loaded.
    kv_bytes_per_sequence : numeric [bytes]
        One sequence's cache.
    sequences : numeric [count]
        Sequences held at once.
    pinned_kv : numeric [bytes]
        The pinned prefix's cache (held once, shared).
    overhead : numeric [bytes]
        Runtime overhead and buffers.

    Returns
    -------
    numeric [bytes]
        ``weights + kv_bytes_per_sequence · sequences + pinned_kv + overhead``.
    """
    return weights + kv_bytes_per_sequence * sequences + pinned_kv + overhead


def headroom_bytes(budget, total):
    """What is left of the budget.

    Parameters
    ----------
    budget : numeric [bytes]
        :func:`budget_bytes`.
    total : numeric [bytes]
        :func:`total_bytes`.

    Returns
    -------
    numeric [bytes]
        ``budget − total``; negative when over.
    """
    return budget - total


def verdict_code(headroom, budget, margin_fraction=DEFAULT_MARGIN_FRACTION):
    """The verdict as a code: 0 fit, 1 tight, 2 over (index :data:`VERDICTS`).

    Parameters
    ----------
    headroom : numeric [bytes]
        :func:`headroom_bytes`.
    budget : numeric [bytes]
        :func:`budget_bytes`.
    margin_fraction : float [1]
        The part of the budget under which a fit is ``tight`` (0–1).

    Returns
    -------
    int or ndarray [1]
        2 when ``headroom < 0``, 1 when ``headroom < margin_fraction · budget``, else 0.
    """
    return where(headroom < 0, 2, where(headroom < margin_fraction * budget, 1, 0))
