"""The KV cache ONNX Runtime GenAI holds for a decoder (onnxruntime-genai v0.15.2, ``DefaultKeyValueCache``).

Rules, each from onnxruntime-genai's source at tag v0.15.2 (file :: function, lines):

- ``src/models/kv_cache.cpp`` :: ``DefaultKeyValueCache::DefaultKeyValueCache`` (281-544): a key and a value
  tensor per layer, ``[batch_beam, num_key_value_heads, seq, head_size]`` in the graph's KV element type (the
  per-layer head count and width read from the graph's inputs, 373-380). With ``past_present_share_buffer``
  ``seq`` is ``search.max_length`` (471-484), allocated once and zeroed (489-521).
- ``DefaultKeyValueCache::Update`` (550-590): without a shared buffer every step moves the presents into the pasts
  and allocates presents of ``total_length``, so from the first decode step on the past of ``L − 1`` rows and the
  present of ``L`` both exist, during the step and after it until the next one replaces the past: the peak, held
  at every decode step (not a one-off after the prefill). Measured with onnxruntime-genai 0.15.2
  (tests/harness/ortgenai_cache.py, tests/data/runtimes/ortgenai/cache.json).
- ``src/generators.cpp`` :: ``GeneratorParams::IsPastPresentShareBufferEnabled`` (429-435): the shared buffer
  needs ``num_beams == 1`` (kvplan prices greedy or sampled search, one beam).
- Sliding windows cap a layer only on the NvTensorRtRtx device (429-470): every layer here holds the whole length.
- Element types: the model's float type, or the model builder's int8 / fp8 (one byte a value) or int4
  (``(head_size + 1) // 2`` bytes a head) KV cache (:mod:`kvplan.engine.ortgenai_cache`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from kvplan import engine
from kvplan.caches.errors import CacheTypeError
from kvplan.caches.facts import Rule, rule
from kvplan.engine import ortgenai_cache as ort
from kvplan.engine._ops import minimum, where
from kvplan.engine.formats import ElementFormat
from kvplan.engine.schedule import attention_runs
from kvplan.errors import FieldError
from kvplan.profiles.runtime import OrtGenAiSpec

ORT_GENAI_VERSION = "0.15.2"
ORT_DTYPES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16", "int8": "int8", "fp8": "float8e4m3fn",
              "int4": "uint8 (int4 packed)"}
_ELEMENT_BYTES = {"f32": 4, "f16": 2, "bf16": 2, "int8": 1, "fp8": 1}


def head_row_bytes(fmt: ElementFormat, head_size: int) -> int:
    """One head's key (or value) row of one token in ``fmt`` [bytes]."""
    if fmt.name == "int4":
        return ort.packed_int4_row_bytes(head_size)
    return ort.head_row_bytes(head_size, _ELEMENT_BYTES[fmt.name])


@dataclass(frozen=True)
class OrtGenAiCache:
    """ONNX Runtime GenAI's key/value tensors for one model: bytes of one token over every layer."""

    spec: OrtGenAiSpec
    k_format: ElementFormat
    v_format: ElementFormat
    bytes_per_token: int  # key + value rows of one token of one sequence, summed over the layers [bytes]
    layers: int
    rules: tuple[Rule, ...]

    name = "onnxruntime-genai"
    windows = ()  # no layer is capped (only the NvTensorRtRtx device caps sliding layers)
    unbounded = False
    # without a shared buffer the past + present peak comes back at every decode step: it is not transient
    peak_is_transient = False

    @property
    def global_layers(self) -> int:
        return self.layers

    @property
    def windowed_layers(self) -> int:
        return 0

    @property
    def ctx_limit(self) -> tuple[int, str] | None:
        """``(max_length, "max_length")`` when given: the search stops there (and a shared buffer holds that much)."""
        return (self.spec.max_length, "max_length") if self.spec.max_length is not None else None

    @property
    def limit_binds_at_cap_only(self) -> bool:
        """Without a shared buffer the cache grows with the context, so ``max_length`` limits only where the
        memory answer reaches it (:func:`kvplan.plan.core.max_ctx_limited_by`)."""
        return not self.spec.past_present_share_buffer

    def _refuse_beyond_max_length(self, ctx) -> None:
        m = self.spec.max_length
        if m is None:
            return
        top = int(ctx) if isinstance(ctx, (int, float)) else (int(ctx.max()) if getattr(ctx, "size", 0) else 0)
        if top > m:
            raise FieldError("ctx", f"ctx {top:,} exceeds {{runtime.max_length}} {m:,}: the search stops at max_length",
                             lead=None, mentions=("runtime.max_length",))

    def _length(self, ctx):
        """Token rows the shared buffer holds (``max_length``, or the context itself when none is given)."""
        if self.spec.max_length is None:
            return ctx
        return where(ctx > 0, self.spec.max_length, 0) if not isinstance(ctx, int) else \
            (self.spec.max_length if ctx > 0 else 0)

    def kv_bytes(self, ctx, sequences=1):
        """The present tensors at ``ctx`` tokens (``ctx`` rows: what a step attends), or the shared buffer [bytes]."""
        self._refuse_beyond_max_length(ctx)
        tokens = self._length(ctx) if self.spec.past_present_share_buffer else ctx
        return self.bytes_per_token * tokens * sequences

    def kv_peak_bytes(self, ctx, sequences=1):
        """From the first decode step on, without a shared buffer: the past (``ctx − 1`` rows) beside the present
        (``ctx``), held until the next step; with one, the buffer [bytes]."""
        if self.spec.past_present_share_buffer:
            return self.kv_bytes(ctx, sequences)
        self._refuse_beyond_max_length(ctx)
        return self.bytes_per_token * ort.unshared_peak_tokens(ctx) * sequences

    def kv_bytes_read_over_generation(self, n_tokens, sequences=1):
        """Every step's attention reads the rows written so far (a shared buffer's unused rows are not read)."""
        return engine.kv_bytes_sum_over_generation(n_tokens, self.bytes_per_token, ()) * sequences

    def max_ctx(self, allowance_bytes, sequences=1, ctx_limit=math.inf):
        """Largest ``ctx`` whose peak fits, exact to the token, capped at ``max_length``."""
        per_sequence = engine.kv_allowance_bytes(allowance_bytes, sequences)
        cap = ctx_limit if self.spec.max_length is None else minimum(ctx_limit, self.spec.max_length)
        if self.spec.past_present_share_buffer:
            if self.spec.max_length is None:
                return engine.max_context_tokens(per_sequence, self.bytes_per_token, (), ctx_limit)
            fits = self.bytes_per_token * self.spec.max_length <= per_sequence
            return where(fits, cap, engine.NO_CONTEXT_FITS)
        best = ort.unshared_max_total_tokens(per_sequence, self.bytes_per_token)
        return where(best < 0, engine.NO_CONTEXT_FITS, minimum(best, cap))

    def describe(self, ctx: int, sequences: int = 1) -> dict:
        """What applied for this request: rules, the token rows allocated between steps and at the peak."""
        shared = self.spec.past_present_share_buffer
        rows = int(self._length(ctx)) if shared else ctx
        peak = rows if shared else int(ort.unshared_peak_tokens(ctx))
        rules = list(self.rules)
        rules.append(rule("ortgenai_shared_buffer", max_length=rows) if shared else
                     rule("ortgenai_past_present", past=max(ctx - 1, 0), present=ctx))
        return {
            "name": self.name,
            "rules": rules,
            "options": {"max_length": self.spec.max_length, "past_present_share_buffer": shared,
                        "batch_size": sequences},
            "cells": {"rows": rows, "peak_rows": peak},
            "dtype": ORT_DTYPES[self.k_format.name],
            "version": ORT_GENAI_VERSION,
        }


def ortgenai_cache(spec: OrtGenAiSpec, model, k_format: ElementFormat | None = None,
                   v_format: ElementFormat | None = None, sliding_window: int | None = None) -> OrtGenAiCache:
    """Size ONNX Runtime GenAI's key/value tensors for ``model`` (its schedule) in the cache type asked for."""
    if sliding_window is not None:
        raise FieldError("sliding_window", "ONNX Runtime GenAI has no option to put a window on a model; drop it "
                         "with {runtime=onnxruntime-genai}", mentions=("runtime",))
    k_format = k_format or model.k_format()
    v_format = v_format or model.v_format()
    for side, fmt in (("k", k_format), ("v", v_format)):
        if fmt.name not in ORT_DTYPES:
            raise CacheTypeError("ONNX Runtime GenAI caches in the graph's KV type: a float type (f32, f16, bf16) "
                                 "or the model builder's int8, fp8 or int4; {given} is not one of them", side, fmt)
    if k_format != v_format:
        raise FieldError(("k_type", "v_type"), "ONNX Runtime GenAI keeps keys and values in one element type; give "
                         "one {kv_type}", lead=None)
    if model.schedule.latent:
        raise FieldError("model", f"{model.name} has MLA (latent) attention: the onnxruntime-genai cache model does "
                         "not price it")
    runs = attention_runs(model.schedule, "onnxruntime-genai")
    per_token = 0
    for count, layer in runs:
        if layer.k_head_dim != layer.v_head_dim:
            raise FieldError("model", f"{model.name}'s K and V heads differ ({layer.k_head_dim} and "
                             f"{layer.v_head_dim} values): ONNX Runtime GenAI gives a layer's key and value one shape")
        row = head_row_bytes(k_format, layer.k_head_dim)
        per_token += ort.buffer_bytes(count, 1, layer.kv_heads, row, 1)
    windows = model.schedule.windows()
    rules = [rule("architecture", architecture=(model.architecture or "").lower() or None),
             rule("cache_dtype", dtype=ORT_DTYPES[k_format.name])]
    if windows:
        rules.append(rule("ortgenai_window_not_capped", window=min(windows)))
    return OrtGenAiCache(spec, k_format, v_format, per_token, model.schedule.layers, tuple(rules))
