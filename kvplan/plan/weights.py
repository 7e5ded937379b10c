"""A model profile's weights in a named format: its tensor inventory priced tensor by tensor.

The shape numbers come from the profile (layers, widths, heads, MoE and MLA fields); the pricing is
:mod:`kvplan.engine.quantize` (GGUF file types, as llama.cpp's quantizer assigns them) and
:mod:`kvplan.engine.group_quant` (MLX, GPTQ/AWQ, ExecuTorch 8da4w).
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

from kvplan.engine.quantize import WeightPricing
from kvplan.engine.tensors import ModelShape
from kvplan.engine.weight_formats import price_weights
from kvplan.errors import FieldError

if TYPE_CHECKING:
    from kvplan.profiles.spec import Model

_NEEDED = ("architecture", "hidden_size", "intermediate_size", "vocab_size")


def _moe_on_every_layer(model: Model) -> bool:
    # a MoE without dense layers (Qwen3.5-35B-A3B) needs no dense intermediate_size
    return bool(getattr(model, "experts", None)) and not getattr(model, "dense_layers", 0)


def _full_attention_layers(model: Model) -> tuple[int, ...]:
    """The layers without a window, when the model gives them their own head width (Gemma 4's global_head_dim)."""
    if not getattr(model, "global_head_dim", None):
        return ()
    from kvplan.profiles.methods import local_layer

    pattern = model.sliding_window_pattern
    pattern = frozenset(pattern) if isinstance(pattern, list) else pattern
    windowed = model.sliding_window is not None
    return tuple(i for i in range(model.layers) if not (windowed and local_layer(pattern, i)))


def model_shape(model: Model) -> ModelShape:
    """The plain numbers of ``model`` that its tensor inventory needs."""
    needed = [n for n in _NEEDED if not (n == "intermediate_size" and _moe_on_every_layer(model))]
    missing = [name for name in needed if not getattr(model, name, None)]
    if missing:
        raise FieldError("weight_type", f"pricing {model.name!r} by tensor needs {', '.join(missing)} in its profile")
    if isinstance(model.kv_heads, list):
        raise FieldError("weight_type", f"{model.name!r} has per-layer kv_heads; its tensors are not priced by name")
    mla = model.mla
    widths = model.intermediate_size
    per_layer = tuple(int(w) for w in widths) if isinstance(widths, list) else ()
    return ModelShape(
        model.architecture, model.layers, model.hidden_size, model.attention_heads, model.kv_heads, model.head_dim,
        max(per_layer) if per_layer else (model.intermediate_size or 0), model.vocab_size, bool(model.tie_embeddings),
        v_head_dim=model.v_head_dim or 0, gguf_vocab=getattr(model, "gguf_vocab_size", None) or 0,
        rope_scaling=getattr(model, "rope_scaling", None) or "",
        rope_dim=mla.qk_rope_head_dim if mla is not None else 0,
        n_expert=getattr(model, "experts", None) or 0, n_expert_used=getattr(model, "experts_per_token", None) or 0,
        expert_intermediate=getattr(model, "expert_intermediate_size", None) or 0,
        n_shared_experts=getattr(model, "shared_experts", 0) or 0,
        leading_dense_layers=getattr(model, "dense_layers", 0) or 0,
        kv_lora_rank=mla.kv_lora_rank if mla is not None else 0,
        intermediate_per_layer=per_layer if len(set(per_layer)) > 1 else (),
        per_layer_input=getattr(model, "hidden_size_per_layer_input", None) or 0,
        per_layer_vocab=getattr(model, "vocab_size_per_layer_input", None) or 0,
        global_head_dim=getattr(model, "global_head_dim", None) or 0,
        full_attention_layers=_full_attention_layers(model), **_state_fields(model))


def _state_fields(model: Model) -> dict:
    """The state layers' widths a hybrid's tensors need (none for a model without state layers)."""
    state = getattr(model, "state", None)
    if state is None:
        return {}
    widths = ("ssm_heads", "ssm_head_dim", "ssm_groups", "ssm_state_size", "linear_key_heads",
              "linear_key_head_dim", "linear_value_heads", "linear_value_head_dim")
    return {"state_mixer": state.mixer, "state_layers": tuple(state.layers),
            "feedforward_layers": tuple(state.feedforward_layers), "conv_kernel": state.conv_kernel_tokens,
            **{name: getattr(state, name) or 0 for name in widths}}


@lru_cache(maxsize=256)
def _priced(shape: ModelShape, weight_type: str, group_size: int) -> WeightPricing:
    options = {"group": group_size} if group_size else {}
    return price_weights(shape, weight_type, **options)


def priced_weights(model: Model, weight_type: str, group_size: int = 0) -> WeightPricing:
    """``model``'s weights in ``weight_type`` (memoized: a sweep prices each model and format once)."""
    from kvplan.engine.quantize import FILE_TYPES

    if group_size and weight_type.lower().removeprefix("gguf-") in FILE_TYPES:  # GGUF blocks are fixed by type
        raise FieldError(("weight_group_size", "weight_type"), f"a GGUF type ({weight_type}) has fixed block sizes; "
                         "a group size applies to the mlx, gptq, awq and executorch formats", lead=" with ")
    from kvplan.engine.group_quant import GROUP_FORMATS, GROUP_SIZES

    family = GROUP_FORMATS.get(weight_type, (None,))[0]
    if group_size and family in GROUP_SIZES and group_size not in GROUP_SIZES[family]:
        raise FieldError("weight_group_size", f"{weight_type} takes a group size of "
                         f"{', '.join(map(str, GROUP_SIZES[family]))}, got {group_size}")
    shape = model_shape(model)  # its own FieldError: a profile that lacks the shape
    try:
        return _priced(shape, weight_type, group_size)
    except ValueError as exc:  # an architecture without a tensor layout, a row that fits no block
        raise FieldError("weight_type", f"{model.name}: {exc}") from None


def bytes_read_per_token(pricing: WeightPricing, model: Model) -> int:
    """Bytes a decode step streams: every tensor but the input embedding (one row is read) unless tied and the
    per-layer embedding table (Gemma 3n: one row is read), and of
    the expert stacks only the share the router picks (``experts_per_token / experts``) [bytes]."""
    total = 0
    experts, used = getattr(model, "experts", None), getattr(model, "experts_per_token", None)
    for t in pricing.tensors:
        if t.name == "token_embd.weight" and not model.tie_embeddings:
            continue
        if t.name == "per_layer_token_embd.weight":  # per-layer embeddings: one row a step
            continue
        if t.kind == "experts" and experts and used:
            total += -(-t.bytes * used // experts)
        else:
            total += t.bytes
    return total


def mtp_block_tensors(model: Model, weight_type: str) -> tuple:
    """The priced tensors of ``model``'s MTP blocks in GGUF type ``weight_type``, typed as llama-quantize types
    them in a file that holds the blocks (their attn_v and ffn_down count in its layer counters; the trunk's types
    are those of :func:`priced_weights`, measured unchanged: tests/data/llamacpp/mtp/quant_qwen3.5-2b-mtp.json.gz)."""
    from dataclasses import replace

    from kvplan.engine.quantize import price_gguf

    layers = getattr(model, "mtp_layers", 0) or 0
    shape = replace(model_shape(model), mtp_layers=layers)
    try:
        pricing = price_gguf(shape, weight_type.lower().removeprefix("gguf-"))
    except ValueError as exc:
        raise FieldError("weight_type", f"{model.name!r}: {exc}") from None
    return tuple(t for t in pricing.tensors if _block_of(t.name) >= model.layers)


def _block_of(name: str) -> int:
    """The block number of a GGUF tensor name (``blk.24.attn_q.weight`` → 24; -1 outside blocks)."""
    if not name.startswith("blk."):
        return -1
    return int(name.split(".", 2)[1])
