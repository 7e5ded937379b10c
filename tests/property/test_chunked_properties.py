"""Chunked attention (Llama 4) priced from the schedule (hypothesis): a chunked layer holds what a window of its
chunk holds, in every cache model that prices it."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kvplan.caches.ideal import cache_layout
from kvplan.caches.llamacpp import llamacpp_cache
from kvplan.caches.transformers import transformers_cache
from kvplan.engine.formats import format_from_name
from kvplan.profiles.runtime import LlamaCppSpec, TransformersSpec
from kvplan.profiles.spec import Model

F16 = format_from_name("f16")


def _model(layers, chunk, window=None):
    kw = {"sliding_window": window} if window else {"attention_chunk_size": chunk}
    return Model(name="m", params=10**10, layers=layers, attention_heads=8, kv_heads=2, head_dim=128,
                 architecture="llama4", sliding_window_pattern="3:1", **kw)


shape = st.tuples(st.integers(1, 12).map(lambda n: 4 * n), st.sampled_from([256, 1024, 8192]))


@settings(max_examples=150, deadline=None)
@given(shape=shape, ctx=st.integers(0, 10**6))
def test_the_ideal_chunked_cache_is_the_peak_of_one_chunk(shape, ctx):
    layers, chunk = shape
    layout = cache_layout(_model(layers, chunk), F16, F16)
    row = 2 * 2 * 128 * 2  # K and V of 2 heads × 128 at f16: 1,024 B
    full, chunked = layers // 4, layers - layers // 4
    # the global quarter grows with ctx; a chunked layer's token at the chunk's end attends all C: min(ctx, C)
    assert layout.kv_bytes(ctx) == full * row * ctx + chunked * row * min(ctx, chunk)
    assert layout.kv_bytes(ctx) == cache_layout(_model(layers, chunk, window=chunk), F16, F16).kv_bytes(ctx)


@settings(max_examples=100, deadline=None)
@given(layers=st.integers(1, 12).map(lambda n: 4 * n), ctx=st.integers(1, 300_000), sequences=st.integers(1, 8),
       unified=st.booleans())
def test_llama_cpp_and_transformers_hold_chunks_as_windows(layers, ctx, sequences, unified):
    # llama.cpp's loader fixes the chunk at 8,192 (n_swa) and keeps the chunked layers in the iSWA cache; transformers
    # gives them DynamicSlidingWindowLayer(attention_chunk_size): both equal a window of 8,192 on those layers
    chunked, windowed = _model(layers, 8192), _model(layers, 8192, window=8192).model_copy(
        update={"architecture": "gemma3"})
    spec = LlamaCppSpec(kv_unified=unified)
    a = llamacpp_cache(spec, chunked, F16, F16)
    b = llamacpp_cache(spec, windowed, F16, F16)
    assert a.kv_bytes(ctx, sequences) == b.kv_bytes(ctx, sequences)
    t = transformers_cache(TransformersSpec(), chunked, F16, F16)
    assert t.kv_bytes(ctx, 1) == transformers_cache(TransformersSpec(), windowed, F16, F16).kv_bytes(ctx, 1)
