"""The numbers behind every plot: arrays of context → bytes and tokens/s, computed with the engine.

Pure and testable without matplotlib: every function takes a :class:`~kvplan.plan.Scenario`
(or its :class:`~kvplan.plan.Evaluation`) and returns frozen dataclasses of numpy arrays in
base units (tokens, bytes, tokens/s). The cache model is the one the scenario asks for
(:func:`kvplan.plan.cache_model_for`), so runtime- or policy-specific caches carry into the
plots unchanged. Display strings are made by the drawing modules, not here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from kvplan import engine
from kvplan.errors import KvplanError
from kvplan.engine.formats import NAMED_FORMATS
from kvplan.plan import Evaluation, Scenario, cache_model_for, core, evaluate
from kvplan.plan.basis import basis_of
from kvplan.plan.facts import WarningFact

GRID_POINTS = 512  # points per curve, besides the exact marks (ctx, max_ctx, window edges)
MIN_CTX_AXIS_TOKENS = 4096
GQA_KV_HEADS = (8, 4, 2)  # GQA variants drawn when they divide the model's attention heads
QUANT_FORMATS = ("q8_0", "q4_0")  # quantized-cache variants (llama.cpp block layouts)
DEFAULT_WINDOW_TOKENS = 2048


def nice_ctx_ceil(tokens: float) -> int:
    """Round a context up to a multiple of a quarter of its power of two (9011 → 10240) [tokens]."""
    tokens = max(float(tokens), 1.0)
    step = max(2 ** (math.floor(math.log2(tokens)) - 2), 1)
    return int(math.ceil(tokens / step) * step)


def ctx_grid(ctx_max_tokens: int, marks=(), points: int = GRID_POINTS):
    """Integer contexts 0 … ctx_max on a power-of-two step (so 4k, 8k … are on it), plus the ``marks`` [tokens].

    The step is the largest power of two giving at least ``points`` intervals (at most twice as many).
    """
    import numpy as np

    step = 2 ** max(math.floor(math.log2(max(ctx_max_tokens / points, 1))), 0)
    base = np.append(np.arange(0, ctx_max_tokens, step, dtype=np.int64), np.int64(ctx_max_tokens))
    extra = np.array([int(m) for m in marks if m is not None and 0 <= m <= ctx_max_tokens], dtype=np.int64)
    return np.unique(np.concatenate([base, extra]))


def _windows(cache) -> tuple[int, ...]:
    return tuple(w for w, _ in getattr(cache, "windows", ()))


def cache_bytes(cache, ctx_tokens, sequences: int = 1, peak: bool = False):
    """``cache.kv_bytes`` (or ``kv_peak_bytes``) over an array of contexts [bytes].

    Cache models take numpy arrays; one that only takes integers is evaluated point by point.
    """
    import numpy as np

    fn = cache.kv_peak_bytes if peak else cache.kv_bytes
    try:
        out = np.asarray(fn(ctx_tokens, sequences))
        if out.shape == np.shape(ctx_tokens):
            return out
    except (TypeError, ValueError):
        pass
    return np.array([fn(int(c), sequences) for c in ctx_tokens])


def ctx_limit_of(cache) -> tuple[int, str] | None:
    """``(tokens, option)``: the largest ctx a cache model can hold at all, and the option that sets it
    (transformers' StaticCache: ``max_cache_len``); None when any context fits.

    A cache model states it with an optional ``ctx_limit`` attribute (llama.cpp has no such limit:
    ``-c`` may be any size)."""
    limit = getattr(cache, "ctx_limit", None)
    return (int(limit[0]), str(limit[1])) if limit else None


def clamp_ctx_max(ctx_max_tokens: int, cache) -> int:
    """``ctx_max_tokens``, but not past the cache's hard limit (:func:`ctx_limit_of`) [tokens]."""
    limit = ctx_limit_of(cache)
    return min(int(ctx_max_tokens), limit[0]) if limit else int(ctx_max_tokens)


def default_ctx_max(ev: Evaluation, show_ctx: bool = True) -> int:
    """Context axis end: past the max-context crossing, the scenario's ctx and any window [tokens].

    A cache that cannot hold more than N tokens (StaticCache's ``max_cache_len``) ends the axis at N exactly."""
    limit = ctx_limit_of(ev.cache)
    if limit:
        return limit[0]
    want = MIN_CTX_AXIS_TOKENS
    if ev.max_ctx is not None:
        want = max(want, 1.25 * ev.max_ctx)
    windows = _windows(ev.cache)
    if windows and ev.max_ctx is None:
        want = max(want, 2 * max(windows))
    if show_ctx:
        want = max(want, 1.1 * ev.scenario.ctx)
    return nice_ctx_ceil(want)


def warnings_at(scenario: Scenario, ev: Evaluation, ctx_tokens: int | None) -> tuple[WarningFact, ...]:
    """The warnings of ``scenario`` at the context a plot quotes its figures at: ``ev``'s own when that is the
    scenario's context (word for word what ``kvplan check`` prints there), else those of an evaluation at
    ``ctx_tokens`` — a window llama.cpp ignores matters only past the window, so a plot without ``--ctx`` is
    judged at the largest context it draws, as ``sweep`` judges each group at its largest point."""
    if ctx_tokens is None or int(ctx_tokens) == scenario.ctx:
        return ev.warnings
    trained = scenario.model.max_context or 0
    if trained:  # an axis the plot chose is no context the user typed: judge it no further than 8× the trained
        from kvplan.plan.warnings import MAX_PLAUSIBLE_CTX_OVER_TRAINED

        ctx_tokens = min(int(ctx_tokens), MAX_PLAUSIBLE_CTX_OVER_TRAINED * trained)
    try:
        return evaluate(scenario.with_changes(ctx=int(ctx_tokens))).warnings
    except KvplanError:  # a context the configuration refuses: the plot drew none past it
        return ev.warnings


# --- memory -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class MemoryCurves:
    """Resident memory against context for one configuration (``evaluation`` holds the scalars)."""

    evaluation: Evaluation
    ctx_tokens: object  # ndarray [tokens]
    kv_bytes: object  # ndarray [bytes], all sequences, the cache's peak
    total_bytes: object  # ndarray [bytes] = weights + kv + pinned prefix + buffers + overhead
    show_ctx: bool  # mark the scenario's own ctx
    ctx_limit: tuple[int, str] | None = None  # (tokens, option): the cache holds no more; the axis ends there
    buffers_bytes: object = 0  # ndarray [bytes]: the runtime's buffers (llama.cpp compute + output) at each ctx
    warnings: tuple[WarningFact, ...] = ()  # :func:`warnings_at` --ctx, else the axis end
    parts_bytes: object = 0  # ndarray [bytes]: the resident parts in RAM (a draft model, an encoder) at each ctx
    # offloaded (kvplan.plan.placement): what the GPU's memory holds at each ctx and its budget (None: one memory)
    gpu_total_bytes: object = None  # ndarray [bytes]
    gpu_budget_bytes: int | None = None
    ram_total_bytes: object = None  # ndarray [bytes]: a discrete GPU's host RAM (None: unified or one memory)


def _basis(ev: Evaluation):
    """The basis ``ev`` was evaluated from: the curves take their points from the same core functions."""
    return ev.basis if ev.basis is not None else basis_of(ev.scenario)


def memory_curves(scenario: Scenario, ctx_max_tokens: int | None = None, show_ctx: bool = True) -> MemoryCurves:
    ev = evaluate(scenario)
    ctx_max_tokens = clamp_ctx_max(ctx_max_tokens or default_ctx_max(ev, show_ctx), ev.cache)
    marks = (ev.max_ctx, scenario.ctx if show_ctx else None, *_windows(ev.cache))
    ctx = ctx_grid(ctx_max_tokens, marks)
    b = _basis(ev)
    memory = core.memory_at(b, ctx, scenario.sequences)
    placed = core.placed_at(b, ctx, scenario.sequences, memory)
    quoted = scenario.ctx if show_ctx else int(ctx[-1])
    return MemoryCurves(ev, ctx, memory.kv_peak_bytes, memory.total_bytes, show_ctx, ctx_limit_of(ev.cache),
                        memory.buffers_bytes, warnings_at(scenario, ev, quoted), memory.parts_bytes,
                        None if placed is None else placed.gpu_total_bytes,
                        None if placed is None else int(placed.gpu_budget_bytes),
                        placed.ram_total_bytes if placed is not None and not ev.offload.unified else None)


# --- decode -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class DecodeCurves:
    """Decode rate against context: from RAM (check's "decode at N tokens", also past the budget, as if it fit),
    at the roofline, and with the overflow streamed from flash (check's flash table, only past the budget)."""

    evaluation: Evaluation
    ctx_tokens: object  # ndarray [tokens]
    decode_tokens_per_s: object  # ndarray [tokens/s] per sequence, from RAM: bandwidth efficiency and latency
    roofline_tokens_per_s: object  # ndarray [tokens/s] at 100 % bandwidth, no latency (the bound)
    streamed_tokens_per_s: object  # ndarray [tokens/s]; NaN where the configuration fits
    target_tokens_per_s: float | None
    show_ctx: bool
    ctx_limit: tuple[int, str] | None = None  # (tokens, option): the cache holds no more; the curve ends there
    verdict_codes: object = None  # ndarray int8 per context: 0 fit, 1 tight, 2 over (engine.VERDICTS)
    fit_ctx: int | None = None  # the largest grid context that is "fit" (the tight zone starts past it)
    latency_s: float = 0.0  # the device's fixed time per step in the rate (0: unknown, the bandwidth model)
    # ndarray [tokens/s] over all sequences: a step reads the weights once and emits one token per sequence
    aggregate_tokens_per_s: object = None
    warnings: tuple[WarningFact, ...] = ()  # :func:`warnings_at` --ctx, else the axis end


def decode_curves(scenario: Scenario, ctx_max_tokens: int | None = None, show_ctx: bool = True,
                  target_tokens_per_s: float | None = None) -> DecodeCurves:
    """The core's decode and flash figures (:mod:`kvplan.plan.core`) over an array of contexts."""
    import numpy as np

    ev = evaluate(scenario)
    b = _basis(ev)
    ctx_max_tokens = clamp_ctx_max(ctx_max_tokens or default_ctx_max(ev, show_ctx), ev.cache)
    # the last context that is "fit" (headroom ≥ the margin) and the first "tight" one, exact on the grid
    fit_edge = core.tokens_or_none(core.fit_ctx_at(b, ev.margin_bytes, ev.buffers_bytes, scenario.sequences))
    marks = (ev.max_ctx, ev.max_ctx + 1 if ev.max_ctx is not None else None,
             fit_edge, fit_edge + 1 if fit_edge is not None else None,
             scenario.ctx if show_ctx else None, *_windows(ev.cache))
    ctx = ctx_grid(ctx_max_tokens, marks)
    memory = core.memory_at(b, ctx, scenario.sequences)
    placed = core.placed_at(b, ctx, scenario.sequences, memory)  # offloaded: each part read from its memory
    if placed is None:
        decode = core.decode_at(b, memory.kv_bytes, memory.parts_read_bytes)
        streamed_rate = core.streamed_at(b, memory, decode).tokens_per_s
        codes = memory.verdict_code
    else:  # the verdict is the worse memory's; nothing overflows to flash (streamed experts are in the rate)
        decode = core.placed_decode(placed)
        streamed_rate = np.full(ctx.shape, np.nan)
        codes = np.broadcast_to(np.asarray(placed.verdict_code, dtype=np.int8), ctx.shape)
    fits = np.flatnonzero(codes == 0)
    fit_ctx = int(ctx[fits[-1]]) if fits.size and fits[-1] + 1 < len(ctx) else None
    target = target_tokens_per_s if target_tokens_per_s is not None else scenario.target_tokens_per_s
    quoted = scenario.ctx if show_ctx else int(ctx[-1])
    rate = decode.tokens_per_s
    # Evaluation.aggregate_decode_tokens_per_s over the grid: the per-sequence rate × sequences
    return DecodeCurves(ev, ctx, rate, decode.roofline_tokens_per_s, streamed_rate, target or None,
                        show_ctx, ctx_limit_of(ev.cache), codes, fit_ctx, scenario.device.decode_latency,
                        rate * scenario.sequences, warnings_at(scenario, ev, quoted))


# --- attention variants -----------------------------------------------------------------------


@dataclass(frozen=True)
class AttentionVariant:
    """One cache shape: ``kind`` is own | mha | gqa | mqa | window | quant."""

    kind: str
    kv_heads: int | None  # KV heads per layer (None: the model's own, or MLA)
    window_tokens: int | None  # every layer behind this window (window variant)
    k_format: str
    v_format: str
    bytes_per_token: int  # growth rate below any window [bytes/token]
    kv_bytes: object  # ndarray [bytes] over AttentionCurves.ctx_tokens
    is_own: bool  # the model's own configuration


@dataclass(frozen=True)
class AttentionCurves:
    model: str
    attention_heads: int
    own_kv_heads: int | None  # None for MLA or per-layer head counts
    mla: bool
    sequences: int
    ctx_tokens: object  # ndarray [tokens]
    ref_ctx: int  # context at which the legend quotes each variant's size [tokens]
    variants: tuple[AttentionVariant, ...]
    warnings: tuple[WarningFact, ...] = ()  # the configuration's at ``ref_ctx``, the context the legend quotes


def attention_curves(scenario: Scenario, ctx_max_tokens: int | None = None,
                     ref_ctx: int | None = None) -> AttentionCurves:
    """KV bytes of the model's own shape as MHA, GQA, MQA, with a window and with a quantized cache.

    Each variant is under the scenario's runtime or policy; a variant the runtime cannot hold is left out."""
    model = scenario.model
    heads = model.attention_heads
    own_cache = cache_model_for(scenario)
    limit = ctx_limit_of(own_cache)
    ref_ctx = ref_ctx or scenario.ctx or min(model.max_context or 4096, limit[0] if limit else math.inf)
    ctx_max_tokens = clamp_ctx_max(ctx_max_tokens or nice_ctx_ceil(max(ref_ctx, 8192)), own_cache)
    if limit and ref_ctx > limit[0]:
        own_cache.kv_bytes(int(ref_ctx), scenario.sequences)  # the cache's own error: it cannot hold ref_ctx
    own_windows = _windows(own_cache)
    window = (scenario.sliding_window or min(model.schedule.windows(), default=0)
              or min(DEFAULT_WINDOW_TOKENS, ctx_max_tokens // 4))
    ctx = ctx_grid(ctx_max_tokens, (ref_ctx, window, *own_windows))
    seq = scenario.sequences
    own_kv = cache_bytes(own_cache, ctx, seq)

    def variant(kind, changes, kv_heads=None, window_tokens=None):
        try:
            cache = cache_model_for(scenario.with_changes(**changes))
            kv = cache_bytes(cache, ctx, seq)
        except KvplanError:  # a runtime without this shape (llama.cpp adds no window; transformers has no q8_0)
            return None
        return AttentionVariant(kind, kv_heads, window_tokens, cache.k_format.name, cache.v_format.name,
                                int(cache.bytes_per_token), kv, False)

    def heads_model(n):
        return model.model_copy(update={"kv_heads": n, "mla": None})

    gqa = [n for n in GQA_KV_HEADS if heads % n == 0 and 1 < n < heads]
    # the model's own head count where every layer has the same one (not for an MLA latent)
    from kvplan.engine.schedule import attention_part

    # a parallel layer's heads are its attention's; a state or feed-forward layer has none (None)
    own = {getattr(attention_part(layer), "kv_heads", None) for _, layer in model.schedule.groups()}
    own_heads = own.pop() if len(own) == 1 and not model.schedule.latent else None
    if own_heads and 1 < own_heads < heads and own_heads not in gqa:
        gqa = sorted([*gqa, own_heads], reverse=True)
    variants = [variant("mha", {"model": heads_model(heads)}, heads)]
    variants += [variant("gqa", {"model": heads_model(n)}, n) for n in gqa]
    if heads > 1:
        variants.append(variant("mqa", {"model": heads_model(1)}, 1))
    variants.append(variant("window", {"sliding_window": window}, own_heads, window))
    own_k = own_cache.k_format.name
    for name in QUANT_FORMATS:
        if name != own_k:
            fmt = NAMED_FORMATS[name]
            variants.append(variant("quant", {"k_format": fmt, "v_format": fmt}, own_heads))

    import numpy as np

    variants = [v for v in variants if v is not None]
    marked = False
    for i, v in enumerate(variants):
        if not marked and v.kind in ("mha", "gqa", "mqa") and np.array_equal(v.kv_bytes, own_kv):
            variants[i] = AttentionVariant(**{**v.__dict__, "is_own": True})
            marked = True
    if not marked:
        variants.insert(0, AttentionVariant("own", own_heads, None, own_k, own_cache.v_format.name,
                                            int(own_cache.bytes_per_token), own_kv, True))
    return AttentionCurves(model.name, heads, own_heads, model.schedule.latent, seq, ctx, int(ref_ctx),
                           tuple(variants), _attention_warnings(scenario, int(ref_ctx)))


def _attention_warnings(scenario: Scenario, ref_ctx: int) -> tuple[WarningFact, ...]:
    try:
        ev = evaluate(scenario.with_changes(ctx=ref_ctx))
    except KvplanError:  # the variants are drawn without an evaluation (a neutral device may not hold them)
        return ()
    return ev.warnings


# --- fit map ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class FitMap:
    """Devices × models: the largest context that fits, and the headroom at ``ctx`` when one is given."""

    devices: tuple[str, ...]
    models: tuple[str, ...]
    max_ctx_tokens: object  # ndarray (devices × models) float: NaN nothing fits, inf unbounded
    headroom_bytes: object  # ndarray (devices × models) int64 at ``ctx``
    verdict_codes: object  # ndarray int: 0 fit, 1 tight, 2 over (at ``ctx``)
    ctx: int | None  # None: the map shows max context
    evaluations: tuple[tuple[Evaluation, ...], ...]
    warnings: tuple[WarningFact, ...] = ()  # every cell's, at ``ctx``, else at the cell's max context (each once)


def fit_map(scenarios: list[list[Scenario]], ctx: int | None = None) -> FitMap:
    """``scenarios[i][j]`` is device i × model j (each at ``ctx``, or any ctx when ``ctx`` is None)."""
    import numpy as np

    evs = tuple(tuple(evaluate(s) for s in row) for row in scenarios)
    shape = (len(evs), len(evs[0]) if evs else 0)
    max_ctx = np.full(shape, np.nan)
    headroom = np.zeros(shape, dtype=np.int64)
    codes = np.zeros(shape, dtype=np.int64)
    for i, row in enumerate(evs):
        for j, ev in enumerate(row):
            if ev.max_ctx is not None:
                max_ctx[i, j] = ev.max_ctx
            elif ev.max_ctx_limited_by == "unbounded":
                max_ctx[i, j] = np.inf
            headroom[i, j] = ev.headroom_bytes
            codes[i, j] = engine.VERDICTS.index(ev.verdict)
    devices = tuple(row[0].scenario.device.name for row in evs)
    models = tuple(ev.scenario.model.name for ev in evs[0]) if evs else ()
    return FitMap(devices, models, max_ctx, headroom, codes, ctx, evs, _fit_map_warnings(evs, ctx))


def _fit_map_warnings(evs, ctx: int | None) -> tuple[WarningFact, ...]:
    """At ``ctx``; without it, at the context each cell shows: its max context, or (unbounded: every layer
    windowed) the model's trained context, where a window llama.cpp ignores would be kept whole."""
    found: dict[WarningFact, None] = {}
    for row in evs:
        for ev in row:
            at = ctx if ctx is not None else (ev.max_ctx if ev.max_ctx is not None
                                              else ev.scenario.model.max_context)
            found.update(dict.fromkeys(warnings_at(ev.scenario, ev, at)))
    return tuple(found)
