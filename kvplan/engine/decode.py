"""Decode speed from memory bandwidth.

Notes
-----
Decode is memory-bound: every step streams the weights and the whole cache once::

    bytes_per_token(t) = weights_read + kv_bytes(t)
    decode_tok_s(t)    = memory_bandwidth · bandwidth_efficiency / bytes_per_token(t)

``weights_read`` is the weights less the input-embedding table (one row of it is read
per token). With ``sequences`` decoded together, one step reads the weights once and
every sequence's cache, and yields one token per sequence.

References
----------
Williams et al., "Roofline" (CACM 2009); Kim et al., "SqueezeLLM" (2023) §2 on
memory-bound decode.
"""

from __future__ import annotations


def bytes_per_token(weights_read, kv_bytes_read):
    """Bytes streamed from memory for one decode step [bytes]."""
    return weights_read + kv_bytes_read


def decode_tokens_per_s(memory_bandwidth_bytes_per_s, bytes_per_step, bandwidth_efficiency=1.0):
    """Decode steps per second: ``bandwidth · efficiency / bytes_per_step`` [1/s]."""
    return memory_bandwidth_bytes_per_s * bandwidth_efficiency / bytes_per_step


def mean_decode_tokens_per_s(n_tokens, weights_read, kv_bytes_read_over_generation,
                             memory_bandwidth_bytes_per_s, bandwidth_efficiency=1.0):
    """Average rate over a generation of ``n_tokens`` from an empty cache [tokens/s].

    ``n / Σ_k time_k`` with ``time_k = (weights_read + kv(k)) / bandwidth``; for a
    cache growing linearly this equals the instantaneous rate at about half the length.
    """
    total_bytes = n_tokens * weights_read + kv_bytes_read_over_generation
    return n_tokens * memory_bandwidth_bytes_per_s * bandwidth_efficiency / total_bytes


# --- Two-term speed model: bandwidth plus a fixed per-step latency -------------------


def seconds_per_token(bytes_per_step, memory_bandwidth_bytes_per_s, bandwidth_efficiency=1.0, latency_s=0.0):
    """Time of one decode step with a fixed per-step latency [s].

    Parameters
    ----------
    bytes_per_step : numeric [bytes]
        Bytes streamed from memory in one step (weights read plus every cache read).
    memory_bandwidth_bytes_per_s : numeric [bytes/s]
        Peak (roofline) memory bandwidth.
    bandwidth_efficiency : numeric [1]
        Fraction of the peak reached by streaming (0–1].
    latency_s : numeric [s]
        Fixed cost of one step that does not scale with bytes: kernel launches,
        synchronisation, sampling (``decode_latency`` in a device profile).

    Returns
    -------
    numeric [s]
        ``bytes_per_step / (bandwidth_efficiency · memory_bandwidth) + latency_s``.

    Notes
    -----
    With ``latency_s = 0`` this is the reciprocal of :func:`decode_tokens_per_s`. The
    latency term is what published llama.cpp results need on top of the roofline: on the
    Apple M-series table of llama.cpp discussion #4167 (LLaMA-7B F16/Q8_0/Q4_0 tg128),
    two formats fix bandwidth and latency and predict the third (see
    ``kvplan.engine.calibration`` and ``tests/unit/test_calibration.py``).
    """
    return bytes_per_step / (memory_bandwidth_bytes_per_s * bandwidth_efficiency) + latency_s


def per_sequence_tokens_per_s(bytes_per_step, memory_bandwidth_bytes_per_s, bandwidth_efficiency=1.0,
                              latency_s=0.0):
    """Tokens per second seen by each sequence: one token per step [tokens/s].

    ``1 / seconds_per_token(...)``. With ``sequences`` decoded together,
    ``bytes_per_step`` is the weights once plus every sequence's cache, and each
    sequence still gets one token per step.
    """
    return 1.0 / seconds_per_token(bytes_per_step, memory_bandwidth_bytes_per_s,
                                   bandwidth_efficiency, latency_s)


def aggregate_tokens_per_s(bytes_per_step, sequences, memory_bandwidth_bytes_per_s, bandwidth_efficiency=1.0,
                           latency_s=0.0):
    """Tokens per second summed over ``sequences`` decoded together [tokens/s].

    ``sequences / seconds_per_token(...)``: a step yields one token per sequence. The
    latency is taken as a per-step constant, independent of the batch (an assumption:
    the calibration data are batch-1 llama-bench ``tg`` runs).
    """
    return sequences / seconds_per_token(bytes_per_step, memory_bandwidth_bytes_per_s,
                                         bandwidth_efficiency, latency_s)


def mean_seconds_per_token(n_tokens, weights_read, kv_bytes_read_over_generation,
                           memory_bandwidth_bytes_per_s, bandwidth_efficiency=1.0, latency_s=0.0):
    """Mean step time over a generation of ``n_tokens`` from an empty cache [s].

    ``Σ_k time_k / n = (n · weights_read + Σ_k kv(k)) / (n · efficiency · bandwidth) + latency``;
    its reciprocal is :func:`mean_decode_tokens_per_s` when ``latency_s = 0``.
    """
    total_bytes = n_tokens * weights_read + kv_bytes_read_over_generation
    return total_bytes / (n_tokens * memory_bandwidth_bytes_per_s * bandwidth_efficiency) + latency_s
