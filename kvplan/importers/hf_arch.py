"""What kind of model a Hugging Face config describes, before kvplan prices it as one.

kvplan prices attention KV caches. A recurrent, state-space or hybrid model keeps (some of) its
context in a fixed-size state instead, so pricing it as a transformer would invent a cache it does
not have: :func:`refuse_unpriceable` says so and stops. A mixture of experts is priced only where
kvplan's profile fields can express its layout (``experts``, ``experts_per_token``,
``expert_intermediate_size``, ``shared_experts``, ``dense_layers``: routed experts on every layer
after the leading dense ones); :func:`moe_layout` reads it or names what it lacks, so a MoE is never
counted as a dense model.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvplan.errors import ProfileError

# model_type → what the model is instead of a transformer with a KV cache on every layer.
_RECURRENT = {
    **dict.fromkeys(("rwkv", "rwkv5", "rwkv6", "rwkv7"), "a recurrent network (RWKV)"),
    "xlstm": "a recurrent network (xLSTM)",
    **dict.fromkeys(("mamba", "mamba2", "falcon_mamba"), "a state-space model (Mamba)"),
    **dict.fromkeys(("jamba", "zamba", "zamba2", "bamba", "granitemoehybrid", "nemotron_h", "plamo2",
                     "hymba"), "a hybrid of attention and state-space (Mamba) layers"),
    "recurrent_gemma": "a hybrid of local attention and recurrent (RG-LRU) layers",
    **dict.fromkeys(("lfm2", "lfm2_moe", "lfm2_vl"), "a hybrid of attention and short-convolution layers"),
    **dict.fromkeys(("qwen3_next", "kimi_linear", "minimax"), "a hybrid of attention and linear-attention layers"),
}
# Keys only a state-space or hybrid config has: they catch a model_type the table above does not know.
_STATE_KEYS = ("ssm_state_size", "mamba_d_state", "state_size", "ssm_cfg", "mamba_expand", "layers_block_type",
               "attn_layer_period", "hybrid_override_pattern", "linear_attn_config")
_ATTENTION_LAYER_TYPES = {"full_attention", "sliding_attention", "chunked_attention"}


def refuse_unpriceable(configs: list[dict], model_types: list[str], label: str) -> None:
    """A ProfileError naming the architecture when ``configs`` (the config, its text_config) is not attention
    with a KV cache on every layer; nothing when it is, or when it is a hybrid whose state layers kvplan reads
    (:mod:`kvplan.importers.hf_state`)."""
    from kvplan.importers.hf_state import STATE_MODEL_TYPES

    if model_types and model_types[-1] in STATE_MODEL_TYPES:
        return
    for model_type in model_types:
        if model_type in _RECURRENT:
            raise ProfileError([f"{label}: model_type {model_type!r} is {_RECURRENT[model_type]}: it keeps a "
                                "fixed-size state instead of a KV cache on every layer, and kvplan prices "
                                "attention KV caches only, so it cannot plan this model"])
    for c in configs:
        state_key = next((k for k in _STATE_KEYS if c.get(k) is not None), None)
        types = c.get("layer_types")
        others = sorted({str(t) for t in types} - _ATTENTION_LAYER_TYPES) if isinstance(types, list) else []
        if state_key or others:
            what = (f"its layer_types hold {', '.join(others)} layers" if others
                    else f"it has {state_key} (a state-space or recurrent layer)")
            kind = model_types[0] if model_types and model_types[0] else "unknown"
            raise ProfileError([f"{label}: model_type {kind!r} has layers kvplan does not price ({what}); "
                                "kvplan prices the KV caches of full and sliding-window attention only, so it "
                                "cannot plan this model"])


# Mixtures of experts whose layout kvplan knows: routed experts of one width on the MoE layers, shared
# experts of that width (DeepSeek), or a shared expert a multiple of it with a sigmoid gate (Qwen2-MoE);
# gpt-oss's experts (intermediate_size wide, as Mixtral's) carry biases and its router a bias; Granite-4.0-H's
# experts are intermediate_size wide and its shared MLP (shared_intermediate_size) runs ungated beside them.
PRICED_MOE = ("deepseek_v2", "deepseek_v3", "gpt_oss", "mixtral", "qwen2_moe", "qwen3_moe", "qwen3_5_moe",
              "qwen3_5_moe_text", "lfm2_moe", "granitemoehybrid", "llama4", "llama4_text")
# model_types with Qwen2-MoE's shared expert: shared_expert_intermediate_size wide, behind a sigmoid gate of H terms
_SHARED_EXPERT_GATE = ("qwen2_moe", "qwen3_5_moe", "qwen3_5_moe_text")
# model_types whose expert width is the config's intermediate_size (no moe_intermediate_size key)
EXPERT_WIDTH_IS_INTERMEDIATE = ("gpt_oss", "mixtral", "granitemoehybrid", "llama4", "llama4_text")
_EXPERT_KEYS = ("n_routed_experts", "num_local_experts", "num_experts", "moe_num_experts")
_PER_TOKEN_KEY = "num_experts_per_tok"


@dataclass(frozen=True)
class MoeLayout:
    """A mixture of experts as kvplan's profile fields hold it, and the extra parameters of each MoE layer."""

    experts: int  # routed experts per MoE layer
    experts_per_token: int
    expert_intermediate_size: int
    shared_experts: int  # always-on experts, each expert_intermediate_size wide
    dense_layers: int  # leading layers with a dense MLP
    extra_per_layer: int = 0  # parameters of a MoE layer beyond experts and router, all used by every token
    extra_what: str = ""  # what they are, for sources.params
    per_expert_extra: int = 0  # parameters of each expert beyond its 3·H·I matrices (gpt-oss: its biases)
    per_expert_what: str = ""


def expert_count(c: dict) -> tuple[str, int] | None:
    """(key, routed experts) when the config is a mixture of experts, else None."""
    for key in _EXPERT_KEYS:
        value = c.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return key, value
    return None


def moe_layout(c: dict, model_type: str, layers: int, label: str, missing: list[str]) -> MoeLayout | None:
    """The layout of a mixture of experts (None for a dense config). A key it needs and lacks is appended to
    ``missing`` (``(key, value)`` when the value is wrong; the caller names them all at once); a layout the
    profile cannot express is a ProfileError."""
    found = expert_count(c)
    if found is None:
        return None
    key, experts = found
    if model_type not in PRICED_MOE:
        raise ProfileError([f"{label}: a mixture of experts ({key} {experts}) of model_type {model_type or 'unknown'!r}, "
                            f"whose expert layout kvplan does not know (it knows {', '.join(PRICED_MOE)}); write "
                            "the profile by hand with experts, experts_per_token, expert_intermediate_size, "
                            "shared_experts and dense_layers (docs/profiles.md)"])
    per_token = positive_count(c, _PER_TOKEN_KEY, missing)
    width_key = "intermediate_size" if model_type in EXPERT_WIDTH_IS_INTERMEDIATE else "moe_intermediate_size"
    width = positive_count(c, width_key, missing)
    shared, extra, extra_what = int(c.get("n_shared_experts") or 0), 0, ""
    if model_type in _SHARED_EXPERT_GATE:
        shared_width = _whole_or_zero(c.get("shared_expert_intermediate_size"))
        if shared_width and width:
            if shared_width % width:
                raise ProfileError([f"{label}: shared_expert_intermediate_size {shared_width} is not a multiple of "
                                    f"moe_intermediate_size {width}: kvplan's profile counts shared experts "
                                    "(shared_experts) of the routed experts' width"])
            shared, extra = shared_width // width, _whole_or_zero(c.get("hidden_size"))
            extra_what = f"shared-expert gate {extra:,}"
    if model_type == "granitemoehybrid":
        # GraniteMoeHybridDecoderLayer: block_sparse_moe (the routed experts) plus shared_mlp, one ungated SwiGLU
        # MLP shared_intermediate_size wide (transformers models/granitemoehybrid/modeling_granitemoehybrid.py)
        shared_width = _whole_or_zero(c.get("shared_intermediate_size"))
        if shared_width and width:
            if shared_width % width:
                raise ProfileError([f"{label}: shared_intermediate_size {shared_width} is not a multiple of "
                                    f"intermediate_size {width}: kvplan's profile counts shared experts "
                                    "(shared_experts) of the routed experts' width"])
            shared = shared_width // width
    if model_type in ("llama4", "llama4_text"):
        # Llama4TextMoe: one shared_expert, a Llama4TextMLP as wide as the routed experts (intermediate_size)
        shared = 1
    if model_type == "deepseek_v3" and c.get("topk_method") == "noaux_tc":
        extra, extra_what = experts, f"e_score_correction_bias {experts}"  # one term per routed expert
    per_expert, per_expert_what = 0, ""
    if model_type == "gpt_oss":
        # transformers' GptOssTopKRouter has a bias of E terms; each GptOssExperts expert a gate_up_proj_bias of
        # 2·I and a down_proj_bias of H (models/gpt_oss/modeling_gpt_oss.py)
        extra, extra_what = experts, f"router bias {experts}"
        hidden = _whole_or_zero(c.get("hidden_size"))
        if width and hidden:
            per_expert = 2 * width + hidden
            per_expert_what = f"expert biases 2×{width} + {hidden} = {per_expert:,}"
    if per_token and per_token > experts:
        raise ProfileError([f"{label}: {_PER_TOKEN_KEY} {per_token} is more than {key} {experts}"])
    moe = _moe_layers(c, model_type, layers)
    dense = layers - len(moe)
    if moe != list(range(dense, layers)):
        shown = ", ".join(map(str, moe[:8])) + (", …" if len(moe) > 8 else "")
        raise ProfileError([f"{label}: experts on layers {shown} only ({_layout_keys(c)}): kvplan's profile "
                            "fields express leading dense layers (dense_layers) followed by MoE layers, not "
                            "this layout"])
    return MoeLayout(experts, per_token or 0, width or 0, shared, dense, extra, extra_what, per_expert,
                     per_expert_what)


def _whole_or_zero(value) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def positive_count(c: dict, key: str, missing: list[str]) -> int | None:
    """``c[key]`` when it is a positive whole number; else None, with the key (or ``(key, value)`` when the
    value is wrong) in ``missing``."""
    value = c.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        missing.append(key if value is None else (key, value))
        return None
    return value


def _moe_layers(c: dict, model_type: str, layers: int) -> list[int]:
    """The layers with experts, as the transformers model of ``model_type`` builds them."""
    if model_type in ("qwen2_moe", "qwen3_moe", "qwen3_5_moe", "qwen3_5_moe_text"):
        step = int(c.get("decoder_sparse_step") or 1)
        dense_only = set(c.get("mlp_only_layers") or [])
        return [i for i in range(layers) if i not in dense_only and (i + 1) % step == 0]
    if model_type in ("deepseek_v2", "deepseek_v3"):
        first, freq = int(c.get("first_k_dense_replace") or 0), int(c.get("moe_layer_freq") or 1)
        return [i for i in range(layers) if i >= first and i % freq == 0]
    if model_type in ("llama4", "llama4_text"):
        from kvplan.importers.hf_llama4 import moe_layers

        return moe_layers(c, layers)
    if model_type == "lfm2_moe":  # Lfm2MoeDecoderLayer: a dense Lfm2MoeMLP below num_dense_layers (default 2)
        first = c.get("num_dense_layers", 2)
        first = first if isinstance(first, int) and not isinstance(first, bool) and first >= 0 else 2
        return list(range(min(first, layers), layers))
    return list(range(layers))


def _layout_keys(c: dict) -> str:
    keys = ("first_k_dense_replace", "moe_layer_freq", "decoder_sparse_step", "mlp_only_layers", "num_dense_layers",
            "interleave_moe_layer_step", "moe_layers")
    return ", ".join(f"{k} {c[k]}" for k in keys if c.get(k) not in (None, [], 0)) or "its layout keys"
