"""Vectorized evaluation of a grid of configurations: arrays in, arrays out.

A sweep is a set of *groups*, one per (device, model, weight bits, K/V format): inside a
group only the context and the number of concurrent sequences vary, so every figure of
the group is computed over the grid by the evaluation core (:mod:`kvplan.plan.core`), the
functions :func:`kvplan.plan.evaluate` calls at one point. Element ``i`` of every column
equals the scalar evaluation of point ``i`` exactly (integers in ``int64``, rates in
``float64`` through the same operations).

numpy is imported inside the functions; this module does no I/O.
"""

from __future__ import annotations

from dataclasses import replace, dataclass, fields

from kvplan.errors import FieldError
from kvplan import engine
from kvplan.engine import VERDICTS  # noqa: F401  (render reads verdict names by code from here)
from kvplan.plan import Scenario, core
from kvplan.plan.basis import basis_of
from kvplan.plan.placement import layout_of
from kvplan.plan.core import NO_MAX_CTX  # noqa: F401  (the scalar evaluation's None in integer columns)


@dataclass(frozen=True)
class SweepColumns:
    """One numpy array per column, all of the same length (one element per grid point).

    ``verdict`` holds codes indexing :data:`kvplan.engine.VERDICTS` (0 fit, 1 tight, 2 over);
    ``max_ctx`` (and ``max_ctx_at_target``) is :data:`NO_MAX_CTX` where the scalar evaluation
    says None; ``prefill_s`` (the time to first token of a ``ctx``-token prompt) is NaN where the
    device gives no ``compute``; ``decode_tokens_per_s`` is the per-sequence rate with the device's
    ``decode_latency``. ``runtime`` (the runtime spec, None for the ideal formula) and ``kv_policy`` (the policy's
    name, None for none) are facts: :func:`kvplan.render.labels.column_labels` words them.
    ``max_ctx_limited_by`` says what stopped ``max_ctx`` (as :func:`kvplan.plan.max_ctx_limited_by`);
    ``max_ctx_trained`` is the model's trained context, :data:`NO_MAX_CTX` where its profile gives none.
    ``max_ctx_at_target`` is None (not a column at all, see :meth:`columns`) unless the sweep has a
    decode target.

    Every row satisfies ``total_bytes = weights_bytes + kv_peak_bytes + pinned_prefix_bytes +
    overhead_bytes + buffers_bytes (+ process_bytes under llama.cpp) (+ parts_bytes with resident parts)`` (``kv_bytes`` is the steady allocation; the
    peak, right after a one-shot prefill, is what the total counts).
    """

    device: object  # str array
    model: object  # str array
    ctx: object  # int64 [tokens]
    sequences: object  # int64
    pinned_prefix_tokens: object  # int64 [tokens]
    weight_bits: object  # float64 [bits/param]
    k_bits: object  # int64
    v_bits: object  # int64
    kv_bytes_per_token: object  # int64 [bytes/token]
    kv_bytes: object  # int64 [bytes] all sequences, steady state
    pinned_prefix_bytes: object  # int64 [bytes]
    weights_bytes: object  # int64 [bytes]
    overhead_bytes: object  # int64 [bytes]
    total_bytes: object  # int64 [bytes]
    budget_bytes: object  # int64 [bytes]
    headroom_bytes: object  # int64 [bytes]
    verdict: object  # int8 code
    decode_tokens_per_s: object  # float64 [tokens/s]
    max_ctx: object  # int64 [tokens]
    prefill_s: object  # float64 [s]
    # Added after the first release's columns, so a script reading columns by position keeps working.
    kv_peak_bytes: object  # int64 [bytes] all sequences, peak (what total_bytes counts)
    runtime: object  # object array: RuntimeSpec or None (kvplan.render.labels words it)
    kv_policy: object  # object array: the policy's name or None (kvplan.render.labels words it)
    k_format: object  # str array (f16, q8_0, int4/g32 …)
    v_format: object  # str array
    buffers_bytes: object  # int64 [bytes] llama.cpp's compute + output buffers (0 under other cache models)
    weight_type: object  # str array: the named weight format priced tensor by tensor, "" for params × bits
    # compare's columns, so both commands write the same ones (kvplan.plan.max_ctx_limited_by; profile max_context)
    max_ctx_limited_by: object  # str array: memory | weights | unbounded
    max_ctx_trained: object  # int64 [tokens], NO_MAX_CTX where the profile gives no max_context
    max_ctx_at_target: object = None  # int64 [tokens], only with a decode target
    # under llama.cpp: the process's baseline and repacked copy, counted in total_bytes (None: not that runtime)
    process_bytes: object = None  # int64 [bytes]
    # the resident parts beside the model (a draft model, an encoder: kvplan.plan.parts), counted in total_bytes
    # (None: no group of the sweep has any)
    parts_bytes: object = None  # int64 [bytes]
    # offloaded (an offload knob, or a device with a GPU memory of its own: kvplan.plan.placement), each memory's
    # figures as check's JSON has them under placement.memories (None: no group of the sweep offloads); then
    # verdict and headroom_bytes are the worse memory's and decode reads each part from its memory
    gpu_total_bytes: object = None  # int64 [bytes]
    gpu_budget_bytes: object = None  # int64 [bytes] gpu_memory, the GPU working set, or the RAM budget
    gpu_headroom_bytes: object = None  # int64 [bytes]
    gpu_verdict: object = None  # int8 code
    ram_total_bytes: object = None  # int64 [bytes] discrete GPU: host RAM's parts; unified: every resident part
    ram_headroom_bytes: object = None  # int64 [bytes] (its budget is budget_bytes)
    ram_verdict: object = None  # int8 code
    flash_bytes: object = None  # int64 [bytes] streamed expert stacks (not resident)

    def __len__(self) -> int:
        return len(self.ctx)

    @classmethod
    def names(cls) -> list[str]:
        """Every possible column (the optional ones included); a sweep's own are :meth:`columns`."""
        return [f.name for f in fields(cls)]

    def columns(self) -> list[str]:
        """The columns this sweep has: :meth:`names` without the optional ones left unset."""
        return [name for name in self.names() if getattr(self, name) is not None]

    def take(self, index) -> SweepColumns:
        """The rows at ``index`` (an integer array, slice or boolean mask)."""
        return SweepColumns(**{name: getattr(self, name)[index] for name in self.columns()})


EXACT_LIMIT = 2**53


def grid(ctx, sequences):
    """Flattened (ctx, sequences) grid, ctx varying fastest: two int64 arrays of equal length."""
    import numpy as np

    ctx = np.asarray(ctx, dtype=np.int64)
    sequences = np.asarray(sequences, dtype=np.int64)
    return np.tile(ctx, len(sequences)), np.repeat(sequences, len(ctx))


def evaluate_group(base: Scenario, ctx, sequences) -> SweepColumns:
    """Evaluate ``base`` at every (ctx[i], sequences[i]) with the evaluation core (:mod:`kvplan.plan.core`).

    Parameters
    ----------
    base : Scenario fixing device, model, formats, weight bits, pinned prefix, margin, reserve
        (its own ``ctx`` and ``sequences`` are ignored)
    ctx : int array [tokens]
    sequences : int array, same length as ``ctx``

    Returns
    -------
    SweepColumns
    """
    import numpy as np

    ctx = np.asarray(ctx, dtype=np.int64)
    sequences = np.asarray(sequences, dtype=np.int64)
    n = len(ctx)
    b = basis_of(base)
    device, model, cache = base.device, base.model, b.cache

    if n:
        # Arrays hold int64 bytes and some steps pass through float64: both are exact below 2^53.
        # The cache only grows with ctx and sequences, so the largest row is bounded exactly here.
        largest = (int(cache.kv_peak_bytes(int(ctx.max()), int(sequences.max()))) + int(b.weights_bytes)
                   + b.pinned_prefix_bytes + int(b.overhead_bytes))
        if largest >= EXACT_LIMIT:
            raise FieldError(("ctx", "sequences"), f"the largest point needs {largest:,} bytes, beyond the "
                             f"{EXACT_LIMIT:,} a vectorized sweep holds exactly; use kvplan check for it", lead="/")
    memory = core.memory_at(b, ctx, sequences)
    placed = core.placed_at(b, ctx, sequences, memory)  # offloaded: each memory's figures, else None
    decode = (core.decode_at(b, memory.kv_bytes, memory.parts_read_bytes) if placed is None
              else core.placed_decode(placed))
    solved = core.max_ctx_at(b, sequences)
    limited_by = core.limited_by_at(b, solved, sequences)
    at_target = None
    if base.target_tokens_per_s:  # min(max_ctx, the largest ctx decoding at the target)
        at_target = core.tokens_or_none(np.minimum(solved, core.speed_ctx_at(b, base.target_tokens_per_s,
                                                                             sequences)))
    prefill = core.prefill_at(b, ctx)
    prefill = np.nan if prefill is None else prefill[0]

    def const(value, dtype=None):  # one value for every row, without copying it n times
        return np.broadcast_to(np.asarray(value, dtype=dtype), (n,))

    def const_fact(value):  # an object (a runtime spec, a name or None) for every row, as a zero-stride view
        one = np.empty(1, dtype=object)
        one[0] = value
        return np.broadcast_to(one, (n,))

    policy = getattr(cache, "policy", None)
    verdict, headroom, total = memory.verdict_code, memory.headroom_bytes, memory.total_bytes
    offloaded = {}
    if placed is not None:  # the resident total, as check's compare and gate figures: RAM's, or GPU + RAM
        verdict, headroom = placed.verdict_code, placed.headroom_bytes
        total = placed.ram_total_bytes + (placed.gpu_total_bytes if layout_of(b).discrete else 0)

        def each(value, dtype=np.int64):  # a column of one value or one per row
            value = np.asarray(value, dtype=dtype)
            return value if value.ndim else const(value, dtype=dtype)

        offloaded = {"gpu_total_bytes": each(placed.gpu_total_bytes), "gpu_budget_bytes": each(placed.gpu_budget_bytes),
                     "gpu_headroom_bytes": each(placed.gpu_headroom_bytes),
                     "gpu_verdict": each(placed.gpu_verdict_code, np.int8),
                     "ram_total_bytes": each(placed.ram_total_bytes), "ram_headroom_bytes": each(placed.ram_headroom_bytes),
                     "ram_verdict": each(placed.ram_verdict_code, np.int8), "flash_bytes": each(placed.flash_bytes)}

    return SweepColumns(
        device=const(device.name), model=const(model.name), runtime=const_fact(base.runtime),
        kv_policy=const_fact(policy.name if policy is not None else None), ctx=ctx, sequences=sequences,
        pinned_prefix_tokens=const(base.pinned_prefix_tokens, dtype=np.int64),
        weight_bits=const(b.weight_bits, dtype=np.float64),
        k_format=const(cache.k_format.name), v_format=const(cache.v_format.name),
        k_bits=const(cache.k_format.bits, dtype=np.int64), v_bits=const(cache.v_format.bits, dtype=np.int64),
        kv_bytes_per_token=const(cache.bytes_per_token, dtype=np.int64),
        kv_bytes=np.asarray(memory.kv_bytes, dtype=np.int64),
        kv_peak_bytes=np.asarray(memory.kv_peak_bytes, dtype=np.int64),
        pinned_prefix_bytes=const(b.pinned_prefix_bytes, dtype=np.int64),
        weights_bytes=const(b.weights_bytes, dtype=np.int64),
        overhead_bytes=const(b.overhead_bytes, dtype=np.int64), total_bytes=np.broadcast_to(np.asarray(total, dtype=np.int64), (n,)),
        budget_bytes=const(b.budget_bytes, dtype=np.int64),
        headroom_bytes=np.asarray(headroom, dtype=np.int64),
        buffers_bytes=np.asarray(memory.buffers_bytes, dtype=np.int64),
        weight_type=const(base.weight_type or getattr(model, "weight_type", None) or "" if b.weights_pricing else ""),
        max_ctx_limited_by=limited_by if limited_by.ndim else const(str(limited_by)),
        max_ctx_trained=const(model.max_context or NO_MAX_CTX, dtype=np.int64),
        verdict=np.asarray(verdict, dtype=np.int8), decode_tokens_per_s=np.asarray(decode.tokens_per_s, dtype=np.float64),
        max_ctx=core.tokens_or_none(solved),
        prefill_s=np.broadcast_to(np.asarray(prefill, dtype=np.float64), (n,)), max_ctx_at_target=at_target,
        process_bytes=const(b.process_bytes, dtype=np.int64) if b.process is not None else None,
        parts_bytes=np.broadcast_to(np.asarray(memory.parts_bytes, dtype=np.int64), (n,)) if b.parts else None,
        **offloaded,
    )


def _one_memory(p: SweepColumns) -> dict:
    """The offload columns of a group that does not offload: no GPU memory (0 held, no budget, its verdict fit),
    RAM is the whole configuration."""
    import numpy as np

    zeros = np.broadcast_to(np.zeros(1, dtype=np.int64), (len(p),))
    return {"gpu_total_bytes": zeros, "gpu_budget_bytes": zeros, "gpu_headroom_bytes": zeros,
            "gpu_verdict": np.broadcast_to(np.zeros(1, dtype=np.int8), (len(p),)), "ram_total_bytes": p.total_bytes,
            "ram_headroom_bytes": p.headroom_bytes, "ram_verdict": p.verdict, "flash_bytes": zeros}


def concat(parts: list[SweepColumns]) -> SweepColumns:
    """Join the columns of several groups, in order."""
    import numpy as np

    if len(parts) == 1:
        return parts[0]
    total = sum(len(p) for p in parts)
    if any(p.process_bytes is not None for p in parts):  # a llama.cpp group beside others: 0 bytes there
        parts = [p if p.process_bytes is not None else replace(p, process_bytes=np.broadcast_to(
            np.zeros(1, dtype=np.int64), (len(p),))) for p in parts]
    if any(p.parts_bytes is not None for p in parts):  # a group with resident parts beside others: 0 bytes there
        parts = [p if p.parts_bytes is not None else replace(p, parts_bytes=np.broadcast_to(
            np.zeros(1, dtype=np.int64), (len(p),))) for p in parts]
    if any(p.gpu_total_bytes is not None for p in parts):  # an offloaded group beside others: one memory there
        parts = [p if p.gpu_total_bytes is not None else replace(p, **_one_memory(p)) for p in parts]
    names = parts[0].columns()
    if any(p.columns() != names for p in parts):
        raise ValueError("concat: the groups of a sweep must have the same columns")

    def joined(name):
        columns = [getattr(p, name) for p in parts]
        first = columns[0]
        # A column that is one value in every group stays a zero-stride view: writers print it as a constant.
        if all(c.strides == (0,) and len(c) and c[0] == first[0] for c in columns):
            return np.broadcast_to(first[:1], (total,))
        return np.concatenate(columns)

    return SweepColumns(**{name: joined(name) for name in names})
