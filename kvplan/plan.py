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
from typing import TYPE_CHECKING

from kvplan import engine
from kvplan.engine.memory import VERDICTS, Verdict
from kvplan.errors import UsageError
from kvplan.formats import ElementFormat, format_from_name

if TYPE_CHECKING:  # pydantic stays off the fast path: cached profiles are plain records
    from kvplan.profiles import Device, Model


class CacheModel:
    """What :func:`evaluate` needs to know about a cache; :class:`CacheLayout` is the ideal one.

    An interface by convention (duck typing), not a ``typing.Protocol``: building a Protocol
    class costs a few milliseconds at every start, and nothing checks it at run time.

    Alternative cache models (runtime-exact allocations, compression policies) implement
    the same methods and are chosen by :func:`cache_model_for`.

    Two optional methods, for a cache whose ``ctx`` is not the tokens of each sequence
    (llama.cpp's ``-c`` is the total shared by the sequences), read through
    :func:`kv_bytes_per_sequence_of` and :func:`tokens_per_sequence_of`:
    ``kv_bytes_per_sequence(ctx, sequences)`` (the bytes one sequence holds; None when the
    sequences share one pool) and ``tokens_per_sequence(ctx, sequences)`` (the tokens one
    sequence can attend). Without them: ``kv_bytes(ctx, 1)`` and ``ctx``.
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


_LAYOUTS: dict[tuple, tuple[object, CacheLayout]] = {}


def cache_layout(model: Model, k_format: ElementFormat | None = None, v_format: ElementFormat | None = None,
                 sliding_window: int | None = None) -> CacheLayout:
    """Group the model's layers by window; ``sliding_window`` (tokens) puts every layer behind one.

    Memoized per model object (profiles are immutable): a gate of 100 configurations over a few
    models groups each model's layers once, not 100 times.
    """
    key = (id(model), k_format, v_format, sliding_window)
    hit = _LAYOUTS.get(key)
    if hit is not None and hit[0] is model:
        return hit[1]
    layout = _cache_layout(model, k_format, v_format, sliding_window)
    if len(_LAYOUTS) > 512:
        _LAYOUTS.clear()
    _LAYOUTS[key] = (model, layout)  # holding the model keeps its id from being reused
    return layout


def _cache_layout(model: Model, k_format: ElementFormat | None, v_format: ElementFormat | None,
                  sliding_window: int | None) -> CacheLayout:
    k_format = k_format or model.k_format()
    v_format = v_format or model.v_format()
    if sliding_window is not None:
        model = model.model_copy(update={"sliding_window": sliding_window, "sliding_window_pattern": "all"})
    global_bpt = 0
    windowed: dict[int, int] = {}
    global_layers = 0
    # Layers differ only by their KV head count, so each distinct count is priced once.
    priced: dict[int, int] = {}
    for layer in range(model.layers):
        n_kv = model.kv_heads_of(layer)
        b = priced.get(n_kv)
        if b is None:
            b = priced[n_kv] = layer_bytes_per_token(model, layer, k_format, v_format)
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
    runtime_from_profile: bool = False  # the runtime is the model profile's default (no --runtime given)

    def __post_init__(self):
        # The library is the CLI's engine: the same inputs are refused here as on the command line.
        for name, needed in (("device", ("ram", "memory_bandwidth")), ("model", ("layers", "head_dim"))):
            if not all(hasattr(getattr(self, name), attr) for attr in needed):
                raise UsageError(f"{name}: expected a {name} profile (kvplan.Catalog().{name}(name).profile), "
                                 f"got {type(getattr(self, name)).__name__}")
        for name in ("k_format", "v_format"):  # a runtime type name or bit width is accepted, as on the CLI
            value = getattr(self, name)
            if isinstance(value, (str, int)) and not isinstance(value, bool):
                object.__setattr__(self, name, format_from_name(str(value)))
            elif value is not None and not isinstance(value, ElementFormat):
                raise UsageError(f"{name}: expected a cache type such as 'q8_0' or an ElementFormat, got {value!r}")
        if self.runtime is not None:  # a runtime name or mapping, as a gate file writes it, or a spec
            from kvplan.runtimes import parse_runtime, resolve_sequences

            spec = parse_runtime(self.runtime) if isinstance(self.runtime, (str, dict)) else self.runtime
            spec, sequences = resolve_sequences(spec, self.sequences, self.pinned_prefix_tokens)
            object.__setattr__(self, "runtime", spec)
            object.__setattr__(self, "sequences", sequences)
        if isinstance(self.kv_policy, str):
            raise UsageError("kv_policy: pass a policy (kvplan.policies.load_policy_file(path)), not a path: "
                             "the library reads no files on its own")
        _check_count("ctx", self.ctx, minimum=0)
        _check_count("sequences", self.sequences, minimum=1)
        _check_count("pinned_prefix_tokens", self.pinned_prefix_tokens, minimum=0)
        if self.sliding_window is not None:
            _check_count("sliding_window", self.sliding_window, minimum=1)
        if self.weight_bits is not None and not (isinstance(self.weight_bits, (int, float))
                                                 and 0 < self.weight_bits <= 32):
            raise UsageError(f"weight_bits: must be above 0 and at most 32, got {self.weight_bits!r}")
        if not (isinstance(self.margin_fraction, (int, float)) and 0 <= self.margin_fraction < 1):
            raise UsageError(f"margin: must be at least 0 and below 1, got {self.margin_fraction!r}")
        if self.os_reserve_bytes is not None:
            _check_count("os_reserve_bytes", self.os_reserve_bytes, minimum=0)
            if self.os_reserve_bytes >= self.device.ram:
                raise UsageError(f"os_reserve: must be less than the device's RAM ({self.device.ram:,} bytes)")
        if self.target_tokens_per_s is not None and not (isinstance(self.target_tokens_per_s, (int, float))
                                                         and self.target_tokens_per_s > 0):
            raise UsageError(f"target_tokens_per_s: must be positive, got {self.target_tokens_per_s!r}")

    @property
    def os_reserve_in_force_bytes(self) -> int:
        """The OS reserve this configuration uses: its override, else the device's [bytes]."""
        return self.device.os_reserve if self.os_reserve_bytes is None else self.os_reserve_bytes

    @property
    def budget_bytes(self) -> int:
        """``ram − os_reserve`` with the reserve in force [bytes]."""
        return engine.budget_bytes(self.device.ram, self.os_reserve_in_force_bytes)

    def with_changes(self, **changes) -> Scenario:
        if "sequences" in changes and "runtime" not in changes and getattr(self.runtime, "parallel", None):
            # under llama.cpp the sequences are -np: a new count re-derives it rather than contradicting it
            changes["runtime"] = replace(self.runtime, parallel=None)
        return replace(self, **changes)


def _check_count(name: str, value, *, minimum: int) -> None:
    try:
        whole = operator.index(value)  # ints and numpy integers; not floats, strings or arrays
    except TypeError:
        whole = None
    if isinstance(value, bool) or whole is None or whole < minimum:
        raise UsageError(f"{name}: must be a whole number ≥ {minimum}, got {value!r}")


@dataclass(frozen=True, eq=False)  # results are read, never compared: no generated __eq__
class Flash:
    """What the overflow costs when it lives on flash (all zero when the configuration fits)."""

    overflow_bytes: int
    swap_in_s: float
    streamed_decode_tokens_per_s: float
    slowdown: float


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
    max_ctx_at_target: int | None
    flash: Flash
    notes: tuple[str, ...] = field(default=())
    prefill_s: float | None = None  # time to prefill ctx prompt tokens (None: device compute unknown)
    pinned_prefix_recompute_s: float | None = None  # recomputing the pinned prefix instead of keeping it
    max_ctx_trained: int | None = None  # the model's trained context (profile max_context); not a cap on max_ctx
    ctx_per_sequence_tokens: int = 0  # the tokens one sequence can attend (llama.cpp: n_ctx_seq)
    ctx_beyond_trained: bool = False  # ctx_per_sequence_tokens > max_ctx_trained: needs a context extension

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


def kv_bytes_per_sequence_of(cache: CacheModel, ctx: int, sequences: int = 1) -> int | None:
    """The bytes one of ``sequences`` sequences holds at ``ctx`` (None: they share one pool)."""
    own = getattr(cache, "kv_bytes_per_sequence", None)
    return own(ctx, sequences) if own is not None else int(cache.kv_bytes(ctx, 1))


def tokens_per_sequence_of(cache: CacheModel, ctx: int, sequences: int = 1) -> int:
    """The tokens one sequence can attend at ``ctx`` (``ctx`` unless the runtime splits it)."""
    own = getattr(cache, "tokens_per_sequence", None)
    return own(ctx, sequences) if own is not None else int(ctx)


def max_ctx_limited_by(max_ctx) -> str:
    """Why a solved max context is what it is (a scalar from ``CacheModel.max_ctx``).

    ``weights``: not even one token fits; ``unbounded``: the cache stops growing (every layer
    windowed) and fits at every context; ``memory``: the budget. The model's trained context is
    never a cap on max context (it is reported beside it, :attr:`Evaluation.max_ctx_trained`).
    """
    if max_ctx == engine.NO_CONTEXT_FITS:
        return "weights"
    if max_ctx == math.inf:
        return "unbounded"
    return "memory"


def evaluate(s: Scenario) -> Evaluation:
    """Evaluate one configuration with the closed-form engine."""
    device, model = s.device, s.model
    cache = cache_model_for(s)
    weights, weights_read, bits = weights_of(model, s.weight_bits)
    overhead = device.runtime_overhead
    budget = s.budget_bytes

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

    # Max context is what fits in memory, never capped at the trained context (reported beside it).
    max_ctx = cache.max_ctx(budget - weights - overhead - pinned, s.sequences)
    limited_by = max_ctx_limited_by(max_ctx)
    trained = model.max_context or None
    per_sequence_tokens = tokens_per_sequence_of(cache, s.ctx, s.sequences)

    at_target = None
    if s.target_tokens_per_s:
        step_allowance = math.floor(bandwidth * efficiency / s.target_tokens_per_s) - weights_read - pinned
        speed_ctx = cache.max_ctx(step_allowance, s.sequences)
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
        kv_bytes_per_token=cache.bytes_per_token, kv_bytes_per_sequence=kv_bytes_per_sequence_of(cache, s.ctx, s.sequences),
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
        max_ctx_trained=trained, ctx_per_sequence_tokens=int(per_sequence_tokens),
        ctx_beyond_trained=bool(trained and per_sequence_tokens > trained),
    )
