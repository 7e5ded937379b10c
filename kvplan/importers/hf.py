"""Model profile from a Hugging Face ``config.json`` (read locally; nothing is downloaded).

Figures come from the config's keys; a key the file leaves out takes the default of the
transformers config class of its ``model_type`` (``_DEFAULTS`` below, e.g. a Gemma 3 4B
``text_config`` names only four keys). The parameter count is derived from the shapes:

    params = V·H (embedding) + V·H (output layer, unless tied) + H (final norm)
           + Σ_layers [ attention + MLP + norms ]
    attention = H·n_h·d (q) + H·n_kv·d (k) + H·n_kv·d_v (v) + n_h·d_v·H (o)  [+ biases, + q/k norms 2·d]
    MLA (DeepSeek-V2) = H·n_h·(d_nope+d_rope) (q; or H·r_q + r_q + r_q·n_h·(d_nope+d_rope) with q_lora_rank)
                      + H·(r_kv+d_rope) + r_kv + r_kv·n_h·(d_nope+d_v) + n_h·d_v·H
    MLP   = 3·H·I (gated: gate, up, down); a MoE layer: (E_routed + E_shared)·3·H·I_moe + E_routed·H (router)
    norms = 2·H per layer (Gemma 2/3: 4·H)

A MoE config also gives ``params_active``, the parameters one token uses, counted the same way
(embeddings included) with each MoE layer's MLP replaced by the experts a token runs through:
(k + E_shared)·3·H·I_moe + E_routed·H, k = num_experts_per_tok. Which configs are MoE, and their
layout (Mixtral's experts are ``intermediate_size`` wide; Qwen2-MoE's shared expert counts as
``shared_expert_intermediate_size / moe_intermediate_size`` experts plus an H-wide gate; DeepSeek-V3's
``noaux_tc`` router adds E_routed bias terms), is :mod:`kvplan.importers.hf_arch`, which also refuses the
configs kvplan cannot price (recurrent and hybrid models, other MoE layouts).
"""

from __future__ import annotations

import re
from pathlib import Path

from kvplan.errors import FieldText, ProfileError
from kvplan.files import jsonio
from kvplan.importers.common import (MOE_PARAMS_GIVEN, PARAMS_GIVEN, ImportedProfile, check_given_params, finish,
                                     flag, slug, swa_pattern_layers, weight_fields, whole_count, window_pattern)
from kvplan.importers.hf_arch import (EXPERT_WIDTH_IS_INTERMEDIATE, MoeLayout, expert_count, moe_layout, positive_count,
                                     refuse_unpriceable)
from kvplan.importers import hf_gemma3n, hf_gemma4, hf_llama4
from kvplan.importers.hf_state import STATE_MODEL_TYPES, hybrid_layout, hybrid_params, lfm2_mlp_width
from kvplan.profiles.field_rules import check_profile_name, check_weight_bits
from kvplan.profiles.spec import layer_count_problem

# Defaults of the transformers config classes for keys a config.json may omit.
_DEFAULTS: dict[str, dict] = {
    "llama": {"tie_word_embeddings": False},
    "mistral": {"tie_word_embeddings": False, "sliding_window": 4096},
    "qwen2": {"tie_word_embeddings": False, "use_sliding_window": False, "sliding_window": 4096,
              "max_window_layers": 28},
    "qwen3": {"tie_word_embeddings": False, "use_sliding_window": False, "sliding_window": 4096,
              "max_window_layers": 28, "head_dim": 128},
    "phi3": {"tie_word_embeddings": False},
    "gemma2": {"tie_word_embeddings": True, "head_dim": 256, "sliding_window": 4096},
    "gemma3_text": {"tie_word_embeddings": True, "vocab_size": 262_208, "hidden_size": 2304,
                    "intermediate_size": 9216, "num_hidden_layers": 26, "num_attention_heads": 8,
                    "num_key_value_heads": 4, "head_dim": 256, "max_position_embeddings": 131_072,
                    "sliding_window": 4096, "sliding_window_pattern": 6},
    "deepseek_v2": {"tie_word_embeddings": False},
    "deepseek_v3": {"tie_word_embeddings": False},
    "mixtral": {"tie_word_embeddings": False},
    # transformers' GptOssConfig (models/gpt_oss/configuration_gpt_oss.py)
    "gpt_oss": {"tie_word_embeddings": False, "attention_bias": True, "head_dim": 64, "sliding_window": 128,
                "num_local_experts": 128, "num_experts_per_tok": 4},
    "qwen2_moe": {"tie_word_embeddings": False, "use_sliding_window": False, "sliding_window": 4096,
                  "max_window_layers": 28, "decoder_sparse_step": 1, "mlp_only_layers": []},
    "qwen3_moe": {"tie_word_embeddings": False, "use_sliding_window": False, "sliding_window": 4096,
                  "max_window_layers": 28, "decoder_sparse_step": 1, "mlp_only_layers": []},
    # hybrids with state layers (transformers 5.17.0 configuration_<type>.py defaults)
    "lfm2": {"tie_word_embeddings": True, "conv_L_cache": 3},
    "lfm2_moe": {"tie_word_embeddings": True, "conv_L_cache": 3, "num_dense_layers": 2, "num_experts": 32,
                 "num_experts_per_tok": 4, "moe_intermediate_size": 1792},
    "qwen3_5_text": {"tie_word_embeddings": False, "head_dim": 256, "linear_conv_kernel_dim": 4},
    "qwen3_5_moe_text": {"tie_word_embeddings": False, "head_dim": 256, "linear_conv_kernel_dim": 4,
                         "num_experts": 256, "num_experts_per_tok": 8, "moe_intermediate_size": 512,
                         "shared_expert_intermediate_size": 512},
    "falcon_h1": {"tie_word_embeddings": False},
    "granitemoehybrid": {"tie_word_embeddings": False},
    "nemotron_h": {"tie_word_embeddings": False},
    "gemma3n_text": hf_gemma3n.DEFAULTS,
}
_FOUR_NORMS = {"gemma2", "gemma3_text", "gemma3"}  # input, post-attention, pre- and post-feedforward norms
_QK_NORM = {"qwen3", "qwen3_moe", "gemma3_text", "gemma3"}  # per-head RMSNorm on queries and keys
_QKV_BIAS = {"qwen2", "qwen2_moe"}  # bias on q, k, v (not o)
# a learned sink logit per attention head and layer (GptOssAttention.sinks): weights, nothing in the cache
_ATTENTION_SINKS = {"gpt_oss"}


# Every config key kvplan reads as a count, with the least value it may take (kvplan.importers.common.whole_count
# is the rule): 1 where a count must be there to mean anything, 0 where the transformers classes read 0 as "none"
# (no window, no latent attention, no shared experts, no leading dense layers; a dense config may carry an
# expert count of 0). A null is the key left out.
_COUNT_KEYS: dict[str, int] = {
    **dict.fromkeys(("num_hidden_layers", "num_attention_heads", "num_key_value_heads", "hidden_size",
                     "intermediate_size", "vocab_size", "head_dim", "v_head_dim", "max_position_embeddings",
                     "qk_nope_head_dim", "decoder_sparse_step", "moe_layer_freq", "sliding_window_pattern",
                     "_sliding_window_pattern"), 1),
    **dict.fromkeys(("sliding_window", "kv_lora_rank", "q_lora_rank", "qk_rope_head_dim", "n_shared_experts",
                     "first_k_dense_replace", "max_window_layers", "shared_expert_intermediate_size",
                     "moe_intermediate_size", "num_experts_per_tok", "n_routed_experts", "num_local_experts",
                     "num_experts", "moe_num_experts"), 0),
}
_FLAG_KEYS = ("tie_word_embeddings", "use_sliding_window", "attention_bias", "mlp_bias")


def _read_values(c: dict, nested: dict | None) -> tuple[dict, list[tuple[str, str]]]:
    """``c`` with every count key a checked int and every flag a bool, and ``(key, problem)`` for each value
    that is neither (dropped from the dict, so nothing reads it). ``key`` says where the value is: a multimodal
    config's ``text_config.hidden_size``."""
    out, problems = dict(c), []

    def named(key: str) -> str:
        return f"text_config.{key}" if nested is not None and key in nested else key

    for key, minimum in _COUNT_KEYS.items():
        if out.get(key) is None:
            continue
        try:
            out[key] = whole_count(out[key], minimum)
            too_many = layer_count_problem(out[key]) if key == "num_hidden_layers" else None
            if too_many:  # refused here, before any per-layer work
                raise ValueError(too_many)
        except ValueError as exc:
            problems.append((named(key), str(exc)))
            del out[key]
    for key in _FLAG_KEYS:
        if out.get(key) is not None:
            try:
                flag(out[key])
            except ValueError as exc:
                problems.append((named(key), str(exc)))
                del out[key]
    indices = out.get("mlp_only_layers")
    if indices is not None:
        try:
            if not isinstance(indices, list):
                raise ValueError(f"expected a list of layer indices, got {indices!r}")
            out["mlp_only_layers"] = [whole_count(i, 0) for i in indices]
        except ValueError as exc:
            problems.append((named("mlp_only_layers"), str(exc)))
            del out["mlp_only_layers"]
    return out, problems


def profile_from_hf_file(path: str | Path, *, name: str | None = None, params: int | None = None,
                         weight_bits: float | None = None, weight_type: str | None = None,
                         params_source: str = PARAMS_GIVEN) -> ImportedProfile:
    """A model profile from a local ``config.json``, or a model folder holding one (see :func:`profile_name`);
    ``params_source`` as in :func:`profile_from_hf_config`."""
    from kvplan.files.yamlio import read_text

    p = Path(path)
    folder_given = p.is_dir()
    if folder_given:
        if not (p / "config.json").is_file():
            raise ProfileError([f"{path}: a folder without a config.json (give the config file, or the model "
                                "folder that holds it)"])
        p = p / "config.json"
    text = read_text(p)
    try:
        config = jsonio.loads(text)
    except jsonio.JsonError as exc:
        raise ProfileError([f"{p}:{exc.line}: {exc.worded}"]) from None
    if not isinstance(config, dict):
        raise ProfileError([f"{p}: expected a JSON object (a config.json), got {type(config).__name__}"])
    notes: list[str] = []
    if name is None:
        name, how = profile_name(config, p, folder_given)
        notes.append(FieldText("name", f"profile named {name!r} after {how}; {{name}} sets another"))
    imported = profile_from_hf_config(config, name=name, where=str(p), params=params, params_source=params_source,
                                      weight_bits=weight_bits,
                                      weight_type=weight_type)
    return ImportedProfile(imported.model, imported.yaml_text, (*notes, *imported.notes))


# Files only a model folder holds (weights, tokenizer, generation defaults): a folder with one of them next to
# config.json is the model's own folder, so its name is the model's; a folder with a lone config.json is not.
_MODEL_FOLDER_FILES = ("*.safetensors", "model.safetensors.index.json", "pytorch_model*.bin", "tokenizer.json",
                       "tokenizer_config.json", "tokenizer.model", "generation_config.json")
# The Hugging Face cache keeps a model's files in models--ORG--NAME/snapshots/REVISION/.
_HUB_CACHE_RE = re.compile(r"^models--[^/]+?--(.+)$")


def profile_name(config: dict, path: Path, folder_given: bool = False) -> tuple[str, str]:
    """The profile name a config file implies, and what it was taken from (for a note).

    In order: the last path component of the config's ``_name_or_path`` (``Qwen/Qwen3-0.6B`` →
    ``qwen3-0.6b``; a bare ``.`` says nothing); a config file named after its model
    (``gemma-3-1b.json``); the ``NAME`` of a Hugging Face cache folder
    (``models--ORG--NAME/snapshots/REV/config.json``); the folder holding ``config.json`` when it is
    the model's folder — given on the command line as a folder, or holding the model's weights or
    tokenizer next to the config; else the config's ``model_type``. A folder holding a lone
    ``config.json`` (``my/config.json``) names a place, not a model, so it is never used.
    """
    raw = str(config.get("_name_or_path") or "").strip().rstrip("/\\")
    last = re.split(r"[/\\]", raw)[-1] if raw else ""
    if last not in ("", ".", ".."):
        return slug(last), f"the config's _name_or_path {raw!r}"
    if path.stem.lower() != "config":
        return slug(path.stem), f"the file name {path.name!r}"
    folder = path.resolve().parent
    for part in (folder, *folder.parents)[:3]:
        match = _HUB_CACHE_RE.match(part.name)
        if match:
            return slug(match.group(1)), f"the Hugging Face cache folder {part.name!r}"
    if folder_given or any(next(folder.glob(pattern), None) for pattern in _MODEL_FOLDER_FILES):
        return slug(folder.name), f"the model folder {folder.name!r}"
    model_type = str(config.get("model_type") or "").strip()
    if model_type:
        return slug(model_type), (f"the config's model_type (no _name_or_path, and {folder.name!r} holds no "
                                  "model files, so it is not taken for the model's name)")
    return "imported-model", "nothing in the config or its folder names the model"


def text_config(config: dict) -> tuple[dict, str]:
    """The language model's config (a multimodal config nests it) with class defaults, and its model_type."""
    nested = config.get("text_config")
    raw = nested if isinstance(nested, dict) else config
    model_type = str(raw.get("model_type") or config.get("model_type") or "")
    if isinstance(nested, dict) and "tie_word_embeddings" not in raw and "tie_word_embeddings" in config:
        raw = {**raw, "tie_word_embeddings": config["tie_word_embeddings"]}
    return {**_DEFAULTS.get(model_type, {}), **{k: v for k, v in raw.items()}}, model_type


def local_layers(c: dict, model_type: str, layers: int, max_context: int | None) -> tuple[list[int], str]:
    """The windowed layers the config really applies, and how that was decided (for sources)."""
    window = c.get("sliding_window")
    if not window:
        return [], "no sliding_window in the config: every layer attends to the whole context"
    if c.get("use_sliding_window") is False:
        return [], f"sliding_window {window} is declared but use_sliding_window is false: not applied"
    if max_context and window >= max_context:
        return [], (f"sliding_window {window} ≥ max_position_embeddings {max_context}: "
                    "no effect within the trained context, left out")
    types = c.get("layer_types")
    if isinstance(types, list) and len(types) == layers:
        return [i for i, t in enumerate(types) if t == "sliding_attention"], "config layer_types"
    if model_type in ("qwen2", "qwen3", "qwen2_moe", "qwen3_moe"):
        first = int(c.get("max_window_layers") or 0)
        return list(range(first, layers)), f"use_sliding_window on layers ≥ max_window_layers ({first})"
    if model_type == "gemma2":
        return list(range(0, layers, 2)), "Gemma 2: even layers local, odd layers global"
    if model_type == "gpt_oss":  # GptOssConfig's default layer_types: sliding when (i + 1) % 2
        return list(range(0, layers, 2)), "gpt-oss (no layer_types): even layers sliding, odd layers full"
    pattern = c.get("sliding_window_pattern", c.get("_sliding_window_pattern"))
    if isinstance(pattern, int) and not isinstance(pattern, bool):
        return swa_pattern_layers(pattern, layers), (f"sliding_window_pattern {pattern}: layer i global "
                                                     f"when (i + 1) % {pattern} == 0")
    return list(range(layers)), "sliding_window on every layer"


def derived_params(c: dict, model_type: str, layers: int, heads: int, kv_heads: int, head_dim: int,
                   v_head_dim: int, moe: MoeLayout | None = None) -> tuple[int, int | None, str]:
    """Parameter count from the shapes (module docstring), the active count of a MoE (else None), the arithmetic.

    The keys it reads were checked by :func:`profile_from_hf_config` (positive whole numbers)."""
    hidden, vocab = int(c["hidden_size"]), int(c["vocab_size"])
    inter = int(c.get("intermediate_size") or 0)  # absent only in a MoE without dense layers
    tied = bool(c.get("tie_word_embeddings"))
    embed = vocab * hidden
    if c.get("kv_lora_rank"):
        rope, nope = int(c["qk_rope_head_dim"]), int(c["qk_nope_head_dim"])
        r_kv, r_q = int(c["kv_lora_rank"]), c.get("q_lora_rank")
        q = hidden * r_q + r_q + r_q * heads * (nope + rope) if r_q else hidden * heads * (nope + rope)
        attn = q + hidden * (r_kv + rope) + r_kv + r_kv * heads * (nope + v_head_dim) + heads * v_head_dim * hidden
        attn_text = f"MLA attention {attn:,}"
    else:
        attn = (hidden * heads * head_dim + hidden * kv_heads * head_dim + hidden * kv_heads * v_head_dim
                + heads * v_head_dim * hidden)
        if model_type in _QKV_BIAS:
            attn += heads * head_dim + kv_heads * head_dim + kv_heads * v_head_dim
        elif c.get("attention_bias"):
            attn += heads * head_dim + kv_heads * head_dim + kv_heads * v_head_dim + hidden
        if model_type in _QK_NORM:
            attn += 2 * head_dim
        sinks = f", sinks {heads}" if model_type in _ATTENTION_SINKS else ""
        if sinks:
            attn += heads
        attn_text = f"attention {attn:,} (q {heads}×{head_dim}, k/v {kv_heads}×{head_dim}, o{sinks})"
    norms = (4 if model_type in _FOUR_NORMS else 2) * hidden
    dense_mlp = 3 * hidden * inter + (2 * inter + hidden if c.get("mlp_bias") else 0)
    if moe is not None:
        experts, shared, per_token = moe.experts, moe.shared_experts, moe.experts_per_token
        width = moe.expert_intermediate_size
        moe_layers = layers - moe.dense_layers
        always = experts * hidden + moe.extra_per_layer  # router (and gate or bias terms): every token uses them
        expert = 3 * hidden * width + moe.per_expert_extra  # one expert's parameters
        moe_mlp = (experts + shared) * expert + always
        mlp_total = moe_layers * moe_mlp + moe.dense_layers * dense_mlp
        extra = f" + {moe.extra_what}" if moe.extra_what else ""
        biases = f" (+ {moe.per_expert_what})" if moe.per_expert_what else ""
        mlp_text = (f"{moe.dense_layers} dense MLP layers × {dense_mlp:,} + {moe_layers} MoE layers × "
                    f"({experts} routed + {shared} shared) experts × 3×{hidden}×{width}{biases} + router "
                    f"{experts}×{hidden}{extra} = {moe_mlp:,}")
        active_moe_mlp = (per_token + shared) * expert + always
        active_mlp_total = moe_layers * active_moe_mlp + moe.dense_layers * dense_mlp
        mlp_text += (f"; active per token: ({per_token} routed (num_experts_per_tok) + {shared} shared) experts "
                     f"+ router{extra} = {active_moe_mlp:,} per MoE layer")
    else:
        mlp_total = active_mlp_total = layers * dense_mlp
        mlp_text = f"MLP 3×{hidden}×{inter} = {dense_mlp:,} per layer"
    rest = embed * (1 if tied else 2) + hidden + layers * (attn + norms)
    total = rest + mlp_total
    active = rest + active_mlp_total if moe is not None else None
    text = (f"derived from config: embeddings {vocab}×{hidden} = {embed:,}"
            f"{' (tied output layer)' if tied else f' + untied lm_head {embed:,}'}; per layer {attn_text}, "
            f"norms {norms:,}; {mlp_text}; final norm {hidden:,}; total {total:,}"
            f"{f', active {active:,} (embeddings included)' if active else ''}")
    return total, active, text


def profile_from_hf_config(config: dict, *, name: str, where: str = "config.json", label: str | None = None,
                           params: int | None = None, weight_bits: float | None = None,
                           weight_type: str | None = None, params_source: str = PARAMS_GIVEN) -> ImportedProfile:
    """Build and validate a model profile from a parsed config.json (see the module docstring).

    ``params_source`` is written into ``sources.params`` when ``params`` is given: where the count came
    from, as the caller says it.

    ``where`` is the config's place, written into the profile; ``label`` (default ``where``) the source as the
    user gave it (``hf:ORG/NAME``, a file path), which errors name. A recurrent or hybrid model, a mixture of
    experts whose layout the profile cannot hold (:mod:`kvplan.importers.hf_arch`) and a config lacking keys
    are refused, the last naming every missing key at once."""
    label = label or where
    check_profile_name(name)
    if weight_bits is not None:
        check_weight_bits(weight_bits)
    c, model_type = text_config(config)
    refuse_unpriceable([config, c], [str(config.get("model_type") or ""), model_type], label)
    gemma3n = model_type in hf_gemma3n.MODEL_TYPES
    gemma4 = model_type in hf_gemma4.MODEL_TYPES
    mlp_list = None
    if gemma3n and isinstance(c.get("intermediate_size"), list):  # one MLP width per layer (MatFormer)
        mlp_list = c["intermediate_size"]
        c = {**c, "intermediate_size": max((w for w in mlp_list if isinstance(w, int)), default=None)}
    if model_type == "lfm2" and c.get("intermediate_size") is None and c.get("block_ff_dim") is not None:
        c = {**c, "intermediate_size": c["block_ff_dim"]}  # LFM2-1.2B's own config names its MLP width only so
    # A Hub reference names the repository; the keys are those of its config.json.
    place = label if label == where else f"{label}: config.json"
    nested = config.get("text_config") if isinstance(config.get("text_config"), dict) else None
    c, bad = _read_values(c, nested)
    problems = [f"{place}: {key}: {problem}" for key, problem in bad]
    try:
        layers, heads, moe = _checked_shape(c, model_type, label, derive_params=params is None,
                                            skip={key.rsplit(".", 1)[-1] for key, _ in bad})
    except ProfileError as exc:
        raise ProfileError(problems + exc.problems) from None
    except (TypeError, ValueError) as exc:  # a key of the wrong type among those the layout reads
        raise ProfileError(problems + [f"{label}: cannot read this config ({exc})"]) from None
    if problems:
        raise ProfileError(problems)
    kv_heads = c.get("num_key_value_heads") or heads
    hidden = c.get("hidden_size")
    mla = None
    if c.get("kv_lora_rank"):
        head_dim = int(c["qk_nope_head_dim"]) + int(c["qk_rope_head_dim"])
        v_head_dim = int(c.get("v_head_dim") or head_dim)
        mla = {"kv_lora_rank": int(c["kv_lora_rank"]), "qk_rope_head_dim": int(c["qk_rope_head_dim"])}
        head_note = f"qk_nope_head_dim {c['qk_nope_head_dim']} + qk_rope_head_dim {c['qk_rope_head_dim']}"
    elif c.get("head_dim"):
        head_dim = v_head_dim = int(c["head_dim"])
        head_note = "config head_dim"
    else:
        head_dim = v_head_dim = int(hidden) // heads
        head_note = f"hidden_size / num_attention_heads = {hidden} / {heads}"
    max_context = c.get("max_position_embeddings")
    hybrid = hybrid_layout(c, model_type, layers, label) if model_type in STATE_MODEL_TYPES else None
    if hybrid is not None and hybrid.moe and moe is None and params is None:
        raise ProfileError([f"{label}: a {model_type} mixture of experts: kvplan reads its state and attention "
                            "layers but does not derive its expert weights; give its parameter count (params)"])
    gemma3n_fields = {}
    widths = c.get("intermediate_size")
    global_dim = None
    if gemma3n:
        widths = hf_gemma3n.mlp_widths({**c, "intermediate_size": mlp_list or widths}, layers, label)
        gemma3n_fields = hf_gemma3n.fields(c, layers, label)
    elif gemma4:  # per-layer head widths and KV heads, shared-KV layers, per-layer embeddings, double-wide MLP
        widths = hf_gemma4.mlp_widths(c, layers, label)
        gemma3n_fields = hf_gemma4.fields(c, layers, label)
        global_dim = hf_gemma4.global_head_dim(c, head_dim, label)
        kv_heads = hf_gemma4.kv_heads(c, layers, kv_heads, label)
    chunk = None
    if model_type in hf_llama4.MODEL_TYPES:  # chunked attention on the RoPE layers, NoPE full layers between
        chunk, local, window_note = hf_llama4.chunked_layers(c, layers, label)
    else:
        local, window_note = local_layers(c, model_type, layers, max_context)
    pattern = window_pattern(local, layers)
    window = int(c["sliding_window"]) if pattern is not None and chunk is None else None
    notes = []
    params_active = None
    # a multimodal wrapper: the text model is priced, its towers are not
    towers = [key for key in ("vision_config", "audio_config") if isinstance(config.get(key), dict)]
    encoder = _vision_encoder(config, place)
    audio_encoder = _audio_encoder(config, place)
    if towers:
        text = f"{', '.join(towers)}: not counted; kvplan prices the text model (text_config)"
        if encoder:
            text += "; the vision tower is the profile's encoder, priced apart with {images}"
        if audio_encoder:
            text += "; the audio tower is the profile's audio_encoder, priced apart with {audio}"
        named = tuple(f for f, present in (("images", encoder), ("audio", audio_encoder)) if present)
        notes.append(FieldText(named, text) if named else text)
    if params is None and hybrid is not None:
        if moe is not None:  # a hybrid MoE (Qwen3.5-MoE): total and active
            params, params_active, params_note = hybrid_params(c, model_type, hybrid, heads, kv_heads, head_dim, moe)
        else:
            params, params_note = hybrid_params(c, model_type, hybrid, heads, kv_heads, head_dim)
        if towers:
            params_note += f"; {', '.join(towers)} not counted"
    elif params is None and gemma3n:
        params, params_note = hf_gemma3n.params(c, layers, heads, kv_heads, head_dim, widths)
    elif params is None and gemma4:
        params, params_note = hf_gemma4.params(c, layers, heads, kv_heads, head_dim, global_dim, widths, label)
    elif params is None:
        try:
            params, params_active, params_note = derived_params(c, model_type, layers, heads, kv_heads, head_dim,
                                                                v_head_dim, moe)
        except (TypeError, ValueError) as exc:  # an optional key of the wrong type (q_lora_rank: "x")
            raise ProfileError([f"{label}: cannot derive the parameter count from this config ({exc})"]) from None
    else:
        check_given_params(params, layers=layers, attention_heads=heads, head_dim=head_dim, v_head_dim=v_head_dim,
                           hidden_size=hidden)
        params_note = params_source
        if moe is not None:
            notes.append(MOE_PARAMS_GIVEN)
    towers = [key for key in ("vision_config", "audio_config") if isinstance(config.get(key), dict)]
    if (gemma3n or gemma4) and towers:  # a multimodal wrapper: the text model is priced, its towers are not
        note = f"{', '.join(towers)}: not counted; kvplan prices the text model (text_config)"
        if note not in notes:  # said once, whoever says it first
            notes.append(note)
        params_note += f"; {', '.join(towers)} not counted"
    source = config.get("_name_or_path") or where
    fields = [
        ("name", name, ""),
        ("description", f"imported from {Path(where).name} ({model_type or 'unknown model_type'})", ""),
        ("architecture", config.get("model_type") or model_type or None, "config model_type"),
        ("params", params, "see sources.params"),
        ("params_active", params_active, "mixture of experts: parameters one token uses, see sources.params"),
        ("layers", layers, "num_hidden_layers"),
        ("attention_heads", heads, "num_attention_heads"),
        ("kv_heads", kv_heads, "num_key_value_heads"),
        ("head_dim", head_dim, head_note),
        ("v_head_dim", v_head_dim if v_head_dim != head_dim else None, "v_head_dim"),
        ("global_head_dim", global_dim, "global_head_dim: K/V head width of the full-attention layers"),
        ("hidden_size", hidden, ""),
        ("intermediate_size", c.get("intermediate_size_mlp") if model_type in hf_llama4.MODEL_TYPES else
         lfm2_mlp_width(c) if model_type == "lfm2" and c.get("intermediate_size") else
         widths if gemma3n or gemma4 else c.get("intermediate_size"),
         "intermediate_size_mlp: the dense MLP's width (the experts' is intermediate_size)"
         if model_type in hf_llama4.MODEL_TYPES else
         "Lfm2MLP's width (block_ff_dim auto-adjusted)" if model_type == "lfm2" else
         "one MLP width per layer" if isinstance(widths, list) and (gemma3n or gemma4) else ""),
        ("vocab_size", c.get("vocab_size"), ""),
        ("tie_embeddings", bool(c.get("tie_word_embeddings")), "tie_word_embeddings"),
        ("max_context", max_context, "max_position_embeddings"),
        ("sliding_window", window, ""),
        ("attention_chunk_size", chunk, "chunked_attention layers: a token attends the earlier tokens of its chunk"),
        ("sliding_window_pattern", pattern, "the chunked layers" if chunk else ""),
        ("mla", mla, "multi-head latent attention"),
        ("state", hybrid.state if hybrid is not None else None, "state layers: see sources.state"),
        ("shared_kv_layers", gemma3n_fields.get("shared_kv_layers") or None,
         "num_kv_shared_layers: the last layers read an earlier layer's KV cache"),
        ("hidden_size_per_layer_input", gemma3n_fields.get("hidden_size_per_layer_input"),
         "per-layer embedding width"),
        ("vocab_size_per_layer_input", gemma3n_fields.get("vocab_size_per_layer_input"),
         "rows of the per-layer embedding table"),
        *_moe_fields(moe, model_type),
        ("mtp_layers", _mtp_layers(c, label), "mtp_num_hidden_layers: multi-token-prediction layers, not in layers"),
        *(_released_weights(config, model_type) if weight_bits is None and weight_type is None
          else weight_fields(weight_bits, weight_type)),
        ("kv_bits", 16, "fp16 KV cache"),
        ("encoder", encoder, "vision encoder (vision_config): see sources.encoder"),
        ("audio_encoder", audio_encoder, "audio encoder (audio_config): see sources.audio_encoder"),
        ("sources", {"config": f"{source} (config.json, imported by kvplan)", "params": params_note,
                     "sliding_window": window_note,
                     **({"encoder": "config vision_config (kvplan.importers.vision); weight_type f16: "
                                    "the default outtype of convert_hf_to_gguf.py for a projector"} if encoder else {}),
                     **({"audio_encoder": "config audio_config (kvplan.importers.audio); weight_type f16: the "
                                          "default outtype of convert_hf_to_gguf.py for a projector"}
                        if audio_encoder else {}),
                     **({"state": f"config {hybrid.note}"} if hybrid is not None else {})}, ""),
    ]
    header = [f"Model profile imported by 'kvplan import hf' from {where}.",
              "Check every figure against the model card, then run 'kvplan profiles validate'."]
    return finish(fields, header, label, notes, keys=_source_keys(c, model_type, moe, head_note), place=place)


def _mtp_layers(c: dict, label: str) -> int | None:
    """``mtp_num_hidden_layers`` (Qwen3.5 / Qwen3.6, Qwen3-Next's converter counts the checkpoint's ``mtp.*``
    tensors instead): the MTP blocks llama.cpp's converter writes after the trunk unless ``--no-mtp``; None when
    the config has none."""
    from kvplan.importers.common import whole_count

    value = c.get("mtp_num_hidden_layers")
    if value is None:
        return None
    try:
        n = whole_count(value, minimum=0)
    except ValueError as exc:
        raise ProfileError([f"{label}: mtp_num_hidden_layers: {exc}"]) from None
    return n or None


def _vision_encoder(config: dict, place: str) -> dict | None:
    """The ``encoder`` mapping of a multimodal config whose vision tower kvplan prices (None otherwise)."""
    from kvplan.importers.vision import KINDS, encoder_from_hf_config

    if config.get("model_type") not in KINDS or not isinstance(config.get("vision_config"), dict):
        return None
    return {**encoder_from_hf_config(config, where=place), "weight_type": "f16"}


def _audio_encoder(config: dict, place: str) -> dict | None:
    """The ``audio_encoder`` mapping of a speech-in config whose audio tower kvplan prices (None otherwise)."""
    from kvplan.importers.audio import audio_encoder_from_hf_config, has_audio_config

    if not has_audio_config(config):
        return None
    return {**audio_encoder_from_hf_config(config, where=place), "weight_type": "f16"}


def _released_weights(config: dict, model_type: str) -> list[tuple[str, object, str]]:
    """The weight rows of a profile given no weight width or format: gpt-oss's checkpoint is MXFP4 (its
    ``quantization_config``), which llama.cpp's converter keeps (weight_type ``mxfp4``); else kvplan's default."""
    quant = config.get("quantization_config")
    if model_type == "gpt_oss" and isinstance(quant, dict) and quant.get("quant_method") == "mxfp4":
        return [("weight_type", "mxfp4", "config quantization_config.quant_method mxfp4: the experts' MXFP4 blocks, "
                 "kept as they are by llama.cpp's converter")]
    return weight_fields(None, None)


def _source_keys(c: dict, model_type: str, moe: MoeLayout | None, head_note: str) -> dict[str, str]:
    """Profile field → the config key (or arithmetic) it was written from, for errors in the config's terms."""
    keys = {"layers": "num_hidden_layers", "attention_heads": "num_attention_heads",
            "kv_heads": "num_key_value_heads", "head_dim": "head_dim" if head_note == "config head_dim" else head_note,
            "v_head_dim": "v_head_dim", "hidden_size": "hidden_size", "intermediate_size": "intermediate_size",
            "vocab_size": "vocab_size", "max_context": "max_position_embeddings", "sliding_window": "sliding_window",
            "mla.kv_lora_rank": "kv_lora_rank", "mla.qk_rope_head_dim": "qk_rope_head_dim",
            "params": "the parameter count derived from the config's shapes",
            "params_active": "the active parameter count derived from the config's shapes"}
    if moe is not None:
        found = expert_count(c)
        keys.update({"experts": found[0] if found else "experts", "experts_per_token": "num_experts_per_tok",
                     "expert_intermediate_size": "intermediate_size" if model_type in EXPERT_WIDTH_IS_INTERMEDIATE
                     else "moe_intermediate_size"})
    return keys


def _checked_shape(c: dict, model_type: str, label: str, *, derive_params: bool, skip: set[str] = frozenset()
                   ) -> tuple[int, int, MoeLayout | None]:
    """(layers, attention heads, MoE layout or None) once every key the profile needs is there; else one
    ProfileError naming all the keys that are missing or wrong, not just the first. Keys in ``skip`` were
    refused already (each reported on its own line), so they are not called missing."""
    missing: list[str] = []
    layers = positive_count(c, "num_hidden_layers", missing)
    heads = positive_count(c, "num_attention_heads", missing)
    if c.get("kv_lora_rank"):
        positive_count(c, "qk_nope_head_dim", missing)
        positive_count(c, "qk_rope_head_dim", missing)
    elif not c.get("head_dim") or derive_params:
        positive_count(c, "hidden_size", missing)
    moe = moe_layout(c, model_type, layers or 0, label, missing)
    if derive_params:
        positive_count(c, "vocab_size", missing)
        if moe is None or moe.dense_layers or model_type in EXPERT_WIDTH_IS_INTERMEDIATE:
            positive_count(c, "intermediate_size", missing)
    if any(k not in skip for k in missing):
        kind = f"model_type {model_type!r}" if model_type else "no model_type"
        absent = list(dict.fromkeys(k for k in missing if isinstance(k, str) and k not in skip))
        wrong = list(dict.fromkeys(f"{m[0]} {m[1]!r}" for m in missing if isinstance(m, tuple)))
        said = ([f"missing {', '.join(absent)}"] if absent else []) + \
            ([f"not a positive whole number: {', '.join(wrong)}"] if wrong else [])
        raise ProfileError([f"{label}: cannot build a model profile from this config ({kind}): {'; '.join(said)}"])
    return layers, heads, moe


def _moe_fields(moe: MoeLayout | None, model_type: str) -> list[tuple[str, object, str]]:
    """The profile rows of a mixture of experts: the parameters a decode step reads; for DeepSeek-V2/V3 also the
    expert tensors of a weight format and llama.cpp's compute buffer (other MoE layouts are not modelled there)."""
    if moe is None:
        return []
    width_key = "intermediate_size" if model_type in EXPERT_WIDTH_IS_INTERMEDIATE else "moe_intermediate_size"
    dense_key = {"mixtral": "none: every layer has experts", "gpt_oss": "none: every layer has experts",
                 "qwen2_moe": "decoder_sparse_step, mlp_only_layers",
                 "qwen3_moe": "decoder_sparse_step, mlp_only_layers",
                 "qwen3_5_moe_text": "none: every layer has experts",
                 "granitemoehybrid": "none: every layer has experts",
                 "llama4": "interleave_moe_layer_step", "llama4_text": "interleave_moe_layer_step",
                 "lfm2_moe": "num_dense_layers"}.get(model_type, "first_k_dense_replace")
    return [("experts", moe.experts, "routed experts per MoE layer"),
            ("experts_per_token", moe.experts_per_token, "num_experts_per_tok"),
            ("expert_intermediate_size", moe.expert_intermediate_size, width_key),
            ("shared_experts", moe.shared_experts, "always-on experts of that width"),
            ("dense_layers", moe.dense_layers, f"leading layers with a dense MLP ({dense_key})")]
