"""The KV cache buffers ExecuTorch's exported Llama program holds: pure integer math.

Rules from ExecuTorch v1.4.1 (github pytorch/executorch, tag v1.4.1, commit e4d02f41f7909e8ed5bf4a14ffc520d733453d9f),
``examples/models/llama/``:

- ``attention.py :: KVCache.__init__`` (lines 71-94): per attention layer, ``k_cache`` and ``v_cache`` buffers
  of shape ``[max_batch_size, n_kv_heads, max_context_length, head_dim]``, created ``torch.float32``;
  ``source_transformation/custom_kv_cache.py :: CustomKVCache.__init__`` (lines 307-328), swapped in by
  ``--use_sdpa_with_kv_cache``, holds the same elements as ``[B, S, H, D]``.
- ``export_llama_lib.py :: _get_source_transforms`` (line 1908): the model, buffers included, is cast to
  ``--dtype-override`` (fp32 by default, line 397) after the cache transforms, so the float buffers are in that
  dtype; ``model.py`` (line 118) builds ``ModelArgs(max_batch_size=1)``.
- ``custom_kv_cache.py :: QuantizedKVCache.__init__`` (lines 37-84), swapped in by ``--quantize_kv_cache``
  (``_replace_kv_cache_with_quantized_kv_cache``, lines 290-304, ``AffineAsymmetric``): int8 ``k_cache`` /
  ``v_cache`` ``[B, S, H, D]``, float32 ``k_cache_scales`` / ``v_cache_scales`` ``[B, S, H, 1]`` and int8
  ``k_cache_zero_points`` / ``v_cache_zero_points`` ``[B, S, H, 1]``.
- ``attention.py :: RingKVCache.__init__`` (lines 228-293), ``custom_kv_cache.py :: CustomRingKVCache`` (lines
  585-600) and ``QuantizedRingKVCache`` (lines 428-451), swapped in by ``--local_global_attention``: a window of
  ``W`` tokens holds ``2 · W`` slots, plus a ``CachePositionsManager`` whose ``cache_positions`` buffer is int64 of
  ``2 · W`` entries (``attention.py`` lines 168-182).
"""

from __future__ import annotations

KV_BUFFERS_PER_LAYER = 2  # k_cache and v_cache (KVCache.__init__)
INT8_BYTES = 1  # QuantizedKVCache.quantized_cache_dtype = torch.int8; zero points int8 too
SCALE_BYTES = 4  # QuantizedKVCache k_cache_scales / v_cache_scales: torch.float32 (lines 71-76)
CACHE_POSITION_BYTES = 8  # CachePositionsManager.cache_positions: torch.long
RING_SLOTS_PER_WINDOW_TOKEN = 2  # RingKVCache: super().__init__(..., max_context_length * 2, ...)


def head_slot_bytes(head_dim: int, dtype_bytes: int, quantized: bool = False) -> int:
    """Bytes one token takes in one head of one of K or V.

    Parameters
    ----------
    head_dim : int [values]
    dtype_bytes : int [bytes] the dtype override's element size (fp32 4, fp16 / bf16 2); unused when quantized.
    quantized : bool [1] ``--quantize_kv_cache``: ``head_dim`` int8 values, one float32 scale and one int8 zero
        point (the export casts the scales to the dtype override, and exports only with fp32).

    Returns
    -------
    int [bytes]
    """
    if quantized:
        return head_dim * INT8_BYTES + SCALE_BYTES + INT8_BYTES
    return head_dim * dtype_bytes


def layer_slot_bytes(kv_heads: int, head_dim: int, dtype_bytes: int, quantized: bool = False) -> int:
    """K plus V bytes of one cache slot (one token position) of one attention layer.

    Parameters
    ----------
    kv_heads : int [heads]
    head_dim : int [values]
    dtype_bytes : int [bytes] the dtype override's element size.
    quantized : bool [1] ``--quantize_kv_cache``.

    Returns
    -------
    int [bytes] ``2 · kv_heads · head_slot_bytes``
    """
    return KV_BUFFERS_PER_LAYER * kv_heads * head_slot_bytes(head_dim, dtype_bytes, quantized)


def ring_slots(window_tokens: int) -> int:
    """Slots a ring-buffer layer allocates for a sliding window.

    Parameters
    ----------
    window_tokens : int [tokens] the layer's entry in ``--local_global_attention``.

    Returns
    -------
    int [tokens] ``2 · window``
    """
    return RING_SLOTS_PER_WINDOW_TOKEN * window_tokens


def ring_layer_bytes(window_tokens: int, slot_bytes: int) -> int:
    """All the buffers of one ring-buffer layer: K and V of ``2 · window`` slots and the int64 cache positions.

    Parameters
    ----------
    window_tokens : int [tokens]
    slot_bytes : int [bytes] K plus V of one slot (:func:`layer_slot_bytes`).

    Returns
    -------
    int [bytes] ``2W · slot_bytes + 2W · 8``
    """
    slots = ring_slots(window_tokens)
    return slots * slot_bytes + slots * CACHE_POSITION_BYTES


def static_cache_bytes(max_context_tokens, full_slot_bytes: int, ring_bytes: int = 0):
    """The whole cache of the program, allocated at load whatever the prompt.

    Parameters
    ----------
    max_context_tokens : int or ndarray [tokens] ``--max_context_length``.
    full_slot_bytes : int [bytes/token] K plus V of one slot, summed over the full-context layers.
    ring_bytes : int [bytes] every ring-buffer layer's buffers (:func:`ring_layer_bytes`, summed).

    Returns
    -------
    int or ndarray [bytes] ``max_context_length · full_slot_bytes + ring_bytes``
    """
    return max_context_tokens * full_slot_bytes + ring_bytes
