"""The evaluation core: every figure of a configuration, over one number or arrays of contexts and sequences.

``evaluate`` (one point), the sweep (a grid of points), the plot curves (an axis of contexts), ``fit``'s
advice and the gate all call these functions, so a figure is derived in exactly one place. Each function
takes a :class:`~kvplan.plan.basis.Basis` (what the configuration fixes) and ``ctx`` / ``sequences`` as
Python integers or as numpy integer arrays (broadcast together), and returns the same kind: Python numbers
for numbers — exact at any size — and numpy arrays for arrays (``int64`` bytes, ``float64`` rates, through the
same operations, so element ``i`` of an array result equals the scalar result at point ``i``).

The cache model (:class:`~kvplan.caches.ideal.CacheModel`) holds the layer-by-layer rules; this module adds
the weights, the runtime buffers, the budget, decode and flash, as the product contract states them. No I/O.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from kvplan import engine
from kvplan.errors import KvplanError
from kvplan.caches.ideal import CacheLayout, CacheModel
from kvplan.plan.basis import Basis
from kvplan.plan.scenario import Scenario
from kvplan.records import Figures

if TYPE_CHECKING:  # pydantic stays off the fast path: cached profiles are plain records
    from kvplan.profiles.spec import Device, Model

# max_ctx where no context fits (weights alone exceed the budget) or the cache stops growing (every layer
# windowed: unbounded) — the scalar figures' None, in integer arrays
NO_MAX_CTX = -1


def _is_array(value) -> bool:
    return getattr(value, "ndim", 0) > 0


def _arrays(ctx, sequences):
    """``ctx`` and ``sequences`` as two int64 arrays of one shape."""
    import numpy as np

    return np.broadcast_arrays(np.asarray(ctx, dtype=np.int64), np.asarray(sequences, dtype=np.int64))


def _cache_over(fn, ctx, sequences):
    """``fn(ctx, sequences)`` of a cache model, at a point or over arrays (point by point for a cache model whose
    rule takes integers only)."""
    if not (_is_array(ctx) or _is_array(sequences)):
        return fn(ctx, sequences)
    import numpy as np

    ctx, sequences = _arrays(ctx, sequences)
    try:
        out = np.asarray(fn(ctx, sequences))
        if out.shape == ctx.shape:
            return out.astype(np.int64, copy=False)
    except KvplanError:  # the cache model refuses these points: its error, not a reason to try them one by one
        raise
    except (TypeError, ValueError):
        pass
    return np.array([fn(int(c), int(n)) for c, n in zip(ctx, sequences)], dtype=np.int64)


def _with_sequences(s: Scenario, sequences: int) -> Scenario:
    return s if sequences == s.sequences else s.with_changes(sequences=sequences)


# --- memory -----------------------------------------------------------------------------------


def runtime_buffers(s: Scenario, cache: CacheModel, ctx: int, *, floor: bool = False):
    """llama.cpp's compute and output buffers at ``ctx`` (a :class:`~kvplan.caches.buffers.LlamaCppBuffers`),
    or None: another cache model, or a profile without the shape fields the compute buffer needs. ``floor``:
    a lower bound on them at ``ctx`` and every larger one."""
    if getattr(cache, "family", None) != "llama.cpp":
        return None
    from kvplan.caches.buffers import llamacpp_buffers

    v_format = cache.v_format or cache.k_format  # MLA: one latent row, K's type
    # with a draft (a model or the MTP head) llama-server reserves the verified rows' outputs:
    # n_outputs_max = min(-b, -np · (1 + n_max)) (tools/server/server-context.cpp server_output_limits, 42-54)
    outputs = (min(cache.spec.batch, s.sequences * (1 + s.draft_max_tokens))
               if getattr(s, "draft", None) is not None else None)
    return llamacpp_buffers(cache.spec, s.model, cache.llamacpp_ctx(ctx, s.sequences), s.sequences,
                            cache.k_format.name, v_format.name, floor=floor, outputs_max=outputs)


def buffers_at(b: Basis, ctx: int, sequences: int):
    """llama.cpp's compute and output buffers at one point (a :class:`~kvplan.caches.buffers.LlamaCppBuffers`),
    or None under another cache model or a profile without the shape fields; priced once per basis and point
    (an allocator replay)."""
    key = (int(ctx), int(sequences))
    memo = b.buffers_memo
    if key not in memo:
        memo[key] = runtime_buffers(_with_sequences(b.scenario, key[1]), b.cache, key[0])
    return memo[key]


def buffers_bytes_at(b: Basis, ctx, sequences):
    """llama.cpp's compute + output buffers at each point (0 under the other cache models, or where the profile
    lacks the shape the compute buffer needs) [bytes].

    The closed form is scalar arithmetic, so over arrays it runs once per group of points whose micro-batch,
    KV cells per stream and sequences agree (:func:`kvplan.caches.buffers.buffer_groups`): a few thousand for a
    million contexts."""
    s, cache = b.scenario, b.cache
    if not (_is_array(ctx) or _is_array(sequences)):
        priced = buffers_at(b, ctx, sequences)
        return priced.total_bytes if priced is not None else 0
    import numpy as np

    ctx, sequences = _arrays(ctx, sequences)
    if getattr(cache, "family", None) != "llama.cpp" or not ctx.size:
        return np.zeros(ctx.shape, dtype=np.int64)
    from kvplan.caches.buffers import buffer_groups

    flat_ctx, flat_seq = ctx.reshape(-1), sequences.reshape(-1)
    groups = buffer_groups(cache.spec, cache.llamacpp_ctx(flat_ctx, flat_seq), flat_seq)
    _, first, inverse = np.unique(groups, axis=1, return_index=True,
                                  return_inverse=True)
    sized = [buffers_bytes_at(b, int(flat_ctx[row]), int(flat_seq[row])) for row in first]
    return np.asarray(sized, dtype=np.int64)[inverse.reshape(-1)].reshape(ctx.shape)


# --- resident parts (kvplan.plan.parts) -------------------------------------------------------


def _part_over(value, ctx, sequences):
    """A part's bytes (an integer, or a function of ``(ctx, sequences)``) at a point or over arrays."""
    if callable(value):
        return _cache_over(value, ctx, sequences)
    if not (_is_array(ctx) or _is_array(sequences)):
        return value
    import numpy as np

    ctx, _ = _arrays(ctx, sequences)
    return np.full(ctx.shape, value, dtype=np.int64)


def part_bytes_at(b: Basis, ctx, sequences) -> tuple:
    """Each resident part's bytes at each point, in the order of ``b.parts`` [bytes]."""
    return tuple(_part_over(p.bytes_of, ctx, sequences) for p in b.parts)


def part_read_bytes_at(b: Basis, ctx, sequences) -> tuple:
    """The bytes a decode step reads from each resident part at each point, in the order of ``b.parts`` [bytes]."""
    return tuple(_part_over(p.read_bytes_of, ctx, sequences) for p in b.parts)


def _in_ram(b: Basis, values) -> object:
    """The sum of ``values`` (one per part of ``b.parts``) over the parts that live in the device's RAM."""
    return sum((v for p, v in zip(b.parts, values) if p.memory == "ram"), 0)


def varying_parts_bytes_at(b: Basis, ctx, sequences):
    """The resident parts in RAM whose bytes grow with the context or the sequences, summed [bytes] (what the
    max-context search counts beside the cache; the constant ones are out of ``cache_allowance_bytes``)."""
    return sum((_part_over(p.bytes_of, ctx, sequences) for p in b.varying_parts), 0)


class Memory(Figures):  # Figures, not a dataclass: nothing compiled at import (kvplan.records)
    """What a configuration holds at each point [bytes]; ``verdict_code`` indexes :data:`kvplan.engine.VERDICTS`."""

    __slots__ = _fields = ("kv_bytes", "kv_peak_bytes", "buffers_bytes", "total_bytes", "headroom_bytes",
                           "verdict_code", "prompt_cache_bytes", "part_bytes", "parts_bytes", "parts_read_bytes")

    kv_bytes: object  # steady cache of all sequences
    kv_peak_bytes: object  # the most the cache holds at any moment (what the total counts)
    prompt_cache_bytes: object  # of the peak, what a runtime keeps between requests (mlx_lm.server), else 0
    part_bytes: object  # each resident part's bytes, in the order of Basis.parts (a tuple)
    parts_bytes: object  # the resident parts in RAM, summed (in the total)
    parts_read_bytes: object  # what a decode step reads of the parts in RAM, summed
    _defaults = {"prompt_cache_bytes": 0, "part_bytes": (), "parts_bytes": 0, "parts_read_bytes": 0}
    buffers_bytes: object  # runtime buffers (llama.cpp compute + output)
    total_bytes: object  # weights + kv peak + pinned prefix + overhead + buffers + process (the resident peak)
    headroom_bytes: object  # budget − what the verdict judges (the total, or its non-reclaimable part)
    verdict_code: object  # 0 fit, 1 tight, 2 over


def memory_at(b: Basis, ctx, sequences) -> Memory:
    """The memory figures at ``ctx`` tokens with ``sequences`` concurrent sequences.

    ``total = weights + kv_peak(ctx) + pinned prefix + overhead + buffers + process + parts`` (under llama.cpp
    the process's baseline and repacked copy: the resident peak; ``parts``: the resident parts in RAM,
    :mod:`kvplan.plan.parts`); ``headroom = budget − total`` (less the reclaimable
    mapped weights when the runtime judges the non-reclaimable part); the verdict is ``tight`` when the headroom
    is under ``margin_fraction · budget``, ``over`` when negative."""
    cache = b.cache
    kv = _cache_over(cache.kv_bytes, ctx, sequences)
    kv_peak = _cache_over(cache.kv_peak_bytes, ctx, sequences)
    buffers = buffers_bytes_at(b, ctx, sequences)
    total = engine.total_bytes(b.weights_bytes, kv_peak, 1, b.pinned_prefix_bytes, b.overhead_bytes) + buffers
    if b.process is not None:
        total = total + b.process_bytes
    parts = part_bytes_at(b, ctx, sequences) if b.parts else ()
    parts_bytes = parts_read = 0
    if parts:
        parts_bytes = _in_ram(b, parts)
        parts_read = _in_ram(b, part_read_bytes_at(b, ctx, sequences))
        total = total + parts_bytes
    headroom = engine.headroom_bytes(b.budget_bytes, total - b.judged_discount_bytes)
    code = engine.verdict_code(headroom, b.budget_bytes, b.scenario.margin_fraction)
    if _is_array(total):
        import numpy as np

        code = np.asarray(code, dtype=np.int8)
    held = getattr(cache, "prompt_cache_bytes", None)
    held = _cache_over(held, ctx, sequences) if held is not None else 0
    return Memory(kv, kv_peak, buffers, total, headroom, code, held, parts, parts_bytes, parts_read)


# --- offload (kvplan.plan.placement) ------------------------------------------------------------


def _buffer_split_at(b: Basis, ctx, sequences):
    """llama.cpp's (compute on the GPU, compute in RAM, output buffer) at each point [bytes], zeros under the
    other cache models; over arrays once per distinct (ctx, sequences) point (the buffers are memoised)."""
    from kvplan.plan.placement import compute_split_of

    def at(c: int, n: int):
        buffers = buffers_at(b, c, n)
        gpu, ram = compute_split_of(b, buffers, c, n)
        return gpu, ram, buffers.output_bytes if buffers is not None else 0

    if not (_is_array(ctx) or _is_array(sequences)):
        return at(int(ctx), int(sequences))
    import numpy as np

    ctx, sequences = _arrays(ctx, sequences)
    if getattr(b.cache, "family", None) != "llama.cpp" or not ctx.size:
        zeros = np.zeros(ctx.shape, dtype=np.int64)
        return zeros, zeros, zeros
    points, inverse = np.unique(np.stack([ctx.reshape(-1), sequences.reshape(-1)]), axis=1, return_inverse=True)
    split = np.array([at(int(c), int(n)) for c, n in points.T], dtype=np.int64)
    return tuple(split[:, i][inverse.reshape(-1)].reshape(ctx.shape) for i in range(3))


def placed_at(b: Basis, ctx, sequences, memory: Memory | None = None):
    """Each memory's figures at each point when the configuration offloads
    (:class:`kvplan.plan.placement.Placed`: held, headroom, verdict, reads, the step's time), None when it does
    not (``b.scenario.offloads`` false); ``memory``: :func:`memory_at` at the same points, if already taken."""
    if not b.scenario.offloads:
        return None
    from kvplan.plan.placement import layout_of, placed_of

    memory = memory_at(b, ctx, sequences) if memory is None else memory
    compute_gpu, compute_ram, output = _buffer_split_at(b, ctx, sequences)
    pinned = b.pinned_prefix_bytes
    return placed_of(b, layout_of(b), ctx, memory.kv_peak_bytes + pinned, memory.kv_bytes + pinned, compute_gpu,
                     compute_ram, output, memory.total_bytes, memory.parts_bytes, memory.parts_read_bytes)


def placed_decode(placed) -> Decode:
    """:class:`Decode` of an offloaded configuration: each part read from its memory."""
    step = placed.gpu_read_bytes + placed.ram_read_bytes + placed.flash_read_bytes
    return Decode(step, 1.0 / placed.seconds_per_step, 1.0 / placed.roofline_seconds_per_step)


def _largest_placed(b: Basis, sequences: int, fits):
    """The largest ``ctx`` whose :func:`placed_at` figures satisfy ``fits`` at ``sequences`` [tokens] (which holds
    at every smaller one and at none larger: bytes held and read only grow with the context): doubling from 1024
    to an upper bound (the cache's ``ctx_limit``, else 2^40 tokens), then bisection;
    :data:`kvplan.engine.NO_CONTEXT_FITS` when not even one token fits, ``math.inf`` when every context does."""
    def ok(ctx: int) -> bool:
        return bool(fits(placed_at(b, ctx, sequences)))

    if not ok(1):
        return engine.NO_CONTEXT_FITS
    limit = getattr(b.cache, "ctx_limit", None)
    top = int(limit[0]) if limit else 2**40
    lo, hi = 1, min(1024, top)
    while ok(hi):
        if hi == top:
            return top if limit else math.inf
        lo, hi = hi, min(hi * 2, top)
    return engine.largest_fitting(ok, lo, hi)


def _placed_max_ctx(b: Basis, sequences):
    """:func:`max_ctx_at` of an offloaded configuration: every memory's total within its budget."""
    return _solved(b.cache, 0, sequences,
                   lambda n: _largest_placed(b, n, lambda p: p.gpu_headroom_bytes >= 0 and p.ram_headroom_bytes >= 0),
                   closed=False)


# --- decode -----------------------------------------------------------------------------------


class Decode(Figures):
    """One decode step at each point: the bytes it streams and the rates per sequence [bytes, tokens/s]."""

    __slots__ = _fields = ("bytes_per_step", "tokens_per_s", "roofline_tokens_per_s")

    bytes_per_step: object  # weights read + the steady cache + the pinned prefix + what it reads of the parts
    tokens_per_s: object  # at the device's bandwidth efficiency, plus its fixed decode_latency per step
    roofline_tokens_per_s: object  # the bound: 100 % bandwidth, no latency


def decode_at(b: Basis, kv_bytes, parts_read_bytes=0) -> Decode:
    """Decode from RAM with a steady cache of ``kv_bytes`` [bytes] (all sequences): every step streams the
    weights a token uses and the whole cache once, ``t = bytes / (bandwidth · efficiency) + decode_latency``;
    ``parts_read_bytes`` (:attr:`Memory.parts_read_bytes`): what it reads of the resident parts."""
    device = b.scenario.device
    step = engine.bytes_per_step(b.weights_read_bytes, kv_bytes + b.pinned_prefix_bytes + parts_read_bytes)
    rate = engine.decode_tokens_per_s(device.memory_bandwidth, step, device.bandwidth_efficiency,
                                      device.decode_latency)
    roofline = engine.decode_tokens_per_s(device.memory_bandwidth, step, 1.0)
    return Decode(step, rate, roofline)


class Speculative(Figures):
    """Speculative decoding at each point: a draft of ``draft_tokens`` verified by the target in one pass
    [tokens, bytes, s, tokens/s] (:mod:`kvplan.engine.speculative`)."""

    __slots__ = _fields = ("draft_tokens", "acceptance_rate", "expected_tokens_per_step", "draft_bytes_per_step",
                           "draft_step_s", "verify_step_s", "step_s", "tokens_per_s", "speedup")

    draft_tokens: object  # k: tokens the draft proposes per step
    acceptance_rate: object  # A: each drafted token's acceptance rate
    expected_tokens_per_step: object  # (1 − A^(k+1)) / (1 − A)
    draft_bytes_per_step: object  # one draft decode step: the draft's weights read + its whole cache
    draft_step_s: object  # one draft decode step, at the device's bandwidth efficiency and latency
    verify_step_s: object  # the target's pass over k + 1 positions: one plain decode step (memory-bound)
    step_s: object  # k · draft_step_s + verify_step_s
    tokens_per_s: object  # expected_tokens_per_step / step_s, per sequence
    speedup: object  # tokens_per_s ÷ the plain decode rate (below 1: speculation is slower)


def speculative_at(b: Basis, ctx, sequences, decode: Decode) -> Speculative | None:
    """Speculative decoding's figures at each point, or None without a draft or an acceptance rate.

    A step drafts ``k`` tokens, one draft decode step each (streaming the draft's weights and cache:
    its parts' ``draft_step_read_bytes_of``), then the target verifies the ``k + 1`` positions in one pass that
    streams its weights and cache once, as a plain decode step (``decode``) does; it yields
    ``E = (1 − A^(k+1)) / (1 − A)`` tokens on average (Leviathan et al. 2023, eq. 1), so the rate is
    ``E / (k · t_draft + t_verify)`` per sequence."""
    s = b.scenario
    if getattr(s, "draft", None) is None or getattr(s, "acceptance_rate", None) is None:
        return None
    from kvplan.engine import speculative as sp

    device = s.device
    k, rate = s.draft_max_tokens, s.acceptance_rate
    draft_bytes = sum((_part_over(p.draft_step_read_bytes_of, ctx, sequences) for p in b.parts), 0)
    draft_s = sp.step_s(draft_bytes, device.memory_bandwidth, device.bandwidth_efficiency, device.decode_latency)
    verify_s = 1.0 / decode.tokens_per_s
    expected = sp.expected_tokens_per_step(rate, k)
    tokens_per_s = sp.speculative_tokens_per_s(expected, k, draft_s, verify_s)
    return Speculative(k, rate, expected, draft_bytes, draft_s, verify_s, k * draft_s + verify_s, tokens_per_s,
                       tokens_per_s / decode.tokens_per_s)


class Streamed(Figures):
    """What the overflow costs on flash at each point [bytes, s, tokens/s]."""

    __slots__ = _fields = ("overflow_bytes", "steady_overflow_bytes", "swap_in_s", "overflow_swap_in_s",
                           "tokens_per_s", "slowdown")

    overflow_bytes: object  # total − budget at the peak (0 where it fits)
    steady_overflow_bytes: object  # total − budget once the cache is at its steady size
    swap_in_s: object  # reading the whole cache (and pinned prefix) back from flash
    overflow_swap_in_s: object  # reading only the overflow back
    tokens_per_s: object  # decode with the steady overflow read from flash every step; NaN where it fits
    slowdown: object  # time per token streamed ÷ from RAM; NaN where it fits


def streamed_at(b: Basis, memory: Memory, decode: Decode) -> Streamed:
    """Flash figures: decode runs at the steady cache size (a peak right after prefill is gone by the first step);
    the steady overflow's share of each step is read from flash, the rest from RAM, plus the latency (paid
    whether the bytes come from RAM or from flash)."""
    device = b.scenario.device
    budget = b.budget_bytes
    overflow = engine.overflow_bytes(memory.total_bytes, budget)
    # the peak's transient part is gone by the first decode step; mlx_lm.server's stored prompt caches stay
    transient = ((memory.kv_peak_bytes - memory.kv_bytes - memory.prompt_cache_bytes)
                 if getattr(b.cache, "peak_is_transient", False) else 0)
    steady = engine.overflow_bytes(memory.total_bytes - transient, budget)
    effective = device.memory_bandwidth * device.bandwidth_efficiency
    latency_s = device.decode_latency
    per_token_s = (engine.streamed_time_per_token_s(decode.bytes_per_step, steady, effective, device.flash_read)
                   + latency_s)
    ram_s = decode.bytes_per_step / effective + latency_s
    if _is_array(steady):
        import numpy as np

        rate = np.where(steady > 0, 1.0 / per_token_s, np.nan)
        slowdown = np.where(steady > 0, per_token_s / ram_s, np.nan)
    else:
        rate = 1.0 / per_token_s if steady > 0 else math.nan
        slowdown = per_token_s / ram_s if steady > 0 else math.nan
    return Streamed(overflow, steady, engine.swap_in_s(memory.kv_bytes + b.pinned_prefix_bytes,
                                                             device.flash_read),
                    engine.swap_in_s(overflow, device.flash_read), rate, slowdown)


def mean_decode_at(b: Basis, ctx: int, sequences: int) -> tuple[float, int]:
    """(mean tokens/s over a generation from an empty cache, the tokens each sequence generates) at one point.

    A sequence generates the tokens it can attend: under llama.cpp's ``-np N`` (one stream each) its stream's
    cells, not the whole ``-c``, and every step of it reads all N streams."""
    from kvplan.caches.ideal import tokens_per_sequence_of

    device, cache = b.scenario.device, b.cache
    n = max(ctx, 1)
    steps = max(min(n, tokens_per_sequence_of(cache, n, sequences)), 1)
    read = cache.kv_bytes_read_over_generation(n, sequences) + steps * b.pinned_prefix_bytes
    parts_read = _in_ram(b, part_read_bytes_at(b, n, sequences)) if b.parts else 0
    if b.scenario.offloads:
        return _placed_mean_decode(b, n, sequences, steps, read, parts_read), steps
    # each step reads the parts as at the end of the generation (a bound for those that grow)
    rate = engine.mean_decode_tokens_per_s(steps, b.weights_read_bytes, read + steps * parts_read,
                                           device.memory_bandwidth, device.bandwidth_efficiency,
                                           device.decode_latency)
    return rate, steps


def _placed_mean_decode(b: Basis, ctx: int, sequences: int, steps: int, kv_read_bytes: int, parts_read_bytes: int):
    """Mean decode of an offloaded configuration over ``steps`` steps from an empty cache [tokens/s]: every step
    reads the weights, the streamed experts and the parts from their memories (:func:`placed_at` at ``ctx``,
    whose per-step cache read is replaced by the generation's), and the cache read over the generation
    (``kv_read_bytes``) is split between the GPU and RAM as the cache at ``ctx`` is."""
    from kvplan.engine import offload as eo
    from kvplan.plan.placement import kv_gpu_share_bytes, layout_of

    layout, device = layout_of(b), b.scenario.device
    placed = placed_at(b, ctx, sequences)
    kv_gpu = int(kv_gpu_share_bytes(layout, kv_read_bytes, ctx))
    read = {"gpu": steps * (placed.gpu_read_bytes - placed.kv_gpu_read_bytes) + kv_gpu,
            "ram": steps * (placed.ram_read_bytes - placed.kv_ram_read_bytes) + kv_read_bytes - kv_gpu,
            "flash": steps * placed.flash_read_bytes}
    seconds = eo.decode_time_s({m: r for m, r in read.items() if r}, layout.bandwidth, device.bandwidth_efficiency,
                               steps * device.decode_latency)
    return steps / seconds


# --- max context ------------------------------------------------------------------------------


def max_ctx_with_buffers(s: Scenario, cache: CacheModel, allowance_bytes: int, kv_only_max_ctx):
    """Largest ``-c`` whose KV allocation plus buffers fit ``allowance_bytes``, exact to the token
    (:func:`max_ctx_search`'s last fitting ``-c``)."""
    return max_ctx_search(s, cache, allowance_bytes, kv_only_max_ctx)[1]


def _fits_with_buffers(s: Scenario, cache: CacheModel, allowance_bytes: int, priced=None, extra=None):
    """Whether llama.cpp's KV allocation plus its buffers at ``-c ctx`` fit ``allowance_bytes``, as a predicate of
    ``ctx``; ``priced(ctx)`` gives the buffers (by default :func:`runtime_buffers`, unmemoised); ``extra(ctx)``:
    more bytes that grow with the context (the resident parts that do: a draft's cache), none by default."""
    priced = priced or (lambda ctx: runtime_buffers(s, cache, ctx))
    extra = extra or (lambda ctx: 0)

    def fits(ctx: int) -> bool:
        return cache.kv_peak_bytes(ctx, s.sequences) + priced(ctx).total_bytes + extra(ctx) <= allowance_bytes

    return fits


def max_ctx_search(s: Scenario, cache: CacheModel, allowance_bytes: int, kv_only_max_ctx, priced=None, extra=None):
    """(first crossing, largest fitting ``-c``) of llama.cpp's KV allocation plus buffers in ``allowance_bytes``.

    The answer is at most the KV-only one. Bisection below it finds a ``-c`` that fits with one token more not
    fitting (the first crossing). cache + buffers is not monotone, though: the compute buffer can shrink by tens
    of MB from one 256-cell step to the next (the allocator lands tensors in other holes; Gemma 3 at 61,440 →
    71,680 cells), so a later block of cells may fit again. Every later block is tried while its cache plus a
    lower bound on the buffers there (the output buffer and the compute buffer's largest tensor, which only grow
    with ``-c``) still fits. Both are ``engine.NO_CONTEXT_FITS`` when not even ``-c 1`` fits; they differ when a
    larger ``-c`` fits again past one that does not (:func:`every_fitting_ctx`). ``priced``: as for
    :func:`_fits_with_buffers` (and ``extra``)."""
    fits = _fits_with_buffers(s, cache, allowance_bytes, priced, extra)
    grows = extra or (lambda ctx: 0)

    if kv_only_max_ctx == engine.NO_CONTEXT_FITS or not fits(1):
        return engine.NO_CONTEXT_FITS, engine.NO_CONTEXT_FITS
    hi = 2**40 if kv_only_max_ctx == math.inf else int(kv_only_max_ctx)
    if fits(hi):
        return kv_only_max_ctx, kv_only_max_ctx
    lo = first = engine.largest_fitting(fits, 1, hi)  # fits, lo + 1 does not: the first crossing, maybe not the last
    if kv_only_max_ctx == math.inf:  # a cache that stops growing: no bound ends the search below
        return first, lo
    # -c is padded to whole blocks of 256 cells per KV stream, so the cache is the same across a block and so
    # are the buffers (past the micro-batch, which grows with -c below -ub): a block's last -c fits if any does
    block = _cells_block(s, cache)
    floor = runtime_buffers(s, cache, lo, floor=True).total_bytes
    start = lo + 2  # lo + 1 does not fit
    while start <= kv_only_max_ctx and (cache.kv_peak_bytes(start, s.sequences) + floor + grows(start)
                                        <= allowance_bytes):
        end = min((start + block - 1) // block * block, int(kv_only_max_ctx))
        if fits(end):
            lo = end
        elif fits(start):  # below -ub the buffers grow within a block: its largest fitting -c
            lo = engine.largest_fitting(fits, start, end)
        start = end + 1
    return first, lo


def _cells_block(s: Scenario, cache: CacheModel) -> int:
    """The ``-c`` step over which llama.cpp's cache stays the same: 256 cells per KV stream [tokens]."""
    return 256 * (1 if cache.spec.kv_unified else s.sequences)


def every_fitting_ctx(s: Scenario, cache: CacheModel, allowance_bytes: int, last: int, priced=None,
                      extra=None) -> int:
    """The largest ``-c`` at or below ``last`` such that it and every smaller ``-c`` fit [tokens].

    Scans llama.cpp's blocks of cells upward from ``-c 1``: a block fits whole when its last ``-c`` fits (the
    cache is the same across it; the buffers are too, or grow with ``-c`` below ``-ub``), so the first block
    whose end does not fit holds the answer, found by bisection inside it. One allocator replay per block:
    called only where :func:`max_ctx_search` found a larger ``-c`` fitting past one that does not (``priced``: as
    for :func:`_fits_with_buffers`; the core passes the basis's memo, so the blocks that search priced are not
    replayed again); ``extra``: as for :func:`_fits_with_buffers`."""
    fits = _fits_with_buffers(s, cache, allowance_bytes, priced, extra)

    block = _cells_block(s, cache)
    start = 1
    while start <= last:
        end = min((start + block - 1) // block * block, last)
        if not fits(end):
            return engine.largest_fitting(fits, start, end) if fits(start) else start - 1
        start = end + 1
    return last


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
    # a cache that grows below its cap (onnxruntime-genai without a shared buffer) is limited by it only there
    if limit and getattr(cache, "limit_binds_at_cap_only", False) and max_ctx != limit[0]:
        limit = None
    if limit and engine.kv_allowance_bytes(allowance_bytes, sequences) >= cache.bytes_per_token:
        return str(limit[1])
    if max_ctx == engine.NO_CONTEXT_FITS:
        return "pinned_prefix" if pinned_bytes and allowance_bytes + pinned_bytes >= 0 else "weights"
    if max_ctx == math.inf:
        return "unbounded"
    return "memory"


def _over_sequences(solve, sequences):
    """``solve(int)`` at each sequence count of an array, once per distinct count (float64: inf, -1 kept)."""
    import numpy as np

    sequences = np.asarray(sequences, dtype=np.int64)
    if not sequences.size:
        return np.zeros(sequences.shape)
    unique, inverse = np.unique(sequences, return_inverse=True)
    found = np.array([float(solve(int(n))) for n in unique], dtype=np.float64)
    return found[inverse.reshape(-1)].reshape(sequences.shape)


def _solved(cache: CacheModel, allowance_bytes: int, sequences, solve, closed: bool = True):
    """A largest-context answer at one sequence count or an array of them: the ideal layout's closed form over
    the whole array at once (unless ``closed`` is false: resident parts grow with the context), else
    ``solve(n)`` once per distinct count."""
    if not _is_array(sequences):
        return solve(int(sequences))
    if closed and isinstance(cache, CacheLayout):
        import numpy as np

        return np.asarray(cache.max_ctx(allowance_bytes, sequences), dtype=np.float64)
    return _over_sequences(solve, sequences)


def _growing(parts_fn, b: Basis, n: int, parts):
    """``ctx → bytes`` of the resident parts ``parts`` at ``n`` sequences (``parts_fn``: a part's field), or None
    when there are none."""
    if not parts:
        return None
    return lambda ctx: sum(int(_part_over(getattr(p, parts_fn), ctx, n)) for p in parts)


def largest_with_parts(kv_of, allowance_bytes: int, sequences: int, kv_only_max_ctx, extra):
    """The largest ``ctx`` with ``kv_of(ctx, sequences) + extra(ctx) ≤ allowance_bytes`` [tokens], by bisection
    below the cache-only answer ``kv_only_max_ctx`` (both only grow with the context); the same special values as
    :func:`max_ctx_at`."""
    def fits(ctx: int) -> bool:
        return kv_of(ctx, sequences) + extra(ctx) <= allowance_bytes

    if kv_only_max_ctx == engine.NO_CONTEXT_FITS or not fits(1):
        return engine.NO_CONTEXT_FITS
    hi = 2**40 if kv_only_max_ctx == math.inf else int(kv_only_max_ctx)
    if fits(hi):
        return kv_only_max_ctx
    return engine.largest_fitting(fits, 1, hi)


def max_ctx_at(b: Basis, sequences):
    """The largest ``ctx`` whose total fits the budget, exact to the token, at each sequence count: an integer,
    ``math.inf`` (the cache stops growing: unbounded) or :data:`kvplan.engine.NO_CONTEXT_FITS`; over an array,
    float64 with the same two special values. Never capped at the model's trained context.

    The ideal layout solves in closed form; the other cache models search exactly (once per distinct sequence
    count: the answer does not depend on the context), with llama.cpp's buffers counted beside the cache, and the
    resident parts that grow with the context (a draft's cache). An offloaded configuration (an offload knob, or
    a device with a GPU memory of its own) fits where every memory's total is within its own budget
    (:func:`placed_at`: the KV of the layers on the GPU grows in GPU memory), found by bisection."""
    if b.scenario.offloads:
        return _placed_max_ctx(b, sequences)
    cache, allowance, varying = b.cache, b.cache_allowance_bytes, b.varying_parts

    def solve(n: int):
        kv_only = cache.max_ctx(allowance, n)
        s = _with_sequences(b.scenario, n)
        extra = _growing("bytes_of", b, n, varying)
        if getattr(cache, "family", None) != "llama.cpp" or runtime_buffers(s, cache, 1) is None:
            return kv_only if extra is None else largest_with_parts(cache.kv_peak_bytes, allowance, n, kv_only,
                                                                    extra)
        first, last = max_ctx_search(s, cache, allowance, kv_only, priced=lambda ctx: buffers_at(b, ctx, n),
                                     extra=extra)
        b.crossings[n] = (first, last)
        return last

    return _solved(cache, allowance, sequences, solve, closed=not varying)


def fit_ctx_at(b: Basis, margin_bytes: int, buffers_bytes: int, sequences: int):
    """The largest ``ctx`` still ``fit`` rather than ``tight``: the cache's own ``max_ctx`` in what the budget
    leaves beside the margin, the fixed parts and ``buffers_bytes`` (the buffers at the scenario's own context:
    where the plots start the tight zone) [tokens]; the same special values as :func:`max_ctx_at`. Resident
    parts that grow with the context are counted at each context. Offloaded: where every memory is still ``fit``
    (:func:`placed_at`, each memory's buffers at each context)."""
    if b.scenario.offloads:
        return _largest_placed(b, int(sequences), lambda p: p.verdict_code == 0)
    allowance = b.cache_allowance_bytes - margin_bytes - buffers_bytes
    kv_only = b.cache.max_ctx(allowance, sequences)
    extra = _growing("bytes_of", b, int(sequences), b.varying_parts)
    if extra is None:
        return kv_only
    return largest_with_parts(b.cache.kv_peak_bytes, allowance, int(sequences), kv_only, extra)


def every_fitting_ctx_at(b: Basis, sequences: int, solved):
    """The largest ``ctx`` such that it and every smaller one fit, at one sequence count (``solved``: its
    :func:`max_ctx_at`). The same as ``solved`` wherever the total only grows with the context; under llama.cpp
    its compute buffer can be smaller at a larger ``-c``, so a context past one that does not fit may fit again."""
    n = int(sequences)
    found = b.crossings.get(n)
    if found is None or found[0] == found[1] or not math.isfinite(solved) or solved < 0:
        return solved
    return every_fitting_ctx(_with_sequences(b.scenario, n), b.cache, b.cache_allowance_bytes, int(solved),
                             priced=lambda ctx: buffers_at(b, ctx, n),
                             extra=_growing("bytes_of", b, n, b.varying_parts))


def step_allowance_bytes(b: Basis, target_tokens_per_s: float) -> int:
    """What a decode step may read of the cache and still run at ``target_tokens_per_s`` per sequence [bytes]:
    ``floor(B / target − latency · B) − weights read − pinned prefix − constant reads of the resident parts``
    (B: effective bandwidth)."""
    device = b.scenario.device
    constant_reads = sum(p.read_bytes_of for p in b.parts if p.constant_read and p.memory == "ram")
    return (math.floor(engine.step_bytes_at_rate(target_tokens_per_s, device.memory_bandwidth,
                                                 device.bandwidth_efficiency, device.decode_latency))
            - b.weights_read_bytes - b.pinned_prefix_bytes - constant_reads)


def speed_ctx_at(b: Basis, target_tokens_per_s: float, sequences):
    """The largest ``ctx`` whose steady cache decodes at ``target_tokens_per_s`` or faster, at each sequence count
    (runtime buffers are not read per step; the resident parts' reads that grow with the context are counted);
    the same special values as :func:`max_ctx_at`. Offloaded: each part read from its memory (:func:`placed_at`)."""
    if b.scenario.offloads:
        return _solved(b.cache, 0, sequences, lambda n: _largest_placed(
            b, n, lambda p: p.seconds_per_step * target_tokens_per_s <= 1.0), closed=False)
    cache, allowance = b.cache, step_allowance_bytes(b, target_tokens_per_s)
    varying = tuple(p for p in b.parts if not p.constant_read and p.memory == "ram")

    def solve(n: int):
        steady = steady_max_ctx(cache, allowance, n)
        extra = _growing("read_bytes_of", b, n, varying)
        return steady if extra is None else largest_with_parts(cache.kv_bytes, allowance, n, steady, extra)

    return _solved(cache, allowance, sequences, solve, closed=not varying)


def limited_by_at(b: Basis, solved, sequences):
    """:func:`max_ctx_limited_by` of each solved max context: a string, or over arrays one label (a 0-d array,
    the usual case: max context depends on the sequences only) or one per point."""
    cache, allowance, pinned = b.cache, b.cache_allowance_bytes, b.pinned_prefix_bytes
    if not _is_array(solved):
        return max_ctx_limited_by(solved, cache, allowance, int(sequences), pinned)
    import numpy as np

    sequences = np.asarray(sequences, dtype=np.int64)
    if getattr(cache, "ctx_limit", None) and len(sequences):  # a preallocated cache: its option, per count
        unique, first, inverse = np.unique(sequences, return_index=True, return_inverse=True)
        labels = np.array([max_ctx_limited_by(solved[i], cache, allowance, int(n), pinned)
                           for n, i in zip(unique, first)])
        return labels[0] if len(set(labels)) == 1 else labels[inverse.reshape(-1)]
    codes = np.where(solved == engine.NO_CONTEXT_FITS, 0, np.where(solved == math.inf, 1, 2))
    labels = np.array([max_ctx_limited_by(engine.NO_CONTEXT_FITS, None, allowance, 1, pinned),
                       max_ctx_limited_by(math.inf), max_ctx_limited_by(0)])
    distinct = np.unique(codes)
    return labels[distinct[0]] if len(distinct) == 1 else labels[codes]


def tokens_or_none(solved):
    """Solved contexts as int64 with :data:`NO_MAX_CTX` for none fits / unbounded (arrays), or int / None."""
    if not _is_array(solved):
        return None if solved in (math.inf, engine.NO_CONTEXT_FITS) else int(solved)
    import numpy as np

    return np.where(np.isfinite(solved) & (solved >= 0), solved, NO_MAX_CTX).astype(np.int64)


# --- prefill ----------------------------------------------------------------------------------


def prefill_times_of(device: Device, model: Model, tokens, weights_read_bytes, n_ubatch: int = 512):
    """(compute-bound, memory-bound) seconds to prefill ``tokens`` prompt tokens, or None without ``compute``.

    Compute: ``2 · params_active · T + 2 · layers · T² · heads · head_dim + F_state · T`` FLOPs (``layers``: those
    that attend; ``F_state``: the state layers' own scan per token) over
    ``compute · compute_efficiency`` (``params_active`` when a profile gives it: MoE). Memory: the weights a
    decode step reads, once per micro-batch of ``n_ubatch`` tokens, at the effective bandwidth — a floor
    (for a mixture of experts a micro-batch touches more experts than one token, so more than that).
    The prefill time is the larger of the two (:func:`prefill_s_of`).
    """
    if not device.compute:
        return None
    from kvplan.engine.prefill import schedule_state_flops_per_token

    params = getattr(model, "params_active", None) or model.params
    schedule = model.schedule
    flops = engine.prefill_flops(tokens, params, schedule.attending_layers, model.attention_heads, model.head_dim,
                                 schedule_state_flops_per_token(schedule))
    return (engine.prefill_compute_s(flops, device.compute, device.compute_efficiency),
            engine.prefill_memory_s(tokens, weights_read_bytes, device.memory_bandwidth,
                                          device.bandwidth_efficiency, n_ubatch))


def prefill_s_of(device: Device, model: Model, tokens, weights_read_bytes=0, n_ubatch: int = 512):
    """Seconds to prefill ``tokens`` prompt tokens (the larger of :func:`prefill_times_of`), or None
    when the device gives no ``compute``. ``weights_read_bytes = 0`` leaves out the memory floor."""
    times = prefill_times_of(device, model, tokens, weights_read_bytes, n_ubatch)
    return None if times is None else engine.maximum(*times)


def prefill_at(b: Basis, ctx):
    """(total, compute-bound, memory-bound) seconds to prefill ``ctx`` prompt tokens, or None when the device
    gives no ``compute`` (:func:`prefill_times_of` with the basis's weights read and micro-batch).

    Offloaded, the memory floor reads each memory's weights at its own bandwidth once per micro-batch (the
    streamed experts from flash, less their cache hits); the compute bound stays the device's one ``compute``
    figure: a profile has no compute figure per processor, so where the layers run does not change it (a warning
    says so)."""
    s = b.scenario
    times = prefill_times_of(s.device, s.model, ctx, b.weights_read_bytes, b.n_ubatch)
    if times is None:
        return None
    if s.offloads:
        times = (times[0], _placed_prefill_memory_s(b, ctx))
    return (engine.maximum(*times), *times)


def _placed_prefill_memory_s(b: Basis, ctx):
    """The prefill memory floor of an offloaded configuration: ``ceil(ctx / n_ubatch) · Σ_m weights read_m /
    (bandwidth_m · efficiency)`` (flash at its rate) [s]."""
    from kvplan.engine import offload as eo
    from kvplan.plan.placement import layout_of

    layout, s = layout_of(b), b.scenario
    device = s.device
    flash, hits = eo.streamed_expert_bytes(layout.streamed_read_bytes, s.expert_cache_hit or 0.0)
    read = {"gpu": layout.weights_read_bytes["gpu"], "ram": layout.weights_read_bytes["ram"] + hits, "flash": flash}
    total = 0.0
    for mem, size in read.items():
        if size:
            efficiency = 1.0 if mem == "flash" else device.bandwidth_efficiency
            total = total + engine.prefill_memory_s(ctx, size, layout.bandwidth[mem], efficiency, b.n_ubatch)
    return total
