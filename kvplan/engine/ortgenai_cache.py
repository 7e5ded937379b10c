"""The key/value buffers ONNX Runtime GenAI allocates for a decoder: pure integer math.

Rules from onnxruntime-genai v0.15.2 (github microsoft/onnxruntime-genai, tag v0.15.2):

- ``src/models/kv_cache.cpp :: DefaultKeyValueCache::DefaultKeyValueCache`` (lines 281-544): two tensors
  per layer (key, value) of shape ``[batch_beam, num_key_value_heads, seq, head_size]`` in the model's
  ``kv_cache`` element type; with ``past_present_share_buffer`` the sequence axis is ``max_length``
  (or the length fixed in the graph, lines 471-478) and is allocated once.
- ``src/models/kv_cache.cpp :: DefaultKeyValueCache::Update`` (lines 550-590): without a shared buffer, each
  step moves ``presents_`` into ``pasts_`` and allocates new presents of ``total_length``, so during a run
  the past of ``L`` tokens and the present of ``L + n`` tokens both exist.
- ``src/models/kv_cache.cpp :: ComputeQuantizedKvCacheHeadSize`` (lines 191-205): 4/8-bit KV packs 8/4
  indices per 32-bit word plus one word for the scale; head_size must be a power of two and at least 8.
- ``src/config.h`` (line 439): ``max_length`` omitted or 0 becomes ``model.context_length`` on load.
- ``src/python/py/models/builders/base.py`` (lines 573-595, ``make_quantized_kv_cache_init``): a model built with
  ``kv_cache_quant_type`` int8 / fp8 stores one byte a value; int4 packs two values a byte, ``(head_size + 1) // 2``
  bytes a head (its scales are initializers of the graph, not cache). The runtime reads the element type and the
  head width from the graph's ``past_key_values`` inputs (``kv_cache.cpp`` lines 338, 373-380).

Sliding-window per-layer caps (lines 429-470) apply only on the NvTensorRtRtx device and are not modelled.
"""

from __future__ import annotations

from kvplan.engine._ops import floor_div, where

KV_TENSORS_PER_LAYER = 2  # key and value (kv_cache.cpp, "2 per layer (key and value)")
_WORD_BYTES = 4  # one u32 word (ComputeQuantizedKvCacheHeadSize)


def head_row_bytes(head_size: int, element_bytes: int, kv_quantization_bits: int = 0) -> int:
    """Bytes of one head's row for one token.

    Parameters
    ----------
    head_size : int [values]
    element_bytes : int [bytes] size of the kv_cache element type (2 for fp16, 4 for fp32).
    kv_quantization_bits : int [bits] 0 (none), 4 or 8.

    Returns
    -------
    int [bytes]
        one head's key (or value) row of one token; raises ValueError where the runtime refuses the head size.
    """
    if kv_quantization_bits == 0:
        return head_size * element_bytes
    if kv_quantization_bits not in (4, 8):
        raise ValueError(f"kv_cache_quantization_bits must be 4 or 8, got {kv_quantization_bits}")
    if head_size < 8 or head_size & (head_size - 1):
        raise ValueError(f"KV cache quantization requires a power-of-2 head_size >= 8, got {head_size}")
    indices_per_word = 4 if kv_quantization_bits == 8 else 8
    return (head_size // indices_per_word + 1) * _WORD_BYTES


def buffer_bytes(layers: int, batch_beam: int, kv_heads: int, row_bytes: int, seq_tokens: int) -> int:
    """Bytes of all key and value tensors of sequence length ``seq_tokens``.

    Parameters
    ----------
    layers : int [layers]
    batch_beam : int [sequences] batch × beams
    kv_heads : int [heads]
    row_bytes : int [bytes] one head's row of one token (:func:`head_row_bytes`)
    seq_tokens : int [tokens]

    Returns
    -------
    int [bytes]
    """
    return KV_TENSORS_PER_LAYER * layers * batch_beam * kv_heads * row_bytes * seq_tokens


def shared_buffer_bytes(layers: int, batch_beam: int, kv_heads: int, row_bytes: int, max_length_tokens: int) -> int:
    """``past_present_share_buffer``: one buffer of ``max_length`` tokens, constant in the context.

    Parameters
    ----------
    layers : int [layers]
    batch_beam : int [sequences] batch × beams
    kv_heads : int [heads]
    row_bytes : int [bytes] one head's row of one token (:func:`head_row_bytes`)
    max_length_tokens : int [tokens] the search option ``max_length``

    Returns
    -------
    int [bytes]
    """
    return buffer_bytes(layers, batch_beam, kv_heads, row_bytes, max_length_tokens)


def unshared_step_peak_bytes(
    layers: int, batch_beam: int, kv_heads: int, row_bytes: int, past_tokens: int, new_tokens: int
) -> int:
    """Without a shared buffer: past (``past_tokens``) and present (``past_tokens + new_tokens``) coexist.

    Parameters
    ----------
    layers : int [layers]
    batch_beam : int [sequences] batch × beams
    kv_heads : int [heads]
    row_bytes : int [bytes] one head's row of one token (:func:`head_row_bytes`)
    past_tokens : int [tokens]
    new_tokens : int [tokens] the tokens of this step

    Returns
    -------
    int [bytes]
        the peak during the step.
    """
    return buffer_bytes(layers, batch_beam, kv_heads, row_bytes, 2 * past_tokens + new_tokens)


def packed_int4_row_bytes(head_size: int) -> int:
    """One head's row for one token in a model built with an int4 KV cache (two values a byte, uint8).

    Parameters
    ----------
    head_size : int [values]

    Returns
    -------
    int [bytes]
        ``(head_size + 1) // 2`` (``builders/base.py`` :: ``make_quantized_kv_cache_init``, ``packed_head_size``).
    """
    return (head_size + 1) // 2


def unshared_peak_tokens(total_tokens):
    """Token rows held during the step that reaches ``total_tokens`` without a shared buffer.

    Parameters
    ----------
    total_tokens : int or ndarray [tokens]
        the length the generation reaches, one new token a step (a prompt of one token: its prefill).

    Returns
    -------
    int or ndarray [tokens]
        past ``total_tokens − 1`` plus present ``total_tokens``: ``2 · total_tokens − 1``; 0 for no tokens.
    """
    return where(total_tokens > 0, 2 * total_tokens - 1, 0)


def unshared_max_total_tokens(allowance_bytes, bytes_per_token):
    """Largest length whose unshared step peak fits ``allowance_bytes``.

    Parameters
    ----------
    allowance_bytes : numeric [bytes]
        cache bytes one sequence may hold.
    bytes_per_token : int [bytes/token]
        every layer's key and value rows of one token.

    Returns
    -------
    numeric [tokens]
        the largest ``c`` with ``(2c − 1) · bytes_per_token ≤ allowance_bytes``: ``⌊(⌊allowance / b⌋ + 1) / 2⌋``;
        ``-1`` when not even one token fits.
    """
    rows = floor_div(allowance_bytes, bytes_per_token)
    best = floor_div(rows + 1, 2)
    return where(best >= 1, best, -1)
