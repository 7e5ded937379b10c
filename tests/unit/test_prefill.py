"""Prefill FLOPs and time: 2·P·T + 2·L·T²·H·d over compute, on scalars and arrays."""

from __future__ import annotations

import numpy as np
import pytest

from kvplan.engine.prefill import prefill_flops, prefill_s


def test_reference_7b_thousand_tokens():
    # matmuls: 2 · 7e9 · 1,000 = 1.4e13; attention: 2 · 32 layers · 1,000² · 32 heads · 128 = 64 · 4,096 · 1e6 = 262,144,000,000
    flops = prefill_flops(1000, 7_000_000_000, 32, 32, 128)
    assert flops == 14_000_000_000_000 + 262_144_000_000
    # at 1 TFLOP/s: 14,262,144,000,000 / 1e12 = 14.262144 s
    assert prefill_s(flops, 1e12) == pytest.approx(14.262144)


def test_without_attention_term_is_two_flops_per_param_per_token():
    # 2 · 1e9 · 512 = 1.024e12
    assert prefill_flops(512, 1_000_000_000) == 1_024_000_000_000


def test_array_matches_scalars():
    tokens = np.array([1, 512, 4096, 1_000_000], dtype=np.int64)
    got = prefill_flops(tokens, 6_740_000_000, 32, 32, 128)
    assert got.tolist() == [prefill_flops(int(t), 6_740_000_000, 32, 32, 128) for t in tokens]
