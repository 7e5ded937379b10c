"""llama.cpp's buffers beside the KV cache for one model and runtime spec: the compute and output buffers.

The figures come from :mod:`kvplan.engine.llamacpp_buffers` (CPU backend: the output buffer in closed form, the
compute buffer by replaying ggml's allocator over the reserve graph); this module feeds them a
model profile and a :class:`~kvplan.profiles.runtime.LlamaCppSpec`, deciding what llama.cpp decides:
``-fa auto`` resolves to on for the CPU backend (it supports flash attention for every cache type
kvplan accepts), and only the interleaved-window architectures keep their window.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvplan.caches.facts import Reason, reason
from kvplan.engine import llamacpp_buffers as lb
from kvplan.engine.schedule import split_runs
from kvplan.profiles.memo import PerModel

_VIEWS = PerModel()

#: model fields the compute-buffer formula reads; without them the buffer is unknown, not zero
SHAPE_FIELDS = ("hidden_size", "intermediate_size", "vocab_size")


@dataclass(frozen=True)
class LlamaCppBuffers:
    """The two buffers llama.cpp allocates besides weights and KV cache [bytes]; ``compute_resident_bytes`` is
    the part of the compute buffer the longest prompt touches (all of it unless the spec names a shorter
    prompt than the context), which is what the process holds."""

    compute_bytes: int
    output_bytes: int
    flash_attn: bool
    ubatch: int
    compute_resident_bytes: int | None = None

    @property
    def resident_compute_bytes(self) -> int:
        return self.compute_bytes if self.compute_resident_bytes is None else self.compute_resident_bytes

    @property
    def total_bytes(self) -> int:
        return self.resident_compute_bytes + self.output_bytes


class _ProfileView:
    """A model profile (pydantic model or cached record) read as the mapping the engine's helper takes, its
    attention shape from the model's schedule: ``kv_heads`` the widest layer's, ``sliding_window`` the windowed
    layers' window, ``mla`` the latent's widths (the compute graph sees one shape for every layer; which layers
    use the window llama.cpp decides by architecture, ``set_swa_pattern``, as the engine does)."""

    def __init__(self, model):
        self._model = model
        runs = split_runs(model.schedule, "llama.cpp")[0]
        windows = model.schedule.windows()
        latent = next((ly for _, ly in runs if ly.latent_rank is not None), None)
        self._shape = {
            # an MLA latent is one head (llama.cpp's deepseek2 GGUFs say head_count_kv 1); its graph reads no Hk
            "kv_heads": max(ly.kv_heads for _, ly in runs),
            "sliding_window": windows[0] if windows else None,
            "mla": None if latent is None else {"kv_lora_rank": latent.latent_rank,
                                                "qk_rope_head_dim": latent.k_values - latent.latent_rank},
        }

    def __getitem__(self, key):
        value = self.get(key)
        if value is None:
            raise KeyError(key)
        return value

    def get(self, key, default=None):
        value = self._shape[key] if key in self._shape else getattr(self._model, key, None)
        return default if value is None else value


def _view_of(model) -> _ProfileView:
    """:class:`_ProfileView` of ``model``, built once per profile (a gate or a max-context search asks for it
    hundreds of times, and each build walks the model's layer schedule)."""
    return _VIEWS.get(model, "view", lambda: _ProfileView(model))


def missing_shape_fields(model) -> tuple[str, ...]:
    """The shape fields a profile lacks for the compute buffer (empty: it can be priced). A MoE with experts on
    every layer (Qwen3.5-MoE) has no dense MLP: its graph reads the experts' width, not ``intermediate_size``."""
    moe_only = (getattr(model, "experts", None) and getattr(model, "expert_intermediate_size", None)
                and not getattr(model, "dense_layers", 0))
    return tuple(f for f in SHAPE_FIELDS
                 if not getattr(model, f, None) and not (f == "intermediate_size" and moe_only))


def unpriced_because(model) -> Reason | None:
    """Why llama.cpp's buffers cannot be priced for ``model`` (worded by :mod:`kvplan.render.reasons`; None: they
    can)."""
    missing = missing_shape_fields(model)
    if missing:
        return reason("missing_shape_fields", fields=missing)
    view = _view_of(model)
    if lb.graph_of(view) == "layers" and lb.layer_graph_of(view) is not None:
        return None  # a hybrid or MoE graph the engine writes (lfm2, qwen3_5, qwen3_5_moe, granitemoehybrid …)
    if lb.graph_of(view) == "gemma3n":
        return None  # Gemma 3n's graph (AltUp, LAuReL, per-layer embeddings, shared-KV layers): llamacpp_graph._gemma3n
    if (lb.graph_of(view) == "gemma4" and getattr(model, "hidden_size_per_layer_input", None)
            and not getattr(model, "experts", None)):
        return None  # Gemma 4's dense graph with per-layer embeddings: llamacpp_graph._gemma4
    if lb.graph_of(view) == "gemma4":  # the 26B MoE, the 31B without per-layer embeddings
        return reason("gemma4_graph_unmodelled", architecture=model.architecture or None)
    if getattr(model, "state", None) is not None:  # another hybrid's graph (conv / SSM ops) is not replayed
        return reason("state_graph_unmodelled", architecture=model.architecture or None)
    if getattr(model, "shared_kv_layers", 0) or getattr(model, "hidden_size_per_layer_input", None):
        # another architecture with Gemma 3n's per-layer embeddings or shared-KV layers: its graph is not replayed
        return reason("gemma3n_graph_unmodelled", architecture=model.architecture or None)
    experts = getattr(model, "experts", None)
    if experts and lb.graph_of(view) != "mla":  # DeepSeek's MoE graph and those of layer_graph_of are replayed
        return reason("experts_graph_unmodelled", architecture=model.architecture or None)
    return None


def flash_attn_on(spec) -> bool:
    """``-fa``: on and auto are on (the CPU backend runs flash attention), off is off."""
    return spec.flash_attn != "off"


def llamacpp_buffers(spec, model, ctx: int, sequences: int, type_k: str = "f16",
                     type_v: str = "f16", *, floor: bool = False,
                     outputs_max: int | None = None) -> LlamaCppBuffers | None:
    """The compute and output buffers of ``-c ctx -np sequences`` under ``spec`` with llama.cpp cache types
    ``type_k``/``type_v`` (a quantized cache adds rotation inputs to the graph); None when the profile lacks a
    shape field (:data:`SHAPE_FIELDS`). ``floor``: a lower bound on them at ``ctx`` and every larger ``-c``
    (the compute buffer's largest tensor: :func:`kvplan.engine.llamacpp_buffers.compute_buffer_bytes`).
    ``outputs_max``: the context's ``n_outputs_max`` when llama-server sets more than ``-np`` (a speculative type:
    ``min(-b, -np · (1 + n_max))``, ``server_output_limits``); the reserve graph keeps that many output rows."""
    if unpriced_because(model):
        return None
    fa = flash_attn_on(spec)
    if not ctx:  # no context, no graph: as the cache, which holds nothing at ctx 0
        return LlamaCppBuffers(0, 0, fa, 0)
    requested = int(ctx)
    view = _view_of(model)
    n_outputs = lb.reserved_outputs(spec.build, int(sequences))
    if outputs_max is not None and n_outputs is not None:
        n_outputs = int(outputs_max)
    graph = dict(n_batch=spec.batch, n_ubatch=spec.ubatch, flash_attn=fa, n_seq_max=int(sequences),
                 kv_unified=spec.kv_unified, type_k=type_k, type_v=type_v,
                 swa_full=bool(getattr(spec, "swa_full", False)), build=spec.build)
    compute = lb.compute_buffer_bytes_from_profile(view, n_ctx=requested, floor=floor, n_outputs=n_outputs, **graph)
    # n_vocab of the GGUF llama.cpp loads (the converter trims Gemma 3's to its tokenizer: gguf_vocab_size)
    output = lb.output_buffer_bytes(getattr(model, "gguf_vocab_size", None) or model.vocab_size,
                                    n_seq_max=int(sequences))
    ubatch = min(spec.ubatch, spec.batch, max(requested, 1))
    resident = None
    streams = 1 if spec.kv_unified else int(sequences)
    if spec.prompt_tokens is not None and not floor and spec.prompt_tokens * streams < requested:
        # the longest prompt's last micro-batch is the largest graph the process runs: the buffer reserved for a
        # context of that prompt's length is what its pages touch (one output row: the prompt's last token)
        touched = lb.compute_buffer_bytes_from_profile(view, n_ctx=spec.prompt_tokens * streams,
                                                       n_outputs=1 if n_outputs is not None else None, **graph)
        resident = min(int(compute), int(touched))
    return LlamaCppBuffers(int(compute), int(output), fa, ubatch, resident)


def buffer_groups(spec, ctx, sequences):
    """A key per row such that rows with equal keys have equal buffers: (micro-batch, cells of one KV stream,
    sequences), as :func:`kvplan.engine.llamacpp_buffers.effective_sizes` derives them. Lets a sweep price the
    buffers once per key (a few thousand) instead of once per context (up to millions). Arrays in, int64 array out."""
    import numpy as np

    ctx = np.asarray(ctx, dtype=np.int64)
    sequences = np.asarray(sequences, dtype=np.int64)
    streams = np.ones_like(sequences) if spec.kv_unified else sequences
    per_stream = -(-ctx // streams)
    cells = -(-per_stream // lb.KV_PAD) * lb.KV_PAD
    ubatch = np.minimum(spec.ubatch, np.minimum(spec.batch, ctx))
    return np.stack([ubatch, cells, sequences, (ctx > 0).astype(np.int64)])


def mtp_compute_bytes(spec, model, n_ctx: int, sequences: int, type_k: str = "f16", type_v: str = "f16") -> int | None:
    """The compute buffer of ``model``'s MTP context (``--spec-type draft-mtp``) of ``n_ctx`` cells (the target's
    padded ``-c``) for ``-np sequences``, its cache types ``type_k``/``type_v`` (``-ctkd``/``-ctvd``): the reserve
    graph of ``graph_mtp`` (one gated attention block, its MLP or MoE block, and the output head;
    :func:`kvplan.engine.llamacpp_graph._mtp`) replayed through the allocator; None for a profile without the shape
    [bytes]."""
    experts = getattr(model, "experts", None) or 0
    if not all(getattr(model, f, None) for f in ("hidden_size", "vocab_size")):
        return None
    if not experts and not getattr(model, "intermediate_size", None):
        return None
    d_v = getattr(model, "v_head_dim", None) or model.head_dim
    kv_heads = model.kv_heads if isinstance(model.kv_heads, int) else max(model.kv_heads)
    e_ff = getattr(model, "expert_intermediate_size", None) or 0
    # Qwen3.5-MoE's router: soft-max gating, the k weights renormalised (src/models/qwen35moe.cpp build_moe_ffn)
    moe = (("moe_gating", "softmax"), ("moe_norm_w", True)) if experts else ()
    return int(lb.compute_buffer_bytes(
        n_ctx, spec.ubatch, spec.batch, flash_attn_on(spec), int(sequences), spec.kv_unified, 1,
        model.attention_heads, kv_heads, model.head_dim, d_v, model.hidden_size,
        0 if experts else model.intermediate_size, getattr(model, "gguf_vocab_size", None) or model.vocab_size,
        graph="mtp", type_k=type_k, type_v=type_v, n_expert=experts,
        n_expert_used=getattr(model, "experts_per_token", None) or 0, n_ff_expert=e_ff,
        n_ff_shared=e_ff * (getattr(model, "shared_experts", 0) or 0),
        n_outputs=lb.reserved_outputs(spec.build, int(sequences)), build=spec.build,
        layer_graph=(("n_pos", 4), *moe)))
