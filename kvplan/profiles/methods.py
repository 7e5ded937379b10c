"""Derived figures of a model profile, shared by the pydantic :class:`~kvplan.profiles.spec.Model` and the
plain :class:`~kvplan.profiles.records.ModelRecord` the fast path uses (no pydantic import)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvplan.engine.formats import ElementFormat, format_from_bits, format_from_name
from kvplan.profiles.memo import PerModel

if TYPE_CHECKING:
    from kvplan.engine.schedule import Schedule


class ModelMethods:
    """Methods over the model fields (``layers``, ``kv_heads``, ``sliding_window`` …); no state of their own."""

    __slots__ = ()

    @property
    def v_dim(self) -> int:
        return self.v_head_dim or self.head_dim

    @property
    def schedule(self) -> Schedule:
        """The model's layers as the cache models read them (:mod:`kvplan.engine.schedule`), derived once per
        profile object from ``layers``, ``kv_heads``, ``head_dim``/``v_head_dim``, ``mla``, ``sliding_window``
        and ``sliding_window_pattern`` — the one place those fields are interpreted."""
        return _SCHEDULES.get(self, None, lambda: schedule_from_fields(self))

    def k_format(self) -> ElementFormat:
        return element_format(self.k_type or self.kv_type, self.k_bits or self.kv_bits, self.kv_group_size)

    def v_format(self) -> ElementFormat:
        return element_format(self.v_type or self.kv_type, self.v_bits or self.kv_bits, self.kv_group_size)


# Memo of :attr:`ModelMethods.schedule` by profile identity, not an attribute: a pydantic model's ``model_copy``
# copies its ``__dict__`` (a cached schedule would follow a copy whose fields changed), and a record has no free slot.
_SCHEDULES = PerModel()


def local_layer(pattern, layer: int) -> bool:
    """Whether ``layer`` uses the window under a ``sliding_window_pattern`` (all | alternating | "N:1" | list)."""
    if pattern == "all":
        return True
    if pattern == "alternating":
        return layer % 2 == 0
    if isinstance(pattern, str):
        period = int(pattern.split(":")[0]) + 1
        return layer % period < period - 1
    return layer in pattern


def shared_kv_sources(model) -> dict[int, int]:
    """The layer each of the last ``shared_kv_layers`` layers reads its KV cache from: the last layer before them
    of the same type (sliding or full), as transformers' ``Gemma3nTextAttention`` picks it
    (``kv_shared_layer_index = len(prev_layers) - 1 - prev_layers[::-1].index(layer_type)`` over
    ``layer_types[:first_kv_shared_layer_idx]``) and llama.cpp's ``create_memory`` reuse callback
    (``n_layer_kv_from_start - (is_swa(il) ? 2 : 1)``, the same layers for Gemma 3n's pattern).

    Returns
    -------
    dict of int [layer index] → int [layer index]
        ``{shared layer: source layer}``, 0-based; empty without shared-KV layers.
    """
    n = getattr(model, "shared_kv_layers", 0) or 0
    if not n:
        return {}
    first = model.layers - n
    window = model.sliding_window
    pattern = model.sliding_window_pattern
    if isinstance(pattern, list):
        pattern = frozenset(pattern)

    def local(i: int) -> bool:
        return window is not None and local_layer(pattern, i)

    last = {}
    for i in range(first):
        last[local(i)] = i
    out = {}
    for i in range(first, model.layers):
        if local(i) not in last:
            kind = "sliding" if local(i) else "full-attention"
            raise ValueError(f"layer {i} shares the KV of an earlier {kind} layer, but none of layers 0–{first - 1} "
                             f"is one")
        out[i] = last[local(i)]
    return out


def mlp_widths(model) -> tuple[int, ...]:
    """The MLP width of each layer: ``intermediate_size`` (one count for every layer, or one per layer) [values]."""
    widths = model.intermediate_size
    if isinstance(widths, list):
        return tuple(int(w) for w in widths)
    return (int(widths),) * model.layers if widths else ()


def schedule_from_fields(model) -> Schedule:
    """The schedule the model fields write: a state layer at each index of ``state.layers``
    (:func:`state_layer_of`; with ``state.parallel_attention`` a parallel layer, that state beside the attention layer
    of that index), a feed-forward layer at each of ``state.feedforward_layers``, and an attention layer
    at every other index of ``layers``, its K/V heads from
    ``kv_heads`` (one count or one per layer), its head dims from ``head_dim``/``v_head_dim`` (``global_head_dim``,
    when given, for both K and V of the full-attention layers — Gemma 4: transformers ``Gemma4TextAttention``
    takes ``global_head_dim`` on a layer that is not sliding, llama.cpp ``key_length`` vs ``key_length_swa``; MLA:
    one head of ``kv_lora_rank + qk_rope_head_dim`` K values and no V), its window from ``sliding_window`` on the
    layers ``sliding_window_pattern`` names (with ``attention_chunk_size`` instead, those layers attend in chunks of
    it: ``chunked``); the last ``shared_kv_layers`` layers are :class:`SharedKV` layers that read
    their source's cache (:func:`shared_kv_sources`) and hold none."""
    from kvplan.engine.schedule import Attention, Feedforward, Parallel, SharedKV, compress

    state = getattr(model, "state", None)
    state_at = frozenset(state.layers) if state is not None else frozenset()
    feedforward_at = frozenset(state.feedforward_layers) if state is not None else frozenset()
    state_layer = state_layer_of(state) if state is not None else None
    parallel = bool(getattr(state, "parallel_attention", False))
    feedforward = Feedforward()
    chunk = getattr(model, "attention_chunk_size", None)
    window = model.sliding_window if chunk is None else chunk
    pattern = model.sliding_window_pattern
    if isinstance(pattern, list):
        pattern = frozenset(pattern)
    heads = model.kv_heads
    mla = model.mla
    made: dict[tuple[int, bool], Attention] = {}  # the few distinct layers, built once each
    sources = shared_kv_sources(model)

    def layer_at(i: int):
        if i in sources:
            source = sources[i]
            return SharedKV(source, window if window is not None and local_layer(pattern, source) else None)
        if i in state_at:
            return Parallel(attention_at(i), state_layer) if parallel else state_layer
        if i in feedforward_at:
            return feedforward
        return attention_at(i)

    def attention_at(i: int):
        n_kv = heads[i] if isinstance(heads, list) else heads
        local = window is not None and local_layer(pattern, i)
        key = (n_kv, local)
        layer = made.get(key)
        if layer is None:
            w = window if local else None
            if mla is not None:
                layer = Attention(1, mla.kv_lora_rank + mla.qk_rope_head_dim, 0, w, latent_rank=mla.kv_lora_rank)
            elif not local and getattr(model, "global_head_dim", None):
                layer = Attention(n_kv, model.global_head_dim, model.global_head_dim, w)
            else:
                layer = Attention(n_kv, model.head_dim, model.v_head_dim or model.head_dim, w)
            if chunk is not None and local:  # attention_chunk_size: the pattern's layers attend in chunks
                layer = layer.with_changes(chunked=True)
            made[key] = layer
        return layer

    return compress(layer_at(i) for i in range(model.layers))


def state_layer_of(state):
    """The :class:`~kvplan.engine.schedule.State` layer a profile's ``state`` mapping writes: its conv channels and
    recurrent values from the mixer's widths (:mod:`kvplan.engine.state`)."""
    from kvplan.engine import state as st
    from kvplan.engine.schedule import State

    mixer = state.mixer
    if mixer == "short_conv":
        channels, recurrent = st.short_conv_channels(state.conv_channels), 0
    elif mixer == "mamba2":
        channels = st.mamba2_conv_channels(state.ssm_heads, state.ssm_head_dim, state.ssm_groups,
                                           state.ssm_state_size)
        recurrent = st.mamba2_recurrent_values(state.ssm_heads, state.ssm_head_dim, state.ssm_state_size)
    else:  # gated_deltanet
        channels = st.gated_deltanet_conv_channels(state.linear_key_heads, state.linear_key_head_dim,
                                                   state.linear_value_heads, state.linear_value_head_dim)
        recurrent = st.gated_deltanet_recurrent_values(state.linear_key_head_dim, state.linear_value_heads,
                                                       state.linear_value_head_dim)
    return State(mixer, int(channels), int(state.conv_kernel_tokens), int(recurrent))


def element_format(type_name: str | None, bits: int | None, group_size: int | None) -> ElementFormat:
    if type_name is not None:
        return format_from_name(type_name)
    return format_from_bits(bits or 16, group_size or 0)
