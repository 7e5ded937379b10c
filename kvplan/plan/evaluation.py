"""One configuration (device × model × context × options) evaluated with the engine.

This is the bridge between profiles and the pure engine: it picks the figures a
configuration uses (profile defaults, then overrides), groups the model's layers
into global and windowed ones, and returns every number as a frozen dataclass. It
does no I/O and holds no display strings.
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING

from kvplan import engine
from kvplan.engine.memory import VERDICTS, Verdict
from kvplan.errors import FieldError, ProfileError, UsageError
from kvplan.caches.ideal import CacheLayout, CacheModel, cache_layout, kv_bytes_per_sequence_of, tokens_per_sequence_of
from kvplan.engine.formats import ElementFormat
from kvplan.plan.scenario import Scenario

if TYPE_CHECKING:  # pydantic stays off the fast path: cached profiles are plain records
    from kvplan.profiles.spec import Device, Model


@dataclass(frozen=True, eq=False)  # results are read, never compared: no generated __eq__
class Flash:
    """What the overflow costs when it lives on flash (all zero when the configuration fits)."""

    overflow_bytes: int  # total − budget at the peak (what decides the verdict)
    swap_in_s: float  # reading the whole KV cache (and pinned prefix) back from flash
    streamed_decode_tokens_per_s: float  # decode with the steady-state overflow read from flash every step
    slowdown: float  # time per token streamed ÷ time per token from RAM
    steady_overflow_bytes: int = 0  # total − budget once the cache is at its steady size (≤ overflow_bytes)
    overflow_swap_in_s: float = 0.0  # reading only the overflow back from flash

    @property
    def transient(self) -> bool:
        """Over the budget only at the peak right after prefill; the steady state fits."""
        return self.overflow_bytes > 0 and self.steady_overflow_bytes == 0


@dataclass(frozen=True, eq=False)  # results are read, never compared: no generated __eq__
class Evaluation:
    """Every figure of one configuration, in base units."""

    scenario: Scenario
    layout: CacheModel  # the cache model used (CacheLayout for the ideal formula)
    weight_bits: float
    kv_bytes_per_token: int
    kv_bytes_per_sequence: int | None  # one sequence's cache; None: the sequences share one pool (llama.cpp unified)
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
    max_ctx_at_target: int | None  # None: no target, out of reach, or met at every context (target_reach)
    flash: Flash
    notes: tuple[str, ...] = field(default=())
    prefill_s: float | None = None  # time to prefill ctx prompt tokens (None: device compute unknown)
    pinned_prefix_recompute_s: float | None = None  # recomputing the pinned prefix instead of keeping it
    # with a decode target: "unreachable" (even an empty cache decodes slower), "every context" (the cache stops
    # growing while still decoding fast enough) or "context" (max_ctx_at_target holds the answer); None: no target
    target_reach: str | None = None
    # prefill_s is the larger of: FLOPs / (compute · compute_efficiency), and the weights read once per micro-batch
    prefill_compute_s: float | None = None
    prefill_memory_s: float | None = None
    prefill_n_ubatch: int = 512  # tokens per prefill micro-batch (llama.cpp -ub; 512 where no runtime says)
    max_ctx_trained: int | None = None  # the model's trained context (profile max_context); not a cap on max_ctx
    ctx_per_sequence_tokens: int = 0  # the tokens one sequence can attend (llama.cpp: n_ctx_seq)
    mean_decode_tokens: int = 0  # the generation mean_decode_tokens_per_s averages over, per sequence [tokens]
    ctx_beyond_trained: bool = False  # ctx_per_sequence_tokens > max_ctx_trained: needs a context extension
    weights_pricing: object | None = None  # the tensor-by-tensor WeightPricing of a named weight_type, else None
    # runtime buffers beside the cache (llama.cpp's compute and output buffers); 0 where the runtime adds none
    compute_buffer_bytes: int = 0
    output_buffer_bytes: int = 0
    warnings: tuple[str, ...] = field(default=())  # what the user should know before trusting a figure

    @cached_property
    def llamacpp_buffers_bytes(self) -> int | None:
        """Under the ideal formula, the compute + output buffers llama.cpp would add at its defaults [bytes]; None
        under a runtime, where llama.cpp would refuse the request, or when the profile lacks the shape. Computed
        when asked (an allocator replay): the gate and sweeps, which never show it, do not pay for it."""
        from kvplan.plan.warnings import llamacpp_buffers_if_ideal

        would_add = llamacpp_buffers_if_ideal(self.scenario)
        return would_add.total_bytes if would_add is not None else None

    @property
    def buffers_bytes(self) -> int:
        """Runtime buffers counted in the total (compute + output) [bytes]."""
        return self.compute_buffer_bytes + self.output_buffer_bytes

    @property
    def aggregate_decode_tokens_per_s(self) -> float:
        """Tokens per second over all sequences: a step reads the weights once and emits one token per sequence."""
        return self.decode_tokens_per_s * self.scenario.sequences

    @property
    def prefill_bound(self) -> str | None:
        """Which floor sets the prefill time: ``compute`` (FLOPs) or ``memory`` (weights once per micro-batch)."""
        if self.prefill_compute_s is None:
            return None
        return "memory" if self.prefill_memory_s > self.prefill_compute_s else "compute"

    @property
    def fits(self) -> bool:
        return self.verdict is not Verdict.OVER

    def tokens_per_sequence(self, ctx: int) -> int:
        """The tokens one sequence attends at ``ctx`` under this cache (llama.cpp splits ``-c`` over ``-np``)."""
        return tokens_per_sequence_of(self.layout, ctx, self.scenario.sequences)


def weights_of(model: Model, weight_bits: float | None) -> tuple[int, int, float]:
    """(weights, weights read per decode step, bits used) [bytes, bytes, bits/param]."""
    bits = model.weight_bits if weight_bits is None else weight_bits
    if model.weights is not None and weight_bits is None:
        weights = model.weights
    else:
        weights = engine.weights_bytes(model.params, bits)
    # A decode step streams the weights one token uses. Every expert of a mixture of experts stays resident
    # (`weights` counts all params), but a step reads only the shared layers and the experts the router picks:
    # `params_active`, counted like `params` (embedding table included), at the same bytes per parameter —
    # ceil(params_active · bits / 8), or an explicit `weights` size scaled by params_active / params. From
    # that, as for a dense model, the untied input-embedding table is left out (a step reads one row of it).
    active = getattr(model, "params_active", None)
    if active is None:
        read = weights
    elif model.weights is not None and weight_bits is None:
        read = -(-weights * active // model.params)
    else:
        read = engine.weights_bytes(active, bits)
    if model.vocab_size and model.hidden_size and not model.tie_embeddings:
        read = max(read - engine.embedding_bytes(model.vocab_size, model.hidden_size, bits), 0)
    return int(weights), int(read), bits


def weights_in_force(s: Scenario):
    """(weights, weights read per step, bits/param, WeightPricing or None) of a scenario [bytes, bytes, bits].

    A named ``weight_type`` (the scenario's, else the profile's when neither ``weight_bits`` nor an explicit
    ``weights`` size is in force) is priced tensor by tensor; otherwise ``params · bits / 8``."""
    model = s.model
    weight_type = s.weight_type
    if weight_type is None and s.weight_bits is None and model.weights is None:
        weight_type = getattr(model, "weight_type", None)
    if weight_type is None:
        return (*weights_of(model, s.weight_bits), None)
    from kvplan.plan.weights import bytes_read_per_token, priced_weights

    try:
        pricing = priced_weights(model, weight_type, s.weight_group_size or 0)
    except FieldError as exc:
        if s.weight_type is not None:  # the flag's (or gate key's) value: the error is about it
            raise
        # the profile's own weight_type: a fault of the profile file, not of an option nobody gave
        raise ProfileError([f"model {model.name}: weight_type {weight_type}: {exc.worded(lead=False)}"]) from None
    return pricing.total_bytes, bytes_read_per_token(pricing, model), pricing.bits_per_weight, pricing


def cache_model_for(s: Scenario) -> CacheModel:
    """The cache model a scenario asks for: the ideal layout unless a policy or runtime is set."""
    if s.runtime is not None:  # runtime-exact allocation (kvplan.caches.runtimes); the runtime ignores profile policies
        from kvplan.caches.runtimes import runtime_cache_for

        cache = runtime_cache_for(s)
        limit = getattr(cache, "ctx_limit", None)  # the prefix is held in a cache of its own, of the same kind
        if limit and s.pinned_prefix_tokens > limit[0]:
            raise FieldError("pinned_prefix_tokens", f"{{pinned_prefix_tokens}} {s.pinned_prefix_tokens:,} exceeds "
                             f"{{runtime.{limit[1]}}} {limit[0]:,}: the cache cannot hold it", lead=None,
                             mentions=(f"runtime.{limit[1]}",))
        return cache
    policy = s.kv_policy if s.kv_policy is not None else getattr(s.model, "kv_policy", None)
    if policy is not None and not policy.is_plain:  # a compression policy (kvplan.profiles.policy)
        from kvplan.caches.policy import policy_cache

        _refuse_formats_the_policy_sets(s, policy)
        return policy_cache(s.model, policy, s.k_format, s.v_format, s.sliding_window)
    return cache_layout(s.model, s.k_format, s.v_format, s.sliding_window)


def _refuse_formats_the_policy_sets(s: Scenario, policy) -> None:
    """A cache type or bit width given beside a policy whose every tier sets that side's formats (recent and
    history) would be priced nowhere, yet reported as the cache's format: refuse it rather than ignore it."""
    from kvplan.caches.runtimes import asked_as

    tiers = [spec for _, _, spec in policy.layer_ranges(s.model.layers)]
    for side in ("k", "v"):
        if (s.k_format if side == "k" else s.v_format) is None:
            continue
        fixed = all(getattr(spec, side) is not None and (spec.history is None or getattr(spec.history, side) is not None)
                    for spec in tiers)
        if fixed:
            field, value = asked_as(s, side)
            raise FieldError((field, "kv_policy"), f"{value}: the KV policy sets the {side.upper()} format of every "
                             "tier itself, so this would change nothing; drop it, or leave the format out of the "
                             "policy", lead=" with ")


def runtime_buffers(s: Scenario, cache: CacheModel, ctx: int, *, floor: bool = False):
    """llama.cpp's compute and output buffers at ``ctx`` (a :class:`~kvplan.caches.buffers.LlamaCppBuffers`),
    or None: another cache model, or a profile without the shape fields the compute buffer needs. ``floor``:
    a lower bound on them at ``ctx`` and every larger one."""
    if getattr(cache, "name", None) != "llama.cpp":
        return None
    from kvplan.caches.buffers import llamacpp_buffers

    v_format = cache.v_format or cache.k_format  # MLA: one latent row, K's type
    return llamacpp_buffers(cache.spec, s.model, ctx, s.sequences, cache.k_format.name, v_format.name, floor=floor)


def max_ctx_with_buffers(s: Scenario, cache: CacheModel, allowance_bytes: int, kv_only_max_ctx):
    """Largest ``-c`` whose KV allocation plus buffers fit ``allowance_bytes``, exact to the token.

    The answer is at most the KV-only one. Bisection below it finds a ``-c`` that fits with one token more not
    fitting. cache + buffers is not monotone, though: the compute buffer can shrink by tens of MB from one
    256-cell step to the next (the allocator lands tensors in other holes; Gemma 3 at 61,440 → 71,680 cells),
    so a later block of cells may fit again. Every later block is tried while its cache plus a lower bound on
    the buffers there (the output buffer and the compute buffer's largest tensor, which only grow with ``-c``)
    still fits. ``engine.NO_CONTEXT_FITS`` when not even ``-c 1`` fits."""
    def fits(ctx: int) -> bool:
        return cache.kv_peak_bytes(ctx, s.sequences) + runtime_buffers(s, cache, ctx).total_bytes <= allowance_bytes

    if kv_only_max_ctx == engine.NO_CONTEXT_FITS or not fits(1):
        return engine.NO_CONTEXT_FITS
    hi = 2**40 if kv_only_max_ctx == math.inf else int(kv_only_max_ctx)
    if fits(hi):
        return kv_only_max_ctx
    lo = engine.largest_fitting(fits, 1, hi)  # fits, lo + 1 does not: the first crossing, maybe not the last
    if kv_only_max_ctx == math.inf:  # a cache that stops growing: no bound ends the search below
        return lo
    # -c is padded to whole blocks of 256 cells per KV stream, so the cache is the same across a block and so
    # are the buffers (past the micro-batch, which grows with -c below -ub): a block's last -c fits if any does
    streams = 1 if cache.spec.kv_unified else s.sequences
    block = 256 * streams
    floor = runtime_buffers(s, cache, lo, floor=True).total_bytes
    start = lo + 2  # lo + 1 does not fit
    while start <= kv_only_max_ctx and cache.kv_peak_bytes(start, s.sequences) + floor <= allowance_bytes:
        end = min((start + block - 1) // block * block, int(kv_only_max_ctx))
        if fits(end):
            lo = end
        elif fits(start):  # below -ub the buffers grow within a block: its largest fitting -c
            lo = engine.largest_fitting(fits, start, end)
        start = end + 1
    return lo


def prefill_n_ubatch(s: Scenario) -> int:
    """Tokens per prefill micro-batch: llama.cpp's ``-ub`` (capped at ``-b``, as llama_context does) under
    ``--runtime llama.cpp``, else llama.cpp's default 512 (other runtimes batch differently; 512 is a stand-in)."""
    spec = s.runtime
    if getattr(spec, "name", None) == "llama.cpp":
        return min(spec.ubatch, spec.batch)
    return engine.DEFAULT_N_UBATCH


def prefill_times_of(device: Device, model: Model, tokens, weights_read_bytes, n_ubatch: int = 512):
    """(compute-bound, memory-bound) seconds to prefill ``tokens`` prompt tokens, or None without ``compute``.

    Compute: ``2 · params_active · T + 2 · layers · T² · heads · head_dim`` FLOPs over
    ``compute · compute_efficiency`` (``params_active`` when a profile gives it: MoE). Memory: the weights a
    decode step reads, once per micro-batch of ``n_ubatch`` tokens, at the effective bandwidth — a floor
    (for a mixture of experts a micro-batch touches more experts than one token, so more than that).
    The prefill time is the larger of the two (:func:`prefill_s_of`).
    """
    if not device.compute:
        return None
    params = getattr(model, "params_active", None) or model.params
    flops = engine.prefill_flops(tokens, params, model.layers, model.attention_heads, model.head_dim)
    return (engine.prefill_compute_s(flops, device.compute, device.compute_efficiency),
            engine.prefill_memory_s(tokens, weights_read_bytes, device.memory_bandwidth,
                                    device.bandwidth_efficiency, n_ubatch))


def prefill_s_of(device: Device, model: Model, tokens, weights_read_bytes=0, n_ubatch: int = 512):
    """Seconds to prefill ``tokens`` prompt tokens (the larger of :func:`prefill_times_of`), or None
    when the device gives no ``compute``. ``weights_read_bytes = 0`` leaves out the memory floor."""
    times = prefill_times_of(device, model, tokens, weights_read_bytes, n_ubatch)
    return None if times is None else engine.maximum(*times)


def steady_max_ctx(cache: CacheModel, allowance_bytes, sequences: int = 1):
    """Largest ``ctx`` whose steady cache (after a decode step: what each step reads) fits ``allowance_bytes``;
    ``engine.NO_CONTEXT_FITS`` when not even one token does, ``math.inf`` when the cache stops growing below it.

    ``CacheModel.max_ctx`` solves against the peak (right after a prefill, before an eviction), which is the
    memory answer; a decode rate depends on the bytes a step reads, the steady cache. Where the two are the same
    (the ideal layout) the closed form is used; otherwise an exact integer search over the steady size, which
    never decreases with ``ctx``."""
    if isinstance(cache, CacheLayout):  # steady == peak, in closed form
        return cache.max_ctx(allowance_bytes, sequences)

    def fits(ctx: int) -> bool:
        return cache.kv_bytes(ctx, sequences) <= allowance_bytes

    if not fits(1):
        return engine.NO_CONTEXT_FITS
    limit = getattr(cache, "ctx_limit", None)
    hi = int(limit[0]) if limit else 2**40
    if fits(hi):
        return hi if limit else math.inf
    return engine.largest_fitting(fits, 1, hi)


def max_ctx_limited_by(max_ctx, cache=None, allowance_bytes=None, sequences=1, pinned_bytes=0) -> str:
    """Why a solved max context is what it is (a scalar from ``CacheModel.max_ctx``).

    ``weights``: the weights (with the runtime overhead) leave no room for a cache at all;
    ``pinned_prefix``: they do, but not beside the pinned prefix (``pinned_bytes``, already taken out
    of ``allowance_bytes``); ``unbounded``: the cache stops growing (every layer windowed) and fits at
    every context; ``memory``: the budget. A cache that holds a fixed number
    of tokens (its optional ``ctx_limit``: transformers' StaticCache with ``max_cache_len``) is
    limited by that option's name (``max_cache_len``), whether its preallocation fits or not, unless
    ``allowance_bytes`` per sequence would not hold one token. The model's trained context is never a
    cap on max context (it is reported beside it, :attr:`Evaluation.max_ctx_trained`).
    """
    limit = getattr(cache, "ctx_limit", None)
    if limit and engine.kv_allowance_bytes(allowance_bytes, sequences) >= cache.bytes_per_token:
        return str(limit[1])
    if max_ctx == engine.NO_CONTEXT_FITS:
        return "pinned_prefix" if pinned_bytes and allowance_bytes + pinned_bytes >= 0 else "weights"
    if max_ctx == math.inf:
        return "unbounded"
    return "memory"


def evaluate(s: Scenario) -> Evaluation:
    """Evaluate one configuration with the closed-form engine."""
    device, model = s.device, s.model
    cache = cache_model_for(s)
    weights, weights_read, bits, pricing = weights_in_force(s)
    overhead = device.runtime_overhead
    budget = s.budget_bytes

    kv = cache.kv_bytes(s.ctx, s.sequences)
    kv_peak = cache.kv_peak_bytes(s.ctx, s.sequences)
    pinned = cache.kv_bytes(s.pinned_prefix_tokens, 1)
    buffers = runtime_buffers(s, cache, s.ctx)
    buffers_bytes = buffers.total_bytes if buffers is not None else 0
    total = engine.total_bytes(weights, kv_peak, 1, pinned, overhead) + buffers_bytes
    headroom = engine.headroom_bytes(budget, total)
    verdict = VERDICTS[engine.verdict_code(headroom, budget, s.margin_fraction)]

    step = engine.bytes_per_step(weights_read, kv + pinned)
    bandwidth, efficiency = device.memory_bandwidth, device.bandwidth_efficiency
    latency_s = device.decode_latency  # fixed cost per step (kvplan calibrate); 0: unknown, the pure bandwidth model
    rate = engine.decode_tokens_per_s(bandwidth, step, efficiency, latency_s)
    roofline = engine.decode_tokens_per_s(bandwidth, step, 1.0)  # the bound: 100 % bandwidth, no latency
    n = max(s.ctx, 1)
    # a sequence generates the tokens it can attend: under llama.cpp's -np N (one stream each) its stream's cells,
    # not the whole -c, and every step of it reads all N streams (kv_bytes_read_over_generation sums them)
    steps = max(min(n, tokens_per_sequence_of(cache, n, s.sequences)), 1)
    read_over_generation = cache.kv_bytes_read_over_generation(n, s.sequences) + steps * pinned
    mean_rate = engine.mean_decode_tokens_per_s(steps, weights_read, read_over_generation, bandwidth, efficiency,
                                                latency_s)

    # Max context is what fits in memory, never capped at the trained context (reported beside it).
    cache_allowance = budget - weights - overhead - pinned
    max_ctx = cache.max_ctx(cache_allowance, s.sequences)
    if buffers is not None:  # the buffers grow with the context too: the largest ctx where cache + buffers fit
        max_ctx = max_ctx_with_buffers(s, cache, cache_allowance, max_ctx)
    limited_by = max_ctx_limited_by(max_ctx, cache, cache_allowance, s.sequences, pinned)
    trained = model.max_context or None
    per_sequence_tokens = tokens_per_sequence_of(cache, s.ctx, s.sequences)

    at_target = None
    if s.target_tokens_per_s:  # per-sequence rate ≥ target ⇔ bytes per step ≤ B / target − latency · B
        step_allowance = (math.floor(engine.step_bytes_at_rate(s.target_tokens_per_s, bandwidth, efficiency,
                                                               latency_s)) - weights_read - pinned)
        speed_ctx = steady_max_ctx(cache, step_allowance, s.sequences)
        at_target = min(max_ctx, speed_ctx)

    n_ubatch = prefill_n_ubatch(s)
    prefill = prefill_times_of(device, model, s.ctx, weights_read, n_ubatch)

    overflow = int(engine.overflow_bytes(total, budget))
    # Decode runs at the steady size: a peak right after prefill (prompt views) is gone by the first step.
    transient_peak = kv_peak - kv if getattr(cache, "peak_is_transient", False) else 0
    steady_overflow = int(engine.overflow_bytes(total - transient_peak, budget))
    effective = bandwidth * efficiency
    swap_in_s = engine.swap_in_s(kv + pinned, device.flash_read)
    overflow_swap_in_s = engine.swap_in_s(overflow, device.flash_read)
    if steady_overflow:
        # the latency is paid whether the bytes come from RAM or from flash
        per_token_s = engine.streamed_time_per_token_s(step, steady_overflow, effective, device.flash_read) + latency_s
        flash = Flash(overflow, swap_in_s, 1.0 / per_token_s, per_token_s / (step / effective + latency_s),
                      steady_overflow, overflow_swap_in_s)
    else:
        flash = Flash(overflow, swap_in_s, rate, 1.0, 0, overflow_swap_in_s)

    ev = Evaluation(
        scenario=s, layout=cache, weight_bits=bits, weights_pricing=pricing,
        kv_bytes_per_token=cache.bytes_per_token, kv_bytes_per_sequence=kv_bytes_per_sequence_of(cache, s.ctx, s.sequences),
        kv_bytes=int(kv), kv_peak_bytes=int(kv_peak),
        pinned_prefix_bytes=int(pinned), weights_bytes=weights, weights_read_bytes=weights_read,
        overhead_bytes=overhead, total_bytes=int(total), budget_bytes=budget, headroom_bytes=int(headroom),
        margin_bytes=math.ceil(s.margin_fraction * budget), verdict=verdict, bytes_per_step=int(step),
        decode_tokens_per_s=rate, decode_tokens_per_s_roofline=roofline, mean_decode_tokens_per_s=mean_rate,
        max_ctx=None if max_ctx in (math.inf, engine.NO_CONTEXT_FITS) else int(max_ctx),
        max_ctx_limited_by=limited_by,
        max_ctx_at_target=None if at_target is None or at_target in (math.inf, -1) else int(at_target),
        target_reach=None if at_target is None else "unreachable" if speed_ctx == engine.NO_CONTEXT_FITS
        else "every context" if at_target == math.inf else "context",
        flash=flash,
        prefill_s=None if prefill is None else engine.maximum(*prefill),
        prefill_compute_s=None if prefill is None else prefill[0],
        prefill_memory_s=None if prefill is None else prefill[1],
        prefill_n_ubatch=n_ubatch,
        pinned_prefix_recompute_s=prefill_s_of(device, model, s.pinned_prefix_tokens, weights_read, n_ubatch),
        max_ctx_trained=trained, ctx_per_sequence_tokens=int(per_sequence_tokens), mean_decode_tokens=int(steps),
        ctx_beyond_trained=bool(trained and per_sequence_tokens > trained),
        compute_buffer_bytes=buffers.compute_bytes if buffers is not None else 0,
        output_buffer_bytes=buffers.output_bytes if buffers is not None else 0,
    )
    from kvplan.plan.warnings import warnings_of

    return replace(ev, warnings=warnings_of(ev))
