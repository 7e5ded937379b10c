"""One configuration (device × model × context × options) evaluated: the core's figures at one point.

``evaluate`` is a thin caller of :mod:`kvplan.plan.core` (the same functions a sweep and the plot curves call
over arrays): it builds the configuration's :class:`~kvplan.plan.basis.Basis` once, takes the figures at the
scenario's own context and sequence count, and packs them, with the warnings about them, into one frozen
:class:`~kvplan.plan.results.Evaluation`. It does no I/O and holds no display strings.
"""

from __future__ import annotations

import math

from kvplan import engine
from kvplan.engine.memory import VERDICTS
from kvplan.caches.ideal import kv_bytes_per_sequence_of, tokens_per_sequence_of
from kvplan.plan import core
from kvplan.plan.basis import Basis, basis_of, cache_model_for, prefill_n_ubatch, weights_in_force, weights_of
from kvplan.plan.core import (max_ctx_limited_by, max_ctx_with_buffers, prefill_s_of, prefill_times_of,
                              runtime_buffers, steady_max_ctx)
from kvplan.plan.results import Evaluation, Flash, Part, Process
from kvplan.plan.scenario import Scenario
from kvplan.plan.warnings import warnings_of

__all__ = ["Evaluation", "Flash", "cache_model_for", "evaluate", "evaluation_of", "max_ctx_limited_by",
           "max_ctx_with_buffers", "prefill_n_ubatch", "prefill_s_of", "prefill_times_of", "runtime_buffers",
           "steady_max_ctx", "weights_in_force", "weights_of"]


def evaluate(s: Scenario) -> Evaluation:
    """Evaluate one configuration with the closed-form engine."""
    return evaluation_of(basis_of(s))


def process_of(b: Basis, buffers, total_bytes: int) -> Process | None:
    """The llama.cpp process's parts at this point (None under any other runtime)."""
    parts = b.process
    if parts is None:
        return None
    from kvplan.profiles.runtime import llamacpp_spec_of

    spec = llamacpp_spec_of(b.scenario.runtime)
    return Process(
        build=spec.build, mmap=spec.mmap, repack=spec.repack, judge=spec.judge,
        baseline_anon_bytes=parts.baseline_anon_bytes, baseline_file_bytes=parts.baseline_file_bytes,
        repacked_bytes=parts.repacked_bytes, repack_copy_bytes=parts.repack_copy_bytes,
        staging_bytes=parts.staging_bytes, weights_file_bytes=parts.weights_file_bytes,
        compute_reserved_bytes=buffers.compute_bytes if buffers is not None else 0,
        resident_bytes=total_bytes, reclaimable_bytes=b.reclaimable_bytes, extra_bytes=parts.extra_bytes)


def parts_of(b: Basis, memory, ctx: int, sequences: int) -> tuple[Part, ...]:
    """The resident parts at this point (:mod:`kvplan.plan.parts`), () for none."""
    if not b.parts:
        return ()
    reads = core.part_read_bytes_at(b, ctx, sequences)
    return tuple(Part(p.key, p.memory, int(held), int(read), p.values)
                 for p, held, read in zip(b.parts, memory.part_bytes, reads))
def offload_of(b: Basis, placed, memory, verdict, headroom_bytes: int):
    """Each part in its memory at this point (:mod:`kvplan.plan.placement`), from :func:`kvplan.plan.core.placed_at`."""
    from kvplan.plan.placement import offload_at

    return offload_at(b, placed, verdict, headroom_bytes, int(memory.total_bytes))


def evaluation_of(b: Basis) -> Evaluation:
    """The :class:`Evaluation` of a basis at its scenario's ``ctx`` and ``sequences``."""
    s = b.scenario
    model, cache = s.model, b.cache
    ctx, sequences = s.ctx, s.sequences
    memory = core.memory_at(b, ctx, sequences)
    placed = core.placed_at(b, ctx, sequences, memory)  # offloaded: each memory's figures, else None
    decode = (core.decode_at(b, memory.kv_bytes, memory.parts_read_bytes) if placed is None
              else core.placed_decode(placed))
    mean_rate, steps = core.mean_decode_at(b, ctx, sequences)

    solved = core.max_ctx_at(b, sequences)
    at_target = speed_ctx = None
    if s.target_tokens_per_s:  # per-sequence rate ≥ target ⇔ bytes per step ≤ B / target − latency · B
        speed_ctx = core.speed_ctx_at(b, s.target_tokens_per_s, sequences)
        at_target = min(solved, speed_ctx)
    prefill = core.prefill_at(b, ctx)

    streamed = core.streamed_at(b, memory, decode)
    steady_overflow = int(streamed.steady_overflow_bytes)
    flash = Flash(int(streamed.overflow_bytes), streamed.swap_in_s,
                  streamed.tokens_per_s if steady_overflow else decode.tokens_per_s,
                  streamed.slowdown if steady_overflow else 1.0, steady_overflow, streamed.overflow_swap_in_s)

    buffers = core.buffers_at(b, ctx, sequences)
    trained = model.max_context or None
    per_sequence_tokens = tokens_per_sequence_of(cache, ctx, sequences)
    ev = Evaluation(
        scenario=s, cache=cache, weight_bits=b.weight_bits, weights_pricing=b.weights_pricing,
        kv_bytes_per_token=cache.bytes_per_token, kv_bytes_per_sequence=kv_bytes_per_sequence_of(cache, ctx, sequences),
        kv_bytes=int(memory.kv_bytes), kv_peak_bytes=int(memory.kv_peak_bytes),
        pinned_prefix_bytes=b.pinned_prefix_bytes, weights_bytes=b.weights_bytes,
        weights_read_bytes=b.weights_read_bytes, overhead_bytes=b.overhead_bytes,
        total_bytes=int(memory.total_bytes), budget_bytes=b.budget_bytes, headroom_bytes=int(memory.headroom_bytes),
        margin_bytes=math.ceil(s.margin_fraction * b.budget_bytes), verdict=VERDICTS[memory.verdict_code],
        bytes_per_step=int(decode.bytes_per_step), decode_tokens_per_s=decode.tokens_per_s,
        decode_tokens_per_s_roofline=decode.roofline_tokens_per_s, mean_decode_tokens_per_s=mean_rate,
        max_ctx=core.tokens_or_none(solved), max_ctx_limited_by=core.limited_by_at(b, solved, sequences),
        max_ctx_contiguous=core.tokens_or_none(core.every_fitting_ctx_at(b, sequences, solved)),
        max_ctx_at_target=None if at_target is None or at_target in (math.inf, -1) else int(at_target),
        target_reach=None if at_target is None else "unreachable" if speed_ctx == engine.NO_CONTEXT_FITS
        else "every context" if at_target == math.inf else "context",
        flash=flash,
        prefill_s=None if prefill is None else prefill[0],
        prefill_compute_s=None if prefill is None else prefill[1],
        prefill_memory_s=None if prefill is None else prefill[2],
        prefill_n_ubatch=b.n_ubatch,
        pinned_prefix_recompute_s=prefill_s_of(s.device, model, s.pinned_prefix_tokens, b.weights_read_bytes,
                                                     b.n_ubatch),
        max_ctx_trained=trained, ctx_per_sequence_tokens=int(per_sequence_tokens), mean_decode_tokens=int(steps),
        # a pinned prefix sits in front of every sequence's own tokens: it is attended, so it counts
        ctx_beyond_trained=bool(trained and per_sequence_tokens + s.pinned_prefix_tokens > trained),
        compute_buffer_bytes=buffers.resident_compute_bytes if buffers is not None else 0,
        output_buffer_bytes=buffers.output_bytes if buffers is not None else 0,
        basis=b,
        process=process_of(b, buffers, int(memory.total_bytes)),
        parts=parts_of(b, memory, ctx, sequences),
        speculative=core.speculative_at(b, ctx, sequences, decode),
    )
    if placed is not None:
        off = offload_of(b, placed, memory, ev.verdict, ev.headroom_bytes)
        resident = (off.memories[1].total_bytes if off.unified
                    else sum(m.total_bytes for m in off.memories if m.memory in ("gpu", "ram")))
        # the verdict is the worst memory's, the headroom the deciding memory's (the core's placed figures)
        for name, value in (("offload", off), ("verdict", off.verdict), ("headroom_bytes", int(placed.headroom_bytes)),
                            ("total_bytes", resident)):
            object.__setattr__(ev, name, value)
    # the warnings read the finished figures; set once, before the evaluation is handed to anyone
    object.__setattr__(ev, "warnings", warnings_of(ev))
    return ev
