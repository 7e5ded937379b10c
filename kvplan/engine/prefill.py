"""Prefill cost: the compute to process a prompt, and the time it takes.

Notes
-----
Prefill is compute-bound. Processing ``T`` prompt tokens costs::

    flops(T) = 2 · P_active · T  +  2 · L · T² · H · d

The first term is one multiply-add (2 FLOPs) per active parameter per token (the
matrix multiplications of every layer and the output head). The second is causal
attention: per layer and head, ``Q·Kᵀ`` and ``softmax·V`` are each ``T² · d``
multiply-adds over the full square, and causality halves the square, so
``2 · (2 · T² · d) / 2 = 2 · T² · d`` FLOPs per head per layer. ``L`` is the number
of layers, ``H`` the attention (query) heads and ``d`` the head dimension. Windowed
layers and softmax/normalisation FLOPs are ignored (an upper bound on the attention
term, a lower bound on the rest).

    prefill_s(T) = flops(T) / compute                      (compute: sustained FLOP/s)

Recomputing a pinned prefix of ``T_p`` tokens instead of keeping its cache resident
costs ``prefill_s(T_p)`` before every request that needs it.

References
----------
Kaplan et al., "Scaling Laws for Neural Language Models" (2020), §2.1 (C ≈ 2N per
token); Chinchilla (Hoffmann et al. 2022), Appendix F (attention FLOPs).
"""

from __future__ import annotations


def prefill_flops(tokens, params_active, layers=0, attention_heads=0, head_dim=0):
    """FLOPs to prefill ``tokens`` prompt tokens.

    Parameters
    ----------
    tokens : numeric [tokens]
    params_active : numeric [count] parameters used per token (all of them for a dense model)
    layers, attention_heads, head_dim : numeric [count] (0 leaves out the attention term)

    Returns
    -------
    numeric [FLOP] ``2 · params_active · tokens + 2 · layers · tokens² · attention_heads · head_dim``
    """
    return 2 * params_active * tokens + 2 * layers * tokens * tokens * attention_heads * head_dim


def prefill_seconds(flops, compute_flop_per_s):
    """Time to prefill at a sustained compute rate: ``flops / compute`` [s]."""
    return flops / compute_flop_per_s
