"""Prefill cost: the compute to process a prompt, and the time it takes.

Notes
-----
Prefill is compute-bound. Processing ``T`` prompt tokens costs::

    flops(T) = 2 · P_active · T  +  2 · L · T² · H · d  +  F_state · T

The first term is one multiply-add (2 FLOPs) per active parameter per token (the
matrix multiplications of every layer and the output head). The second is causal
attention: per layer and head, ``Q·Kᵀ`` and ``softmax·V`` are each ``T² · d``
multiply-adds over the full square, and causality halves the square, so
``2 · (2 · T² · d) / 2 = 2 · T² · d`` FLOPs per head per layer. ``L`` is the number
of layers, ``H`` the attention (query) heads and ``d`` the head dimension. Windowed
layers and softmax/normalisation FLOPs are ignored (an upper bound on the attention
term, a lower bound on the rest). In a hybrid, ``L`` counts the layers that attend only; its state
layers add ``F_state`` FLOPs per token (their conv and recurrent scan, beyond the projections that
``P_active`` counts: :func:`kvplan.engine.state.state_flops_per_token`), linear in ``T``.

    prefill_s(T) = max(flops(T) / (compute · compute_efficiency),
                       ceil(T / n_ubatch) · weights_read / (bandwidth · bandwidth_efficiency))

The first term is the compute time (``compute`` the device's peak or sustained FLOP/s,
``compute_efficiency`` the share prefill sustains). The second is a floor: a runtime
processes the prompt in micro-batches of ``n_ubatch`` tokens (llama.cpp ``-ub``, 512 by
default) and every micro-batch streams the weights once, so a short prompt on a slow
memory is bound by bandwidth, not FLOPs.

Recomputing a pinned prefix of ``T_p`` tokens instead of keeping its cache resident
costs ``prefill_s(T_p)`` before every request that needs it. The two terms are
:func:`prefill_compute_s` and :func:`prefill_memory_s`; :func:`kvplan.plan.evaluation.prefill_s_of` takes the
larger.

References
----------
Kaplan et al., "Scaling Laws for Neural Language Models" (2020), §2.1 (C ≈ 2N per
token); Chinchilla (Hoffmann et al. 2022), Appendix F (attention FLOPs).
"""

from __future__ import annotations


def prefill_flops(tokens, params_active, layers=0, attention_heads=0, head_dim=0, state_flops_per_token=0):
    """FLOPs to prefill ``tokens`` prompt tokens.

    Parameters
    ----------
    tokens : numeric [tokens]
    params_active : numeric [count] parameters used per token (all of them for a dense model)
    layers, attention_heads, head_dim : numeric [count] (0 leaves out the attention term); ``layers`` counts the
        layers that attend (a hybrid's state layers do not)
    state_flops_per_token : numeric [FLOP/token] the state layers' own mixing, summed over them
        (:func:`kvplan.engine.state.state_flops_per_token`; 0 without state layers)

    Returns
    -------
    numeric [FLOP] ``2 · params_active · tokens + 2 · layers · tokens² · attention_heads · head_dim
    + state_flops_per_token · tokens``
    """
    return (2 * params_active * tokens + 2 * layers * tokens * tokens * attention_heads * head_dim
            + state_flops_per_token * tokens)


def schedule_state_flops_per_token(schedule) -> int:
    """The state layers' own mixing FLOPs per token, summed over a schedule.

    Parameters
    ----------
    schedule : Schedule
        The model's layers (:class:`~kvplan.engine.schedule.Schedule`).

    Returns
    -------
    int [FLOP/token]
        Σ over its state layers of :func:`kvplan.engine.state.state_flops_per_token`; 0 without any.
    """
    from kvplan.engine.state import state_flops_per_token

    return sum(count * state_flops_per_token(layer.mixer, layer.conv_channels, layer.conv_kernel_tokens,
                                             layer.recurrent_values)
               for count, layer in schedule.groups() if layer.kind == "state")


# --- Prefill after a cached context, and time to first token -------------------------


def prefill_flops_at_depth(tokens, depth, params_active, layers=0, attention_heads=0, head_dim=0):
    """FLOPs to prefill ``tokens`` new prompt tokens after ``depth`` cached tokens.

    Parameters
    ----------
    tokens : numeric [tokens] new tokens processed (llama-bench ``n_prompt``)
    depth : numeric [tokens] tokens already in the cache (llama-bench ``n_depth``)
    params_active : numeric [count]
    layers, attention_heads, head_dim : numeric [count] (0 leaves out the attention term)

    Returns
    -------
    numeric [FLOP]
        ``2 · P · T + 2 · L · H · d · (T² + 2 · T · depth)``.

    Notes
    -----
    New token ``i`` (0-based) attends to ``depth + i`` keys; ``Q·Kᵀ`` and ``softmax·V``
    cost ``2 · d`` FLOPs each per key, so attention is
    ``4 · L · H · d · Σ_i (depth + i) ≈ 4 · L · H · d · (T · depth + T²/2)``. With
    ``depth = 0`` this is :func:`prefill_flops`.
    """
    return (2 * params_active * tokens
            + 2 * layers * attention_heads * head_dim * (tokens * tokens + 2 * tokens * depth))


DEFAULT_N_UBATCH = 512  # llama.cpp's -ub default (common/common.h); used where the runtime gives none


def prefill_compute_s(flops, compute_flop_per_s, compute_efficiency=1.0):
    """Prefill time if compute were the only limit.

    Parameters
    ----------
    flops : numeric [FLOP]
        Work of the prompt (:func:`prefill_flops`).
    compute_flop_per_s : numeric [FLOP/s]
        Sustained compute of the device.
    compute_efficiency : numeric [1]
        Fraction of it prefill reaches (0–1].

    Returns
    -------
    numeric [s]
        ``flops / (compute_flop_per_s · compute_efficiency)``.
    """
    return flops / (compute_flop_per_s * compute_efficiency)


def prefill_memory_s(prompt_tokens, weights_read_bytes, memory_bandwidth_bytes_per_s, bandwidth_efficiency=1.0,
                     n_ubatch=DEFAULT_N_UBATCH):
    """Time to stream the weights once per micro-batch of the prompt [s].

    Parameters
    ----------
    prompt_tokens : numeric [tokens]
    weights_read_bytes : numeric [bytes] weights streamed by one forward pass
    memory_bandwidth_bytes_per_s : numeric [bytes/s] peak bandwidth
    bandwidth_efficiency : numeric [1]
    n_ubatch : int [tokens] micro-batch size (llama.cpp ``-ub``)

    Returns
    -------
    numeric [s] ``ceil(prompt_tokens / n_ubatch) · weights_read / (bandwidth · efficiency)``
    """
    micro_batches = -(-prompt_tokens // n_ubatch)
    return micro_batches * weights_read_bytes / (memory_bandwidth_bytes_per_s * bandwidth_efficiency)
