"""The ideal cache priced from a model's schedule against the textbook formula (hypothesis)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kvplan.caches.ideal import cache_layout
from kvplan.engine.formats import format_from_bits
from kvplan.profiles.spec import Model

BYTES = {16: 2, 8: 1, 32: 4}  # bytes per value of the plain formats


def _model(layers, heads, kv_heads, head_dim, window=None, pattern="all"):
    # a parameter count the shape can hold: at least its attention output projections (layers × width²)
    params = max(10**9, layers * (heads * head_dim) ** 2)
    return Model(name="m", params=params, layers=layers, attention_heads=heads, kv_heads=kv_heads,
                 head_dim=head_dim, sliding_window=window, sliding_window_pattern=pattern)


uniform = st.tuples(st.integers(1, 128), st.sampled_from([1, 2, 4, 8, 16, 32, 64]), st.sampled_from([1, 2, 4, 8]),
                    st.sampled_from([64, 80, 96, 128, 256]), st.sampled_from([16, 8, 32]))


@settings(max_examples=200, deadline=None)
@given(shape=uniform, ctx=st.integers(0, 10**6), sequences=st.integers(1, 16))
def test_uniform_model_is_the_textbook_formula(shape, ctx, sequences):
    layers, heads, group, head_dim, bits = shape
    kv_heads = max(heads // group, 1)
    fmt = format_from_bits(bits)
    layout = cache_layout(_model(layers, heads, kv_heads, head_dim), fmt, fmt)
    # textbook: 2 (K and V) · L · n_kv · d · bytes per value · ctx, times the sequences
    assert layout.kv_bytes(ctx, sequences) == 2 * layers * kv_heads * head_dim * BYTES[bits] * ctx * sequences
    assert layout.kv_bytes(ctx, sequences) == sequences * layout.kv_bytes(ctx, 1)  # linear in sequences


@settings(max_examples=100, deadline=None)
@given(shape=uniform, ctx=st.integers(1, 10**6))
def test_gqa_with_as_many_kv_heads_as_heads_is_mha(shape, ctx):
    layers, heads, _, head_dim, bits = shape
    fmt = format_from_bits(bits)
    gqa = cache_layout(_model(layers, heads, heads, head_dim), fmt, fmt)
    # MHA: every attention head has its own K and V, 2 · L · H · d · bytes per token
    assert gqa.kv_bytes(ctx) == 2 * layers * heads * head_dim * BYTES[bits] * ctx


@settings(max_examples=200, deadline=None)
@given(shape=uniform, window=st.integers(1, 50_000), pattern=st.sampled_from(["all", "alternating", "5:1", "3:1"]),
       ctx=st.integers(0, 200_000), step=st.integers(1, 10_000), sequences=st.integers(1, 8))
def test_kv_bytes_are_monotone_in_ctx_and_bounded_by_the_global_formula(shape, window, pattern, ctx, step, sequences):
    layers, heads, group, head_dim, bits = shape
    kv_heads = max(heads // group, 1)
    fmt = format_from_bits(bits)
    layout = cache_layout(_model(layers, heads, kv_heads, head_dim, window, pattern), fmt, fmt)
    small, large = layout.kv_bytes(ctx, sequences), layout.kv_bytes(ctx + step, sequences)
    assert small <= large
    # a window only ever caps what a layer holds: never more than every layer global, equal up to the window
    textbook = 2 * layers * kv_heads * head_dim * BYTES[bits] * sequences
    assert small <= textbook * ctx
    if ctx <= window:
        assert small == textbook * ctx
