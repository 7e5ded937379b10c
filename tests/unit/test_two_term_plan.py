"""The two-term decode model (bytes / effective bandwidth + decode_latency) everywhere a rate is reported,
and prefill bounded below by the weights read once per micro-batch: evaluate, sweep, check.

Device (written below): 50 GB/s at efficiency 0.5 (B = 25e9 B/s effective), decode_latency 10 ms,
compute 1 TFLOP/s at compute_efficiency 0.5; the contract's reference 7B (1.75 GB of weights stated,
524,288 B of f16 cache per token); budget 8 GB − 2 GB = 6e9 B.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvplan import sweep
from kvplan.plan import Knobs, Scenario, build_scenario, evaluate
from kvplan.plan.evaluation import prefill_n_ubatch
from kvplan.profiles.catalog import Catalog

REF_7B = str(Path(__file__).parents[1] / "data" / "profiles" / "ref-7b.yaml")
DEVICE = """name: latency-phone
ram: 8 GB
os_reserve: 2 GB
memory_bandwidth: 50 GB/s
flash_read: 2 GB/s
bandwidth_efficiency: 0.5
decode_latency: 10 ms
compute: {compute}
compute_efficiency: 50%
"""


def _device(tmp_path, compute="1 TFLOP/s", name="latency-phone.yaml"):
    path = tmp_path / name
    path.write_text(DEVICE.format(compute=compute))
    return str(path)


def _profiles(device_path):
    cat = Catalog()
    return cat.device(device_path).profile, cat.model(REF_7B).profile


def test_decode_rate_mean_and_roofline(tmp_path):
    device, model = _profiles(_device(tmp_path))
    ev = evaluate(Scenario(device, model, 4096))
    # step = 1,750,000,000 + 4,096 · 524,288 = 3,897,483,648 B
    assert ev.bytes_per_step == 3_897_483_648
    # 1 / (3,897,483,648 / 25e9 + 0.010) = 25e9 / (3,897,483,648 + 250,000,000) = 6.027751… tok/s
    assert ev.decode_tokens_per_s == pytest.approx(25e9 / 4_147_483_648, rel=1e-12)
    assert ev.decode_tokens_per_s == pytest.approx(6.02775, abs=1e-5)
    # the roofline stays the bound: 100 % of 50 GB/s, no latency = 50e9 / 3,897,483,648 = 12.8288
    assert ev.decode_tokens_per_s_roofline == pytest.approx(12.8288, abs=1e-4)
    # the mean over a generation pays the latency on every step: 1/mean = 1/mean(latency 0) + 0.010 s
    no_latency = evaluate(Scenario(device.model_copy(update={"decode_latency": 0.0}), model, 4096))
    assert 1 / ev.mean_decode_tokens_per_s == pytest.approx(1 / no_latency.mean_decode_tokens_per_s + 0.010, rel=1e-12)
    # and without it the rate is the contract's pure bandwidth figure, 25e9 / 3,897,483,648 = 6.4144
    assert no_latency.decode_tokens_per_s == 25e9 / 3_897_483_648


def test_aggregate_rate_with_sequences(tmp_path):
    device, model = _profiles(_device(tmp_path))
    ev = evaluate(Scenario(device, model, 1024, sequences=4))
    # one step reads the weights once and four caches: 1.75e9 + 4 · 1,024 · 524,288 = 3,897,483,648 B, as above
    assert ev.bytes_per_step == 3_897_483_648
    assert ev.decode_tokens_per_s == pytest.approx(6.02775, abs=1e-5)  # per sequence
    assert ev.aggregate_decode_tokens_per_s == pytest.approx(4 * 6.02775, abs=4e-5)


def test_max_ctx_at_target_pays_the_latency(tmp_path):
    device, model = _profiles(_device(tmp_path))
    ev = evaluate(Scenario(device, model, 4096, target_tokens_per_s=5.0))
    # a step may stream 25e9 / 5 − 0.010 · 25e9 = 4.75e9 B; less 1.75e9 of weights = 3e9 B of cache
    # → ⌊3e9 / 524,288⌋ = 5,722 tokens (memory allows ⌊4.25e9 / 524,288⌋ = 8,106; without the latency
    # the target allows ⌊3.25e9 / 524,288⌋ = 6,198)
    assert ev.max_ctx == 8106
    assert ev.max_ctx_at_target == 5722
    # a target the latency alone misses (1 / 0.010 s = 100 tok/s at most): no context reaches it
    assert evaluate(Scenario(device, model, 4096, target_tokens_per_s=100.0)).max_ctx_at_target is None


def test_flash_streamed_rate_pays_the_latency(tmp_path):
    device, model = _profiles(_device(tmp_path))
    ev = evaluate(Scenario(device, model, 8192))
    # total 1.75e9 + 8,192 · 524,288 = 6,044,967,296 B: 44,967,296 over the 6e9 budget, streamed from flash
    assert ev.flash.overflow_bytes == 44_967_296
    # (6,044,967,296 − 44,967,296) / 25e9 + 44,967,296 / 2e9 + 0.010 = 0.24 + 0.022483648 + 0.010 = 0.272483648 s
    assert 1 / ev.flash.streamed_decode_tokens_per_s == pytest.approx(0.272483648, rel=1e-12)
    # against 6,044,967,296 / 25e9 + 0.010 = 0.25179869184 s in RAM: 1.0821× the time per token
    assert ev.flash.slowdown == pytest.approx(0.272483648 / 0.25179869184, rel=1e-12)


def test_prefill_compute_bound_with_efficiency(tmp_path):
    device, model = _profiles(_device(tmp_path))
    ev = evaluate(Scenario(device, model, 4096))
    # 2 · 7e9 · 4,096 + 2 · 32 · 4,096² · 32 · 128 = 57,344,000,000,000 + 4,398,046,511,104 = 61,742,046,511,104 FLOP
    # at 1e12 · 0.5 → 123.484093 s; the floor: ⌈4,096 / 512⌉ = 8 micro-batches · 1.75e9 / 25e9 = 0.56 s
    assert ev.prefill_compute_s == pytest.approx(61_742_046_511_104 / 0.5e12, rel=1e-12)
    assert ev.prefill_memory_s == pytest.approx(0.56, rel=1e-12)
    assert ev.prefill_s == ev.prefill_compute_s and ev.prefill_bound == "compute"
    assert ev.prefill_n_ubatch == 512


def test_prefill_memory_bound_and_llamacpp_ubatch(tmp_path):
    device, model = _profiles(_device(tmp_path, compute="1000 TFLOP/s"))
    ev = evaluate(Scenario(device, model, 512))
    # 2 · 7e9 · 512 + 2 · 32 · 512² · 32 · 128 = 7,168,000,000,000 + 68,719,476,736 = 7,236,719,476,736 FLOP
    # at 1e15 · 0.5 = 14.47 ms, under one micro-batch reading 1.75e9 B at 25e9 B/s = 70 ms
    assert ev.prefill_compute_s == pytest.approx(7_236_719_476_736 / 0.5e15, rel=1e-12)
    assert ev.prefill_s == pytest.approx(0.07, rel=1e-12) and ev.prefill_bound == "memory"
    # llama.cpp -ub 256 (capped at -b): ⌈512 / 256⌉ = 2 micro-batches → 140 ms
    s = Scenario(device, model, 512, runtime={"name": "llama.cpp", "ubatch": 256})
    assert prefill_n_ubatch(s) == 256
    assert prefill_n_ubatch(Scenario(device, model, 512, runtime={"name": "llama.cpp", "ubatch": 4096,
                                                                   "batch": 1024})) == 1024
    assert prefill_n_ubatch(Scenario(device, model, 512, runtime="transformers")) == 512


@pytest.mark.parametrize("knobs", [Knobs(), Knobs(target_tokens_per_s=5.0, pinned_prefix_tokens=256)])
def test_sweep_equals_evaluate_with_latency(tmp_path, knobs):
    device, model = _profiles(_device(tmp_path, compute="1000 TFLOP/s"))
    base = build_scenario(device, model, 1, knobs)
    ctx, seq = sweep.grid([1, 511, 512, 513, 4096, 9000], [1, 2])
    cols = sweep.evaluate_group(base, ctx, seq)
    for i in range(len(cols)):
        ev = evaluate(base.with_changes(ctx=int(ctx[i]), sequences=int(seq[i])))
        assert cols.decode_tokens_per_s[i] == ev.decode_tokens_per_s
        assert cols.prefill_s[i] == ev.prefill_s
        if knobs.target_tokens_per_s:
            want = sweep.NO_MAX_CTX if ev.max_ctx_at_target is None else ev.max_ctx_at_target
            assert cols.max_ctx_at_target[i] == want
    # the memory floor is in the sweep's prefill too: ⌈513 / 512⌉ = 2 micro-batches · 70 ms; ⌈9,000 / 512⌉ = 18 → 1.26 s
    assert (int(ctx[3]), int(ctx[5])) == (513, 9000)
    assert cols.prefill_s[3] == pytest.approx(0.14) and cols.prefill_s[5] == pytest.approx(1.26)


def test_check_table_and_json(run, tmp_path):
    device = _device(tmp_path)
    out = run("check", "--device", device, "--model", REF_7B, "--ctx", "1024", "-n", "4").stdout
    assert "fixed latency per decode step (device decode_latency)" in out and "10.00 ms" in out
    assert "decode per sequence at 1,024 tokens (50.0 % of 50.00 GB/s + 10.00 ms/step)" in out and "6.0 tok/s" in out
    # 4 · 6.02775 = 24.11 tok/s over the four sequences
    assert "decode, all 4 sequences together (one step reads the weights once)" in out and "24.1 tok/s" in out
    assert "compute: FLOPs at 50.0 % of 1 TFLOP/s" in out
    doc = json.loads(run("check", "--device", device, "--model", REF_7B, "--ctx", "1024", "-n", "4",
                         "--format", "json").stdout)
    assert doc["decode_latency_s"] == 0.010
    assert doc["aggregate_decode_tokens_per_s"] == pytest.approx(4 * doc["decode_tokens_per_s"])
    assert doc["prefill_bound"] == "compute" and doc["prefill_n_ubatch"] == 512
    assert doc["prefill_s"] == doc["prefill_compute_s"] > doc["prefill_memory_s"]
    one = run("check", "--device", device, "--model", REF_7B, "--ctx", "1024").stdout
    assert "all 1 sequences" not in one and "decode at 1,024 tokens" in one
