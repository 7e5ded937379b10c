"""kvplan.engine.apple_gpu: MLX-LM's 0.9 × working-set test and ggml's strictly-greater test, by hand."""

from __future__ import annotations

import numpy as np

from kvplan.engine.apple_gpu import MIB, metal_over_working_set, mlx_warns_near_working_set


def test_mlx_warns_above_nine_tenths():
    # working set 10,000 MiB = 10,485,760,000 B: 0.9 × = 9,437,184,000 B
    ws = 10_000 * MIB
    assert not mlx_warns_near_working_set(9_437_184_000 - 1_000, ws)
    assert mlx_warns_near_working_set(9_437_184_000 + 1_000, ws)
    assert mlx_warns_near_working_set(np.array([9e9, 1e10]), ws).tolist() == [False, True]


def test_ggml_warns_only_past_the_working_set():
    ws = 5_726_630_052  # the 8 GB M2's 5461.34 MiB
    assert not metal_over_working_set(ws, ws)
    assert metal_over_working_set(ws + 1, ws)
