"""KV-cache size: bytes per token and bytes at a context length.

Notes
-----
Per layer ℓ with ``n_kv`` KV heads and head dims ``d_k``, ``d_v``, caching ``c_ℓ(ctx)``
tokens (``ctx`` for global layers, ``min(ctx, window)`` for sliding-window layers)::

    kv_bytes(ctx) = Σ_ℓ c_ℓ(ctx) · n_kv · (d_k · bytes_k + d_v · bytes_v)

Layers are passed grouped: ``global_bytes_per_token`` is the sum over global layers of
one token's K+V bytes; ``windows`` is a sequence of ``(window_tokens, bytes_per_token)``
pairs, one per distinct window, summed over the layers that use it.

References
----------
Pope et al., "Efficiently Scaling Transformer Inference" (2022), §2 (KV cache size);
Ainslie et al., "GQA" (2023) for grouped KV heads; Beltagy et al., "Longformer" (2020)
for sliding-window attention.
"""

from __future__ import annotations

from collections.abc import Sequence

from kvplan.engine._ops import minimum

Windows = Sequence[tuple[int, int]]


def kv_bytes_per_token(layers, kv_heads, head_dim, bytes_per_value):
    """Textbook K+V bytes one token adds across all layers.

    Parameters
    ----------
    layers, kv_heads, head_dim : numeric [count]
    bytes_per_value : numeric [bytes]

    Returns
    -------
    numeric [bytes/token] ``2 · layers · kv_heads · head_dim · bytes_per_value``
    """
    return 2 * layers * kv_heads * head_dim * bytes_per_value


def kv_bytes(ctx, global_bytes_per_token, windows: Windows = ()):
    """Bytes of the cache holding ``ctx`` tokens for one sequence.

    Parameters
    ----------
    ctx : numeric [tokens]
    global_bytes_per_token : numeric [bytes/token] summed over layers that see the whole context
    windows : sequence of (window [tokens], bytes_per_token [bytes/token])

    Returns
    -------
    numeric [bytes] ``global · ctx + Σ_w bytes_w · min(ctx, w)``
    """
    total = global_bytes_per_token * ctx
    for window_tokens, bytes_per_token in windows:
        total = total + bytes_per_token * minimum(ctx, window_tokens)
    return total


def kv_bytes_sum_over_generation(n_tokens, global_bytes_per_token, windows: Windows = ()):
    """Σ_{k=1..n} kv_bytes(k): the cache bytes read over a generation of n tokens from empty.

    Parameters
    ----------
    n_tokens : int or ndarray [tokens]
        Tokens generated.
    global_bytes_per_token : int [bytes/token]
        K+V bytes of one token over the global (full-attention) layers.
    windows : tuple of (int [tokens], int [bytes/token])
        ``(window, bytes_per_token)`` of each sliding-window layer group.

    Returns
    -------
    numeric [bytes]
        The sum below.

    Notes
    -----
    Step ``k`` attends over ``k`` cached tokens (the new token's own K/V included).
    For a window ``w``, Σ_{k=1..n} min(k, w) = n(n+1)/2 while n ≤ w, else w(w+1)/2 + w(n − w).
    """
    total = global_bytes_per_token * n_tokens * (n_tokens + 1) // 2
    for w, bytes_per_token in windows:
        m = minimum(n_tokens, w)
        total = total + bytes_per_token * (m * (m + 1) // 2 + w * (n_tokens - m))
    return total
