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
  ggml graph allocator (``ggml/src/ggml-alloc.c``, ``ggml_gallocr_alloc_graph_impl``)
  places every tensor of the worst-case prompt-processing graph in one buffer,
  in graph order, best-fit into the free blocks, and frees a tensor's block as
  soon as its last consumer has been placed. The buffer is the highest address
  ever reached: the live tensors at the peak *plus the free holes below them*.

The closed form (``compute_buffer_phases``) writes that high-water mark as the
largest of three phases stacked on the graph inputs, in f32 activations of
``T = n_ubatch`` tokens (``hid = n_embd·T·4``, ``q = n_head·head_dim·T·4``):

* **inputs**, allocated first and live until their last consumer
  (``llm_graph_input_*`` in ``src/llama-graph.cpp``; the KV indices in
  ``llama_kv_cache::build_input_k_idxs``/``build_input_v_idxs``,
  ``src/llama-kv-cache.cpp``): the token ids' slot ``T·4``, ``inp_embd``
  ``hid`` (never consumed for a token batch, so live to the end), positions
  ``T·4``, per KV cache the K row indices ``T·8`` and the V indices ``T·8`` with
  flash attention or, without it (the V cache is stored transposed), one I64 per
  V element ``n_head_kv·v_head_dim·T·8``; the KQ mask ``n_kv·T`` (f32 without
  flash attention, f16 with it, ``build_attn_inp_kq_mask``), and the output ids
  ``T·4``. MLA has no V cache, hence no V indices.
* **attention** of one layer (``build_attn_mha``): ``2·hid + 2·q`` (residual,
  normed input, Q before and after RoPE) plus the scores
  ``kq = n_head·n_kv·T·4`` without flash attention (``ggml_soft_max_ext`` works
  in place) or one K-sized tensor with it; Phi-3's fused QKV and MLA's absorbed
  query change the count (see ``compute_buffer_phases``).
* **feed-forward** (``build_ffn`` / ``build_moe_ffn``): gate, up and the
  activated product ``3·n_ff·T·4`` plus ``2.5·hid`` (2 or 3 hidden-sized
  tensors, depending on where earlier frees left holes); MoE layers hold
  ``3·n_ff_exp·n_expert_used·T·4`` plus the per-expert down projections
  ``n_embd·n_expert_used·T·4`` instead.
* **output head**: ``inp_embd`` + the final norm + the logits
  ``n_vocab·T·4`` (``n_outputs = T`` in the reserve graph) + the hole the
  final norm lands above (:data:`OUTPUT_HOLE_HIDDEN`).

Counts marked *measured* were read off allocator traces of this llama.cpp
(``GGML_ALLOCATOR_DEBUG`` build of ``ggml-alloc.c``) and are checked against
every run in ``tests/data/llamacpp/buffers``. Where the best-fit allocator puts
the final norm (or an FFN tensor) into a hole high up in the layer's region,
the peak jumps by several ``hid``; which hole it picks depends on the whole
history of frees, so a closed form cannot follow it: those runs are listed in
``tests/unit/test_llamacpp_buffers.py`` (``KNOWN_MISSES``).

Not modelled: GPU backends (split buffers, host-pinned buffers,
pipeline-parallel copies), CPU weight repacking (``CPU_REPACK`` buffers for
Q4_0/IQ4_NL etc.), the 16 KiB/64 KiB K/V rotation inputs of quantized caches.

All sizes are in bytes; arguments are plain scalars (ints / bools / str).
"""

from __future__ import annotations

from typing import Any, Mapping

#: bytes of one f32 activation element (ggml graph activations are F32)
F32 = 4
#: bytes of one f16 element (the KQ mask is F16 with flash attention)
F16 = 2
#: bytes of one I32 / I64 index (token ids, positions, output ids / KV row indices)
I32 = 4
I64 = 8
#: llama.cpp pads the KV cache size / n_ctx_seq to this many cells
#: (``llama_kv_cache::get_padding`` / ``n_pad_cur = max(n_pad, 256)`` in
#: ``src/llama-kv-cache.cpp``; ``llama_context`` pads ``n_ctx`` with it)
KV_PAD = 256

#: graph families: how llama.cpp's build function for an architecture lays out
#: attention (``src/models/<arch>.cpp``, ``llm_build_*``)
GRAPHS = ("llama", "gemma", "phi3", "mla")

#: hidden-sized tensors besides gate/up/activation at the feed-forward peak:
#: the residual, the FFN input and, depending on the holes earlier frees left,
#: the attention output (measured 2 without and 3 with flash attention on
#: llama/mistral/qwen2/qwen3/phi3; the midpoint keeps both within 0.5·hid)
FFN_HIDDEN = 2.5

#: hidden-sized free space below the final norm at the output-head peak,
#: (without, with) flash attention. The norm goes best-fit into the smallest
#: free block it fits; measured: right above ``inp_embd`` on llama/mistral/
#: qwen2/qwen3/gemma; Phi-3 (0.65 and 2.04–2.67 in most runs) and DeepSeek-V2
#: (8.07–8.5 without flash attention, 1.0 with it in most runs) leave holes.
OUTPUT_HOLE_HIDDEN = {
    "llama": (0.0, 0.0),
    "gemma": (0.0, 0.0),
    "phi3": (0.5, 2.0),
    "mla": (8.0, 1.0),
}


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


def compute_buffer_phases(
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
    *,
    graph: str = "llama",
    kv_lora_rank=0,
    rope_head_dim=0,
    n_ff_expert=0,
    n_expert_used=0,
    dense_layers=0,
):
    """The phases of the worst-case graph whose largest is the compute buffer [bytes].

    Parameters are those of :func:`compute_buffer_bytes`.

    Returns
    -------
    dict
        ``inputs`` (the graph inputs, the floor of the layer phases),
        ``attention`` and ``ffn`` (inputs + the layer's tensors and holes above
        them), ``output`` (the output head, after the inputs but ``inp_embd``
        were freed).
    """
    if graph not in GRAPHS:
        raise ValueError(f"graph must be one of {', '.join(GRAPHS)}, not {graph!r}")
    e = effective_sizes(n_ctx, n_batch, n_ubatch, n_seq_max, kv_unified)
    T = e["n_ubatch"]
    n_kv_full = e["n_ctx_seq"]
    kinds = []  # cells one stream of each KV cache holds (iSWA: two caches)
    if n_swa:
        kinds.append(swa_cache_cells(n_swa, T, n_kv_full, n_seq_max, kv_unified))
        if has_full_layers:
            kinds.append(n_kv_full)
    else:
        kinds.append(n_kv_full)
    n_kv_max = max(kinds)
    mla = graph == "mla"
    hid = hidden * T * F32
    q = n_head * head_dim * T * F32
    kv = n_head_kv * head_dim * T * F32

    # ids slot (freed after the embedding lookup, the hole stays at the bottom) + inp_embd + positions
    inputs = T * I32 + hid + T * I32
    for cells in kinds:
        inputs += T * I64  # K row indices
        if not mla:  # V indices: one per V element when V is stored transposed (no flash attention)
            inputs += T * I64 if flash_attn else n_head_kv * v_head_dim * T * I64
        inputs += cells * T * (F16 if flash_attn else F32)  # KQ mask
    inputs += T * I32  # output ids

    kq = 0 if flash_attn else n_head * n_kv_max * T * F32
    if graph == "phi3":
        # fused QKV [3·n_embd, T]; Q and K are roped out of its views
        attn = 2 * hid + kq if not flash_attn else 3 * hid + q + 2 * kv
    elif mla:
        # absorbed query [n_head·(kv_lora_rank + rope), T] built by concat: both parts and the result live
        qa = n_head * (kv_lora_rank + rope_head_dim) * T * F32
        attn = 2 * hid + q + 2 * qa + kq
    else:
        attn = 2 * hid + 2 * q + (kq if not flash_attn else kv)

    ffn = FFN_HIDDEN * hid + 3 * n_ff * T * F32
    if graph == "gemma":  # the post-attention norm's output is still live
        ffn += q
    if n_expert_used and layers > dense_layers:
        moe = (FFN_HIDDEN * hid + 3 * n_ff_expert * n_expert_used * T * F32
               + hidden * n_expert_used * T * F32)
        ffn = moe if dense_layers == 0 else max(ffn, moe)

    output = T * I32 + hid + OUTPUT_HOLE_HIDDEN[graph][bool(flash_attn)] * hid + hid + n_vocab * T * F32
    return {
        "inputs": int(inputs),
        "attention": int(inputs + attn),
        "ffn": int(inputs + ffn),
        "output": int(output),
    }


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
    *,
    graph: str = "llama",
    kv_lora_rank=0,
    rope_head_dim=0,
    n_ff_expert=0,
    n_expert_used=0,
    dense_layers=0,
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
    layers : int
        Layers (with ``dense_layers``: whether any MoE layer exists).
    n_head, n_head_kv, head_dim, v_head_dim : int
        Attention shape; ``head_dim`` is the query/key width per head.
    hidden : int
        ``n_embd`` [elements].
    n_ff : int
        FFN width of a dense layer.
    n_vocab : int
        Vocabulary rows of the output head.
    n_swa : int
        Sliding window [tokens], 0 for none. Only the interleaved-SWA
        architectures llama.cpp treats as such (gemma2, gemma3) count; llama.cpp
        ignores Mistral-7B-v0.1's and Phi-3's config windows.
    has_full_layers : bool
        Whether some layers use the full cache (true for gemma2/gemma3).
    graph : str
        Graph family (:data:`GRAPHS`): ``llama`` (llama, mistral, qwen2, qwen3),
        ``gemma``, ``phi3`` (fused QKV), ``mla`` (DeepSeek-V2/V3 latent attention).
    kv_lora_rank, rope_head_dim : int
        MLA latent width and decoupled RoPE width (``graph="mla"``).
    n_ff_expert, n_expert_used, dense_layers : int
        MoE: FFN width of one expert, experts per token, leading dense layers.

    Returns
    -------
    int
        Bytes of the CPU compute buffer (``ggml_backend_sched_get_buffer_size``,
        logged as "CPU compute buffer size").

    Notes
    -----
    The largest of :func:`compute_buffer_phases` (see the module docstring for
    every term and its source).
    """
    return max(compute_buffer_phases(
        n_ctx, n_ubatch, n_batch, flash_attn, n_seq_max, kv_unified, layers, n_head, n_head_kv,
        head_dim, v_head_dim, hidden, n_ff, n_vocab, n_swa, has_full_layers, graph=graph,
        kv_lora_rank=kv_lora_rank, rope_head_dim=rope_head_dim, n_ff_expert=n_ff_expert,
        n_expert_used=n_expert_used, dense_layers=dense_layers,
    ).values())


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


#: interleaved sliding-window architectures whose window llama.cpp keeps
_SWA_ARCHS = {"gemma2", "gemma3", "gemma3_text"}
#: profile ``architecture`` (Hugging Face model_type) → graph family; anything else builds like llama
_GRAPH_OF_ARCH = {
    "gemma2": "gemma", "gemma3": "gemma", "gemma3_text": "gemma",
    "phi3": "phi3",
    "deepseek_v2": "mla", "deepseek_v3": "mla",
}


def _field(obj, key, default=None):
    """``obj[key]`` for a mapping, ``obj.key`` for a profile object (the ``mla`` block is either)."""
    if obj is None:
        return default
    if isinstance(obj, Mapping):
        value = obj.get(key, default)
    elif hasattr(obj, "get") and not hasattr(obj, key):
        value = obj.get(key, default)
    else:
        value = getattr(obj, key, default)
    return default if value is None else value


def graph_of(profile: Mapping[str, Any]) -> str:
    """Graph family (:data:`GRAPHS`) of a model profile; MLA only when the profile has an ``mla`` block."""
    graph = _GRAPH_OF_ARCH.get(str(_field(profile, "architecture", "")), "llama")
    if graph == "mla" and not _field(profile, "mla"):
        return "llama"
    return graph


def compute_buffer_bytes_from_profile(profile: Mapping[str, Any], **kw):
    """:func:`compute_buffer_bytes` with the shape read from a model profile.

    Parameters
    ----------
    profile : mapping
        Parsed ``model_profiles/<model>.yaml`` (or an object with ``get``).
    **kw
        ``n_ctx``, ``n_batch``, ``n_ubatch``, ``flash_attn``, ``n_seq_max``,
        ``kv_unified``.

    Returns
    -------
    int
        Bytes.
    """
    arch = str(_field(profile, "architecture", ""))
    n_swa = int(_field(profile, "sliding_window", 0) or 0) if arch in _SWA_ARCHS else 0
    graph = graph_of(profile)
    mla = _field(profile, "mla") if graph == "mla" else None
    return compute_buffer_bytes(
        layers=profile["layers"],
        n_head=profile["attention_heads"],
        n_head_kv=profile["kv_heads"],
        head_dim=profile["head_dim"],
        v_head_dim=_field(profile, "v_head_dim", profile["head_dim"]),
        hidden=profile["hidden_size"],
        n_ff=profile["intermediate_size"],
        n_vocab=profile["vocab_size"],
        n_swa=n_swa,
        graph=graph,
        kv_lora_rank=int(_field(mla, "kv_lora_rank", 0)),
        rope_head_dim=int(_field(mla, "qk_rope_head_dim", 0)),
        n_ff_expert=int(_field(profile, "expert_intermediate_size", 0)),
        n_expert_used=int(_field(profile, "experts_per_token", 0)),
        dense_layers=int(_field(profile, "dense_layers", 0)),
        **kw,
    )
