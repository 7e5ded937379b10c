"""Llama 4's text model (``llama4`` / ``llama4_text``): its chunked-attention layers, as transformers builds them.

transformers 5.17.0 ``models/llama4/configuration_llama4.py`` :: ``Llama4TextConfig.__post_init__``:
``no_rope_layers`` (when empty) is ``[int((i + 1) % no_rope_layer_interval != 0) for i in range(layers)]``
(``no_rope_layer_interval`` 4), and ``layer_types`` (when absent) ``"chunked_attention"`` where the layer uses RoPE,
``"full_attention"`` (the NoPE layers, every 4th) elsewhere; ``attention_chunk_size`` defaults to 8192.
``moe_layers`` (when absent) is ``range(interleave_moe_layer_step − 1, layers, interleave_moe_layer_step)``.
llama.cpp build 11434 (``src/models/llama4.cpp`` :: ``load_arch_hparams``) reads no chunk from the GGUF: it sets
``LLAMA_SWA_TYPE_CHUNKED`` with ``n_swa`` 8192 and ``load_swa_pattern(ml, 4)`` (3 chunked, 1 full) unless the file's
``llama4.attention.sliding_window`` is 0 (MobileLLM: every layer full, no chunk).
"""

from __future__ import annotations

from kvplan.errors import ProfileError

MODEL_TYPES = ("llama4", "llama4_text")
CHUNK_DEFAULT_TOKENS = 8192  # Llama4TextConfig.attention_chunk_size
NO_ROPE_INTERVAL_DEFAULT = 4  # Llama4TextConfig.no_rope_layer_interval


def chunked_layers(c: dict, layers: int, label: str) -> tuple[int | None, list[int], str]:
    """(attention_chunk_size [tokens] or None, the chunked layers (0-based), how that was decided) of a Llama 4
    text config."""
    chunk = c.get("attention_chunk_size", CHUNK_DEFAULT_TOKENS)
    types = c.get("layer_types")
    if isinstance(types, list):
        unknown = sorted({str(t) for t in types} - {"chunked_attention", "full_attention"})
        if unknown or len(types) != layers:
            raise ProfileError([f"{label}: layer_types must be {layers} entries of chunked_attention / "
                                f"full_attention{f' (found {unknown[0]})' if unknown else ''}"])
        local, note = [i for i, t in enumerate(types) if t == "chunked_attention"], "config layer_types"
    else:
        rope = c.get("no_rope_layers") or []
        if isinstance(rope, list) and len(rope) == layers:
            local, note = [i for i, r in enumerate(rope) if r], "config no_rope_layers (1: RoPE, chunked)"
        else:
            step = c.get("no_rope_layer_interval", NO_ROPE_INTERVAL_DEFAULT)
            if not isinstance(step, int) or isinstance(step, bool) or step <= 0:
                raise ProfileError([f"{label}: no_rope_layer_interval {step!r} is not a positive whole number"])
            local = [i for i in range(layers) if (i + 1) % step]
            note = f"no_rope_layer_interval {step}: layer i chunked unless (i + 1) % {step} == 0 (a NoPE full layer)"
    if chunk is None or not local:
        return None, [], "no chunked_attention layer: every layer attends to the whole context"
    if not isinstance(chunk, int) or isinstance(chunk, bool) or chunk <= 0:
        raise ProfileError([f"{label}: attention_chunk_size {chunk!r} is not a positive whole number of tokens"])
    return chunk, local, (f"{note}: {len(local)} chunked_attention layers attend within chunks of "
                          f"attention_chunk_size {chunk} (Llama4TextAttention's chunked mask), "
                          f"{layers - len(local)} full_attention (NoPE) layers attend to the whole context")


def moe_layers(c: dict, layers: int) -> list[int]:
    """The layers with experts: ``moe_layers``, else every ``interleave_moe_layer_step``-th layer."""
    given = c.get("moe_layers")
    if isinstance(given, list):
        return sorted(int(i) for i in given)
    step = int(c.get("interleave_moe_layer_step") or 1)
    return list(range(step - 1, layers, step))
