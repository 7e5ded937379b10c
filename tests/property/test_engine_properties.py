"""Properties of the closed-form engine, over generated shapes and contexts."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kvplan import engine
from kvplan.plan import Scenario, evaluate
from kvplan.caches.ideal import cache_layout
from kvplan.profiles.spec import Device, Model

ctxs = st.integers(min_value=0, max_value=2_000_000)
bytes_per_token = st.integers(min_value=1, max_value=4_000_000)
windows = st.lists(st.tuples(st.integers(1, 200_000), st.integers(1, 2_000_000)), max_size=3)


@st.composite
def models(draw):
    heads = draw(st.sampled_from([1, 2, 4, 8, 16, 32, 64]))
    kv_heads = draw(st.sampled_from([d for d in (1, 2, 4, 8, 16, 32, 64) if heads % d == 0]))
    layers = draw(st.integers(1, 96))
    pattern = draw(st.sampled_from(["all", "alternating", "5:1", "3:1"]))
    window = draw(st.one_of(st.none(), st.integers(16, 32768)))
    head_dim = draw(st.sampled_from([64, 80, 96, 128, 256]))
    floor = layers * (heads * head_dim) ** 2  # a count the shape can hold: its attention output projections at least
    return Model(name="m", params=draw(st.integers(max(10**6, floor), max(10**11, floor))), layers=layers,
                 attention_heads=heads, kv_heads=kv_heads, head_dim=head_dim,
                 sliding_window=window, sliding_window_pattern=pattern if window else "all",
                 weight_bits=draw(st.sampled_from([2, 3, 4, 4.5, 8, 16])),
                 kv_bits=draw(st.sampled_from([4, 8, 16])))


DEVICE = Device(name="d", ram="16 GB", os_reserve="4 GB", memory_bandwidth="100 GB/s", flash_read="2 GB/s",
                bandwidth_efficiency=0.7)


@given(ctxs, ctxs, bytes_per_token)
def test_kv_is_linear_in_ctx_for_global_layers(a, b, bpt):
    assert engine.kv_bytes(a + b, bpt) == engine.kv_bytes(a, bpt) + engine.kv_bytes(b, bpt)


@given(st.integers(1, 100_000), st.integers(0, 10**6), bytes_per_token)
def test_kv_is_flat_past_a_window(window, extra, bpt):
    assert engine.kv_bytes(window + extra, 0, [(window, bpt)]) == engine.kv_bytes(window, 0, [(window, bpt)])


@given(models(), st.integers(0, 100_000), st.integers(0, 100_000), st.integers(1, 8))
def test_total_is_monotone_in_ctx_and_sequences(model, a, b, n):
    lo, hi = sorted((a, b))
    e_lo = evaluate(Scenario(DEVICE, model, lo, sequences=n))
    e_hi = evaluate(Scenario(DEVICE, model, hi, sequences=n))
    assert e_lo.total_bytes <= e_hi.total_bytes
    assert e_hi.total_bytes <= evaluate(Scenario(DEVICE, model, hi, sequences=n + 1)).total_bytes


@given(models(), st.integers(0, 100_000), st.integers(1, 16))
def test_kv_is_linear_in_sequences(model, ctx, n):
    one = evaluate(Scenario(DEVICE, model, ctx)).kv_bytes
    assert evaluate(Scenario(DEVICE, model, ctx, sequences=n)).kv_bytes == n * one


@given(st.floats(1e9, 1e12), st.integers(10**6, 10**11), st.floats(1.5, 10))
def test_tokens_per_s_is_inversely_proportional_to_bytes_per_token(bandwidth, step, factor):
    a = engine.decode_tokens_per_s(bandwidth, step)
    b = engine.decode_tokens_per_s(bandwidth, step * factor)
    assert math.isclose(a / b, factor, rel_tol=1e-12)


@given(models())
def test_gqa_with_kv_heads_equal_to_heads_is_mha(model):
    # every layer global, so the textbook formula applies; the byte width comes from the drawn kv_bits
    mha = model.model_copy(update={"kv_heads": model.attention_heads, "sliding_window": None})
    bytes_per_value = model.kv_bits / 8
    assert cache_layout(mha).bytes_per_token == engine.kv_bytes_per_token(
        model.layers, model.attention_heads, model.head_dim, bytes_per_value)


@given(st.integers(0, 10**13), bytes_per_token, windows)
def test_max_ctx_is_exact(allowance, global_bpt, wins):
    c = engine.max_context_tokens(allowance, global_bpt, wins)
    assert engine.kv_bytes(c, global_bpt, wins) <= allowance
    assert engine.kv_bytes(c + 1, global_bpt, wins) > allowance


@settings(max_examples=50)
@given(st.lists(st.integers(-10**6, 10**13), min_size=1, max_size=30), bytes_per_token, windows)
def test_max_ctx_scalar_equals_array_element(allowances, global_bpt, wins):
    array = engine.max_context_tokens(np.array(allowances, dtype=np.float64), global_bpt, wins)
    for i, a in enumerate(allowances):
        assert array[i] == engine.max_context_tokens(a, global_bpt, wins)


@settings(max_examples=50)
@given(st.lists(ctxs, min_size=1, max_size=30), bytes_per_token, windows)
def test_kv_bytes_scalar_equals_array_element(ctx_list, global_bpt, wins):
    array = engine.kv_bytes(np.array(ctx_list, dtype=np.int64), global_bpt, wins)
    for i, c in enumerate(ctx_list):
        assert array[i] == engine.kv_bytes(c, global_bpt, wins)
    headroom = 6_000_000_000 - array
    codes = engine.verdict_code(headroom, 6_000_000_000)
    for i, c in enumerate(ctx_list):
        assert codes[i] == engine.verdict_code(6_000_000_000 - engine.kv_bytes(c, global_bpt, wins), 6_000_000_000)


@given(st.integers(1, 50_000), bytes_per_token, windows)
def test_sum_over_generation_matches_a_loop(n, global_bpt, wins):
    n = n % 3000 + 1
    expected = sum(engine.kv_bytes(k, global_bpt, wins) for k in range(1, n + 1))
    assert engine.kv_bytes_sum_over_generation(n, global_bpt, wins) == expected
