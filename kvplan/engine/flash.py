"""The cost of keeping part of the cache on flash.

Notes
-----
When ``total > budget`` the overflow lives on flash::

    swap_in_s       = kv_bytes / flash_read
    streamed        = min(overflow, bytes_per_step)      (the part of a step that is on flash)
    seconds/token   = (bytes_per_step − streamed) / bandwidth + streamed / flash_read
    slowdown        = seconds/token ÷ (bytes_per_step / bandwidth)

``bandwidth`` is the effective memory bandwidth (roofline × efficiency).
"""

from __future__ import annotations

from kvplan.engine._ops import maximum, minimum


def overflow_bytes(total, budget):
    """Bytes that do not fit in the budget (0 when it fits).

    Parameters
    ----------
    total : numeric [bytes]
        Everything resident (:func:`kvplan.engine.memory.total_bytes`).
    budget : numeric [bytes]
        Memory the model may use (:func:`kvplan.engine.memory.budget_bytes`).

    Returns
    -------
    numeric [bytes]
        ``max(total − budget, 0)``.
    """
    return maximum(total - budget, 0)


def swap_in_s(kv_bytes, flash_read_bytes_per_s):
    """Time to read the cache back from flash.

    Parameters
    ----------
    kv_bytes : numeric [bytes]
        The cache (or the part of it) read back.
    flash_read_bytes_per_s : numeric [bytes/s]
        Sequential flash read rate.

    Returns
    -------
    numeric [s]
        ``kv_bytes / flash_read_bytes_per_s``.
    """
    return kv_bytes / flash_read_bytes_per_s


def streamed_time_per_token_s(bytes_per_step, overflow, effective_bandwidth_bytes_per_s,
                               flash_read_bytes_per_s):
    """Time of one decode step when the overflow is streamed from flash every step.

    Parameters
    ----------
    bytes_per_step : numeric [bytes]
        Bytes one decode step reads (:func:`kvplan.engine.decode.bytes_per_step`).
    overflow : numeric [bytes]
        The steady-state bytes beyond the budget (:func:`overflow_bytes`), on flash.
    effective_bandwidth_bytes_per_s : numeric [bytes/s]
        Memory bandwidth as reached (roofline × efficiency).
    flash_read_bytes_per_s : numeric [bytes/s]
        Flash read rate.

    Returns
    -------
    numeric [s]
        ``(bytes_per_step − streamed) / effective_bandwidth + streamed / flash_read`` with
        ``streamed = min(overflow, bytes_per_step)`` (module Notes); no per-step latency.
    """
    streamed = minimum(overflow, bytes_per_step)
    return (bytes_per_step - streamed) / effective_bandwidth_bytes_per_s + streamed / flash_read_bytes_per_s
