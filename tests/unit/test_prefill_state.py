"""Prefill FLOPs of a hybrid: only the layers that attend pay the T² term; the state layers add their scan,
linear in the prompt (kvplan.engine.state.state_flops_per_token)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, strategies as st

from kvplan.engine.prefill import prefill_flops, schedule_state_flops_per_token
from kvplan.engine.state import state_flops_per_token
from kvplan.plan.core import prefill_times_of
from kvplan.profiles.catalog import Catalog

_catalog = Catalog(fast=False)


def _profile(kind, name):
    return getattr(_catalog, kind)(name).profile


def test_one_layer_of_each_mixer_by_hand():
    # LFM2 short conv, 2,048 channels, kernel 3: 2 · 2,048 · 3 = 12,288 FLOP/token, no recurrent state
    assert state_flops_per_token("short_conv", 2048, 3, 0) == 12_288
    # Mamba2, Granite-4.0-H-Tiny's widths: 48 heads × 64 head_dim, 1 group, state 128, kernel 4:
    # conv 2 · (3,072 + 2 · 1 · 128 = 3,328) · 4 = 26,624; SSM 4 · 48 · 64 · 128 = 4 · 393,216 = 1,572,864
    assert state_flops_per_token("mamba2", 3328, 4, 48 * 64 * 128) == 26_624 + 1_572_864
    # Gated DeltaNet, Qwen3.5-2B: conv 2 · (2·16·128 + 16·128 = 6,144) · 4 = 49,152; delta rule 6 · 16 · 128 · 128
    # = 6 · 262,144 = 1,572,864
    assert state_flops_per_token("gated_deltanet", 6144, 4, 16 * 128 * 128) == 49_152 + 1_572_864


def test_qwen35_2b_prefill_counts_six_attending_layers_and_eighteen_scans():
    m = _profile("model", "qwen3.5-2b")
    assert m.schedule.attending_layers == 6
    # 18 Gated DeltaNet layers × 1,622,016 = 29,196,288 FLOP/token
    assert schedule_state_flops_per_token(m.schedule) == 18 * 1_622_016 == 29_196_288
    d = _profile("device", "macbook-air-m2-16gb")
    t = 32_768
    # 2 · 1,881,825,088 · 32,768 = 123,327,288,967,168 (projections)
    # + 2 · 6 · 32,768² · 8 · 256 = 26,388,279,066,624 (6 attention layers, 8 heads of 256)
    # + 29,196,288 · 32,768 = 956,703,965,184 (the scans)
    flops = 123_327_288_967_168 + 26_388_279_066_624 + 956_703_965_184
    assert prefill_flops(t, m.params, 6, 8, 256, 29_196_288) == flops
    compute_s, _ = prefill_times_of(d, m, t, 0)
    assert compute_s == pytest.approx(flops / (d.compute * d.compute_efficiency))


def test_a_dense_model_is_unchanged():
    m = _profile("model", "llama-3.2-1b")
    assert m.schedule.attending_layers == m.layers
    assert schedule_state_flops_per_token(m.schedule) == 0


@given(st.integers(1, 10**6), st.integers(1, 10**6))
def test_state_term_is_linear_in_the_prompt(t1, t2):
    # no T² part: the scans of t1 + t2 tokens cost the sum of each
    f = lambda t: prefill_flops(t, 0, 0, 0, 0, 29_196_288)  # noqa: E731
    assert f(t1 + t2) == f(t1) + f(t2)


def test_arrays_equal_scalars():
    tokens = np.array([1, 512, 32_768], dtype=np.int64)
    got = prefill_flops(tokens, 1_881_825_088, 6, 8, 256, 29_196_288)
    assert got.tolist() == [prefill_flops(int(x), 1_881_825_088, 6, 8, 256, 29_196_288) for x in tokens]
