"""llama.cpp's CPU compute buffer and output buffer in closed form.

llama.cpp (checked against ``0c1e57098``, the copy vendored in
llama-cpp-python 0.3.36) allocates, besides the weights and the KV cache:

* an **output buffer** (``src/llama-context.cpp``, ``llama_context::output_reserve``):
  host memory for the logits (``n_vocab`` floats per output row) and, when
  embeddings are requested, ``n_embd`` floats per row. At context creation it is
  sized for ``max(n_outputs, n_seq_max)`` rows with ``n_outputs = n_seq_max``
  (``output_reserve(params.n_seq_max)`` in the constructor), i.e. one row per
  sequence. It grows later if a batch asks for more outputs.
* a **compute buffer** (``llama_context::sched_reserve`` →
  ``graph_reserve(n_tokens = n_ubatch, n_seqs, n_outputs = n_ubatch)``): the
  ggml graph allocator (``ggml/src/ggml-alloc.c``) lays out every intermediate
  tensor of the worst-case prompt-processing graph in one buffer, reusing the
  memory of tensors whose last consumer has run. Its size is therefore the
  high-water mark of the simultaneously live tensors.

The closed form here takes that high-water mark as the largest of four
phases of the graph (``src/llama-graph.cpp``), all float32 activations
(4 bytes):

1. **attention without flash attention** (``llm_graph_context::build_attn_mha``):
   the scores ``kq = ggml_mul_mat(k, q)`` of shape
   ``[n_kv, n_tokens, n_head]`` — ``ggml_soft_max_ext`` runs in place on them
   (``ggml_op_can_inplace``) — plus the KQ masks (inputs, live through all
   layers) plus a few hidden-size activations (residual, q, attention output);
2. **attention with flash attention** (``ggml_flash_attn_ext``): no score
   matrix; masks (f16) plus hidden-size activations;
3. **feed-forward** (``build_ffn``): gate, up and the activated gate
   ``[n_ff, n_tokens]`` plus masks and hidden-size activations;
4. **output head** (``build_inp_out_ids`` / ``model.output``): the logits
   ``[n_vocab, n_outputs]`` with ``n_outputs = n_ubatch`` in the reserve graph,
   plus the final norm and its input.

The high-water mark also carries allocator fragmentation (a freed block that is
too small for the next big tensor), which a closed form does not model; the runs where
this shows are listed in ``tests/unit/test_llamacpp_buffers.py``
(``KNOWN_MISSES``). Not modelled: GPU backends (split buffers, host-pinned
buffers, pipeline-parallel copies), CPU weight repacking (``CPU_REPACK``
buffers for Q4_0/IQ4_NL etc.), MoE/MLA-specific intermediates.

All sizes are in bytes; arguments are plain scalars (ints / bools).
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

#: bytes of one f32 activation element (ggml graph activations are F32)
F32 = 4
#: bytes of one f16 element (the KQ mask is F16 with flash attention)
F16 = 2
#: llama.cpp pads the KV cache size / n_ctx_seq to this many cells
#: (``llama_kv_cache::get_padding`` / ``n_pad_cur = max(n_pad, 256)`` in
#: ``src/llama-kv-cache.cpp``; ``llama_context`` pads ``n_ctx`` with it)
KV_PAD = 256

# Calibrated constants (number of hidden-size f32 activations
# [n_embd, n_tokens] live at the peak of each phase). The graph explains them:
# the residual stream ``inpL``, the layer input after norm, q (after RoPE) and
# the attention output are all [n_embd, n_tokens]-sized; the exact count at the
# peak depends on the allocator's reuse order, so the counts were fitted by hand
# on tests/data/llamacpp/buffers (KQ peak: the no-FA long-context runs of
# phi-3-mini-4k, mistral-7b-v0.1 and llama-2-7b; logits peak: exactly 2 for
# qwen2.5-0.5b, gemma-3-1b, gemma-2-2b; FFN peak: mistral-7b-v0.1 with FA).
ATTN_HIDDEN_ACTS = 3.75
LOGITS_HIDDEN_ACTS = 2.0
#: [n_head_kv*head_dim, n_tokens] f32 tensors (k, v before the cache copy) live
#: at the KQ peak: fitted on llama-2-7b (MHA, where they are hidden-sized)
ATTN_KV_ACTS = 3.25
FA_HIDDEN_ACTS = 4.0
#: [n_ff, n_tokens] f32 tensors live at the FFN peak (gate, up, act(gate)):
#: read off mistral-7b-v0.1 / llama-2-7b with flash attention
FFN_FF_ACTS = 3.0
FFN_HIDDEN_ACTS = 4.0


def _pad(x, n):
    return ((x + n - 1) // n) * n


def effective_sizes(n_ctx, n_batch, n_ubatch, n_seq_max=1, kv_unified=False):
    """Context sizes llama.cpp actually uses.

    Parameters
    ----------
    n_ctx, n_batch, n_ubatch : int
        Requested ``-c``, ``-b``, ``-ub`` [tokens].
    n_seq_max : int
        ``-np`` / ``n_seq_max`` [sequences].
    kv_unified : bool
        ``--kv-unified``; when false each sequence has its own KV stream.

    Returns
    -------
    dict
        ``n_ctx_seq`` (cells per KV stream, padded to 256), ``n_ctx`` (total),
        ``n_batch``, ``n_ubatch`` (capped at the requested n_ctx: ``llama_context``
        constructor, ``cparams.n_batch = min(n_ctx, n_batch)``,
        ``n_ubatch = min(n_batch, n_ubatch)``), ``n_stream``.
    """
    n_stream = 1 if kv_unified else n_seq_max
    n_ctx_seq = _pad(-(-n_ctx // n_stream), KV_PAD)
    nb = min(n_batch, n_ctx)
    nub = min(n_ubatch, nb)
    return {
        "n_ctx_seq": n_ctx_seq,
        "n_ctx": n_ctx_seq * n_stream,
        "n_batch": nb,
        "n_ubatch": nub,
        "n_stream": n_stream,
    }


def swa_cache_cells(n_swa, n_ubatch, n_ctx_seq, n_seq_max=1, kv_unified=False):
    """Cells of the sliding-window KV cache [cells per stream].

    ``src/llama-kv-cache-iswa.cpp`` (``llama_kv_cache_iswa`` constructor,
    ``swa_full`` false): ``min(size_base, pad(n_swa * (unified ? n_seq_max : 1)
    + n_ubatch, n_pad))``.
    """
    per = n_swa * (n_seq_max if kv_unified else 1) + n_ubatch
    return min(n_ctx_seq, _pad(per, KV_PAD))


def compute_buffer_bytes(
    n_ctx,
    n_ubatch,
    n_batch,
    flash_attn: bool,
    n_seq_max,
    kv_unified: bool,
    layers,
    n_head,
    n_head_kv,
    head_dim,
    v_head_dim,
    hidden,
    n_ff,
    n_vocab,
    n_swa=0,
    has_full_layers: bool = True,
):
    """CPU compute buffer of a llama.cpp context [bytes].

    Parameters
    ----------
    n_ctx, n_ubatch, n_batch : int
        Requested context, micro-batch and batch [tokens] (capped/padded as
        llama.cpp does, see :func:`effective_sizes`).
    flash_attn : bool
        Flash attention on (``-fa on``).
    n_seq_max : int
        Parallel sequences [sequences].
    kv_unified : bool
        One KV stream for all sequences; otherwise one stream per sequence,
        each of ``n_ctx / n_seq_max`` cells — the reserve graph then sees
        ``n_kv = n_ctx_seq`` (``build_attn_inp_kq_mask`` in
        ``src/llama-graph.cpp``: mask ``[n_kv, n_tokens/n_stream, 1, n_stream]``).
    layers, n_head_kv, head_dim, v_head_dim, n_ff : int
        Shapes (kept for the signature; the peak terms do not depend on them
        beyond what is noted).
    n_head : int
        Query heads; the KQ score tensor is ``n_head × n_kv × n_ubatch`` f32.
    hidden : int
        ``n_embd`` [elements].
    n_vocab : int
        Vocabulary rows of the output head.
    n_swa : int
        Sliding window [tokens], 0 for none. Only the interleaved-SWA
        architectures llama.cpp treats as such (gemma2, gemma3) count; llama.cpp
        ignores Mistral-7B-v0.1's and Phi-3's config windows.
    has_full_layers : bool
        Whether some layers use the full cache (true for gemma2/gemma3).

    Returns
    -------
    int
        Bytes of the CPU compute buffer (``ggml_backend_sched_get_buffer_size``,
        logged as "CPU compute buffer size").

    Notes
    -----
    Peak = max(attention phase, feed-forward phase, output-head phase):

    * attention, no FA (``build_attn_mha``): ``n_head·n_kv·T·4`` (kq; softmax
      in place) + masks ``Σ n_kv_i·T·4`` (``build_attn_inp_kq_mask``, f32
      without FA) + ``3.75·n_embd·T·4`` (calibrated, see module constants);
    * attention, FA: masks ``Σ n_kv_i·T·2`` (f16) + ``4·n_embd·T·4``;
    * feed-forward (``build_ffn``): masks + ``3·n_ff·T·4`` + ``4·n_embd·T·4``
      (calibrated counts, see module constants);
    * output head: ``n_vocab·T·4`` (logits for ``n_outputs = T`` rows in
      ``graph_reserve``) + ``2·n_embd·T·4``.

    ``T`` is the effective ``n_ubatch``; ``n_kv`` is the cells of one KV
    stream (the whole padded ``n_ctx_seq`` in the worst-case graph,
    ``init_full``).
    """
    e = effective_sizes(n_ctx, n_batch, n_ubatch, n_seq_max, kv_unified)
    T = e["n_ubatch"]
    n_kv_full = e["n_ctx_seq"]
    kinds = []
    if n_swa:
        kinds.append(swa_cache_cells(n_swa, T, n_kv_full, n_seq_max, kv_unified))
        if has_full_layers:
            kinds.append(n_kv_full)
    else:
        kinds.append(n_kv_full)
    n_kv_max = max(kinds)
    hid = hidden * T * F32
    if flash_attn:
        masks = sum(k * T * F16 for k in kinds)
        attn = masks + FA_HIDDEN_ACTS * hid
    else:
        masks = sum(k * T * F32 for k in kinds)
        kvw = n_head_kv * head_dim * T * F32
        attn = (n_head * n_kv_max * T * F32 + masks + ATTN_HIDDEN_ACTS * hid
                + ATTN_KV_ACTS * kvw)
    # feed-forward (build_ffn, LLM_FFN_SILU/GELU + LLM_FFN_PAR): gate and up
    # [n_ff, T] and the activation of gate (not in place) are live together
    # with the masks and the residual stream
    ffn = masks + FFN_FF_ACTS * n_ff * T * F32 + FFN_HIDDEN_ACTS * hid
    logits = n_vocab * T * F32 + LOGITS_HIDDEN_ACTS * hid
    return int(np.maximum(np.maximum(attn, ffn), logits))


def output_buffer_bytes(n_vocab, n_seq_max=1, n_outputs=None, n_embd=0, embeddings=False):
    """Host output buffer of a llama.cpp context [bytes].

    ``src/llama-context.cpp``, ``llama_context::output_reserve``:
    ``n_outputs_max = max(n_outputs, n_seq_max)`` rows, each ``n_vocab`` f32
    logits plus ``n_embd`` f32 when embeddings are on.

    Parameters
    ----------
    n_vocab : int
        Vocabulary size [tokens].
    n_seq_max : int
        Parallel sequences; at context creation ``n_outputs = n_seq_max``.
    n_outputs : int, optional
        Outputs of a later batch (the buffer grows to this).
    n_embd : int
        Embedding width, used only with ``embeddings``.
    embeddings : bool
        Whether embeddings are extracted.

    Returns
    -------
    int
        Bytes (logged as "CPU output buffer size").
    """
    rows = max(n_outputs or 0, n_seq_max)
    per_row = n_vocab * F32 + (n_embd * F32 if embeddings else 0)
    return int(rows * per_row)


_SWA_ARCHS = {"gemma2", "gemma3", "gemma3_text"}


def compute_buffer_bytes_from_profile(profile: Mapping[str, Any], **kw):
    """:func:`compute_buffer_bytes` with the shape read from a model profile.

    Parameters
    ----------
    profile : mapping
        Parsed ``model_profiles/<model>.yaml``.
    **kw
        ``n_ctx``, ``n_batch``, ``n_ubatch``, ``flash_attn``, ``n_seq_max``,
        ``kv_unified``.

    Returns
    -------
    int
        Bytes.
    """
    arch = str(profile.get("architecture", ""))
    n_swa = int(profile.get("sliding_window") or 0) if arch in _SWA_ARCHS else 0
    return compute_buffer_bytes(
        layers=profile["layers"],
        n_head=profile["attention_heads"],
        n_head_kv=profile["kv_heads"],
        head_dim=profile["head_dim"],
        v_head_dim=profile.get("v_head_dim", profile["head_dim"]),
        hidden=profile["hidden_size"],
        n_ff=profile["intermediate_size"],
        n_vocab=profile["vocab_size"],
        n_swa=n_swa,
        **kw,
    )
