"""Resident parts beside the model (kvplan.plan.parts): in the total, in a decode step's bytes, in the max-context
search, in the evaluation, check's table and JSON, sweep's and compare's columns — and no trace without parts.

The contract's reference profiles: ref-phone (8 GB − 2 GB = 6e9 B budget, 50 GB/s at 100 %, no latency, no
overhead) and ref-7b (1.75e9 B of weights stated, 32 × 32 × 128 f16: 2 · 32 · 32 · 128 · 2 = 524,288 B/token).
Two parts: ``fixed`` holds 500,000,000 B and a step reads 100,000,000 B of it; ``growing`` holds (and a step
reads) 32,768 B per token per sequence (a 1B draft's f16 cache: 2 · 16 layers · 8 KV heads · 64 · 2 B).
"""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

from kvplan import sweep
from kvplan.plan import Scenario, evaluate
from kvplan.plan import core, parts
from kvplan.plan.basis import basis_of
from kvplan.plan.evaluation import evaluation_of
from kvplan.profiles.catalog import Catalog
from tests.conftest import REF_7B, REF_PHONE

FIXED = 500_000_000
FIXED_READ = 100_000_000
PER_TOKEN = 32_768


def _growing(ctx, sequences):
    return ctx * sequences * PER_TOKEN


def _parts(s, pricer):
    return (parts.ResidentPart("draft_weights", FIXED, FIXED_READ, values=(("model", "test-draft"),
                                                                          ("weights", "4-bit"))),
            parts.ResidentPart("draft_kv", _growing, _growing, values=(("model", "test-draft"),
                                                                     ("kv_format", "f16"),
                                                                     ("ctx_tokens", s.ctx))))


@pytest.fixture
def with_parts(monkeypatch):
    module = types.ModuleType("kvplan_test_parts")
    module.sources = _parts
    monkeypatch.setitem(sys.modules, "kvplan_test_parts", module)
    monkeypatch.setattr(parts, "PART_SOURCES", ("kvplan_test_parts:sources",))


def _profiles():
    cat = Catalog()
    return cat.device(str(REF_PHONE)).profile, cat.model(str(REF_7B)).profile


def test_no_parts_no_change():
    device, model = _profiles()
    ev = evaluate(Scenario(device, model, 4096))
    assert ev.parts == () and ev.parts_bytes == 0
    assert ev.total_bytes == 1_750_000_000 + 4096 * 524_288
    assert ev.max_ctx == 8106  # ⌊4.25e9 / 524,288⌋


def test_parts_in_total_decode_and_max_ctx(with_parts):
    device, model = _profiles()
    ev = evaluate(Scenario(device, model, 4096, target_tokens_per_s=10.0))
    assert [p.key for p in ev.parts] == ["draft_weights", "draft_kv"]
    assert ev.part("draft_kv").bytes == 134_217_728  # 4,096 · 32,768
    assert ev.part("draft_weights").read_bytes == FIXED_READ
    # 1.75e9 + 4,096 · 524,288 + 5e8 + 4,096 · 32,768 = 1.75e9 + 2,147,483,648 + 5e8 + 134,217,728
    assert ev.total_bytes == 4_531_701_376
    assert ev.parts_bytes == 634_217_728
    assert ev.headroom_bytes == 6_000_000_000 - 4_531_701_376
    # a step reads 1.75e9 + 2,147,483,648 + 1e8 + 134,217,728 = 4,131,701,376 B at 50 GB/s
    assert ev.bytes_per_step == 4_131_701_376
    assert ev.decode_tokens_per_s == pytest.approx(50e9 / 4_131_701_376, rel=1e-12)
    # ⌊(6e9 − 1.75e9 − 5e8) / (524,288 + 32,768)⌋ = ⌊3.75e9 / 557,056⌋ = 6,731 (6,731 · 557,056 = 3,749,543,936;
    # 6,732 · 557,056 = 3,750,100,992 > 3.75e9)
    assert ev.max_ctx == 6731
    # at ≥ 10 tok/s a step may read 5e9 B: less 1.75e9 + 1e8 leaves 3.15e9 for both caches → ⌊3.15e9 / 557,056⌋
    # = 5,654 (5,654 · 557,056 = 3,149,594,624; 5,655 · 557,056 = 3,150,151,680)
    assert ev.max_ctx_at_target == 5654


def test_parts_with_sequences(with_parts):
    device, model = _profiles()
    ev = evaluate(Scenario(device, model, 1024, sequences=2))
    assert ev.part("draft_kv").bytes == 2 * 1024 * PER_TOKEN  # 67,108,864
    # per sequence count: ⌊3.75e9 / (2 · 557,056)⌋ = ⌊3,365.9⌋ = 3,365
    assert ev.max_ctx == 3365


def test_sweep_rows_equal_the_evaluation(with_parts):
    device, model = _profiles()
    base = Scenario(device, model, 4096)
    ctx, seq = sweep.grid([1, 1024, 4096, 6731, 6732], [1, 2])
    cols = sweep.evaluate_group(base, ctx, seq)
    for i, (c, n) in enumerate(zip(ctx, seq)):
        ev = evaluate(Scenario(device, model, int(c), sequences=int(n)))
        assert int(cols.total_bytes[i]) == ev.total_bytes
        assert int(cols.parts_bytes[i]) == ev.parts_bytes
        assert float(cols.decode_tokens_per_s[i]) == ev.decode_tokens_per_s
        assert int(cols.max_ctx[i]) == ev.max_ctx
    # 6,732 tokens is over: 1.75e9 + 5e8 + 6,732 · 557,056 = 6,000,100,992 > 6e9
    assert int(cols.verdict[4]) == 2 and int(cols.total_bytes[4]) == 6_000_100_992


def test_without_parts_sweep_has_no_parts_column():
    device, model = _profiles()
    ctx, seq = sweep.grid([1024], [1])
    assert sweep.evaluate_group(Scenario(device, model, 1024), ctx, seq).parts_bytes is None


def test_llamacpp_search_counts_growing_parts(with_parts):
    device, model = _profiles()
    b = basis_of(Scenario(device, model, 4096, runtime="llama.cpp"))
    ev = evaluation_of(b)
    m = ev.max_ctx
    assert m is not None
    # the answer is the last -c whose whole total (cache, buffers, process, parts) fits, one more does not
    at = core.memory_at(b, np.array([m, m + 1]), 1)
    assert int(at.headroom_bytes[0]) >= 0 > int(at.headroom_bytes[1])
    assert int(at.part_bytes[1][0]) == m * PER_TOKEN


def test_a_part_is_checked():
    with pytest.raises(Exception, match="snake_case"):
        parts.ResidentPart("Draft KV", 1)
    with pytest.raises(Exception, match="memory"):
        parts.ResidentPart("draft_kv", 1, memory="vram")
    with pytest.raises(Exception, match="bytes"):
        parts.ResidentPart("draft_kv", -1)


def test_check_rows_and_json(with_parts, run, run_json):
    args = ("check", "--device", str(REF_PHONE), "--model", str(REF_7B), "--ctx", "4096")
    out = run(*args).stdout
    assert "draft model test-draft: weights (4-bit)" in out and "500,000,000" in out
    assert "draft model test-draft: KV cache (f16, 4,096 tokens)" in out and "134,217,728" in out
    code, doc = run_json(*args)
    assert doc["memory"]["parts"] == {
        "draft_weights": {"bytes": FIXED, "read_bytes_per_step": FIXED_READ, "memory": "ram", "model": "test-draft",
                          "weights": "4-bit"},
        "draft_kv": {"bytes": 134_217_728, "read_bytes_per_step": 134_217_728, "memory": "ram",
                     "model": "test-draft", "kv_format": "f16", "ctx_tokens": 4096}}
    assert doc["memory"]["parts_bytes"] == 634_217_728
    assert doc["memory"]["total_bytes"] == 4_531_701_376


def test_check_json_without_parts_has_no_parts_key(run_json):
    _, doc = run_json("check", "--device", str(REF_PHONE), "--model", str(REF_7B), "--ctx", "4096")
    assert "parts" not in doc["memory"] and "parts_bytes" not in doc["memory"]


def test_compare_and_sweep_show_a_parts_column(with_parts, run):
    out = run("compare", "--device", str(REF_PHONE), "--model", str(REF_7B), "--ctx", "4096",
              "--format", "csv").stdout
    header, row = out.splitlines()[:2]
    assert "parts_bytes" in header.split(",")
    assert dict(zip(header.split(","), row.split(",")))["parts_bytes"] == "634217728"
    table = run("sweep", "--device", str(REF_PHONE), "--model", str(REF_7B), "--ctx", "4096").stdout
    assert "parts" in table and "634" in table


def test_memory_curve_and_plot_band(with_parts):
    from kvplan.curves import memory_curves
    from kvplan.plots.axes import new_figure
    from kvplan.plots.memory import draw_memory

    device, model = _profiles()
    curves = memory_curves(Scenario(device, model, 4096), ctx_max_tokens=8192)
    # 5e8 + ctx · 32,768 at every context of the axis, in the total
    assert np.array_equal(curves.parts_bytes, FIXED + curves.ctx_tokens * PER_TOKEN)
    assert np.array_equal(curves.total_bytes, 1_750_000_000 + curves.ctx_tokens * (524_288 + PER_TOKEN) + FIXED)
    ax = new_figure(6, 4).add_subplot()
    draw_memory(ax, curves)
    assert "parts" in {p.get_gid() for p in ax.collections}
