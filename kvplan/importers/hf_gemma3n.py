"""Gemma 3n's text config (``gemma3n_text``, usually under a multimodal ``gemma3n`` config's ``text_config``): the
keys a plain transformer config does not have, read into profile fields.

* ``intermediate_size``: one MLP width per layer (MatFormer); a single number is the same width everywhere.
* ``num_kv_shared_layers``: the last N layers reuse an earlier layer's KV cache (``shared_kv_layers``).
* ``hidden_size_per_layer_input`` × ``vocab_size_per_layer_input``: the per-layer embedding table
  (``embed_tokens_per_layer``).

The parameter count follows transformers' ``Gemma3nTextModel`` (models/gemma3n/modeling_gemma3n.py):

    params = V·H (embed_tokens, tied to the output) + V_pl·L·P (embed_tokens_per_layer)
           + H·L·P (per_layer_model_projection) + P (per_layer_projection_norm)
           + 2·(A − 1)·H² (altup_projections, altup_unembed_projections) + H (final norm)
           + Σ_layers [ attention + 3·H·I_l + 4·H
                        + (H + A² + A³ + H·A + H)   (AltUp: correct_output_scale, correction / prediction coefs,
                                                      modality_router, router_norm)
                        + (2·H·R + H)              (LAuReL: linear_left, linear_right, post_laurel_norm)
                        + (2·H·P + H) ]            (per-layer input gate, projection, norm)
    attention = H·n_h·d + 2·H·n_kv·d + n_h·d·H + 2·d (q/k norms; v_norm has no scale)

with A = ``altup_num_inputs``, R = ``laurel_rank``, P = ``hidden_size_per_layer_input``. The shared-KV layers keep
their k/v projections (the checkpoint holds them), so they are counted.
"""

from __future__ import annotations

from kvplan.errors import ProfileError
from kvplan.importers.common import whole_count

MODEL_TYPES = frozenset({"gemma3n_text", "gemma3n"})
# transformers' Gemma3nTextConfig defaults (models/gemma3n/configuration_gemma3n.py: the E4B's figures) for keys a
# config may omit
DEFAULTS = {"tie_word_embeddings": True, "vocab_size": 262_400, "vocab_size_per_layer_input": 262_144,
            "hidden_size": 2048, "hidden_size_per_layer_input": 256, "num_hidden_layers": 35,
            "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 256, "max_position_embeddings": 32_768,
            "sliding_window": 512, "num_kv_shared_layers": 15, "laurel_rank": 64, "altup_num_inputs": 4}


def mlp_widths(c: dict, layers: int, label: str) -> list[int] | int:
    """``intermediate_size`` as the profile holds it: the per-layer list (checked: one positive width per layer), or
    the one width."""
    widths = c.get("intermediate_size", 16_384)
    if not isinstance(widths, list):
        return whole_count(widths, 1)
    if len(widths) != layers:
        raise ProfileError([f"{label}: intermediate_size lists {len(widths)} widths for {layers} layers "
                            "(num_hidden_layers)"])
    try:
        return [whole_count(w, 1) for w in widths]
    except ValueError as exc:
        raise ProfileError([f"{label}: intermediate_size: {exc}"]) from None


def fields(c: dict, layers: int, label: str) -> dict:
    """The Gemma 3n profile fields: shared_kv_layers, the per-layer embedding sizes."""
    try:
        shared = whole_count(c.get("num_kv_shared_layers", DEFAULTS["num_kv_shared_layers"]), 0)
        width = whole_count(c.get("hidden_size_per_layer_input", DEFAULTS["hidden_size_per_layer_input"]), 1)
        rows = whole_count(c.get("vocab_size_per_layer_input", DEFAULTS["vocab_size_per_layer_input"]), 1)
    except ValueError as exc:
        raise ProfileError([f"{label}: {exc}"]) from None
    if shared >= layers:
        raise ProfileError([f"{label}: num_kv_shared_layers {shared} leaves none of the {layers} layers a cache"])
    return {"shared_kv_layers": shared, "hidden_size_per_layer_input": width, "vocab_size_per_layer_input": rows}


def params(c: dict, layers: int, heads: int, kv_heads: int, head_dim: int, widths) -> tuple[int, str]:
    """The text model's parameter count (module docstring) and the arithmetic, for ``sources.params``."""
    h, v = int(c["hidden_size"]), int(c["vocab_size"])
    p = int(c.get("hidden_size_per_layer_input", DEFAULTS["hidden_size_per_layer_input"]))
    v_pl = int(c.get("vocab_size_per_layer_input", DEFAULTS["vocab_size_per_layer_input"]))
    a = int(c.get("altup_num_inputs", DEFAULTS["altup_num_inputs"]))
    r = int(c.get("laurel_rank", DEFAULTS["laurel_rank"]))
    per_layer_widths = widths if isinstance(widths, list) else [widths] * layers
    embed, ple, proj = v * h, v_pl * layers * p, h * layers * p
    altup_global = 2 * (a - 1) * h * h
    attn = h * heads * head_dim + 2 * h * kv_heads * head_dim + heads * head_dim * h + 2 * head_dim
    altup = h + a * a + a * a * a + h * a + h
    laurel = 2 * h * r + h
    pl = 2 * h * p + h
    fixed = attn + 4 * h + altup + laurel + pl
    mlp = sum(3 * h * w for w in per_layer_widths)
    total = embed + ple + proj + p + altup_global + h + layers * fixed + mlp
    uniform = len(set(per_layer_widths)) == 1
    mlp_text = (f"MLP 3×{h}×{per_layer_widths[0]} = {3 * h * per_layer_widths[0]:,} per layer" if uniform
                else f"MLP Σ 3×{h}×intermediate_size[l] = {mlp:,}")
    text = (f"derived from config (Gemma3nTextModel): embeddings {v}×{h} = {embed:,} (tied output layer); "
            f"per-layer embeddings {v_pl}×({layers}×{p}) = {ple:,}; per_layer_model_projection {h}×{layers * p} = "
            f"{proj:,} + norm {p}; AltUp projections 2×{a - 1}×{h}×{h} = {altup_global:,}; per layer attention "
            f"{attn:,} (q {heads}×{head_dim}, k/v {kv_heads}×{head_dim}, o, q/k norms), norms {4 * h:,}, AltUp "
            f"{altup:,}, LAuReL (rank {r}) {laurel:,}, per-layer input {pl:,}; {mlp_text}; final norm {h:,}; "
            f"total {total:,}; without the two embedding tables {total - embed - ple:,}")
    return total, text
