"""llama.cpp's CPU compute buffer and output buffer.

llama.cpp (checked against ``0c1e57098``, the copy vendored in
llama-cpp-python 0.3.36) allocates, besides the weights and the KV cache:

* an **output buffer** (``src/llama-context.cpp``, ``llama_context::output_reserve``):
  host memory for the logits (``n_vocab`` floats per output row) and, when
  embeddings are requested, ``n_embd`` floats per row. At context creation it is
  sized for ``max(n_outputs, n_seq_max)`` rows with ``n_outputs = n_seq_max``
  (``output_reserve(params.n_seq_max)`` in the constructor), i.e. one row per
  sequence. It grows later if a batch asks for more outputs. Closed form.
* a **compute buffer** (``llama_context::sched_reserve`` →
  ``graph_reserve(n_tokens = n_ubatch, n_seqs, n_outputs = n_ubatch)``): the
  ggml graph allocator (``ggml/src/ggml-alloc.c``, ``ggml_gallocr_alloc_graph_impl``)
  places every tensor of the worst-case prompt-processing graph in one buffer,
  in graph order, best-fit into the free blocks, and frees a tensor's block as
  soon as its last consumer has been placed. The buffer is the highest address
  ever reached: the live tensors at the peak *plus the free holes below them*,
  which depend on the whole history of placements. So it is not written in
  closed form but replayed: :mod:`kvplan.engine.llamacpp_graph` writes the
  graph's tensor sequence (sizes in closed form, order and lifetimes as
  llama.cpp builds them) and :mod:`kvplan.engine.ggml_alloc` runs the
  allocator over it. The repeating layer loop is cut short (:func:`_peak`), so
  a call costs well under a millisecond whatever the depth.

Checked against every run in ``tests/data/llamacpp/buffers`` of build ``0c1e57098`` (410 CPU runs): all
reproduced to the byte. Build 11434 (``build="b11434"``): its hybrid and MoE graphs (LFM2, Qwen3.5 and Qwen3.5-MoE,
Granite-4.0-H, Nemotron-H, gpt-oss, Qwen3-MoE: ``graph="layers"``, :func:`layer_graph_of`) and its dense ones,
checked against 512 measured runs and llama-server's logs (``tests/unit/test_llamacpp_buffers_hybrid_moe.py``): all to
the byte but one (5 MiB), the graphs matched allocation by allocation against dumps of llama.cpp's own reserve graph
(``tests/harness/graph_dump.py``). The layers graphs are replayed whole (their patterns are irregular): about
10 ms for Nemotron-H's 56 layers, memoized.

Not modelled: GPU backends (split buffers, host-pinned buffers,
pipeline-parallel copies), CPU weight repacking (``CPU_REPACK`` buffers for
Q4_0/IQ4_NL etc.).

All sizes are in bytes; arguments are plain scalars (ints / bools / str).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Mapping

from kvplan.engine import ggml_alloc, llamacpp_graph
from kvplan.engine.arch_names import GGUF_ARCH

#: bytes of one f32 value (the output buffer's logits; the graph's element sizes live in llamacpp_graph)
F32 = llamacpp_graph.F32
#: llama.cpp pads the KV cache size / n_ctx_seq to this many cells
#: (``llama_kv_cache::get_padding`` / ``n_pad_cur = max(n_pad, 256)`` in
#: ``src/llama-kv-cache.cpp``; ``llama_context`` pads ``n_ctx`` with it)
KV_PAD = 256

#: cache types stored as plain floats; any other (q8_0, q4_0 …) is quantized and rotated
UNQUANTIZED = ("f32", "f16", "bf16")

#: graph families: how llama.cpp's build function for an architecture lays out
#: attention (``src/models/<arch>.cpp``, ``llm_build_*``)
GRAPHS = ("llama", "gemma", "phi3", "mla", "layers", "gemma3n", "gemma4", "mtp")

def _pad(x, n):
    return ((x + n - 1) // n) * n


#: builds whose reserve graph keeps the logits of only ``n_outputs_max`` rows (llama-server sets it to ``-np``:
#: ``tools/server/server-context.cpp``; ``llama_context::sched_reserve`` reserves
#: ``n_outputs = min(n_tokens, n_outputs_max)``); older builds reserved a whole micro-batch of logits
_OUTPUTS_OF_SEQUENCES = ("b11434",)


def reserved_outputs(build, n_seq_max):
    """Output rows the reserve graph of ``build`` computes logits for [rows] (None: a whole micro-batch).

    Parameters
    ----------
    build : str
        A llama.cpp build of :data:`kvplan.engine.llamacpp_process.BUILDS`.
    n_seq_max : int
        Parallel sequences (``-np``) [sequences].

    Returns
    -------
    int or None [rows]
        ``n_seq_max`` for llama-server of build 11434; None for ``0c1e57098`` (``n_outputs = n_ubatch``).
    """
    return int(n_seq_max) if build in _OUTPUTS_OF_SEQUENCES else None


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
    """Cells of the sliding-window KV cache, per stream.

    Parameters
    ----------
    n_swa : int [tokens]
        The sliding window.
    n_ubatch : int [tokens]
        Micro-batch (after :func:`effective_sizes`).
    n_ctx_seq : int [cells]
        Cells of the full cache per stream (:func:`effective_sizes`).
    n_seq_max : int [sequences]
        Parallel sequences.
    kv_unified : bool
        One stream shared by all sequences.

    Returns
    -------
    int [cells]
        ``min(n_ctx_seq, pad(n_swa · (n_seq_max if kv_unified else 1) + n_ubatch, 256))``.

    References
    ----------
    ``src/llama-kv-cache-iswa.cpp`` (``llama_kv_cache_iswa`` constructor, ``swa_full`` false):
    ``min(size_base, pad(n_swa * (unified ? n_seq_max : 1) + n_ubatch, n_pad))``.
    """
    per = n_swa * (n_seq_max if kv_unified else 1) + n_ubatch
    return min(n_ctx_seq, _pad(per, KV_PAD))


def _rotation_sizes(type_k, type_v, head_dim, v_head_dim):
    """Sides of the Hadamard rotations a quantized cache adds (0: none).

    ``src/llama-kv-cache.cpp`` (constructor, ``build_input_k_rot`` /
    ``build_input_v_rot``): K is rotated when ``type_k`` is quantized and the
    head width is a multiple of 64, by the largest power of two (at least 64)
    dividing it; V likewise by a 64×64 matrix.
    """
    k_rot = 0
    if type_k not in UNQUANTIZED and head_dim % 64 == 0:
        k_rot = 64
        while head_dim % (2 * k_rot) == 0:
            k_rot *= 2
    v_rot = 64 if type_v not in UNQUANTIZED and v_head_dim % 64 == 0 else 0
    return k_rot, v_rot


def _peak(shape, fa, period, head):
    """The allocator's peak for ``shape``, simulating a shorter graph when the layer loop repeats exactly.

    After a few layers the allocator state at a layer boundary (free blocks, high-water mark, the
    offsets of the live tensors) cycles, with a cycle of one or two layer-pattern periods (the residual
    alternates between two slots). Once a state recurs, every further cycle replays the previous one and
    reaches nothing higher. So the graph is first built with whole cycles left out of the middle, keeping
    the ``head`` leading layers (DeepSeek's dense ones), three cycles to settle and compare, then a period
    and the last layer; if a boundary state within it recurs one cycle later before that closing part, the
    full graph peaks exactly as the short one. Otherwise the full graph is simulated.
    """
    L = shape["layers"]
    cycle = 2 * period
    keep = head + 3 * cycle + period + 1
    dropped = (L - keep) // cycle * cycle if L > keep else 0
    if dropped:
        snaps = []
        short = dict(shape, layers=L - dropped)
        peak = ggml_alloc.peak_bytes(llamacpp_graph.reserve_graph(short, fa), snapshots=snaps)
        for i in range(head, head + 2 * cycle + 1):
            if snaps[i] == snaps[i + cycle]:
                return peak
    return ggml_alloc.peak_bytes(llamacpp_graph.reserve_graph(shape, fa))


def _floor(g, T, full_ubatch):
    """A lower bound on the compute buffer at this and every larger ``n_ctx`` (``floor=True``): the most bytes
    live at once (:func:`ggml_alloc.live_floor_bytes`) once the micro-batch has stopped growing, because from
    there a larger ``n_ctx`` only grows the same graph's tensors; below it (the micro-batch capped at ``n_ctx``
    changes which rows the last layer keeps) the largest single tensor."""
    if T >= full_ubatch:
        return ggml_alloc.live_floor_bytes(g)
    return ggml_alloc.largest_tensor_bytes(g)


@lru_cache(maxsize=4096)  # pure: a gate file or a plot asks for the same graph many times; arguments are scalars
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
    n_expert=0,
    n_ff_shared=0,
    swa_period=2,
    type_k="f16",
    type_v="f16",
    floor: bool = False,
    n_outputs=None,
    swa_full: bool = False,
    layer_graph=None,
    build=None,
    scale_rows: bool = False,
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
    layers : int [count]
        Layers.
    n_head, n_head_kv, head_dim, v_head_dim : int [count, count, values, values]
        Attention shape: query heads, KV heads, the query/key width per head, the value width per head.
    hidden : int
        ``n_embd`` [elements].
    n_ff : int [values]
        FFN width of a dense layer.
    n_vocab : int [tokens]
        Vocabulary rows of the output head.
    n_swa : int
        Sliding window [tokens], 0 for none. Only the interleaved-SWA
        architectures llama.cpp treats as such (gemma2, gemma3) count; llama.cpp
        ignores Mistral-7B-v0.1's and Phi-3's config windows.
    has_full_layers : bool
        Whether some layers use the full cache (true for gemma2/gemma3).
    graph : str
        Graph family (:data:`GRAPHS`): ``llama`` (llama, mistral, qwen2, qwen3),
        ``gemma``, ``phi3`` (fused QKV), ``mla`` (DeepSeek-V2/V3 latent attention), ``layers`` (a kind per
        layer: the hybrids and the MoE builds of :func:`layer_graph_of`, given as ``layer_graph``).
    kv_lora_rank, rope_head_dim : int [values]
        MLA latent width and decoupled RoPE width (``graph="mla"``).
    n_ff_expert, n_expert_used, dense_layers, n_expert, n_ff_shared : int [values, count, count, count, values]
        MoE (``graph="mla"``): FFN width of one expert, experts per token,
        leading dense layers, routed experts, total FFN width of the shared
        experts.
    swa_period : int [layers]
        With ``n_swa``: layer ``il`` uses the window when
        ``il % swa_period < swa_period - 1`` (llama.cpp: 2 for gemma2, 6 for gemma3).
    type_k, type_v : str
        KV cache element types (``-ctk``/``-ctv``); quantized ones add Hadamard
        rotations (:func:`_rotation_sizes`).
    build : str, optional
        A llama.cpp build of :data:`kvplan.engine.llamacpp_process.BUILDS`. ``"b11434"`` writes that build's
        graph: the mixed-batch branch of ``build_inp_embd`` (:func:`kvplan.engine.llamacpp_graph._embeddings`)
        and the rotations of each cache of a two-cache model; None or ``"0c1e57098"``: that build's graph.
    scale_rows : bool
        Build 11434: the architecture passes a token scale to ``build_inp_embd`` (Gemma 3: ``sqrt(n_embd)``),
        which adds the input ``inp_scale_rows`` [1, T] f32.
    layer_graph : tuple of (str, object) pairs, optional
        With ``graph="layers"``: the per-layer mixers and feed-forwards and their widths
        (:func:`layer_graph_of`; :func:`kvplan.engine.llamacpp_graph._layers` reads them).
    swa_full : bool
        ``--swa-full``: the sliding-window cache has every cell of the full one, so its layers' KQ mask and
        scores span ``n_ctx_seq`` cells, not :func:`swa_cache_cells`.
    n_outputs : int, optional [rows]
        Rows of logits the graph computes (:func:`reserved_outputs`); None: every token of the micro-batch,
        as build ``0c1e57098`` reserved. The last layer keeps only these rows (GET_ROWS) and works on them.
    floor : bool
        Return instead a lower bound on the buffer at this and every larger
        ``n_ctx`` (:func:`_floor`: the most bytes its tensors hold at once, or below a full micro-batch
        its largest single tensor), which only grows with the context, where the buffer itself may shrink
        from one 256-cell step to the next (the allocator lands tensors in
        other holes).

    Returns
    -------
    int [bytes]
        The CPU compute buffer (``ggml_backend_sched_get_buffer_size``,
        logged as "CPU compute buffer size").

    Notes
    -----
    The worst-case graph (:mod:`kvplan.engine.llamacpp_graph`) replayed
    through ggml's allocator (:mod:`kvplan.engine.ggml_alloc`).
    """
    if graph not in GRAPHS:
        raise ValueError(f"graph must be one of {', '.join(GRAPHS)}, not {graph!r}")
    e = effective_sizes(n_ctx, n_batch, n_ubatch, n_seq_max, kv_unified)
    T = e["n_ubatch"]
    n_kv = e["n_ctx_seq"]
    period = 1
    if n_swa:
        # --swa-full: the windowed cache is as large as the full one (llama_kv_cache_iswa constructor,
        # ``size_swa = swa_full ? size_base : …``), and the reserve graph's windowed mask spans all of it
        swa = n_kv if swa_full else swa_cache_cells(n_swa, T, n_kv, n_seq_max, kv_unified)
        if has_full_layers:  # sliding-window cache first (llama_kv_cache_iswa), then the full one
            caches = (swa, n_kv)
            period = swa_period

            def cache_of_layer(il):
                return 0 if il % swa_period < swa_period - 1 else 1
        else:
            caches = (swa,)
    else:
        caches = (n_kv,)
    if len(caches) == 1:
        def cache_of_layer(il):
            return 0
    mla = graph == "mla"
    k_rot, v_rot = (0, 0) if mla else _rotation_sizes(type_k, type_v, head_dim, v_head_dim)
    shape = {
        "graph": graph, "T": T, "E": hidden, "F": n_ff, "V": n_vocab, "layers": layers,
        "H": n_head, "Hk": n_head_kv, "Dk": head_dim, "Dv": v_head_dim,
        "caches": caches, "cache_of_layer": cache_of_layer, "n_stream": e["n_stream"],
        # llama builds Q, V, K (build_attn expands them in that order); Gemma computes Q, K, V; Phi-3 fuses them
        "qkv_order": {"gemma": "QKV", "phi3": "fused"}.get(graph, "QVK"),
        "k_rot": k_rot, "v_rot": v_rot,
        "kv_lora_rank": kv_lora_rank, "rope_dim": rope_head_dim,
        "n_expert": n_expert, "n_expert_used": n_expert_used, "F_expert": n_ff_expert,
        "F_shared": n_ff_shared, "dense_layers": dense_layers if n_expert_used else layers,
        "O": T if n_outputs is None else min(T, n_outputs),
        # build 11434's graph (llamacpp_graph._embeddings: the mixed-batch branch; per-cache rotations)
        "b11434": build == "b11434",
        "scale_rows": bool(scale_rows),
    }
    if graph == "mtp":  # an MTP context (src/models/qwen35.cpp graph_mtp): llamacpp_graph._mtp
        shape.update(dict(layer_graph or ()))
        g = llamacpp_graph.reserve_graph(shape, bool(flash_attn))
        return _floor(g, T, min(n_batch, n_ubatch)) if floor else ggml_alloc.peak_bytes(g)
    if graph in ("gemma3n", "gemma4"):  # src/models/gemma3n.cpp, gemma4.cpp: the whole graph is replayed
        shape.update(dict(layer_graph or ()))
        if graph == "gemma4":  # each cache's K rotation follows its layers' head width (sliding, then full)
            shape["k_rot"] = tuple(_rotation_sizes(type_k, type_v, d, d)[0]
                                   for d in (head_dim, shape["global_head_dim"])[:len(caches)])
        g = llamacpp_graph.reserve_graph(shape, bool(flash_attn))
        return _floor(g, T, min(n_batch, n_ubatch)) if floor else ggml_alloc.peak_bytes(g)
    if graph == "layers":
        # the recurrent memory holds one state per sequence (llama_memory_recurrent, size max(1, n_seq_max)) and
        # the reserve micro-batch splits its tokens evenly over n_seq_max sequences (graph_reserve)
        shape.update(dict(layer_graph or ()), n_rs=max(1, int(n_seq_max)), n_seqs=max(1, int(n_seq_max)))
        shape["dense_layers"] = layers
        g = llamacpp_graph.reserve_graph(shape, bool(flash_attn))
        if floor:
            return _floor(g, T, min(n_batch, n_ubatch))
        return ggml_alloc.peak_bytes(g)  # irregular layer patterns: the whole graph is replayed
    if floor:
        return _floor(llamacpp_graph.reserve_graph(shape, bool(flash_attn)), T, min(n_batch, n_ubatch))
    return _peak(shape, bool(flash_attn), period, dense_layers if (mla and n_expert_used) else 0)


def output_buffer_bytes(n_vocab, n_seq_max=1, n_outputs=None, n_embd=0, embeddings=False):
    """Host output buffer of a llama.cpp context [bytes].

    ``src/llama-context.cpp``, ``llama_context::output_reserve``:
    ``n_outputs_max = max(n_outputs, n_seq_max)`` rows, each ``n_vocab`` f32
    logits plus ``n_embd`` f32 when embeddings are on.

    Parameters
    ----------
    n_vocab : int
        Vocabulary size [tokens].
    n_seq_max : int [sequences]
        Parallel sequences; at context creation ``n_outputs = n_seq_max``.
    n_outputs : int [rows], optional
        Outputs of a later batch (the buffer grows to this).
    n_embd : int [values]
        Embedding width, used only with ``embeddings``.
    embeddings : bool
        Whether embeddings are extracted.

    Returns
    -------
    int [bytes]
        ``max(n_outputs, n_seq_max) · (n_vocab + n_embd if embeddings) · 4`` (logged as "CPU output buffer size").
    """
    rows = max(n_outputs or 0, n_seq_max)
    per_row = n_vocab * F32 + (n_embd * F32 if embeddings else 0)
    return int(rows * per_row)


#: interleaved sliding-window architectures whose window llama.cpp keeps
_SWA_ARCHS = {"gemma2", "gemma3", "gemma3_text", "gpt_oss", "gemma3n", "gemma3n_text", "gemma4", "gemma4_text",
              "llama4", "llama4_text"}
#: their layer pattern as llama.cpp sets it (``llama_hparams::set_swa_pattern``, ``src/llama-hparams.cpp``)
_SWA_PERIOD = {"gemma2": 2, "gemma3": 6, "gemma3_text": 6, "gpt_oss": 2, "gemma3n": 5, "gemma3n_text": 5,
               "gemma4": 5, "gemma4_text": 5,  # Gemma 4: the GGUF's sliding_window_pattern (E2B: "4:1")
               "llama4": 4, "llama4_text": 4}
#: Llama 4's chunk as llama.cpp's loader fixes it (src/models/llama4.cpp load_arch_hparams: n_swa = 8192)
_CHUNK_OF_ARCH = {"llama4": 8192, "llama4_text": 8192}
#: llama.cpp's architecture names (what ``kvplan import gguf`` writes) → the Hugging Face model_type these tables use:
#: the first model_type :data:`kvplan.engine.arch_names.GGUF_ARCH` gives each name (``llama`` stays: its model_types
#: differ by more than the name, see :func:`_arch`)
_HF_OF_GGUF = {gguf: hf for hf, gguf in reversed(GGUF_ARCH.items()) if hf != gguf and gguf != "llama"}


def _arch(profile) -> str:
    """The profile's architecture as the tables here name it: a GGUF's llama.cpp name mapped to the model_type,
    and ``llama`` with experts as Mixtral (its converter writes arch llama, ``conversion/llama.py``)."""
    arch = str(_field(profile, "architecture", ""))
    if arch == "llama" and int(_field(profile, "experts", 0) or 0):
        return "mixtral"
    return _HF_OF_GGUF.get(arch, arch)


#: profile ``architecture`` (Hugging Face model_type) → graph family; anything else builds like llama
_GRAPH_OF_ARCH = {
    "gemma2": "gemma", "gemma3": "gemma", "gemma3_text": "gemma",
    "phi3": "phi3",
    "gemma3n": "gemma3n", "gemma3n_text": "gemma3n",
    "gemma4": "gemma4", "gemma4_text": "gemma4",
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


#: qwen35.cpp: gated attention, M-RoPE (llama_hparams::n_pos_per_embd 4) and the output rows kept after the final
#: norm (embeddings_nextn_masked false)
_QWEN35 = {"state": {"gated_deltanet": "gdn"}, "attn_gated": True, "n_pos": 4, "late_out_ids": True}
#: qwen35moe.cpp: qwen35's trunk; build_layer_ffn calls build_moe_ffn as Qwen3-MoE does (soft-max gating, norm_w
#: true; expert_weights_scale unset: no SCALE) and adds the shared expert (build_ffn) times its sigmoid gate
_QWEN35_MOE = dict(_QWEN35, moe={"moe_gating": "softmax", "moe_norm_w": True, "shared_gate": True})
#: architectures whose reserve graph :func:`kvplan.engine.llamacpp_graph._layers` writes: state mixer → the
#: mixer it builds, and per-architecture details (``src/models/<arch>.cpp``)
_LAYER_ARCHS = {
    "lfm2": {"state": {"short_conv": "conv"}, "resid_first": True},  # lfm2.cpp: ggml_add(prev_cur, cur)
    # lfm2.cpp's graph for lfm2moe too: a dense MLP below n_layer_dense_lead, then build_moe_ffn with sigmoid gating
    # (expert_gating_func SIGMOID), the expert bias exp_probs_b added to the probabilities the top-k picks from,
    # the weights renormalised (norm_w true), expert_weights_scale unset (no SCALE)
    "lfm2_moe": {"state": {"short_conv": "conv"}, "resid_first": True,
                 "moe": {"moe_gating": "sigmoid", "moe_probs_bias": True, "moe_norm_w": True}, "dense_lead": True},
    "qwen3_5": _QWEN35,
    "qwen3_5_text": _QWEN35,
    "qwen3_5_moe": _QWEN35_MOE,
    "qwen3_5_moe_text": _QWEN35_MOE,
    # granite-hybrid.cpp build_layer_ffn: the dense shared MLP, or (experts) build_moe_ffn as Qwen3-MoE calls it
    # (soft-max gating, weights renormalised) plus the shared MLP (ffn_*_shexp) added to its output
    "granitemoehybrid": {"state": {"mamba2": "mamba2"}, "moe": {"moe_gating": "softmax", "moe_norm_w": True}},
    # nemotron-h.cpp: MLP-only layers, the output rows kept after the final norm, attention without RoPE
    "nemotron_h": {"state": {"mamba2": "mamba2"}, "ffn": "none", "late_out_ids": True, "no_rope": True},
    # openai-moe.cpp: Q, K, V projections in that order (their biases added in place: no tensor of their own),
    # and the output rows kept after the last layer, before the final norm
    "gpt_oss": {"moe": {"moe_gating": "softmax_weight", "moe_norm_w": False}, "qkv_order": "QKV",
                "late_out_ids": "before_norm"},
    "qwen3_moe": {"moe": {"moe_gating": "softmax", "moe_norm_w": True}},  # qwen3moe.cpp (norm_topk_prob)
    # llama.cpp's llama.cpp graph with experts (Mixtral): build_moe_ffn as Qwen3-MoE calls it (soft-max gating,
    # norm_w true, expert_weights_scale unset), no q/k norms, no shared expert
    "mixtral": {"moe": {"moe_gating": "softmax", "moe_norm_w": True}},
    # llama4.cpp: sigmoid gating with the top-k on the logits, the weights applied before the experts
    # (build_moe_ffn's weight_before_ffn), the shared expert added; a NoPE layer every 4th (its Q times
    # inp_attn_scale), the RoPE layers' Q and K RMS-normed; the chunked layers in the iSWA cache
    "llama4": {"moe": {"moe_gating": "sigmoid_logits", "moe_norm_w": False, "weight_before_ffn": True},
               "nope_period": 4, "attn_temp": True, "kq_norm": True, "shared_expert": True},
    "llama4_text": {"moe": {"moe_gating": "sigmoid_logits", "moe_norm_w": False, "weight_before_ffn": True},
                    "nope_period": 4, "attn_temp": True, "kq_norm": True, "shared_expert": True},
    # falcon-h1.cpp: every layer runs attention and Mamba2 in parallel (state.parallel_attention), no ssm_norm,
    # the recurrent-state copy ids read after the attention inputs, the output rows kept after the residual add
    "falcon_h1": {"state": {"mamba2": "parallel"}, "ssm_norm": False, "s_copy_late": True, "out_ids_after_add": True},
}


def layer_graph_of(profile: Mapping[str, Any]):
    """The per-layer description of a hybrid or MoE profile's reserve graph (``graph="layers"``), or None.

    Parameters
    ----------
    profile : mapping or object
        A model profile: ``architecture``, ``layers``, ``state`` (mixer, layer indices, widths) and the
        expert fields.

    Returns
    -------
    tuple of (str, object) pairs or None
        ``mixers`` and ``ffns`` (one per layer, see :func:`kvplan.engine.llamacpp_graph._layers`), the state
        widths (``conv_k`` [tokens], ``n_embd_r`` [values]: ``(conv_kernel − 1) · conv channels``, as
        ``llama_hparams::n_embd_r``; Mamba2's ``d_inner``, ``ssm_H``, ``ssm_N``, ``ssm_G``; Gated DeltaNet's
        ``lin_*`` heads and widths) and the MoE gating; None when llama.cpp's graph for the architecture is
        not modelled (an unknown state mixer, a hybrid MoE with leading dense layers other than LFM2-MoE's, a MoE
        outside :data:`_LAYER_ARCHS`).
    """
    arch = _arch(profile)
    rule = _LAYER_ARCHS.get(arch)
    if rule is None:
        return None
    L = int(_field(profile, "layers"))
    state = _field(profile, "state")
    experts = int(_field(profile, "experts", 0) or 0)
    out = {k: v for k, v in rule.items()
           if k in ("resid_first", "attn_gated", "late_out_ids", "no_rope", "qkv_order", "n_pos", "ssm_norm",
                    "s_copy_late", "out_ids_after_add", "nope_period", "attn_temp", "kq_norm")}
    mixers = ["attn"] * L
    if "state" in rule:
        if state is None or (experts and "moe" not in rule):
            return None
        mixer = rule["state"].get(str(_field(state, "mixer", "")))
        if mixer is None:
            return None
        for il in _field(state, "layers", ()):
            mixers[int(il)] = mixer
        for il in _field(state, "feedforward_layers", ()) or ():
            mixers[int(il)] = "mlp"
        k = int(_field(state, "conv_kernel_tokens"))
        out["conv_k"] = k
        if mixer == "conv":
            channels = int(_field(state, "conv_channels"))
        elif mixer in ("mamba2", "parallel"):
            H, P = int(_field(state, "ssm_heads")), int(_field(state, "ssm_head_dim"))
            G, N = int(_field(state, "ssm_groups")), int(_field(state, "ssm_state_size"))
            out.update(d_inner=H * P, ssm_H=H, ssm_N=N, ssm_G=G)
            channels = H * P + 2 * G * N
        else:
            Hk, Dk = int(_field(state, "linear_key_heads")), int(_field(state, "linear_key_head_dim"))
            Hv, Dv = int(_field(state, "linear_value_heads")), int(_field(state, "linear_value_head_dim"))
            out.update(lin_Hk=Hk, lin_Dk=Dk, lin_Hv=Hv, lin_Dv=Dv)
            channels = 2 * Hk * Dk + Hv * Dv
        out["n_embd_r"] = (k - 1) * channels
        ffn = rule.get("ffn", "swiglu")
        dense = int(_field(profile, "dense_layers", 0) or 0)
        if experts:  # a hybrid MoE: experts on every layer (Granite-4.0-H-Tiny), or after dense_layers (LFM2-MoE)
            if dense and not rule.get("dense_lead"):
                return None
            out.update(rule["moe"])
            out["mixers"] = tuple(mixers)
            out["ffns"] = tuple("swiglu" if il < dense else "moe" for il in range(L))
            return tuple(sorted(out.items()))
    else:
        shared = int(_field(profile, "shared_experts", 0) or 0)
        if not experts or int(_field(profile, "dense_layers", 0) or 0) or (shared and not rule.get("shared_expert")):
            return None
        out.update(rule["moe"])
        ffn = "moe"
    out["mixers"] = tuple(mixers)
    out["ffns"] = tuple(ffn for _ in range(L))
    return tuple(sorted(out.items()))


#: Gemma 3n's graph constants (src/models/gemma3n.cpp load_arch_hparams: n_layer_kv_from_start 20 … computed as
#: layers − shared_kv_layers here; src/models/models.h: n_layer_sparsity 10) and the text_config fields the profile
#: does not carry (altup_num_inputs 4, laurel_rank 64: tests/data/hf_configs/gemma-3n-e2b.json)
_GEMMA3N = {"n_altup": 4, "laurel_rank": 64, "n_layer_sparsity": 10}


def _gemma3n_graph_of(profile):
    L = int(_field(profile, "layers"))
    out = dict(_GEMMA3N, n_embd_altup=int(_field(profile, "hidden_size_per_layer_input")),
               n_layer_kv_from_start=L - int(_field(profile, "shared_kv_layers", 0) or 0))
    return tuple(sorted(out.items()))


def _gemma4_graph_of(profile):
    """Gemma 4's graph constants: the full-attention layers' head width, the per-layer embedding width, the first
    shared-KV layer (src/models/gemma4.cpp load_arch_hparams: n_layer_kv_from_start = n_layer − shared_kv_layers)
    and one MLP width per layer (use_double_wide_mlp doubles the shared layers')."""
    L = int(_field(profile, "layers"))
    widths = _field(profile, "intermediate_size")
    widths = tuple(int(w) for w in widths) if isinstance(widths, (list, tuple)) else (int(widths),) * L
    out = {"global_head_dim": int(_field(profile, "global_head_dim", 0) or _field(profile, "head_dim")),
           "n_embd_altup": int(_field(profile, "hidden_size_per_layer_input")),
           "n_layer_kv_from_start": L - int(_field(profile, "shared_kv_layers", 0) or 0), "ffn_widths": widths}
    return tuple(sorted(out.items()))


def graph_of(profile: Mapping[str, Any]) -> str:
    """Graph family (:data:`GRAPHS`) of a model profile; MLA only when the profile has an ``mla`` block.

    Parameters
    ----------
    profile : mapping or object
        A model profile (its ``architecture`` and ``mla``).

    Returns
    -------
    str
        ``llama``, ``gemma``, ``phi3``, ``mla`` or ``layers`` (the architectures of :data:`_LAYER_ARCHS`; whether
        a given profile's graph is modelled is :func:`layer_graph_of`'s answer).
    """
    arch = _arch(profile)
    if arch in _LAYER_ARCHS:
        return "layers"
    graph = _GRAPH_OF_ARCH.get(arch, "llama")
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
        ``kv_unified`` and optionally ``type_k``/``type_v``.

    Returns
    -------
    int [bytes]
        The CPU compute buffer, as :func:`compute_buffer_bytes`.
    """
    arch = _arch(profile)
    n_swa = int(_field(profile, "sliding_window", 0) or 0) if arch in _SWA_ARCHS else 0
    if arch in _CHUNK_OF_ARCH and _field(profile, "attention_chunk_size"):
        n_swa = _CHUNK_OF_ARCH[arch]  # the chunked layers are the iSWA cache's windowed ones
    graph = graph_of(profile)
    layer_graph = layer_graph_of(profile) if graph == "layers" else None
    if graph == "layers" and layer_graph is None:
        raise ValueError(f"llama.cpp's compute graph of this {arch} profile is not modelled")
    if graph == "gemma3n":
        layer_graph = _gemma3n_graph_of(profile)
    if graph == "gemma4":
        if not _field(profile, "hidden_size_per_layer_input") or _field(profile, "experts"):
            raise ValueError("llama.cpp's compute graph of a Gemma 4 without per-layer embeddings, or with "
                             "experts, is not modelled")
        layer_graph = _gemma4_graph_of(profile)
    mla = _field(profile, "mla") if graph == "mla" else None
    # a MoE with experts on every layer has no dense MLP width (Qwen3.5-MoE's config has none); its graph reads none
    n_ff = _field(profile, "intermediate_size") or profile["expert_intermediate_size"]
    if isinstance(n_ff, (list, tuple)):  # per layer (Gemma 3n's MatFormer); every layer of the E2B is 8,192 wide
        n_ff = max(n_ff)
    return compute_buffer_bytes(
        layers=profile["layers"],
        n_head=profile["attention_heads"],
        n_head_kv=profile["kv_heads"],
        head_dim=profile["head_dim"],
        v_head_dim=_field(profile, "v_head_dim", profile["head_dim"]),
        hidden=profile["hidden_size"],
        n_ff=n_ff,
        # the logits are as wide as the GGUF's vocabulary, which the converter may trim (Gemma 3: 262,144 of 262,208)
        n_vocab=_field(profile, "gguf_vocab_size", None) or profile["vocab_size"],
        n_swa=n_swa,
        graph=graph,
        kv_lora_rank=int(_field(mla, "kv_lora_rank", 0)),
        rope_head_dim=int(_field(mla, "qk_rope_head_dim", 0)),
        n_ff_expert=int(_field(profile, "expert_intermediate_size", 0)),
        n_expert_used=int(_field(profile, "experts_per_token", 0)),
        dense_layers=int(_field(profile, "dense_layers", 0)),
        n_expert=int(_field(profile, "experts", 0)),
        n_ff_shared=int(_field(profile, "shared_experts", 0)) * int(_field(profile, "expert_intermediate_size", 0)),
        swa_period=_SWA_PERIOD.get(arch, 2),
        layer_graph=layer_graph,
        scale_rows=arch in ("gemma3", "gemma3_text"),  # src/models/gemma3.cpp: build_inp_embd(tok_embd, sqrtf(n_embd))
        **kw,
    )
