"""One configuration (device × model × context × options) evaluated with the engine.

This is the bridge between profiles and the pure engine: it picks the figures a
configuration uses (profile defaults, then overrides), groups the model's layers
into global and windowed ones, and returns every number as a frozen dataclass. It
does no I/O and holds no display strings.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Protocol, TYPE_CHECKING

from kvplan import engine
from kvplan.engine.memory import VERDICTS, Verdict
from kvplan.formats import ElementFormat

if TYPE_CHECKING:  # pydantic stays off the fast path: cached profiles are plain records
    from kvplan.profiles import Device, Model


class CacheModel(Protocol):
    """What :func:`evaluate` needs to know about a cache; :class:`CacheLayout` is the ideal one.

    Alternative cache models (runtime-exact allocations, compression policies) implement
    the same methods and are chosen by :func:`cache_model_for`.
    """

    k_format: ElementFormat
    v_format: ElementFormat

    @property
    def bytes_per_token(self) -> int: ...

    def kv_bytes(self, ctx, sequences=1): ...

    def kv_peak_bytes(self, ctx, sequences=1): ...

    def kv_bytes_read_over_generation(self, n_tokens, sequences=1): ...

    def max_ctx(self, allowance_bytes, sequences=1, ctx_limit=math.inf): ...


@dataclass(frozen=True)
class CacheLayout:
    """The ideal cache (the contract's closed form): bytes/token of global layers and of each window."""

    k_format: ElementFormat
    v_format: ElementFormat
    global_bytes_per_token: int
    windows: tuple[tuple[int, int], ...]  # (window tokens, bytes/token of the layers using it)
    global_layers: int
    windowed_layers: int

    @property
    def bytes_per_token(self) -> int:
        """K+V bytes one token adds to every layer (the growth rate below the smallest window)."""
        return self.global_bytes_per_token + sum(b for _, b in self.windows)

    def kv_bytes(self, ctx, sequences=1):
        """Resident cache of ``sequences`` sequences of ``ctx`` tokens each [bytes]."""
        return engine.kv_bytes(ctx, self.global_bytes_per_token, self.windows) * sequences

    def kv_peak_bytes(self, ctx, sequences=1):
        return self.kv_bytes(ctx, sequences)

    def kv_bytes_read_over_generation(self, n_tokens, sequences=1):
        return engine.kv_bytes_sum_over_generation(n_tokens, self.global_bytes_per_token, self.windows) * sequences

    def max_ctx(self, allowance_bytes, sequences=1, ctx_limit=math.inf):
        per_sequence = engine.kv_allowance_bytes(allowance_bytes, sequences)
        return engine.max_context_tokens(per_sequence, self.global_bytes_per_token, self.windows, ctx_limit)

    @property
    def unbounded(self) -> bool:
        """True when every layer is windowed, so the cache stops growing."""
        return self.global_bytes_per_token == 0 and bool(self.windows)


def layer_bytes_per_token(model: Model, layer: int, k_format: ElementFormat, v_format: ElementFormat) -> int:
    """Bytes one token takes in one layer: its K row plus its V row (or one latent row for MLA)."""
    if model.mla is not None:
        return k_format.row_bytes(model.mla.kv_lora_rank + model.mla.qk_rope_head_dim)
    n_kv = model.kv_heads_of(layer)
    return k_format.row_bytes(n_kv * model.head_dim) + v_format.row_bytes(n_kv * model.v_dim)


def cache_layout(model: Model, k_format: ElementFormat | None = None, v_format: ElementFormat | None = None,
                 sliding_window: int | None = None) -> CacheLayout:
    """Group the model's layers by window; ``sliding_window`` (tokens) puts every layer behind one."""
    k_format = k_format or model.k_format()
    v_format = v_format or model.v_format()
    if sliding_window is not None:
        model = model.model_copy(update={"sliding_window": sliding_window, "sliding_window_pattern": "all"})
    global_bpt = 0
    windowed: dict[int, int] = {}
    global_layers = 0
    for layer in range(model.layers):
        b = layer_bytes_per_token(model, layer, k_format, v_format)
        if model.is_local(layer):
            windowed[model.sliding_window] = windowed.get(model.sliding_window, 0) + b
        else:
            global_bpt += b
            global_layers += 1
    return CacheLayout(k_format, v_format, global_bpt, tuple(sorted(windowed.items())),
                       global_layers, model.layers - global_layers)


@dataclass(frozen=True)
class Scenario:
    """Everything that defines one configuration; ``None`` means "the profile's default"."""

    device: Device
    model: Model
    ctx: int
    sequences: int = 1
    pinned_prefix_tokens: int = 0
    weight_bits: float | None = None
    k_format: ElementFormat | None = None
    v_format: ElementFormat | None = None
    sliding_window: int | None = None
    os_reserve_bytes: int | None = None
    margin_fraction: float = engine.DEFAULT_MARGIN_FRACTION
    target_tokens_per_s: float | None = None
    kv_policy: object | None = None  # a compression policy (kvplan.policies), None: plain cache
    runtime: object | None = None  # runtime-exact rules (kvplan.runtimes), None: the ideal formula

    def with_changes(self, **changes) -> Scenario:
        return replace(self, **changes)


@dataclass(frozen=True)
class Flash:
    """What the overflow costs when it lives on flash (all zero when the configuration fits)."""

    overflow_bytes: int
    swap_in_s: float
    streamed_decode_tokens_per_s: float
    slowdown: float


@dataclass(frozen=True)
class Evaluation:
    """Every figure of one configuration, in base units."""

    scenario: Scenario
    layout: CacheModel  # the cache model used (CacheLayout for the ideal formula)
    weight_bits: float
    kv_bytes_per_token: int
    kv_bytes_per_sequence: int
    kv_bytes: int  # steady-state cache of all sequences
    kv_peak_bytes: int  # the most the cache holds at any moment (equals kv_bytes for the ideal cache)
    pinned_prefix_bytes: int
    weights_bytes: int
    weights_read_bytes: int
    overhead_bytes: int
    total_bytes: int
    budget_bytes: int
    headroom_bytes: int
    margin_bytes: int
    verdict: Verdict
    bytes_per_step: int
    decode_tokens_per_s: float
    decode_tokens_per_s_roofline: float
    mean_decode_tokens_per_s: float
    max_ctx: int | None
    max_ctx_limited_by: str
    max_ctx_at_target: int | None
    flash: Flash
    notes: tuple[str, ...] = field(default=())
    prefill_s: float | None = None  # time to prefill ctx prompt tokens (None: device compute unknown)
    pinned_prefix_recompute_s: float | None = None  # recomputing the pinned prefix instead of keeping it

    @property
    def fits(self) -> bool:
        return self.verdict is not Verdict.OVER


def weights_of(model: Model, weight_bits: float | None) -> tuple[int, int, float]:
    """(weights, weights read per decode step, bits used) [bytes, bytes, bits/param]."""
    bits = model.weight_bits if weight_bits is None else weight_bits
    if model.weights is not None and weight_bits is None:
        weights = model.weights
    else:
        weights = engine.weights_bytes(model.params, bits)
    read = weights
    if model.vocab_size and model.hidden_size and not model.tie_embeddings:
        read = max(weights - engine.embedding_bytes(model.vocab_size, model.hidden_size, bits), 0)
    return int(weights), int(read), bits


def cache_model_for(s: Scenario) -> CacheModel:
    """The cache model a scenario asks for: the ideal layout unless a policy or runtime is set."""
    if s.runtime is not None:  # runtime-exact allocation (kvplan.runtimes); the runtime ignores profile policies
        from kvplan.runtimes import runtime_cache_for

        return runtime_cache_for(s)
    policy = s.kv_policy if s.kv_policy is not None else getattr(s.model, "kv_policy", None)
    if policy is not None and not policy.is_plain:  # a compression policy (kvplan.policies)
        from kvplan.policy_cache import policy_cache

        return policy_cache(s.model, policy, s.k_format, s.v_format, s.sliding_window)
    return cache_layout(s.model, s.k_format, s.v_format, s.sliding_window)


def prefill_seconds_of(device: Device, model: Model, tokens):
    """Seconds to prefill ``tokens`` prompt tokens, or None when the device gives no ``compute``.

    ``2 · params · T + 2 · layers · T² · heads · head_dim`` FLOPs over ``compute``
    (:mod:`kvplan.engine.prefill`); ``params_active`` when a profile gives it (MoE).
    """
    if not device.compute:
        return None
    params = getattr(model, "params_active", None) or model.params
    flops = engine.prefill_flops(tokens, params, model.layers, model.attention_heads, model.head_dim)
    return engine.prefill_seconds(flops, device.compute)


def evaluate(s: Scenario) -> Evaluation:
    """Evaluate one configuration with the closed-form engine."""
    device, model = s.device, s.model
    cache = cache_model_for(s)
    weights, weights_read, bits = weights_of(model, s.weight_bits)
    overhead = device.runtime_overhead
    reserve = device.os_reserve if s.os_reserve_bytes is None else s.os_reserve_bytes
    budget = engine.budget_bytes(device.ram, reserve)

    kv = cache.kv_bytes(s.ctx, s.sequences)
    kv_peak = cache.kv_peak_bytes(s.ctx, s.sequences)
    pinned = cache.kv_bytes(s.pinned_prefix_tokens, 1)
    total = engine.total_bytes(weights, kv_peak, 1, pinned, overhead)
    headroom = engine.headroom_bytes(budget, total)
    verdict = VERDICTS[engine.verdict_code(headroom, budget, s.margin_fraction)]

    step = engine.bytes_per_token(weights_read, kv + pinned)
    bandwidth, efficiency = device.memory_bandwidth, device.bandwidth_efficiency
    rate = engine.decode_tokens_per_s(bandwidth, step, efficiency)
    roofline = engine.decode_tokens_per_s(bandwidth, step, 1.0)
    n = max(s.ctx, 1)
    read_over_generation = cache.kv_bytes_read_over_generation(n, s.sequences) + n * pinned
    mean_rate = engine.mean_decode_tokens_per_s(n, weights_read, read_over_generation, bandwidth, efficiency)

    unbounded = getattr(cache, "unbounded", False)
    ctx_limit = model.max_context if model.max_context and unbounded else math.inf
    max_ctx = cache.max_ctx(budget - weights - overhead - pinned, s.sequences, ctx_limit)
    limited_by = "memory"
    if max_ctx == engine.NO_CONTEXT_FITS:
        limited_by = "weights"
    elif unbounded and max_ctx >= max(w for w, _ in cache.windows):
        limited_by = "model" if ctx_limit != math.inf else "unbounded"

    at_target = None
    if s.target_tokens_per_s:
        step_allowance = math.floor(bandwidth * efficiency / s.target_tokens_per_s) - weights_read - pinned
        speed_ctx = cache.max_ctx(step_allowance, s.sequences, ctx_limit)
        at_target = min(max_ctx, speed_ctx)

    overflow = int(engine.overflow_bytes(total, budget))
    effective = bandwidth * efficiency
    if overflow:
        per_token_s = engine.streamed_seconds_per_token(step, overflow, effective, device.flash_read)
        flash = Flash(overflow, engine.swap_in_seconds(kv + pinned, device.flash_read),
                      1.0 / per_token_s, per_token_s / (step / effective))
    else:
        flash = Flash(0, engine.swap_in_seconds(kv + pinned, device.flash_read), rate, 1.0)

    return Evaluation(
        scenario=s, layout=cache, weight_bits=bits,
        kv_bytes_per_token=cache.bytes_per_token, kv_bytes_per_sequence=int(cache.kv_bytes(s.ctx, 1)),
        kv_bytes=int(kv), kv_peak_bytes=int(kv_peak),
        pinned_prefix_bytes=int(pinned), weights_bytes=weights, weights_read_bytes=weights_read,
        overhead_bytes=overhead, total_bytes=int(total), budget_bytes=budget, headroom_bytes=int(headroom),
        margin_bytes=math.ceil(s.margin_fraction * budget), verdict=verdict, bytes_per_step=int(step),
        decode_tokens_per_s=rate, decode_tokens_per_s_roofline=roofline, mean_decode_tokens_per_s=mean_rate,
        max_ctx=None if max_ctx in (math.inf, engine.NO_CONTEXT_FITS) else int(max_ctx),
        max_ctx_limited_by=limited_by,
        max_ctx_at_target=None if at_target is None or at_target in (math.inf, -1) else int(at_target),
        flash=flash,
        prefill_s=prefill_seconds_of(device, model, s.ctx),
        pinned_prefix_recompute_s=prefill_seconds_of(device, model, s.pinned_prefix_tokens),
    )
