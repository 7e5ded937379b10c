"""Vectorized evaluation of a grid of configurations: arrays in, arrays out.

A sweep is a set of *groups*, one per (device, model, weight bits, K/V format): inside a
group only the context and the number of concurrent sequences vary, so every figure of
the group is one numpy expression over the grid, computed by the same engine functions
and the same :class:`~kvplan.plan.CacheModel` as :func:`kvplan.plan.evaluation` (runtime-exact
and policy caches included: their ``kv_bytes`` take arrays; their exact max-context search
runs once per distinct number of sequences, since it does not depend on the context). Element
``i`` of every column equals the scalar evaluation of point ``i`` exactly (integers in
``int64``, rates in ``float64`` through the same operations).

numpy is imported inside the functions; this module does no I/O.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

from kvplan.errors import FieldError
from kvplan import engine
from kvplan.engine import VERDICTS  # noqa: F401  (render reads verdict names by code from here)
from kvplan.labels import policy_label, runtime_label
from kvplan.caches.ideal import CacheLayout
from kvplan.plan import Scenario, cache_model_for, max_ctx_limited_by
from kvplan.plan.evaluation import (max_ctx_with_buffers, prefill_n_ubatch, prefill_s_of, runtime_buffers,
                                    steady_max_ctx, weights_in_force)

# max_ctx when no context fits (weights alone exceed the budget) or the cache stops
# growing (every layer windowed: unbounded): the scalar evaluation's None.
NO_MAX_CTX = -1


@dataclass(frozen=True)
class SweepColumns:
    """One numpy array per column, all of the same length (one element per grid point).

    ``verdict`` holds codes indexing :data:`kvplan.engine.VERDICTS` (0 fit, 1 tight, 2 over);
    ``max_ctx`` (and ``max_ctx_at_target``) is :data:`NO_MAX_CTX` where the scalar evaluation
    says None; ``prefill_s`` (the time to first token of a ``ctx``-token prompt) is NaN where the
    device gives no ``compute``; ``decode_tokens_per_s`` is the per-sequence rate with the device's
    ``decode_latency``. ``runtime`` and ``kv_policy`` are the labels of :mod:`kvplan.labels`.
    ``max_ctx_limited_by`` says what stopped ``max_ctx`` (as :func:`kvplan.plan.max_ctx_limited_by`);
    ``max_ctx_trained`` is the model's trained context, :data:`NO_MAX_CTX` where its profile gives none.
    ``max_ctx_at_target`` is None (not a column at all, see :meth:`columns`) unless the sweep has a
    decode target.

    Every row satisfies ``total_bytes = weights_bytes + kv_peak_bytes + pinned_prefix_bytes +
    overhead_bytes + buffers_bytes`` (``kv_bytes`` is the steady allocation; the peak, right after a one-shot
    prefill, is what the total counts).
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
    runtime: object  # str array (kvplan.labels.runtime_label)
    kv_policy: object  # str array (kvplan.labels.policy_label)
    k_format: object  # str array (f16, q8_0, int4/g32 …)
    v_format: object  # str array
    buffers_bytes: object  # int64 [bytes] llama.cpp's compute + output buffers (0 under other cache models)
    weight_type: object  # str array: the named weight format priced tensor by tensor, "" for params × bits
    # compare's columns, so both commands write the same ones (kvplan.plan.max_ctx_limited_by; profile max_context)
    max_ctx_limited_by: object  # str array: memory | weights | unbounded
    max_ctx_trained: object  # int64 [tokens], NO_MAX_CTX where the profile gives no max_context
    max_ctx_at_target: object = None  # int64 [tokens], only with a decode target

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
    """Evaluate ``base`` at every (ctx[i], sequences[i]).

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
    device, model = base.device, base.model
    cache = cache_model_for(base)
    weights, weights_read, bits, pricing = weights_in_force(base)  # a named weight_type priced tensor by tensor
    overhead = device.runtime_overhead
    budget = base.budget_bytes

    if n:
        # Arrays hold int64 bytes and some steps pass through float64: both are exact below 2^53.
        # The cache only grows with ctx and sequences, so the largest row is bounded exactly here.
        largest = (int(cache.kv_peak_bytes(int(ctx.max()), int(sequences.max()))) + int(weights)
                   + int(cache.kv_bytes(base.pinned_prefix_tokens, 1)) + int(device.runtime_overhead))
        if largest >= EXACT_LIMIT:
            raise FieldError(("ctx", "sequences"), f"the largest point needs {largest:,} bytes, beyond the "
                             f"{EXACT_LIMIT:,} a vectorized sweep holds exactly; use kvplan check for it", lead="/")
    kv = np.asarray(cache.kv_bytes(ctx, sequences), dtype=np.int64)
    kv_peak = np.asarray(cache.kv_peak_bytes(ctx, sequences), dtype=np.int64)
    pinned = int(cache.kv_bytes(base.pinned_prefix_tokens, 1))
    buffers = _buffers(base, cache, ctx, sequences)
    total = engine.total_bytes(weights, kv_peak, 1, pinned, overhead) + buffers
    headroom = engine.headroom_bytes(budget, total)
    verdict = np.asarray(engine.verdict_code(headroom, budget, base.margin_fraction), dtype=np.int8)

    step = engine.bytes_per_step(weights_read, kv + pinned)
    # the two-term model, as kvplan.plan.evaluation: bytes / effective bandwidth + the device's decode_latency
    latency_s = device.decode_latency
    rate = engine.decode_tokens_per_s(device.memory_bandwidth, step, device.bandwidth_efficiency, latency_s)

    # As kvplan.plan.evaluation: what fits in memory, never capped at the model's trained context.
    def solve(allowance_bytes, for_speed=False):  # the cache's max_ctx at every row, float64 (inf, -1: none)
        if isinstance(cache, CacheLayout):
            return np.asarray(cache.max_ctx(allowance_bytes, sequences), dtype=np.float64)
        # runtime and policy caches search exactly, one point at a time; max_ctx depends on sequences only. For a
        # decode rate: the steady cache a step reads, without the buffers (as kvplan.plan.evaluation)
        unique, inverse = np.unique(sequences, return_inverse=True)
        found = np.array([float(steady_max_ctx(cache, allowance_bytes, int(s)) if for_speed
                                else _max_ctx(base, cache, allowance_bytes, int(s))) for s in unique], dtype=np.float64)
        return found[inverse.reshape(-1)] if n else np.zeros(0)

    def tokens_or_none(solved):
        return np.where(np.isfinite(solved) & (solved >= 0), solved, NO_MAX_CTX).astype(np.int64)

    solved = solve(budget - weights - overhead - pinned)
    max_ctx = tokens_or_none(solved)
    limited_by = _limited_by(solved, cache, budget - weights - overhead - pinned, sequences, pinned)
    at_target = None
    if base.target_tokens_per_s:  # as kvplan.plan.evaluation: min(max_ctx, the largest ctx decoding at the target)
        step_allowance = (math.floor(engine.step_bytes_at_rate(base.target_tokens_per_s, device.memory_bandwidth,
                                                               device.bandwidth_efficiency, latency_s))
                          - weights_read - pinned)
        at_target = tokens_or_none(np.minimum(solved, solve(step_allowance, for_speed=True)))  # buffers are not read per step

    # as kvplan.plan.evaluation: the larger of the compute time and the weights read once per micro-batch
    prefill = prefill_s_of(device, model, ctx, weights_read, prefill_n_ubatch(base))
    if prefill is None:
        prefill = np.nan

    def const(value, dtype=None):  # one value for every row, without copying it n times
        return np.broadcast_to(np.asarray(value, dtype=dtype), (n,))

    return SweepColumns(
        device=const(device.name), model=const(model.name), runtime=const(runtime_label(base.runtime)),
        kv_policy=const(policy_label(cache)), ctx=ctx, sequences=sequences,
        pinned_prefix_tokens=const(base.pinned_prefix_tokens, dtype=np.int64),
        weight_bits=const(bits, dtype=np.float64),
        k_format=const(cache.k_format.name), v_format=const(cache.v_format.name),
        k_bits=const(cache.k_format.bits, dtype=np.int64), v_bits=const(cache.v_format.bits, dtype=np.int64),
        kv_bytes_per_token=const(cache.bytes_per_token, dtype=np.int64), kv_bytes=kv,
        kv_peak_bytes=kv_peak, pinned_prefix_bytes=const(pinned, dtype=np.int64), weights_bytes=const(weights, dtype=np.int64),
        overhead_bytes=const(overhead, dtype=np.int64), total_bytes=np.asarray(total, dtype=np.int64),
        budget_bytes=const(budget, dtype=np.int64), headroom_bytes=np.asarray(headroom, dtype=np.int64),
        buffers_bytes=np.asarray(buffers, dtype=np.int64),
        weight_type=const(base.weight_type or getattr(model, "weight_type", None) or "" if pricing else ""),
        max_ctx_limited_by=limited_by if limited_by.ndim else const(str(limited_by)),
        max_ctx_trained=const(model.max_context or NO_MAX_CTX, dtype=np.int64),
        verdict=verdict, decode_tokens_per_s=np.asarray(rate, dtype=np.float64), max_ctx=max_ctx,
        prefill_s=np.broadcast_to(np.asarray(prefill, dtype=np.float64), (n,)), max_ctx_at_target=at_target,
    )


def _limited_by(solved, cache, allowance_bytes, sequences, pinned_bytes):
    """:func:`kvplan.plan.max_ctx_limited_by` of every solved max context (float64: -1 none fits, inf unbounded):
    one label (a 0-d array, the usual case: max_ctx depends on the sequences only) or one per row."""
    import numpy as np

    if getattr(cache, "ctx_limit", None) and len(sequences):  # a preallocated cache: its option, per sequence count
        unique, first, inverse = np.unique(sequences, return_index=True, return_inverse=True)
        labels = np.array([max_ctx_limited_by(solved[i], cache, allowance_bytes, int(s), pinned_bytes)
                           for s, i in zip(unique, first)])
        return labels[0] if len(set(labels)) == 1 else labels[inverse.reshape(-1)]
    codes = np.where(solved == engine.NO_CONTEXT_FITS, 0, np.where(solved == math.inf, 1, 2))
    labels = np.array([max_ctx_limited_by(engine.NO_CONTEXT_FITS, None, allowance_bytes, 1, pinned_bytes),
                       max_ctx_limited_by(math.inf), max_ctx_limited_by(0)])
    distinct = np.unique(codes)
    return labels[distinct[0]] if len(distinct) == 1 else labels[codes]


def _buffers(base: Scenario, cache, ctx, sequences):
    """llama.cpp's compute + output buffers at every row (zeros under the other cache models) [bytes].

    The closed form is scalar arithmetic, so it runs once per group of rows whose micro-batch, KV cells per stream
    and sequences agree (:func:`kvplan.caches.buffers.buffer_groups`): a few thousand for a million contexts."""
    import numpy as np

    if getattr(cache, "name", None) != "llama.cpp" or not len(ctx):
        return np.zeros(len(ctx), dtype=np.int64)
    from kvplan.caches.buffers import buffer_groups

    keys, first, inverse = np.unique(buffer_groups(cache.spec, ctx, sequences), axis=1, return_index=True,
                                     return_inverse=True)
    sized = []
    for row in first:  # one representative context per group of rows with the same buffers
        priced = runtime_buffers(base.with_changes(sequences=int(sequences[row])), cache, int(ctx[row]))
        sized.append(priced.total_bytes if priced is not None else 0)
    return np.asarray(sized, dtype=np.int64)[inverse.reshape(-1)]


def _max_ctx(base: Scenario, cache, allowance_bytes, sequences: int):
    """As :func:`kvplan.plan.evaluation.evaluate`: the cache's max context, less what the buffers take."""
    kv_only = cache.max_ctx(allowance_bytes, sequences)
    if getattr(cache, "name", None) != "llama.cpp" or runtime_buffers(base, cache, 1) is None:
        return kv_only
    return max_ctx_with_buffers(base.with_changes(sequences=sequences), cache, allowance_bytes, kv_only)


def concat(parts: list[SweepColumns]) -> SweepColumns:
    """Join the columns of several groups, in order."""
    import numpy as np

    if len(parts) == 1:
        return parts[0]
    total = sum(len(p) for p in parts)
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
