"""The KV cache ExecuTorch's exported Llama program holds (ExecuTorch v1.4.1, ``examples/models/llama/``).

Static: the program's cache buffers are mutable buffers of fixed shape, planned and allocated when the program
is loaded, the whole ``max_context_length`` whatever the prompt. The byte rules are in
:mod:`kvplan.engine.executorch_cache`; what this module decides, each from ExecuTorch's source:

- every attention layer holds ``max_context_length`` slots (``attention.py :: AttentionMHA._init_kv_cache``,
  lines 472-483); a request past it is refused: ``attention.py :: AttentionMHA.forward`` (line 587) and
  ``rope.py`` (line 373) ``torch._check(start_pos < max_context_len)``. ``max_context_length`` None prices the
  export whose ``--max_context_length`` is the request's context.
- a layer with a sliding window is a ring buffer of ``2 · window`` slots (``--local_global_attention``, its
  list printed in the command; ``custom_kv_cache.py :: replace_kv_cache_with_ring_kv_cache``, lines 674-714);
  ExecuTorch's Llama model does not read a window from the checkpoint's config, so without that option every
  layer is a full one.
- one sequence: ``model.py`` (line 118) ``max_batch_size=1`` (:func:`kvplan.profiles.runtime.resolve_sequences`).
- the cache dtype is ``--dtype-override`` (``export_llama_lib.py`` line 1908 casts the model, buffers included),
  or int8 with per-token float32 scales and int8 zero points under ``--quantize_kv_cache``, which exports only
  with fp32: with fp16/bf16 the cast turns the scales buffers to that dtype while
  ``QuantizedKVCache._quantize_and_update`` (lines 103-161) writes float32 scales through ``llama.update_cache``,
  whose dtype check fails the export (measured, ``tests/data/runtimes/executorch_cache.json``); refused.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from kvplan import engine
from kvplan.caches.errors import CacheTypeError
from kvplan.caches.facts import Rule, rule
from kvplan.engine._ops import minimum, where
from kvplan.engine.executorch_cache import SCALE_BYTES, layer_slot_bytes, ring_layer_bytes, ring_slots, static_cache_bytes
from kvplan.engine.formats import NAMED_FORMATS, ElementFormat
from kvplan.engine.schedule import attention_runs
from kvplan.errors import FieldError
from kvplan.profiles.runtime import ExecuTorchSpec

EXECUTORCH_VERSION = "1.4.1"
DTYPE_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2}  # torch.float32 / float16 / bfloat16 element sizes
DTYPE_FORMATS = {"fp32": "f32", "fp16": "f16", "bf16": "bf16"}  # the same dtypes as kvplan's element formats
TORCH_DTYPES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}


@dataclass(frozen=True)
class ExecuTorchCache:
    """ExecuTorch's cache for one model and export: slot bytes of the full layers, bytes of the ring layers."""

    spec: ExecuTorchSpec
    k_format: ElementFormat
    v_format: ElementFormat
    full_slot_bytes: int  # K+V bytes of one slot, summed over the full-context layers [bytes/token]
    ring_bytes: int  # every ring-buffer layer's buffers, constant [bytes]
    rings: tuple[tuple[int, int], ...]  # (window tokens, layers) of the ring-buffer layers
    global_layers: int
    windowed_layers: int
    local_global_attention: tuple[int, ...] | None  # the per-layer list the export is given (0: full layer)
    rules: tuple[Rule, ...]

    name = "executorch"
    peak_is_transient = False  # nothing above the static allocation

    @property
    def windows(self) -> tuple[tuple[int, int], ...]:
        return ()  # a ring layer does not grow with the context: its bytes are constant (ring_bytes)

    @property
    def bytes_per_token(self) -> int:
        return self.full_slot_bytes

    @property
    def unbounded(self) -> bool:
        """Every layer a ring buffer and the export sized by the context: the cache never grows."""
        return self.spec.max_context_length is None and self.full_slot_bytes == 0 and self.ring_bytes > 0

    @property
    def ctx_limit(self) -> tuple[int, str] | None:
        """``(max_context_length, "max_context_length")`` when the export's length is given."""
        m = self.spec.max_context_length
        return (m, "max_context_length") if m is not None else None

    def _refuse_beyond(self, ctx) -> None:
        m = self.spec.max_context_length
        if m is None:
            return
        largest = int(ctx) if isinstance(ctx, (int, float)) else (int(ctx.max()) if getattr(ctx, "size", 0) else 0)
        if largest > m:
            raise FieldError("ctx", f"ctx {largest:,} exceeds {{runtime.max_context_length}} {m:,}: the exported "
                             "program checks start_pos < max_context_len", lead=None,
                             mentions=("runtime.max_context_length",))

    def slots(self, ctx: int) -> int:
        """Slots of each full-context layer for a request of ``ctx`` tokens [tokens]."""
        self._refuse_beyond(ctx)
        m = self.spec.max_context_length
        return m if m is not None else ctx

    def kv_bytes(self, ctx, sequences=1):
        """The program's cache, all of it allocated at load (0 for no tokens, as the protocol wants) [bytes]."""
        self._refuse_beyond(ctx)
        m = self.spec.max_context_length
        length = ctx if m is None else where(ctx > 0, m, 0)
        total = static_cache_bytes(length, self.full_slot_bytes, where(ctx > 0, self.ring_bytes, 0))
        return total * sequences

    def kv_peak_bytes(self, ctx, sequences=1):
        return self.kv_bytes(ctx, sequences)

    def kv_bytes_read_over_generation(self, n_tokens, sequences=1):
        """Σ over ``n_tokens`` decode steps of the cache read: the custom SDPA (``--use_sdpa_with_kv_cache``)
        reads the positions up to the current one on a full layer; a ring layer's mask spans all its slots."""
        read = engine.kv_bytes_sum_over_generation(n_tokens, self.full_slot_bytes)
        return (read + n_tokens * self.ring_bytes) * sequences

    def max_ctx(self, allowance_bytes, sequences=1, ctx_limit=math.inf):
        """Largest ``ctx`` whose program's cache fits, exact to the token."""
        per_sequence = engine.kv_allowance_bytes(allowance_bytes, sequences) - self.ring_bytes
        m = self.spec.max_context_length
        if m is None:
            return engine.max_context_tokens(per_sequence, self.full_slot_bytes, (), ctx_limit)
        fits = static_cache_bytes(m, self.full_slot_bytes) <= per_sequence
        return where(fits, minimum(m, ctx_limit), engine.NO_CONTEXT_FITS)

    def describe(self, ctx: int, sequences: int = 1) -> dict:
        """What applied for this request: rules, slots per layer kind, the options in force."""
        m = self.slots(ctx)
        rules = list(self.rules)
        if self.global_layers:
            rules.append(rule("et_static", slots=m, layers=self.global_layers,
                              given=self.spec.max_context_length is not None))
        return {
            "name": self.name,
            "rules": rules,
            # the options in force: max_context_length is the export's length (the context itself when not given)
            "options": {"max_context_length": m, "dtype_override": self.spec.dtype_override,
                        "quantize_kv_cache": self.spec.quantize_kv_cache,
                        "local_global_attention": list(self.local_global_attention)
                        if self.local_global_attention is not None else None, "batch": sequences},
            "cells": {"slots": m, "ring": [{"window": w, "slots": ring_slots(w), "layers": n}
                                           for w, n in self.rings]},
            "dtype": "int8" if self.spec.quantize_kv_cache else TORCH_DTYPES[self.spec.dtype_override],
            "version": EXECUTORCH_VERSION,
        }


def executorch_cache(spec: ExecuTorchSpec, model, k_format: ElementFormat | None = None,
                     v_format: ElementFormat | None = None, sliding_window: int | None = None) -> ExecuTorchCache:
    """Decide ExecuTorch's cache for ``model`` (its schedule; ``sliding_window``: every layer a ring buffer of that
    window, ``--local_global_attention [W]``)."""
    dtype = spec.dtype_override
    own = NAMED_FORMATS[DTYPE_FORMATS[dtype]]
    for side, fmt in (("k", k_format), ("v", v_format)):
        if fmt is not None and fmt != own:
            raise CacheTypeError(f"ExecuTorch caches K and V in its dtype override ({dtype}), or int8 per token "
                                 "when it quantizes the cache: {given} is not it", side, fmt)
    if spec.quantize_kv_cache and dtype != "fp32":
        # the final cast makes the scales fp16/bf16, but QuantizedKVCache._quantize_and_update writes float32 scales
        # through llama.update_cache, whose check fails the export (measured, tests/data/runtimes/executorch_cache.json)
        raise FieldError(("runtime.quantize_kv_cache", "runtime.dtype_override"), "ExecuTorch 1.4.1 cannot export a "
                         f"quantized cache with a {dtype} model: update_cache gets float32 scales for a {dtype} "
                         "scales buffer (the export fails); a quantized cache needs fp32", lead=" with ")
    schedule = model.schedule if sliding_window is None else model.schedule.with_window(sliding_window)
    runs = attention_runs(schedule, "executorch")
    if schedule.latent:
        raise FieldError("model", f"{model.name} has MLA (latent) attention: ExecuTorch's Llama export has none")
    quantized = spec.quantize_kv_cache
    dtype_bytes = DTYPE_BYTES[dtype]
    full = ring = 0
    rings: dict[int, int] = {}
    global_layers = 0
    for count, layer in runs:
        slot = layer_slot_bytes(layer.kv_heads, layer.k_head_dim, dtype_bytes, quantized)
        if layer.k_head_dim != layer.v_head_dim:
            raise FieldError("model", f"{model.name} has K and V heads of different widths: ExecuTorch's KVCache "
                             "has one head_dim")
        if layer.window_tokens is None:
            full += count * slot
            global_layers += count
        else:
            ring += count * ring_layer_bytes(layer.window_tokens, slot)
            rings[layer.window_tokens] = rings.get(layer.window_tokens, 0) + count
    pattern = None
    if rings:
        per_layer = [0 if ly.window_tokens is None else ly.window_tokens for _, _, ly in _each_layer(runs)]
        pattern = (per_layer[0],) if len(set(per_layer)) == 1 else tuple(per_layer)
    rules = [rule("architecture", architecture=(model.architecture or "").lower() or None),
             rule("et_dtype", dtype=TORCH_DTYPES[dtype], quantized=quantized)]
    if quantized:
        head_dim = runs[0][1].k_head_dim
        rules.append(rule("et_quantized", head_dim=head_dim, scale_dtype="float32",
                          bytes_per_head=layer_slot_bytes(1, head_dim, dtype_bytes, True) // 2))  # K's half
    for window, layers in sorted(rings.items()):
        rules.append(rule("et_ring", window=window, slots=ring_slots(window), layers=layers))
    # the element format kvplan reports: per token and head, head_dim int8 values, a scale and an int8 zero point
    fmt = ElementFormat("et-int8", 8, runs[0][1].k_head_dim, SCALE_BYTES, 1) if quantized else own
    return ExecuTorchCache(spec, fmt, fmt, full, ring, tuple(sorted(rings.items())), global_layers,
                           schedule.layers - global_layers, pattern, tuple(rules))


def _each_layer(runs):
    """``(index, count, layer)`` for every layer, in order (the per-layer list ``--local_global_attention`` takes)."""
    index = 0
    for count, layer in runs:
        for _ in range(count):
            yield index, count, layer
            index += 1
