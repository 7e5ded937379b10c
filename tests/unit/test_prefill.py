"""Prefill FLOPs and time: 2·P·T + 2·L·T²·H·d over compute, on scalars and arrays."""

from __future__ import annotations

import numpy as np
import pytest

from kvplan.engine.prefill import prefill_compute_s, prefill_flops, prefill_memory_s


def test_reference_7b_thousand_tokens():
    # matmuls: 2 · 7e9 · 1,000 = 1.4e13; attention: 2 · 32 layers · 1,000² · 32 heads · 128 = 64 · 4,096 · 1e6 = 262,144,000,000
    flops = prefill_flops(1000, 7_000_000_000, 32, 32, 128)
    assert flops == 14_000_000_000_000 + 262_144_000_000
    # at 1 TFLOP/s: 14,262,144,000,000 / 1e12 = 14.262144 s
    assert prefill_compute_s(flops, 1e12) == pytest.approx(14.262144)
    # at 60 % of it: 14.262144 / 0.6 = 23.77024 s
    assert prefill_compute_s(flops, 1e12, 0.6) == pytest.approx(23.77024)


def test_without_attention_term_is_two_flops_per_param_per_token():
    # 2 · 1e9 · 512 = 1.024e12
    assert prefill_flops(512, 1_000_000_000) == 1_024_000_000_000


def test_array_matches_scalars():
    tokens = np.array([1, 512, 4096, 1_000_000], dtype=np.int64)
    got = prefill_flops(tokens, 6_740_000_000, 32, 32, 128)
    assert got.tolist() == [prefill_flops(int(t), 6_740_000_000, 32, 32, 128) for t in tokens]


def test_the_memory_floor_reads_the_weights_once_per_micro_batch():
    # one micro-batch of 512 tokens reads 4e9 B at 100 GB/s: 4e9 / 1e11 = 0.04 s
    assert prefill_memory_s(512, 4e9, 100e9) == pytest.approx(0.04)
    # 1,025 tokens in micro-batches of 512 = 3 passes → 0.12 s; at 80 % of the bandwidth 0.15 s
    assert prefill_memory_s(1025, 4e9, 100e9, n_ubatch=512) == pytest.approx(0.12)
    assert prefill_memory_s(1025, 4e9, 100e9, 0.8, 512) == pytest.approx(0.15)
    tokens = np.array([1, 512, 513, 1025])
    assert prefill_memory_s(tokens, 4e9, 100e9).tolist() == pytest.approx([0.04, 0.04, 0.08, 0.12])
