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
