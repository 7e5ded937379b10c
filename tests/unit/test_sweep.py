"""The vectorized sweep equals plan.evaluate() point by point, exactly, and matches hand figures."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kvplan import sweep
from kvplan.profiles.catalog import Catalog
from kvplan.plan import Knobs, build_scenario
from kvplan.engine import VERDICTS
from kvplan.plan import evaluate
from kvplan.render.labels import column_labels

DATA = Path(__file__).parents[1] / "data"
REF_PHONE = str(DATA / "profiles" / "ref-phone.yaml")
REF_7B = str(DATA / "profiles" / "ref-7b.yaml")
COMPUTE_PHONE = str(DATA / "planning" / "compute-phone.yaml")
WINDOWED = str(DATA / "planning" / "windowed-1b.yaml")
POLICY = str(Path(__file__).parents[2] / "examples" / "kv-policy.yaml")


def _profiles(device, model):
    cat = Catalog()
    return cat.device(device).profile, cat.model(model).profile


# pixel8 × 7b: a model with a trained context (max_context 4,096), and 16-bit weights that leave no room at all
@pytest.mark.parametrize("device, model", [(REF_PHONE, REF_7B), (COMPUTE_PHONE, WINDOWED), (COMPUTE_PHONE, REF_7B),
                                           ("pixel8", "7b")])
@pytest.mark.parametrize("knobs", [Knobs(), Knobs(kv_bits=8, pinned_prefix_tokens=512),
                                   Knobs(k_bits=8, v_bits=4, weight_bits=3.5, margin_fraction=0.2),
                                   Knobs(sliding_window=1024, os_reserve_bytes=3_000_000_000),
                                   Knobs(kv_type="q8_0", target_tokens_per_s=20.0),
                                   Knobs(k_type="q4_0", v_bits=4, kv_group_size=32, target_tokens_per_s=3.0),
                                   Knobs(runtime="transformers", target_tokens_per_s=8.0),
                                   Knobs(kv_policy=POLICY, target_tokens_per_s=8.0),
                                   Knobs(weight_bits=16, target_tokens_per_s=1.0)])
def test_every_column_equals_scalar_evaluate(device, model, knobs):
    d, m = _profiles(device, model)
    base = build_scenario(d, m, 1, knobs)
    ctx, seq = sweep.grid([1, 511, 512, 513, 4096, 5000, 100_000], [1, 2, 3])
    cols = sweep.evaluate_group(base, ctx, seq)
    assert len(cols) == 21
    assert ("max_ctx_at_target" in cols.columns()) == bool(knobs.target_tokens_per_s)
    for i in range(len(cols)):
        ev = evaluate(base.with_changes(ctx=int(ctx[i]), sequences=int(seq[i])))
        s = ev.scenario
        expected = {
            # the runtime spec and the policy's name are facts (kvplan.render.labels words them)
            "device": d.name, "model": m.name, "runtime": s.runtime,
            "kv_policy": "window4k-fp16-history20-k4v3" if knobs.kv_policy else None,
            "ctx": s.ctx, "sequences": s.sequences,
            "pinned_prefix_tokens": s.pinned_prefix_tokens, "weight_bits": ev.weight_bits,
            "k_format": ev.cache.k_format.name, "v_format": ev.cache.v_format.name,
            "k_bits": ev.cache.k_format.bits, "v_bits": ev.cache.v_format.bits,
            "kv_bytes_per_token": ev.kv_bytes_per_token, "kv_bytes": ev.kv_bytes, "kv_peak_bytes": ev.kv_peak_bytes,
            "pinned_prefix_bytes": ev.pinned_prefix_bytes, "weights_bytes": ev.weights_bytes,
            "overhead_bytes": ev.overhead_bytes, "total_bytes": ev.total_bytes, "budget_bytes": ev.budget_bytes,
            "headroom_bytes": ev.headroom_bytes, "verdict": ev.verdict,
            "decode_tokens_per_s": ev.decode_tokens_per_s,
            "max_ctx": sweep.NO_MAX_CTX if ev.max_ctx is None else ev.max_ctx,
            "prefill_s": ev.prefill_s,
            "buffers_bytes": ev.buffers_bytes,
            "weight_type": (ev.weights_pricing and (s.weight_type or m.weight_type)) or "",
            "max_ctx_limited_by": ev.max_ctx_limited_by,
            "max_ctx_trained": sweep.NO_MAX_CTX if ev.max_ctx_trained is None else ev.max_ctx_trained,
        }
        if knobs.target_tokens_per_s:
            expected["max_ctx_at_target"] = sweep.NO_MAX_CTX if ev.max_ctx_at_target is None else ev.max_ctx_at_target
        assert set(expected) == set(cols.columns())
        labels = {"runtime": "ideal" if knobs.runtime is None else knobs.runtime,
                  "kv_policy": "window4k-fp16-history20-k4v3" if knobs.kv_policy else "none"}
        for name, want in labels.items():  # what every writer prints for them
            assert column_labels(name, getattr(cols, name))[i] == want, (name, i)
        for name, want in expected.items():
            got = getattr(cols, name)[i]
            if name == "verdict":
                got = VERDICTS[int(got)]
            elif name == "prefill_s" and want is None:
                assert np.isnan(got)
                continue
            assert got == want, (name, i, got, want)


def test_reference_figures_in_the_grid():
    d, m = _profiles(REF_PHONE, REF_7B)
    ctx, seq = sweep.grid([4096, 8192], [1, 2])
    cols = sweep.evaluate_group(build_scenario(d, m, 1), ctx, seq)
    # 524,288 B/token: 4,096 → 2,147,483,648 B; 8,192 → 4,294,967,296 B; two sequences double it
    assert cols.kv_bytes.tolist() == [2_147_483_648, 4_294_967_296, 4_294_967_296, 8_589_934_592]
    # weights 1,750,000,000 + cache; budget 8e9 − 2e9 = 6e9
    assert cols.total_bytes.tolist() == [3_897_483_648, 6_044_967_296, 6_044_967_296, 10_339_934_592]
    assert cols.headroom_bytes[0] == 6_000_000_000 - 3_897_483_648
    assert [VERDICTS[c].value for c in cols.verdict] == ["fit", "over", "over", "over"]
    # max ctx: ⌊4.25e9 / 524,288⌋ = 8,106 for one sequence; ⌊4.25e9 / 2 / 524,288⌋ = 4,053 for two
    assert cols.max_ctx.tolist() == [8106, 8106, 4053, 4053]


def test_what_limits_max_ctx_and_the_trained_context():
    # ref-7b under a 1,024-token window on every layer: one sequence's cache stops at 1,024 × 524,288 =
    # 536,870,912 B, below the 6e9 − 1.75e9 = 4.25e9 B allowance → unbounded (no max_ctx); 10,000 sequences need
    # 10,000 × 524,288 = 5,242,880,000 B for a single token each, more than 4.25e9 → max_ctx 0, set by memory
    d, m = _profiles(REF_PHONE, REF_7B)
    cols = sweep.evaluate_group(build_scenario(d, m, 1, Knobs(sliding_window=1024)), *sweep.grid([1, 4096], [1, 10_000]))
    assert cols.max_ctx_limited_by.tolist() == ["unbounded", "unbounded", "memory", "memory"]
    assert cols.max_ctx.tolist() == [sweep.NO_MAX_CTX, sweep.NO_MAX_CTX, 0, 0]
    assert cols.max_ctx_trained.tolist() == [sweep.NO_MAX_CTX] * 4  # ref-7b gives no max_context
    # llama-2-7b at 16 bits: 6.74e9 × 2 = 13,480,000,000 B of weights over pixel8's 6e9 budget → weights;
    # its profile's max_context is 4,096
    d, m = _profiles("pixel8", "7b")
    cols = sweep.evaluate_group(build_scenario(d, m, 1, Knobs(weight_bits=16)), *sweep.grid([1, 4096], [1]))
    assert cols.max_ctx_limited_by.tolist() == ["weights"] * 2 and cols.max_ctx.tolist() == [sweep.NO_MAX_CTX] * 2
    assert cols.max_ctx_trained.tolist() == [4096, 4096]


def test_concat_and_take_keep_columns_aligned():
    d, m = _profiles(REF_PHONE, REF_7B)
    a = sweep.evaluate_group(build_scenario(d, m, 1), *sweep.grid([1, 2], [1]))
    b = sweep.evaluate_group(build_scenario(d, m, 1, Knobs(kv_bits=8)), *sweep.grid([3], [1]))
    both = sweep.concat([a, b])
    assert both.ctx.tolist() == [1, 2, 3] and both.k_bits.tolist() == [16, 16, 8]
    assert both.take(slice(1, 3)).kv_bytes.tolist() == [2 * 524_288, 3 * 262_144]


def test_a_grid_beyond_exact_integers_is_refused():
    # 10^9 tokens · 10^6 sequences · 524,288 B = 5.2 · 10^20 bytes: far beyond 2^53, so int64/float64
    # arrays would print wrong "exact" bytes; the sweep refuses instead of wrapping around.
    import numpy as np
    import pytest

    from kvplan.profiles.catalog import Catalog
    from kvplan.errors import UsageError
    from kvplan.plan import Scenario
    from kvplan.sweep import evaluate_group

    cat = Catalog()
    base = Scenario(cat.device("pixel8").profile, cat.model("7b").profile, 1)
    with pytest.raises(UsageError, match="beyond the 9,007,199,254,740,992"):
        evaluate_group(base, np.array([10**9]), np.array([10**6]))
    # just below the limit it is exact: 2^53 // 524,288 − 10^5 tokens leaves room for the 3.37 GB of weights
    ctx = 2**53 // 524_288 - 10**5
    cols = evaluate_group(base, np.array([ctx]), np.array([1]))
    assert int(cols.kv_bytes[0]) == ctx * 524_288


def test_groups_of_different_runtimes_keep_their_labels_when_joined():
    from kvplan.render.sweep import json_rows

    d, m = _profiles(REF_PHONE, REF_7B)
    ctx, seq = sweep.grid([1024, 4096], [1])
    ideal, llama = (sweep.evaluate_group(build_scenario(d, m, 1, Knobs(runtime=r)), ctx, seq)
                    for r in (None, {"name": "llama.cpp", "kv_unified": True}))
    joined = sweep.concat([ideal, llama])
    assert joined.runtime.strides != (0,)  # two runtimes: no longer one value for every row
    assert column_labels("runtime", joined.runtime).tolist() == ["ideal", "ideal", "llama.cpp unified",
                                                                  "llama.cpp unified"]
    assert [r["runtime"] for r in json_rows(joined)] == ["ideal", "ideal", "llama.cpp unified", "llama.cpp unified"]
    assert {r["kv_policy"] for r in json_rows(joined)} == {"none"}
