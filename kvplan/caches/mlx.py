"""The KV cache MLX-LM holds (mlx-lm 0.32.2 with mlx 0.32.4), exact to the byte of its cache objects' ``nbytes``.

Rules, each from mlx-lm's own source (file :: function), measured with the real objects
(tests/harness/mlx_cache.py, tests/data/mlx/cache.json):

- ``mlx_lm/models/cache.py`` :: ``make_prompt_cache``: a model with a ``make_cache`` method builds its own caches
  and ``max_kv_size`` is ignored; otherwise one ``KVCache`` per layer, or ``RotatingKVCache(max_size=max_kv_size,
  keep=4)`` per layer when ``max_kv_size`` is given. :data:`OWN_CACHE` lists the model modules with a
  ``make_cache`` (``mlx_lm/utils.py`` :: ``MODEL_REMAPPING`` maps e.g. ``mistral`` to ``llama``).
- The ``make_cache`` of :data:`ROTATING_SLIDING` gives a sliding-window layer ``RotatingKVCache(max_size=
  sliding_window)`` and a global one ``KVCache``; every other model attends its window through the mask only and
  caches the whole context (``gemma2``, ``phi3``, ``mistral`` — no ``layer_types``, so ``llama``'s
  ``use_sliding`` is false).
- ``mlx_lm/models/llama4.py`` :: ``Model.make_cache`` (lines 318–326): layer ``i`` gets
  ``ChunkedKVCache(text_config.attention_chunk_size)`` when ``(i + 1) % 4 != 0``, else ``KVCache`` — the profile's
  chunked layers must be exactly those (checked). ``ChunkedKVCache`` has no ``to_quantized``, so
  ``maybe_quantize_kv_cache`` (``generate.py`` lines 305–310, ``hasattr(c, "to_quantized")``) leaves it in the
  model's dtype under ``--kv-bits``: only the KVCache layers quantize.
- Growth, chunked prefill, ``ChunkedKVCache``'s front trim, the rotating cache's transient ``max_size + S − 1``
  tokens, quantization after ``quantized_kv_start``: :mod:`kvplan.engine.mlx_cache`.
- ``QuantizedKVCache`` (``to_quantized`` → ``mx.quantize``): per head and token, K and V each as
  ``head_dim · bits / 32`` uint32 words plus ``head_dim / group_size`` scales and as many biases in the K/V dtype.
  ``RotatingKVCache.to_quantized`` raises ``NotImplementedError``: quantizing a model with rotating caches fails
  once a prompt reaches ``quantized_kv_start``.
- Arrays are in the model's dtype (bfloat16, float16 or float32: the activations'), one batch row per sequence.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from kvplan.caches.errors import CacheTypeError
from kvplan.caches.facts import Rule, rule
from kvplan.engine.formats import ElementFormat
from kvplan.engine.mlx_cache import (
    MLX_STEP_TOKENS,
    chunked_after_chunks,
    chunked_cache_sizes,
    chunked_kv_grow,
    kv_cache_capacities,
    kv_cache_grow,
    kv_capacity_after_chunks,
    prompt_cache_bytes,
    rotating_after_chunks,
    rotating_cache_sizes,
    rotating_in_place,
)
from kvplan.engine.schedule import attention_only, attention_runs, shared_kv_layers
from kvplan.errors import FieldError
from kvplan.profiles.runtime import MlxLmSpec

MLX_LM_VERSION = "0.32.2"
MLX_VERSION = "0.32.4"
MLX_DTYPES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16"}
MLX_KV_BITS = (2, 3, 4, 5, 6, 8)  # mx.quantize's affine bit widths
MLX_GROUP_SIZES = (32, 64, 128)  # mx.quantize's group sizes
DEFAULT_KV_GROUP_SIZE = 64  # generate.py --kv-group-size default
MAX_KV_SIZE_KEEP_TOKENS = 4  # make_prompt_cache: RotatingKVCache(max_size=max_kv_size, keep=4)

# mlx_lm/utils.py MODEL_REMAPPING (mlx-lm 0.32.2): config model_type → the module that builds it
MODEL_REMAPPING = {"mistral": "llama", "llava": "mistral3", "phi-msft": "phixtral", "falcon_mamba": "mamba",
                   "joyai_llm_flash": "deepseek_v3", "kimi_k2": "deepseek_v3", "qwen2_5_vl": "qwen2_vl",
                   "minimax_m2": "minimax", "iquestcoder": "llama", "xverse": "llama", "gemma4_unified": "gemma4"}
# mlx_lm/models/*.py with a make_cache method (mlx-lm 0.32.2): `grep -l "def make_cache" mlx_lm/models/*.py`
OWN_CACHE = frozenset({
    "afm7", "afmoe", "baichuan_m1", "bailing_hybrid", "bailing_moe_linear", "bailing_moe_v3", "cohere2",
    "deepseek_v32", "deepseek_v41", "exaone4", "exaone_moe", "falcon_h1", "gear", "gemma3", "gemma3_text",
    "gemma3n", "gemma4", "gemma4_text", "gpt_oss", "granitemoehybrid", "iquestloopcoder", "jamba", "kimi_k3",
    "kimi_linear", "laguna", "lfm2-vl", "lfm2", "lfm2_moe", "llama", "llama4", "longcat_flash",
    "longcat_flash_ngram", "mamba", "mamba2", "mellum", "mimo_v2_flash", "minimax_m3_vl", "ministral3",
    "muse_glimmer", "muse_spark", "nanbeige", "nemotron-nas", "nemotron_h", "olmo3", "olmo_hybrid", "plamo2",
    "plamo3", "qwen3_5", "qwen3_next", "recurrent_gemma", "rwkv7", "spark2_5", "step3p5"})
# config model_types whose make_cache gives each sliding-window layer RotatingKVCache(max_size=sliding_window):
# gemma3_text.py / gemma3.py (i % sliding_window_pattern), cohere2.py, exaone4.py, gpt_oss.py and olmo3.py
# (layer_types), llama.py and ministral3.py (layer.use_sliding, from layer_types). A Mistral config has no
# layer_types, so mistral (built by llama.py) keeps a KVCache on every layer.
# modules whose attention does its own product on the cache's arrays instead of base.scaled_dot_product_attention
# (which dispatches a QuantizedKVCache to quantized_scaled_dot_product_attention): gemma2.py (softcapping,
# mx.expand_dims(keys, 2)) — the first model call after the cache is quantized fails with a TypeError
NO_QUANTIZED_ATTENTION = frozenset({"gemma2"})
ROTATING_SLIDING = frozenset({"gemma3", "gemma3_text", "gemma3n", "gemma3n_text", "cohere2", "exaone4", "gpt_oss",
                              "olmo3", "llama", "ministral3"})
# modules whose make_cache builds caches for the layers before first_kv_shared_layer_idx only, the shared-KV layers
# reading those (gemma3n.py: LanguageModel.make_cache over layer_types[:first_kv_shared_layer_idx], KVCache for
# full_attention, RotatingKVCache(max_size=sliding_window, keep=0) for sliding_attention; layer_idx_to_cache_idx
# maps a shared layer to the last earlier layer of its type)
SHARED_KV_CACHE = frozenset({"gemma3n", "gemma3n_text"})


def quantized_format(bits: int, group_size: int, dtype: ElementFormat) -> ElementFormat:
    """``mx.quantize``'s layout as an element format: ``bits`` per value packed in uint32 words, a scale and a
    bias in the K/V dtype per ``group_size`` values (exact for a head_dim that is a multiple of the group)."""
    dtype_bytes = dtype.bits // 8
    return ElementFormat(f"mlx-int{bits}/g{group_size}", bits, group_size, dtype_bytes, dtype_bytes)


@dataclass(frozen=True)
class MlxCache:
    """MLX-LM's caches for one model: bytes of one token slot per cache kind, summed over the layers."""

    spec: MlxLmSpec
    k_format: ElementFormat  # the cache's format once quantized (the plain dtype without --kv-bits)
    v_format: ElementFormat
    dtype: ElementFormat  # the model's K/V dtype (f32 / f16 / bf16)
    kv_bytes_per_slot: int  # plain KVCache bytes of one token slot, over the KVCache layers
    quantized_bytes_per_slot: int | None  # the same once QuantizedKVCache (None: no --kv-bits)
    rotating: tuple[tuple[int, int], ...]  # (max_size tokens, bytes of one slot over those layers)
    kv_layers: int
    rotating_layers: int
    kv_bits: int | None
    kv_group_size: int | None
    rules: tuple[Rule, ...]
    quantized_attention: bool = True  # False: the model's attention fails on a QuantizedKVCache (gemma2)
    misfit_head_dim: int | None = None  # a head_dim that is not a multiple of the group (mx.quantize refuses it)
    chunked: tuple[tuple[int, int], ...] = ()  # (chunk_size tokens, bytes of one slot over those ChunkedKVCache layers)
    chunked_layers: int = 0

    name = "mlx-lm"
    # the rotating caches' max_size + chunk − 1 tokens and the plain cache before quantization exist only during
    # the prefill: decode runs at the steady size
    peak_is_transient = True

    @property
    def global_layers(self) -> int:
        return self.kv_layers

    @property
    def windowed_layers(self) -> int:
        return self.rotating_layers + self.chunked_layers

    @property
    def windows(self) -> tuple[tuple[int, int], ...]:
        return tuple(sorted(self.rotating + self.chunked))

    @property
    def bytes_per_token(self) -> int:
        per = self.quantized_bytes_per_slot if self.quantized_bytes_per_slot is not None else self.kv_bytes_per_slot
        return per + sum(b for _, b in self.windows)

    @property
    def unbounded(self) -> bool:
        return self.kv_layers == 0 and bool(self.windows)

    # -- the state after each model call ---------------------------------------------------------------------
    def _states(self, ctx: int) -> list[tuple[int, int]]:
        """(bytes before, bytes after) ``maybe_quantize_kv_cache`` at the observation points of a prompt of
        ``ctx`` tokens that can hold the largest total, for one sequence, the last one the state after the prompt.

        During the full prefill chunks every cache only grows, so the largest total of those is at the chunk
        that crosses ``quantized_kv_start`` (still plain before the conversion) or at the last full chunk; then
        the shorter last chunk, then the last prompt token (:mod:`kvplan.engine.mlx_cache`). A ``ChunkedKVCache``
        grows as a ``KVCache`` until a chunk starts past its ``chunk_size`` and then holds the same slots after
        every full chunk, so each chunk before that is a point too (at most ``chunk_size / P + 1`` of them)."""
        if ctx <= 0:
            return [(0, 0)]
        self._refuse_quantized_rotating(ctx)
        p, start = self.spec.prefill_step_size, self.spec.quantized_kv_start
        quantizing = self.quantized_bytes_per_slot is not None
        full_chunks, rest = divmod(ctx - 1, p)
        points = []  # (offset before, offset, capacity, rotating slots per max_size)
        crossing = max(1, -(-start // p))
        untrimmed = max((c // p + 1 for c, _ in self.chunked), default=0)  # chunks before any front trim
        chosen = {crossing, full_chunks, *range(1, min(untrimmed, full_chunks) + 1)}
        for j in sorted(j for j in chosen if 1 <= j <= full_chunks):
            offset, capacity = kv_capacity_after_chunks(j, p, MLX_STEP_TOKENS)
            points.append(((j - 1) * p if j > 1 else None, offset, capacity,
                           [rotating_after_chunks(j, p, m) for m, _ in self.rotating],
                           [chunked_after_chunks(j, p, c, MLX_STEP_TOKENS)[1] for c, _ in self.chunked]))
        offset, capacity = kv_capacity_after_chunks(full_chunks, p, MLX_STEP_TOKENS)
        slots = [rotating_after_chunks(full_chunks, p, m) if full_chunks else 0 for m, _ in self.rotating]
        held = [chunked_after_chunks(full_chunks, p, c, MLX_STEP_TOKENS) if full_chunks else (0, 0)
                for c, _ in self.chunked]
        if rest:
            before = offset if full_chunks else None
            offset, capacity = kv_cache_grow(offset, capacity, rest, MLX_STEP_TOKENS)
            if rest == 1:  # a one-token update goes through RotatingKVCache._update_in_place, not the concat
                slots = [rotating_in_place(offset - 1, s, m, MLX_STEP_TOKENS)
                         for s, (m, _) in zip(slots, self.rotating)]
            else:
                slots = [min(s, m - 1) + rest if s else rest for s, (m, _) in zip(slots, self.rotating)]
            held = [chunked_kv_grow(h, cap, rest, c, MLX_STEP_TOKENS) for (h, cap), (c, _) in zip(held, self.chunked)]
            points.append((before, offset, capacity, list(slots), [cap for _, cap in held]))
        before = offset if ctx > 1 else None
        slots = [rotating_in_place(offset, s, m, MLX_STEP_TOKENS) for s, (m, _) in zip(slots, self.rotating)]
        held = [chunked_kv_grow(h, cap, 1, c, MLX_STEP_TOKENS) for (h, cap), (c, _) in zip(held, self.chunked)]
        offset, capacity = kv_cache_grow(offset, capacity, 1, MLX_STEP_TOKENS)
        points.append((before, offset, capacity, slots, [cap for _, cap in held]))
        out = []
        for previous, offset, capacity, slots, chunk_slots in points:
            rot_bytes = sum(b * s for s, (_, b) in zip(slots, self.rotating))
            rot_bytes += sum(b * s for s, (_, b) in zip(chunk_slots, self.chunked))
            was = quantizing and previous is not None and previous >= start
            now = quantizing and offset >= start
            q, plain = self.quantized_bytes_per_slot, self.kv_bytes_per_slot
            out.append((capacity * (q if was else plain) + rot_bytes, capacity * (q if now else plain) + rot_bytes))
        return out

    @property
    def quantize_fails(self) -> bool:
        """MLX-LM fails once this cache reaches quantized_kv_start (a rotating layer, or an attention that cannot
        read a QuantizedKVCache)."""
        return self.quantized_bytes_per_slot is not None and (bool(self.rotating) or not self.quantized_attention
                                                              or self.misfit_head_dim is not None)

    def _refuse_quantized_rotating(self, ctx: int) -> None:
        if self.quantize_fails and self.misfit_head_dim is not None and ctx >= self.spec.quantized_kv_start:
            raise FieldError(("kv_group_size", "ctx"), f"mx.quantize needs head_dim {self.misfit_head_dim} to be a "
                             f"multiple of the group size {self.kv_group_size}: MLX-LM fails when the prompt "
                             f"reaches {{runtime.quantized_kv_start}} {self.spec.quantized_kv_start:,} tokens; ctx "
                             f"is {ctx:,}", lead=None, mentions=("runtime.quantized_kv_start",))
        if self.quantize_fails and not self.quantized_attention and ctx >= self.spec.quantized_kv_start:
            raise FieldError(("kv_bits", "ctx"), f"MLX-LM cannot run a quantized cache on this model: its attention "
                             f"does not read a QuantizedKVCache (a TypeError at the first model call after the "
                             f"prompt reaches {{runtime.quantized_kv_start}} {self.spec.quantized_kv_start:,} "
                             f"tokens); ctx is {ctx:,}", lead=None, mentions=("runtime.quantized_kv_start",))
        if self.quantized_bytes_per_slot is not None and self.rotating and ctx >= self.spec.quantized_kv_start:
            raise FieldError(("kv_bits", "ctx"), f"MLX-LM cannot quantize a RotatingKVCache "
                             f"(RotatingKVCache.to_quantized raises NotImplementedError): this model's "
                             f"{self.rotating_layers} rotating layers fail once the prompt reaches "
                             f"{{runtime.quantized_kv_start}} {self.spec.quantized_kv_start:,} tokens; ctx is "
                             f"{ctx:,}", lead=None, mentions=("runtime.quantized_kv_start",))

    def _steady_one(self, ctx: int) -> int:
        return _figures(self, int(ctx))[0]

    def _peak_one(self, ctx: int) -> int:
        return _figures(self, int(ctx))[1]

    def _over(self, one, ctx, sequences):
        if isinstance(ctx, (int, float)) and not hasattr(ctx, "shape"):
            return one(int(ctx)) * sequences
        import numpy as np

        arr = np.asarray(ctx)
        if arr.size and self.quantize_fails:
            self._refuse_quantized_rotating(int(arr.max()))
        flat = [one(int(c)) for c in arr.reshape(-1)]
        return np.asarray(flat, dtype=np.int64).reshape(arr.shape) * sequences

    def kv_bytes(self, ctx, sequences=1):
        """Cache of ``sequences`` sequences right after a prompt of ``ctx`` tokens (its last token processed)
        [bytes]: the sum of the cache objects' ``nbytes``."""
        return self._over(self._steady_one, ctx, sequences)

    def kv_peak_bytes(self, ctx, sequences=1):
        """The most the cache objects hold after any model call of that prompt's prefill [bytes], with, under
        ``mlx_lm.server``, the prompt cache's earlier caches (:meth:`prompt_cache_bytes`)."""
        return self._over(self._peak_one, ctx, sequences) + self.prompt_cache_bytes(ctx)

    def _stored_one(self, ctx: int) -> int:
        return prompt_cache_bytes(self.spec.prompt_cache_size or 0, self._steady_one(ctx))

    def prompt_cache_bytes(self, ctx, sequences=1):
        """``mlx_lm.server``'s stored caches beside the live ones [bytes]: ``--prompt-cache-size`` earlier prompts'
        caches, each priced as one sequence's cache after a prompt of ``ctx`` tokens (0 for ``mlx_lm.generate``).
        They stay between requests, so they are no transient of the peak; no decode step reads them. One stored
        cache per request whatever the live batch, so ``sequences`` does not scale them."""
        if not self.spec.prompt_cache_size:
            return ctx * 0  # 0, or zeros of the contexts' shape
        return self._over(self._stored_one, ctx, 1)

    def kv_bytes_read_over_generation(self, n_tokens, sequences=1):
        """Bytes attention reads over ``n_tokens`` decode steps: every step reads the offset's tokens of each
        ``KVCache`` (``keys[..., :offset, :]``) and ``min(offset, max_size)`` of each rotating one (and
        ``min(offset, chunk_size)`` of each chunked one, which reads up to ``chunk_size + 1``: one token short),
        in the format in force at ``n_tokens`` (an approximation for a quantization that starts midway)."""
        from kvplan import engine

        per = self.quantized_bytes_per_slot if (self.quantized_bytes_per_slot is not None) else self.kv_bytes_per_slot
        return engine.kv_bytes_sum_over_generation(n_tokens, per, self.windows) * sequences

    def max_ctx(self, allowance_bytes, sequences=1, ctx_limit=math.inf):
        """Largest prompt whose peak fits ``allowance_bytes`` (the peak decides, as it happens during prefill)."""
        from kvplan import engine

        if not isinstance(allowance_bytes, (int, float)) or hasattr(allowance_bytes, "shape"):
            import numpy as np

            arr = np.asarray(allowance_bytes)
            limits = np.broadcast_to(np.asarray(ctx_limit, dtype=float), arr.shape)
            seqs = np.broadcast_to(np.asarray(sequences), arr.shape).reshape(-1)
            flat = [self._max_ctx_one(float(a), int(n), float(lim))
                    for a, n, lim in zip(arr.reshape(-1), seqs, limits.reshape(-1))]
            kind = float if any(f == math.inf for f in flat) else np.int64
            return np.asarray(flat, dtype=kind).reshape(arr.shape)
        return self._max_ctx_one(float(allowance_bytes), sequences, ctx_limit)

    def _max_ctx_one(self, allowance_bytes: float, sequences: int, ctx_limit: float) -> int:
        from kvplan import engine

        per_sequence = engine.kv_allowance_bytes(allowance_bytes, sequences)

        def fits(ctx: int) -> bool:  # the live peak of every sequence, and the server's stored caches
            return self._peak_one(ctx) * sequences + self._stored_one(ctx) <= allowance_bytes

        if not fits(1):
            return engine.NO_CONTEXT_FITS
        capped = self.quantize_fails  # refused from quantized_kv_start
        hi = int(min(ctx_limit, 1 << 26))
        if self.unbounded:
            # every layer rotates: past max_size + two chunks the peak no longer grows
            steady = max(m for m, _ in self.windows) + 2 * self.spec.prefill_step_size + 2
            if fits(steady):
                if capped:
                    return min(hi, self.spec.quantized_kv_start - 1)
                return math.inf if ctx_limit == math.inf else hi
            hi = min(hi, steady)
        if self.kv_layers:  # a KVCache holds at least its offset: no prompt past allowance / its cheapest slot fits
            cheapest = min(self.kv_bytes_per_slot, self.quantized_bytes_per_slot or self.kv_bytes_per_slot)
            hi = min(hi, int(per_sequence // cheapest) + 1)
        if capped:
            hi = min(hi, self.spec.quantized_kv_start - 1)
        if fits(hi):
            return hi
        lo = 1  # fits; hi does not. The peak grows with the prompt, up to its step padding
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if fits(mid):
                lo = mid
            else:
                hi = mid
        return lo

    def describe(self, ctx: int, sequences: int = 1) -> dict:
        """What applied for this request: rules, the slots of each cache kind, the command line priced."""
        p = self.spec.prefill_step_size
        rules = list(self.rules)
        offset, capacity = kv_cache_capacities(ctx, p)[-1] if ctx > 0 else (0, 0)
        rotating = []
        for m, _ in self.rotating:
            sizes = rotating_cache_sizes(ctx, p, m) if ctx > 0 else ((0, 0),)
            peak = max(s for _, s in sizes)
            rotating.append({"max_size": m, "slots": sizes[-1][1], "peak_slots": peak})
            if peak > sizes[-1][1]:
                rules.append(rule("mlx_rotating_peak", max_size=m, chunk=p, peak=peak, steady=sizes[-1][1]))
        chunked = []
        for c, _ in self.chunked:
            sizes = chunked_cache_sizes(ctx, p, c) if ctx > 0 else ((0, 0, 0),)
            peak = max(s for _, _, s in sizes)
            chunked.append({"chunk_size": c, "slots": sizes[-1][2], "peak_slots": peak,
                            "start_position": sizes[-1][1]})
            rules.append(rule("mlx_chunked", chunk=c, layers=self.chunked_layers, slots=sizes[-1][2], peak=peak,
                              prefill=p))
        quantized = self.quantized_bytes_per_slot is not None and ctx >= self.spec.quantized_kv_start
        if self.kv_layers:
            rules.append(rule("mlx_kv_growth", offset=offset, capacity=capacity, step=MLX_STEP_TOKENS, chunk=p))
        if self.kv_bits is not None:
            rules.append(rule("mlx_quantized", bits=self.kv_bits, group=self.kv_group_size,
                              start=self.spec.quantized_kv_start, applies=quantized,
                              dtype=MLX_DTYPES[self.dtype.name]))
        stored = self.spec.prompt_cache_size
        held = int(self.prompt_cache_bytes(ctx)) if stored is not None else None
        if stored is not None:
            rules.append(rule("mlx_prompt_cache", caches=stored, cache_bytes=int(self._steady_one(ctx)),
                              held_bytes=held))
        return {
            "name": self.name,
            "rules": rules,
            "options": {"max_kv_size": self.spec.max_kv_size, "prefill_step_size": p,
                        "kv_bits": self.kv_bits, "kv_group_size": self.kv_group_size,
                        "quantized_kv_start": self.spec.quantized_kv_start, "batch": sequences,
                        "prompt_cache_size": stored},
            "cells": {"kv_cache_capacity": capacity if self.kv_layers else None, "offset": offset,
                      "rotating": rotating, "chunked": chunked, "quantized": quantized,
                      "prompt_cache_bytes": held},
            "dtype": MLX_DTYPES[self.dtype.name],
            "version": MLX_LM_VERSION,
        }


@lru_cache(maxsize=65536)
def _figures(cache: MlxCache, ctx: int) -> tuple[int, int]:
    """(bytes after the prompt, the peak) of one sequence's prompt of ``ctx`` tokens; memoized, as max_ctx's
    search and a sweep ask for the same prompts again."""
    states = cache._states(ctx)
    return states[-1][1], max(max(s) for s in states)


def mlx_cache(spec: MlxLmSpec, model, k_format: ElementFormat | None = None,
              v_format: ElementFormat | None = None) -> MlxCache:
    """Decide MLX-LM's caches for ``model`` (its schedule and ``architecture``, the HF ``model_type``)."""
    dtype = model.k_format()
    if model.v_format() != dtype or dtype.name not in MLX_DTYPES:
        raise FieldError("model", f"MLX-LM caches in the model's dtype (float32, float16 or bfloat16); {model.name}'s "
                         f"profile caches {dtype.name}")
    bits, group = None, None
    asked = [f for f in (k_format, v_format) if f is not None]
    if asked and any(f != asked[0] for f in asked):
        raise FieldError(("k_bits", "v_bits"), "MLX-LM quantizes K and V alike; give one {kv_bits}", lead=None,
                         mentions=("kv_bits",))
    if asked:
        fmt = asked[0]
        side = "k" if k_format is not None else "v"
        if fmt.name in MLX_DTYPES:  # the dtype the model runs in (its activations are the cache's)
            dtype = fmt
        elif fmt.name.startswith("int") and fmt.zero_bytes == 0:
            bits, group = fmt.bits, fmt.group_size or DEFAULT_KV_GROUP_SIZE
        else:
            raise CacheTypeError("MLX-LM quantizes its cache with mx.quantize (a bit width); {given} is not one of "
                                 "its formats", side, fmt)
    if bits is not None and bits not in MLX_KV_BITS:
        raise FieldError("kv_bits", f"mx.quantize takes {', '.join(map(str, MLX_KV_BITS))} bits, got {bits}")
    if group is not None and group not in MLX_GROUP_SIZES:
        raise FieldError("kv_group_size", f"mx.quantize takes a group of {', '.join(map(str, MLX_GROUP_SIZES))} "
                         f"values, got {group}")
    arch = (model.architecture or "").lower()
    schedule = model.schedule
    shared = shared_kv_layers(schedule) if arch in SHARED_KV_CACHE else ()
    if shared:  # no cache of their own (make_cache stops before them)
        schedule = attention_only(schedule)
    runs = attention_runs(schedule, "mlx-lm", chunked=True)
    if model.schedule.latent:
        raise FieldError("model", f"{model.name} has MLA (latent) attention: the mlx-lm cache model does not price it")
    module = MODEL_REMAPPING.get(arch, arch)
    own_cache = module in OWN_CACHE
    if schedule.chunked_layers:
        _check_chunked_layers(model, schedule, module)
    honours_window = arch in ROTATING_SLIDING
    qfmt = quantized_format(bits, group, dtype) if bits is not None else None
    misfit = None  # a head_dim mx.quantize cannot group: MLX-LM fails when it quantizes (from quantized_kv_start)
    if group is not None:
        misfit = next((d for _, layer in runs for d in (layer.k_head_dim, layer.v_head_dim) if d % group), None)
    rules = [rule("architecture", architecture=arch or None), rule("cache_dtype", dtype=MLX_DTYPES[dtype.name])]
    if shared:
        rules.append(rule("shared_kv_no_cache", first=shared[0][0], layers=model.schedule.layers - shared[0][0]))
    kv_slot = q_slot = 0
    kv_layers = 0
    rotating: dict[int, int] = {}
    chunked: dict[int, int] = {}
    windows_ignored = set()
    for count, layer in runs:
        plain = count * (dtype.row_bytes(layer.k_values) + dtype.row_bytes(layer.v_values))
        if layer.chunked:  # ChunkedKVCache: never quantized (no to_quantized)
            chunked[layer.window_tokens] = chunked.get(layer.window_tokens, 0) + plain
            continue
        max_size = None
        if layer.window_tokens is not None and honours_window:
            max_size = layer.window_tokens
        elif layer.window_tokens is not None:
            windows_ignored.add(layer.window_tokens)
        if max_size is None and not own_cache and spec.max_kv_size is not None:
            max_size = spec.max_kv_size
        if max_size is None:
            kv_slot += plain
            kv_layers += count
            if qfmt is not None:
                q_slot += count * (qfmt.row_bytes(layer.k_values) + qfmt.row_bytes(layer.v_values))
        else:
            rotating[max_size] = rotating.get(max_size, 0) + plain
    rotating_layers = schedule.layers - kv_layers - schedule.chunked_layers
    if own_cache:
        rules.append(rule("mlx_own_cache", module=module, ignores_max_kv_size=spec.max_kv_size is not None))
    elif spec.max_kv_size is not None:
        rules.append(rule("mlx_max_kv_size", max_size=spec.max_kv_size, keep=MAX_KV_SIZE_KEEP_TOKENS))
    if windows_ignored:
        rules.append(rule("mlx_window_mask_only", window=min(windows_ignored), module=module))
    if rotating and honours_window and any(layer.window_tokens for _, layer in runs):
        rules.append(rule("sliding_layers", sliding=rotating_layers, layers=schedule.layers,
                          window=min(rotating)))
    fmt = qfmt or dtype
    return MlxCache(spec, fmt, fmt, dtype, kv_slot, q_slot if qfmt is not None else None,
                    tuple(sorted(rotating.items())), kv_layers, rotating_layers, bits, group, tuple(rules),
                    module not in NO_QUANTIZED_ATTENTION, misfit, tuple(sorted(chunked.items())),
                    schedule.chunked_layers)



def _check_chunked_layers(model, schedule, module: str) -> None:
    """``llama4.py`` ``Model.make_cache`` is the only mlx-lm cache for chunked attention, and it puts a
    ``ChunkedKVCache`` on layer ``i`` exactly when ``(i + 1) % 4 != 0`` whatever the config says: refuse a profile
    whose chunked layers are elsewhere (its figure would be some other model's)."""
    if module != "llama4":
        raise FieldError("model", f"{model.name} has chunked attention layers but mlx-lm builds {module}, whose cache "
                         "has no ChunkedKVCache (only llama4.py's make_cache makes one), so it cannot be priced")
    for first, last, layer in schedule.spans():
        for i in range(first, last + 1):
            if bool(getattr(layer, "chunked", False)) != ((i + 1) % 4 != 0):
                kind = "chunked" if getattr(layer, "chunked", False) else "not chunked"
                raise FieldError("model", f"mlx-lm's llama4 make_cache gives layer {i} a "
                                 f"{'ChunkedKVCache' if (i + 1) % 4 else 'KVCache'} ((i + 1) % 4 rule), but "
                                 f"{model.name}'s layer {i} is {kind}")
