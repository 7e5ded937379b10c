"""The cost of keeping part of the cache on flash.

Notes
-----
When ``total > budget`` the overflow lives on flash::

    swap_in_s       = kv_bytes / flash_read
    streamed        = min(overflow, bytes_per_token)     (the part of a step that is on flash)
    seconds/token   = (bytes_per_token − streamed) / bandwidth + streamed / flash_read
    slowdown        = seconds/token ÷ (bytes_per_token / bandwidth)

``bandwidth`` is the effective memory bandwidth (roofline × efficiency).
"""

from __future__ import annotations

from kvplan.engine._ops import maximum, minimum


def overflow_bytes(total, budget):
    """Bytes that do not fit in the budget (0 when it fits) [bytes]."""
    return maximum(total - budget, 0)


def swap_in_s(kv_bytes, flash_read_bytes_per_s):
    """Time to read the cache back from flash [s]."""
    return kv_bytes / flash_read_bytes_per_s


def streamed_time_per_token_s(bytes_per_step, overflow, effective_bandwidth_bytes_per_s,
                               flash_read_bytes_per_s):
    """Seconds per decode step when the overflow is streamed from flash every step [s]."""
    streamed = minimum(overflow, bytes_per_step)
    return (bytes_per_step - streamed) / effective_bandwidth_bytes_per_s + streamed / flash_read_bytes_per_s
