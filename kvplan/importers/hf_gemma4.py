"""Gemma 4's text config (``gemma4_text``, usually under a multimodal ``gemma4`` config's ``text_config``): the keys
a plain transformer config does not have, read into profile fields.

* ``global_head_dim``: the K/V (and query) head width of the ``full_attention`` layers; ``head_dim`` is the sliding
  layers' (transformers ``Gemma4TextAttention``; llama.cpp's converter writes them as ``key_length`` and
  ``key_length_swa``, conversion/gemma.py ``Gemma4Model.set_gguf_parameters``).
* ``num_global_key_value_heads``: with ``attention_k_eq_v`` (the 26B and 31B), the KV heads of the full-attention
  layers (transformers ``Gemma4TextAttention`` reads it only then) — a per-layer ``kv_heads`` list. Those layers
  have no ``v_proj`` (V is K before its norm), but both are cached.
* ``num_kv_shared_layers``, ``hidden_size_per_layer_input`` × ``vocab_size_per_layer_input``: shared-KV layers and
  per-layer embeddings as in Gemma 3n (:mod:`kvplan.importers.hf_gemma3n`); 0 means none (the 26B and 31B).
* ``use_double_wide_mlp``: the shared-KV layers have twice the ``intermediate_size`` (conversion/gemma.py writes
  ``n_ff`` for layers before ``first_kv_shared_layer_idx`` and ``2 · n_ff`` after).

The parameter count of a dense Gemma 4 (no ``enable_moe_block``), after llama.cpp build 11434's
src/models/gemma4.cpp ``load_arch_tensors``:

    params = V·H (embed_tokens, tied) + V_pl·L·P + H·L·P + P (per-layer embeddings, projection, its norm) + H
           + Σ_layers [ H·n_h·d_l + n_h·d_l·H + d_l (q, o, q_norm)
                        + (k·H·n_kv·d_l + d_l if the layer has its own cache)  (k, v, k_norm; v_norm has no scale;
                                                                    k = 1 on a k_eq_v full layer, else 2)
                        + 3·H·I_l + 4·H + (2·H·P + H if P) + 1 ]   (MLP, norms, per-layer input, layer_scalar)

with d_l = ``global_head_dim`` on full-attention layers, else ``head_dim``. The shared-KV layers hold no k/v
projections nor k_norm (transformers ``Gemma4TextAttention``: "Layers sharing kv states don't need any weight
matrices"; llama.cpp loads them as TENSOR_NOT_REQUIRED there). The checkpoint and the GGUF its converter writes
hold them all the same, so a GGUF type prices them (:func:`kvplan.engine.tensors._gemma4_block`): params is the
model transformers builds.
"""

from __future__ import annotations

from kvplan.errors import ProfileError
from kvplan.importers.common import whole_count

MODEL_TYPES = frozenset({"gemma4_text", "gemma4"})


def _count(c: dict, key: str, label: str, minimum: int = 0) -> int:
    try:
        return whole_count(c.get(key) or 0, minimum)
    except ValueError as exc:
        raise ProfileError([f"{label}: {key}: {exc}"]) from None


def fields(c: dict, layers: int, label: str) -> dict:
    """The Gemma 4 profile fields: shared_kv_layers, the per-layer embedding sizes (absent when 0)."""
    shared = _count(c, "num_kv_shared_layers", label)
    width = _count(c, "hidden_size_per_layer_input", label)
    rows = _count(c, "vocab_size_per_layer_input", label) if width else 0
    if shared >= layers:
        raise ProfileError([f"{label}: num_kv_shared_layers {shared} leaves none of the {layers} layers a cache"])
    if width and not rows:
        raise ProfileError([f"{label}: hidden_size_per_layer_input {width} needs vocab_size_per_layer_input"])
    return {"shared_kv_layers": shared, "hidden_size_per_layer_input": width or None,
            "vocab_size_per_layer_input": rows or None}


def mlp_widths(c: dict, layers: int, label: str) -> list[int] | int:
    """``intermediate_size``, doubled on the shared-KV layers with ``use_double_wide_mlp``."""
    width = _count(c, "intermediate_size", label, 1)
    shared = _count(c, "num_kv_shared_layers", label)
    if not (c.get("use_double_wide_mlp") and shared):
        return width
    return [width if i < layers - shared else 2 * width for i in range(layers)]


def global_layers(c: dict, layers: int) -> list[bool]:
    """Whether each layer is a ``full_attention`` layer (``layer_types``; without it, none)."""
    types = c.get("layer_types")
    if not isinstance(types, list) or len(types) != layers:
        return [False] * layers
    return [t == "full_attention" for t in types]


def global_head_dim(c: dict, head_dim: int, label: str) -> int | None:
    """``global_head_dim`` when it differs from ``head_dim`` (None: every layer has ``head_dim``)."""
    width = _count(c, "global_head_dim", label)
    return width if width and width != head_dim else None


def kv_heads(c: dict, layers: int, kv: int, label: str) -> list[int] | int:
    """``num_key_value_heads``, or one count per layer where ``num_global_key_value_heads`` differs on the
    full-attention layers."""
    full = _count(c, "num_global_key_value_heads", label) if c.get("attention_k_eq_v") else 0
    if not full or full == kv:
        return kv
    return [full if g else kv for g in global_layers(c, layers)]


def params(c: dict, layers: int, heads: int, kv, head_dim: int, global_dim: int | None, widths,
           label: str) -> tuple[int, str]:
    """The dense text model's parameter count (module docstring) and the arithmetic, for ``sources.params``."""
    if c.get("enable_moe_block") or c.get("num_experts"):
        raise ProfileError([f"{label}: a Gemma 4 mixture of experts: kvplan does not derive its expert weights; "
                            "give its parameter count (params)"])
    h, v = int(c["hidden_size"]), int(c["vocab_size"])
    p = int(c.get("hidden_size_per_layer_input") or 0)
    v_pl = int(c.get("vocab_size_per_layer_input") or 0) if p else 0
    shared = int(c.get("num_kv_shared_layers") or 0)
    per_layer_widths = widths if isinstance(widths, list) else [widths] * layers
    per_layer_kv = kv if isinstance(kv, list) else [kv] * layers
    full = global_layers(c, layers)
    embed, ple, proj = v * h, v_pl * layers * p, h * layers * p
    total = embed * (1 if c.get("tie_word_embeddings", True) else 2) + ple + proj + (p if p else 0) + h
    attn_total = 0
    for i in range(layers):
        d = global_dim if (full[i] and global_dim) else head_dim
        attn = 2 * h * heads * d + d
        if i < layers - shared:
            kv_projections = 1 if (full[i] and c.get("attention_k_eq_v")) else 2
            attn += kv_projections * h * per_layer_kv[i] * d + d
        attn_total += attn
    mlp = sum(3 * h * w for w in per_layer_widths)
    fixed = 4 * h + (2 * h * p + h if p else 0) + 1
    total += attn_total + mlp + layers * fixed
    text = (f"derived from config (Gemma4TextModel; llama.cpp src/models/gemma4.cpp load_arch_tensors): embeddings "
            f"{v}×{h} = {embed:,}{' (tied output layer)' if c.get('tie_word_embeddings', True) else ' + lm_head'}; "
            f"per-layer embeddings {v_pl}×({layers}×{p}) = {ple:,}; per_layer_model_projection {h}×{layers * p} = "
            f"{proj:,} + norm {p}; attention Σ (q, o, q_norm; k, v, k_norm on the {layers - shared} layers with a "
            f"cache; head_dim {head_dim}, global_head_dim {global_dim or head_dim}) = {attn_total:,}; MLP Σ "
            f"3×{h}×intermediate_size[l] = {mlp:,}; per layer norms {4 * h:,}, per-layer input "
            f"{2 * h * p + h if p else 0:,}, layer_scalar 1; final norm {h:,}; total {total:,}; without the "
            f"per-layer embedding table {total - ple:,}")
    return total, text
