"""The KV cache LiteRT-LM holds for a model (google-ai-edge/LiteRT-LM at 767d74f9, ``LlmLiteRtCompiledModelExecutor``).

Rules, each from LiteRT-LM's source at commit 767d74f9acb02ef135b06e229929510232f9b850 (file :: function, lines):

- ``runtime/executor/llm_litert_compiled_model_executor.cc`` :: ``LlmLiteRtCompiledModelExecutor::Create``
  (716-759): the KV buffers are the ``kv_cache_k_<i>`` / ``kv_cache_v_<i>`` inputs of the prefill signature,
  created from the compiled model at their static (exported) shape and element type, once, before any prompt;
  CPU: one set (the output is a duplicated handle of the input buffer); GPU: input and output sets, swapped after
  each step (:mod:`kvplan.engine.litert_cache`).
- ``runtime/engine/engine_settings.cc`` :: ``EngineSettings::MaybeUpdateAndValidate`` (80-88): ``max_num_tokens``
  from the settings, else the model's metadata, else 4096. ``runtime/core/pipeline.cc``: a prompt of
  ``max_num_tokens`` tokens or more is refused (249-255) and decoding stops at ``max_num_tokens`` ("Maximum
  kv-cache size reached.", 78-82): no sequence goes past it.
- Batch size 1 only (``Prefill``, line 95: ``RET_CHECK_EQ(... Dimensions()[0], 1)``; ``Create``, 797-799).
- Every layer holds the exported length: kvplan takes no window from the model (an export whose sliding layers
  have shorter inputs is not modelled).
- The element type is the export's: ai-edge-torch (google-ai-edge/ai-edge-torch at 28ce35b6,
  ``ai_edge_torch/generative/layers/kv_cache.py`` :: ``KVCacheEntry.from_model_config`` lines 40-53,
  ``KVCache.from_model_config`` lines 62-91) builds every layer's K and V as ``(1, kv_cache_max, num_query_groups,
  head_dim)`` in ``torch.float32`` unless told otherwise, so float32 unless a cache type is asked for.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from kvplan.caches.errors import CacheTypeError
from kvplan.caches.facts import Rule, rule
from kvplan.engine.litert_cache import KV_BUFFER_SETS, static_kv_bytes
from kvplan.engine._ops import minimum, where
from kvplan.engine.formats import ElementFormat
from kvplan.engine.schedule import attention_runs
from kvplan.errors import FieldError
from kvplan.profiles.runtime import LiteRtLmSpec

LITERT_LM_COMMIT = "767d74f9"
# TFLite tensor element types a KV input can have: the exporter decides which (kvplan takes the cache type asked for)
LITERT_DTYPES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16", "int8": "int8"}
EXPORT_DEFAULT_FORMAT = "f32"  # ai-edge-torch's KVCache.from_model_config(dtype=torch.float32)


@dataclass(frozen=True)
class LiteRtLmCache:
    """LiteRT-LM's KV buffers for one model: fixed at the exported length, whatever the prompt."""

    spec: LiteRtLmSpec
    k_format: ElementFormat
    v_format: ElementFormat
    bytes_per_token: int  # K + V rows of one token over every layer, in the exported element type [bytes]
    layers: int
    rules: tuple[Rule, ...]

    name = "litert-lm"
    windows = ()
    unbounded = False
    peak_is_transient = False

    @property
    def global_layers(self) -> int:
        return self.layers

    @property
    def windowed_layers(self) -> int:
        return 0

    @property
    def kv_cache_tokens(self) -> int:
        """Slots of each KV input: the export's length, or ``max_num_tokens`` when it is not given [tokens]."""
        return self.spec.kv_cache_tokens if self.spec.kv_cache_tokens is not None else self.spec.max_num_tokens

    @property
    def buffer_sets(self) -> int:
        return KV_BUFFER_SETS[self.spec.litert_backend]

    @property
    def ctx_limit(self) -> tuple[int, str]:
        """The most tokens a sequence reaches: ``max_num_tokens``, or fewer exported KV slots."""
        if self.spec.kv_cache_tokens is not None and self.spec.kv_cache_tokens < self.spec.max_num_tokens:
            return self.spec.kv_cache_tokens, "kv_cache_tokens"
        return self.spec.max_num_tokens, "max_num_tokens"

    def _refuse(self, ctx, sequences) -> None:
        top = int(ctx) if isinstance(ctx, (int, float)) else (int(ctx.max()) if getattr(ctx, "size", 0) else 0)
        limit, field = self.ctx_limit
        if top > limit:
            raise FieldError("ctx", f"ctx {top:,} exceeds {{runtime.{field}}} {limit:,}: LiteRT-LM stops there "
                             "(\"Maximum kv-cache size reached.\")", lead=None, mentions=(f"runtime.{field}",))
        most = int(sequences) if isinstance(sequences, (int, float)) else \
            (int(sequences.max()) if getattr(sequences, "size", 0) else 1)
        if most > 1:
            raise FieldError("sequences", f"LiteRT-LM runs a batch of one sequence (its executor checks the batch "
                             f"dimension is 1); got {most}", mentions=("runtime",))

    def kv_bytes(self, ctx, sequences=1):
        """Every KV buffer, allocated at the exported length once the executor exists (none for no tokens, as
        the other caches) [bytes]."""
        self._refuse(ctx, sequences)
        full = static_kv_bytes(self.bytes_per_token, self.kv_cache_tokens, self.buffer_sets)
        return where(ctx > 0, full, 0) * sequences if not isinstance(ctx, int) else (full if ctx > 0 else 0) * sequences

    def kv_peak_bytes(self, ctx, sequences=1):
        return self.kv_bytes(ctx, sequences)

    def kv_bytes_read_over_generation(self, n_tokens, sequences=1):
        """Every step runs the decode signature over the whole exported KV input (its attention mask hides the
        unused slots, but the tensors are read whole): ``n_tokens`` reads of one buffer set [bytes]."""
        return n_tokens * static_kv_bytes(self.bytes_per_token, self.kv_cache_tokens, 1) * sequences

    def max_ctx(self, allowance_bytes, sequences=1, ctx_limit=math.inf):
        """``ctx_limit``'s tokens when the fixed buffers fit, else none."""
        from kvplan import engine

        per_sequence = engine.kv_allowance_bytes(allowance_bytes, sequences)
        fits = static_kv_bytes(self.bytes_per_token, self.kv_cache_tokens, self.buffer_sets) <= per_sequence
        return where(fits, minimum(self.ctx_limit[0], ctx_limit), engine.NO_CONTEXT_FITS)

    def describe(self, ctx: int, sequences: int = 1) -> dict:
        rules = list(self.rules)
        rules.append(rule("litert_static_kv", tokens=self.kv_cache_tokens, layers=self.layers,
                          exported=self.spec.kv_cache_tokens is not None, max_num_tokens=self.spec.max_num_tokens))
        rules.append(rule("litert_buffer_sets", backend=self.spec.litert_backend, sets=self.buffer_sets))
        return {
            "name": self.name,
            "rules": rules,
            "options": {"max_num_tokens": self.spec.max_num_tokens, "kv_cache_tokens": self.spec.kv_cache_tokens,
                        "backend": self.spec.litert_backend},
            "cells": {"kv_cache_tokens": self.kv_cache_tokens, "buffer_sets": self.buffer_sets},
            "dtype": LITERT_DTYPES[self.k_format.name],
            "version": LITERT_LM_COMMIT,
        }


def litertlm_cache(spec: LiteRtLmSpec, model, k_format: ElementFormat | None = None,
                   v_format: ElementFormat | None = None, sliding_window: int | None = None) -> LiteRtLmCache:
    """Size LiteRT-LM's KV buffers for ``model`` (its schedule) in the element type the model was exported with
    (the cache type asked for, else the exporter's float32, not the profile's)."""
    if sliding_window is not None:
        raise FieldError("sliding_window", "LiteRT-LM's KV length is fixed by the model's export; drop it with "
                         "{runtime=litert-lm}", mentions=("runtime",))
    from kvplan.engine.formats import NAMED_FORMATS

    exported = k_format is None and v_format is None
    k_format = k_format or NAMED_FORMATS[EXPORT_DEFAULT_FORMAT]
    v_format = v_format or NAMED_FORMATS[EXPORT_DEFAULT_FORMAT]
    for side, fmt in (("k", k_format), ("v", v_format)):
        if fmt.name not in LITERT_DTYPES:
            raise CacheTypeError("LiteRT-LM's KV inputs are plain tensors of the exported element type (f32, f16, "
                                 "bf16 or int8); {given} is not one of them", side, fmt)
    if model.schedule.latent:
        raise FieldError("model", f"{model.name} has MLA (latent) attention: the litert-lm cache model does not "
                         "price it")
    runs = attention_runs(model.schedule, "litert-lm")
    per_token = sum(count * (k_format.row_bytes(layer.k_values) + v_format.row_bytes(layer.v_values))
                    for count, layer in runs)
    rules = [rule("architecture", architecture=(model.architecture or "").lower() or None),
             rule("litert_kv_dtype", dtype=LITERT_DTYPES[k_format.name], exporter_default=exported)]
    windows = model.schedule.windows()
    if windows:
        rules.append(rule("litert_window_not_capped", window=min(windows)))
    return LiteRtLmCache(spec, k_format, v_format, per_token, model.schedule.layers, tuple(rules))
