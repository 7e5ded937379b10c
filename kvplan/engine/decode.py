"""Decode speed from memory bandwidth and a fixed cost per step.

Notes
-----
Decode is memory-bound: every step streams the weights and the whole cache once, and
pays a fixed latency (kernel launches, synchronisation, sampling) on top::

    bytes_per_step(t)  = weights_read + kv_bytes(t)
    time_per_token(t)  = bytes_per_step(t) / (memory_bandwidth · bandwidth_efficiency) + latency
    decode_tok_s(t)    = 1 / time_per_token(t)

``weights_read`` is the weights less the input-embedding table (one row of it is read
per token). With ``sequences`` decoded together, one step reads the weights once and
every sequence's cache, and yields one token per sequence. ``latency = 0`` is the pure
bandwidth (roofline-shaped) model; the roofline itself is efficiency 1, latency 0.

Rates are computed as ``B / (bytes + latency · B)`` with ``B = bandwidth · efficiency``:
algebraically ``1 / time_per_token``, and with ``latency = 0`` bit-for-bit the
one-term ``B / bytes``.

References
----------
Williams et al., "Roofline" (CACM 2009); Kim et al., "SqueezeLLM" (2023) §2 on
memory-bound decode; llama.cpp discussion #4167 (Apple M-series tg128 in three formats:
the data that need the latency term, see :mod:`kvplan.engine.calibration`).
"""

from __future__ import annotations


def bytes_per_step(weights_read, kv_bytes_read):
    """Bytes streamed from memory for one decode step.

    Parameters
    ----------
    weights_read : numeric [bytes]
        Weights one step reads (the weights less the input-embedding table).
    kv_bytes_read : numeric [bytes]
        Cache one step reads (every sequence's, and a pinned prefix's).

    Returns
    -------
    numeric [bytes]
        ``weights_read + kv_bytes_read`` (module Notes: ``bytes_per_step(t)``).
    """
    return weights_read + kv_bytes_read


def decode_tokens_per_s(memory_bandwidth_bytes_per_s, bytes_per_step, bandwidth_efficiency=1.0, latency_s=0.0):
    """Decode steps per second [1/s].

    Parameters
    ----------
    memory_bandwidth_bytes_per_s : numeric [bytes/s] peak bandwidth
    bytes_per_step : numeric [bytes] bytes streamed in one step
    bandwidth_efficiency : numeric [1] fraction of the peak streaming reaches
    latency_s : numeric [s] fixed cost per step (0: the pure bandwidth model)

    Returns
    -------
    numeric [1/s]
        ``B / (bytes_per_step + latency_s · B)``, ``B = bandwidth · efficiency``
        (= ``1 / (bytes / B + latency)``).
    """
    effective = memory_bandwidth_bytes_per_s * bandwidth_efficiency
    return effective / (bytes_per_step + latency_s * effective)


def mean_decode_tokens_per_s(n_tokens, weights_read, kv_bytes_read_over_generation,
                             memory_bandwidth_bytes_per_s, bandwidth_efficiency=1.0, latency_s=0.0):
    """Average rate over a generation of ``n_tokens`` from an empty cache.

    Parameters
    ----------
    n_tokens : numeric [tokens]
        Tokens generated.
    weights_read : numeric [bytes]
        Weights one step reads.
    kv_bytes_read_over_generation : numeric [bytes]
        ``Σ_k kv(k)`` over the steps (:func:`kvplan.engine.kv.kv_bytes_sum_over_generation`).
    memory_bandwidth_bytes_per_s : numeric [bytes/s]
        Peak memory bandwidth.
    bandwidth_efficiency : numeric [1]
        Fraction of the peak streaming reaches (0–1].
    latency_s : numeric [s]
        Fixed cost per step.

    Returns
    -------
    numeric [tokens/s]
        ``n / Σ_k time_k``.

    Notes
    -----
    ``time_k = (weights_read + kv(k)) / B + latency`` with ``B = bandwidth · efficiency``, so the mean rate is
    ``n · B / (n · weights_read + Σ_k kv(k) + n · latency · B)``; for a cache growing linearly this equals the
    instantaneous rate at about half the length.
    """
    effective = memory_bandwidth_bytes_per_s * bandwidth_efficiency
    total_bytes = n_tokens * weights_read + kv_bytes_read_over_generation
    # (n · bandwidth) · efficiency as the one-term formula always multiplied: equal bits when latency is 0
    return n_tokens * memory_bandwidth_bytes_per_s * bandwidth_efficiency / (total_bytes + n_tokens * latency_s * effective)


def step_bytes_at_rate(target_tokens_per_s, memory_bandwidth_bytes_per_s, bandwidth_efficiency=1.0,
                       latency_s=0.0):
    """The most bytes one step may stream and still decode at ``target_tokens_per_s``.

    Parameters
    ----------
    target_tokens_per_s : numeric [tokens/s]
        The decode rate to reach (> 0).
    memory_bandwidth_bytes_per_s : numeric [bytes/s]
        Peak memory bandwidth.
    bandwidth_efficiency : numeric [1]
        Fraction of the peak streaming reaches (0–1].
    latency_s : numeric [s]
        Fixed cost per step.

    Returns
    -------
    numeric [bytes]
        ``min(B / target − latency · B, MAX_STEP_BYTES)``; negative when the latency alone exceeds the time a
        token may take (no context reaches the target).

    Notes
    -----
    ``bytes / B + latency ≤ 1 / target``  ⇔  ``bytes ≤ B / target − latency · B``
    (``B = bandwidth · efficiency``). At most :data:`MAX_STEP_BYTES`: a target so slow (1e-300 tok/s)
    that any step meets it stays a finite, exact-integer figure.
    """
    from kvplan.engine._ops import minimum

    effective = memory_bandwidth_bytes_per_s * bandwidth_efficiency
    return minimum(effective / target_tokens_per_s - latency_s * effective, MAX_STEP_BYTES)


MAX_STEP_BYTES = float(2**62)  # far beyond any memory: "no limit" as a number floor() and int64 can hold


# --- Two-term speed model: bandwidth plus a fixed per-step latency -------------------


def time_per_token_s(bytes_per_step, memory_bandwidth_bytes_per_s, bandwidth_efficiency=1.0, latency_s=0.0):
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


def aggregate_tokens_per_s(bytes_per_step, sequences, memory_bandwidth_bytes_per_s, bandwidth_efficiency=1.0,
                           latency_s=0.0):
    """Tokens per second summed over ``sequences`` decoded together.

    Parameters
    ----------
    bytes_per_step : numeric [bytes]
        Bytes one step streams: the weights once plus every sequence's cache.
    sequences : numeric [count]
        Sequences decoded together (one token each per step).
    memory_bandwidth_bytes_per_s : numeric [bytes/s]
        Peak memory bandwidth.
    bandwidth_efficiency : numeric [1]
        Fraction of the peak streaming reaches (0–1].
    latency_s : numeric [s]
        Fixed cost per step.

    Returns
    -------
    numeric [tokens/s]
        ``sequences / time_per_token_s(bytes_per_step, …)``.

    Notes
    -----
    A step yields one token per sequence. The latency is taken as a per-step constant,
    independent of the batch (an assumption: the calibration data are batch-1 llama-bench
    ``tg`` runs).
    """
    return sequences / time_per_token_s(bytes_per_step, memory_bandwidth_bytes_per_s,
                                        bandwidth_efficiency, latency_s)
