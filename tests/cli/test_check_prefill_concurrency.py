"""check: concurrency and the pinned prefix on their own memory lines; prefill when compute is known."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import REF_7B, REF_PHONE

COMPUTE_PHONE = Path(__file__).parents[1] / "data" / "planning" / "compute-phone.yaml"


def test_sequences_and_pinned_prefix_each_have_a_line(run):
    out = run("check", "-d", REF_PHONE, "-m", REF_7B, "-c", "2k", "-n", "3", "--pinned-prefix", "512").stdout
    # one 2k cache: 2,048 × 524,288 = 1,073,741,824 B; two more: 2,147,483,648 B; prefix 512 × 524,288 = 268,435,456 B
    lines = {line.split("  ")[0]: line for line in out.splitlines()}
    assert "1,073,741,824 B" in lines["KV cache (f16, 2,048 tokens, 1 sequence)"]
    assert "2,147,483,648 B" in lines["KV cache of 2 more concurrent sequences"]
    assert "268,435,456 B" in lines["pinned prefix (512 tokens)"]


def test_prefill_keys(run_json):
    _, doc = run_json("check", "-d", COMPUTE_PHONE, "-m", REF_7B, "-c", "1000", "--pinned-prefix", "1000")
    # 2 · 7e9 · 1,000 + 2 · 32 · 1,000² · 32 · 128 = 14,262,144,000,000 FLOP at 1e12 FLOP/s = 14.262144 s
    assert abs(doc["prefill_s"] - 14.262144) < 1e-9
    assert abs(doc["pinned_prefix_recompute_s"] - 14.262144) < 1e-9
    _, doc = run_json("check", "-d", REF_PHONE, "-m", REF_7B, "-c", "1000")
    assert doc["prefill_s"] is None and doc["pinned_prefix_recompute_s"] is None


def test_prefill_in_speed_table(run):
    out = run("check", "-d", COMPUTE_PHONE, "-m", REF_7B, "-c", "1000", "--pinned-prefix", "1000").stdout
    assert "time to first token: prefill 1,000 tokens" in out and "14.26 s" in out
    # compute 14.262144 s (above) beats the floor: ⌈1,000 / 512⌉ = 2 micro-batches × 1.75e9 B / (50e9 · 0.5) = 140 ms
    assert "compute: FLOPs at 1 TFLOP/s (memory floor 140 ms)" in out
    assert "recompute the 1,000-token pinned prefix instead of keeping it" in out
