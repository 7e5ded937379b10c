"""The KV cache Hugging Face transformers holds (transformers 5.x ``cache_utils``).

Rules, each from transformers' own source (file :: class.method):

- ``src/transformers/cache_utils.py`` :: ``DynamicCache.__init__``: with the model's config,
  a layer whose ``layer_types`` entry is ``sliding_attention`` (or every layer, when the
  config has a ``sliding_window`` and no ``layer_types``) gets a
  ``DynamicSlidingWindowLayer``; the others a ``DynamicLayer``.
- ``DynamicLayer.update``: ``torch.cat`` of the old and new states — a full layer holds
  exactly ``N`` tokens.
- ``DynamicSlidingWindowLayer.update``: ``full = torch.cat([keys, new])`` then
  ``keys = full[:, :, -window + 1:, :]``. The kept tensor is a *view*: right after a
  one-shot prefill of ``N`` tokens it keeps the whole ``N``-token tensor alive (the peak);
  after the next decode step ``full`` is ``min(N, window − 1) + 1`` tokens, so
  ``min(N, window)`` tokens stay allocated while ``min(N, window − 1)`` are reachable.
- ``StaticLayer.lazy_initialization`` allocates ``max_cache_len`` tokens;
  ``StaticSlidingWindowLayer.__init__`` ``min(max_cache_len, window)``; attention reads
  every slot (``get_mask_sizes`` returns ``max_cache_len``).
- MLA (multi-head latent attention), ``src/transformers/models/deepseek_v2/modeling_deepseek_v2.py``
  :: ``DeepseekV2Attention.forward`` (and ``DeepseekV3Attention.forward``): since transformers
  5.15.0 ``cache.update`` is called on the compressed latent, viewed as one head — keys
  ``kv_a_layernorm(kv_nope)`` ``[batch, 1, N, kv_lora_rank]``, values the RoPE'd shared key
  ``k_pe`` ``[batch, 1, N, qk_rope_head_dim]`` — and ``expand_kv`` decompresses it after the
  update, on every forward. Up to 5.14.1 (4.x included) the latent was expanded with
  ``kv_b_proj`` *before* ``past_key_values.update``: per-head K (``heads × (qk_nope + qk_rope)``)
  and V (``heads × v_head_dim``). Measured with the real ``DynamicCache`` / ``StaticCache``
  (tests/harness/transformers_cache.py, tests/data/runtimes/transformers/).
- State layers (LFM2, Qwen3.5 / Qwen3-Next, Granite 4.0-H, Nemotron-H; transformers 5.17.0, measured with
  tests/harness/transformers_state.py, tests/data/runtimes/transformers/state/*_state_*.json): the model returns a
  ``DynamicCache`` whose state layers are ``LinearAttentionLayer`` (``src/transformers/cache_utils.py`` ::
  ``LinearAttentionLayer.lazy_initialization``), each holding ``conv_states`` ``[batch, conv_dim, conv_kernel]``
  — the whole kernel, in the model's dtype — and, for Mamba2 and Gated DeltaNet, ``recurrent_states``
  (``[batch, heads, head_dim, state_size]`` / ``[batch, value_heads, key_head_dim, value_head_dim]``) in float32
  whatever the model's dtype (the recurrences run in float32: ``models/qwen3_5/modeling_qwen3_5.py`` ::
  ``torch_chunk_gated_delta_rule``). Constant in the context, one per sequence of the batch.
- Shared KV (Gemma 3n): ``get_layer_types_and_kwargs`` (which ``DynamicCache.__init__`` and
  ``StaticCache.__init__`` call) drops the last ``num_kv_shared_layers`` entries of ``layer_types`` before the
  layers are built ("Some models have shared layers thus no cache is needed for them"), and ``Gemma3nTextAttention.forward`` reads the shared layers' K/V from the
  ``kv_shared_layer_index`` layer's cache: those layers hold nothing (measured, 5.17.0).
- Tensors are in the model's dtype (float32 / float16 / bfloat16); there are no block types.
  ``StaticLayer`` also keeps a 0-dim int64 ``cumulative_length`` (8 bytes a layer): bookkeeping,
  not priced.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from kvplan import engine
from kvplan.engine._ops import minimum, where
from kvplan.errors import FieldError
from kvplan.engine.formats import ElementFormat
from kvplan.engine.schedule import Attention, State, attention_only, shared_kv_layers, split_runs
from kvplan.caches.errors import FORMAT_FIELDS, CacheTypeError
from kvplan.caches.facts import Rule, rule
from kvplan.profiles.runtime import TransformersSpec

TORCH_DTYPES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16"}
LATENT_SINCE = "5.15.0"  # first release whose DeepseekV2/V3Attention.forward caches the MLA latent
EXPANDED_UNTIL = "5.14.1"  # the last release that cached per-head K/V for an MLA model


@dataclass(frozen=True)
class TransformersCache:
    """transformers' cache for one model and dtype: bytes per token of full and sliding layers."""

    spec: TransformersSpec
    k_format: ElementFormat
    v_format: ElementFormat
    full_bytes_per_token: int  # K+V bytes of one token, summed over the full-attention layers
    sliding_bytes_per_token: int  # same, over the sliding-window layers
    window_tokens: int | None
    global_layers: int
    windowed_layers: int
    rules: tuple[Rule, ...]  # what applied for every request (kvplan.caches.facts; render words them)
    state_bytes_per_sequence: int = 0  # the state layers' conv + recurrent states of one sequence [bytes]
    state_layers: int = 0

    name = "transformers"
    # The peak (right after a one-shot prefill, sliding layers still holding the prompt) is gone after the first
    # decode step: decode runs at the steady size. A policy's peak, by contrast, returns every eviction pass.
    peak_is_transient = True

    @property
    def windows(self) -> tuple[tuple[int, int], ...]:
        return ((self.window_tokens, self.sliding_bytes_per_token),) if self.window_tokens else ()

    @property
    def bytes_per_token(self) -> int:
        return self.full_bytes_per_token + self.sliding_bytes_per_token

    @property
    def unbounded(self) -> bool:
        """Only a static cache sized by the context itself, with every layer sliding, stops growing."""
        return (self.spec.cache == "static" and self.spec.max_cache_len is None
                and self.full_bytes_per_token == 0 and bool(self.windows))

    @property
    def ctx_limit(self) -> tuple[int, str] | None:
        """The largest ``ctx`` this cache can hold and the option that sets it: a StaticCache's
        ``(max_cache_len, "max_cache_len")``; None when any ctx fits (a dynamic cache, or one sized by ctx)."""
        if self.spec.cache == "static" and self.spec.max_cache_len is not None:
            return self.spec.max_cache_len, "max_cache_len"
        return None

    def _static_len(self, ctx: int) -> int:
        m = self.spec.max_cache_len
        if m is None:
            return ctx
        if ctx > m:
            raise FieldError("ctx", f"ctx {ctx:,} exceeds {{runtime.max_cache_len}} {m:,}: StaticCache cannot hold it",
                             lead=None, mentions=("runtime.max_cache_len",))
        return m

    def tokens(self, ctx: int) -> dict:
        """Tokens allocated per layer kind: steady state, right after prefill, and reachable."""
        w = self.window_tokens
        if self.spec.cache == "static":
            m = self._static_len(ctx)
            sliding = min(m, w) if w else None
            return {"full": m, "sliding_allocated": sliding, "sliding_reachable": sliding, "peak_per_layer": None,
                    "max_cache_len": m}
        return {"full": ctx, "sliding_allocated": min(ctx, w) if w else None,
                "sliding_reachable": min(ctx, w - 1) if w else None, "peak_per_layer": ctx, "max_cache_len": None}

    def kv_bytes(self, ctx, sequences=1):
        """Steady-state cache of ``sequences`` sequences of ``ctx`` tokens (after a decode step) [bytes]."""
        tokens = ctx
        if self.spec.cache == "static" and self.spec.max_cache_len is not None:
            if isinstance(ctx, int):
                self._static_len(ctx)  # refuses ctx > max_cache_len
            elif getattr(ctx, "size", 0):
                self._static_len(int(ctx.max()))  # an array (a sweep): refuses any ctx > max_cache_len
            # the protocol: no tokens, no cache (a pinned prefix of 0 tokens holds nothing; lazy_initialization
            # allocates on the first update)
            tokens = where(ctx > 0, self.spec.max_cache_len, 0) if not isinstance(ctx, int) else \
                (self.spec.max_cache_len if ctx > 0 else 0)
        kv = engine.kv_bytes(tokens, self.full_bytes_per_token, self.windows) * sequences
        return kv + self.state_bytes(ctx, sequences) if self.state_bytes_per_sequence else kv

    def state_bytes(self, ctx, sequences=1):
        """The ``LinearAttentionLayer`` tensors of ``sequences`` sequences: constant in ``ctx`` (0 at ``ctx`` 0,
        as the cache) [bytes]."""
        if not self.state_bytes_per_sequence:
            return 0
        return where(ctx > 0, self.state_bytes_per_sequence * sequences, 0)

    def kv_peak_bytes(self, ctx, sequences=1):
        """Right after a one-shot prefill every dynamic layer (sliding ones too) holds all ``ctx`` tokens."""
        if self.spec.cache == "static":
            return self.kv_bytes(ctx, sequences)
        peak = self.bytes_per_token * ctx * sequences
        return peak + self.state_bytes(ctx, sequences) if self.state_bytes_per_sequence else peak

    def kv_bytes_read_over_generation(self, n_tokens, sequences=1):
        state = n_tokens * self.state_bytes_per_sequence * sequences  # every step reads each sequence's state
        return self._kv_read_over_generation(n_tokens, sequences) + state if self.state_bytes_per_sequence else \
            self._kv_read_over_generation(n_tokens, sequences)

    def _kv_read_over_generation(self, n_tokens, sequences=1):
        if self.spec.cache == "static":
            m = self.spec.max_cache_len
            if m is None:  # sized by the context: every step attends the whole preallocated length
                return n_tokens * engine.kv_bytes(n_tokens, self.full_bytes_per_token, self.windows) * sequences
            return n_tokens * self.kv_bytes(m, sequences)
        return engine.kv_bytes_sum_over_generation(n_tokens, self.full_bytes_per_token, self.windows) * sequences

    def max_ctx(self, allowance_bytes, sequences=1, ctx_limit=math.inf):
        """Largest ``ctx`` whose cache fits, exact to the token; the dynamic cache is sized by its peak."""
        per_sequence = engine.kv_allowance_bytes(allowance_bytes, sequences) - self.state_bytes_per_sequence
        if self.spec.cache == "dynamic":
            best = engine.max_context_tokens(per_sequence, self.bytes_per_token, (), ctx_limit)
        elif self.spec.max_cache_len is None:
            best = engine.max_context_tokens(per_sequence, self.full_bytes_per_token, self.windows, ctx_limit)
        else:
            m = self.spec.max_cache_len
            fits = engine.kv_bytes(m, self.full_bytes_per_token, self.windows) <= per_sequence
            best = where(fits, minimum(m, ctx_limit), engine.NO_CONTEXT_FITS)
        return best

    def describe(self, ctx: int, sequences: int = 1) -> dict:
        """What applied for this request: rules (:class:`~kvplan.caches.facts.Rule` facts), tokens per layer kind."""
        t = self.tokens(ctx)
        rules = list(self.rules)
        if self.spec.cache == "dynamic" and self.window_tokens and ctx > self.window_tokens - 1:
            rules.append(rule("sliding_view", reachable=t["sliding_reachable"], allocated=t["sliding_allocated"],
                              peak=ctx))
        if self.spec.cache == "static":
            rules.append(rule("static_preallocated", full=t["max_cache_len"],
                              sliding=t["sliding_allocated"] if self.window_tokens else None))
        return {
            "name": self.name,
            "rules": rules,
            "options": {"cache": self.spec.cache, "max_cache_len": self.spec.max_cache_len, "batch": sequences},
            "cells": t,
            "dtype": TORCH_DTYPES[self.k_format.name],
        }


def transformers_cache(spec: TransformersSpec, model, k_format: ElementFormat | None = None,
                       v_format: ElementFormat | None = None, sliding_window: int | None = None) -> TransformersCache:
    """Decide transformers' rules for ``model`` (its schedule; ``sliding_window``: every layer behind that
    window) and size one token of each layer kind."""
    k_format = k_format or model.k_format()
    v_format = v_format or model.v_format()
    for side, fmt in (("k", k_format), ("v", v_format)):
        if fmt.name not in TORCH_DTYPES:
            raise CacheTypeError("transformers caches in the model dtype, f32/f16/bf16 (or its own quantized "
                                 "cache, not modelled): {given} is not one of them", side, fmt)
    if k_format != v_format:
        raise FieldError(FORMAT_FIELDS["kv"] + ("runtime",), "transformers keeps K and V in the same dtype; give one "
                         "{kv_type}", lead=None)
    schedule = model.schedule if sliding_window is None else model.schedule.with_window(sliding_window)
    shared = shared_kv_layers(schedule)
    _, states = split_runs(schedule, "transformers")
    if states and spec.cache == "static":
        raise FieldError(("runtime.cache", "model"), "transformers' StaticCache for a model with state layers is not "
                         "modelled (kvplan prices the DynamicCache these models return)", lead=None,
                         mentions=("runtime.cache",))
    state_bytes = sum(count * transformers_state_bytes(layer, k_format) for count, layer in states)
    schedule = attention_only(schedule)
    windows = schedule.windows()
    if len(windows) > 1:
        raise FieldError("model", f"layers with {len(windows)} different windows ({', '.join(f'{w:,}' for w in windows)}"
                         " tokens): the transformers cache model follows one sliding window")
    arch = (model.architecture or "").lower()
    rules = [rule("architecture", architecture=arch or None), rule("cache_dtype", dtype=TORCH_DTYPES[k_format.name]),
             rule("cache_class", cache=spec.cache)]
    if schedule.latent:
        rules.append(mla_rule(model, k_format))
    if shared:  # get_layer_types_and_kwargs: layers for layer_types[: -num_kv_shared_layers] only
        rules.append(rule("shared_kv_no_cache", first=shared[0][0], layers=model.layers - shared[0][0]))
    full_bpt = sliding_bpt = 0
    global_layers = 0
    for count, layer in schedule.groups():
        b = count * layer_bytes_per_token(layer, k_format, v_format)
        if layer.window_tokens is not None:
            sliding_bpt += b
        else:
            full_bpt += b
            global_layers += count
    window = windows[0] if sliding_bpt else None
    if window:
        rules.append(rule("sliding_layers", sliding=schedule.layers - global_layers, layers=schedule.layers,
                          window=window))
    if states:
        rules.append(rule("linear_attention_layers", layers=sum(c for c, _ in states), dtype=TORCH_DTYPES[k_format.name],
                          bytes_per_sequence=state_bytes))
    if model.schedule.parallel_layers:  # layer type "hybrid": LinearAttentionAndFullAttentionLayer (cache_utils)
        rules.append(rule("parallel_layers", layers=model.schedule.parallel_layers,
                          kv="LinearAttentionAndFullAttentionLayer's keys/values",
                          state="its conv_states and recurrent_states"))
    return TransformersCache(spec, k_format, v_format, full_bpt, sliding_bpt, window, global_layers,
                             schedule.layers - global_layers, tuple(rules), state_bytes, sum(c for c, _ in states))


RECURRENT_BYTES_PER_VALUE = 4  # float32: the recurrent states whatever the model's dtype (measured, 5.17.0)


def transformers_state_bytes(layer: State, fmt: ElementFormat) -> int:
    """One sequence's ``LinearAttentionLayer`` tensors: ``conv_states`` of the whole kernel in the model's dtype
    plus ``recurrent_states`` in float32 [bytes] (:func:`kvplan.engine.state.state_bytes`)."""
    from kvplan.engine.state import state_bytes

    return int(state_bytes(layer.conv_channels, layer.conv_kernel_tokens, layer.recurrent_values,
                           fmt.row_bytes(1), RECURRENT_BYTES_PER_VALUE))


def layer_bytes_per_token(layer: Attention, k_format: ElementFormat, v_format: ElementFormat) -> int:
    """K+V bytes one token adds to an attention layer: the MLA latent (keys ``kv_lora_rank``, values
    ``qk_rope_head_dim``, one head: the schedule's K row split at its ``latent_rank``) or per-head K and V."""
    if layer.latent_rank is not None:
        return k_format.row_bytes(layer.latent_rank) + v_format.row_bytes(layer.k_values - layer.latent_rank)
    return k_format.row_bytes(layer.k_values) + v_format.row_bytes(layer.v_values)


def expanded_mla_bytes_per_token(model, fmt: ElementFormat) -> int:
    """What transformers up to 5.14.1 cached for an MLA model, per token over all layers: ``kv_b_proj``
    gives every attention head its own K (``qk_nope + qk_rope`` = ``head_dim``) and V (``v_head_dim``)."""
    return model.layers * (fmt.row_bytes(model.attention_heads * model.head_dim)
                           + fmt.row_bytes(model.attention_heads * model.v_dim))


def mla_rule(model, fmt: ElementFormat) -> Rule:
    """The MLA latent transformers caches since :data:`LATENT_SINCE`, beside what the release before it cached."""
    latent_layers = [(n, ly) for n, ly in model.schedule.groups() if ly.latent_rank is not None]
    latent = sum(n * layer_bytes_per_token(ly, fmt, fmt) for n, ly in latent_layers)
    first = latent_layers[0][1]
    return rule("mla_latent", since=LATENT_SINCE, before=EXPANDED_UNTIL, kv_lora_rank=first.latent_rank,
                qk_rope_head_dim=first.k_values - first.latent_rank, latent_bytes_per_token=latent,
                expanded_bytes_per_token=expanded_mla_bytes_per_token(model, fmt))
