"""A shared-KV layer (Gemma 3n) holds no cache: adding one adds zero bytes to every cache model that prices it
(hypothesis)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kvplan.caches.ideal import cache_layout
from kvplan.caches.llamacpp import llamacpp_cache
from kvplan.caches.transformers import transformers_cache
from kvplan.engine.formats import format_from_name
from kvplan.profiles.runtime import LlamaCppSpec, TransformersSpec
from kvplan.profiles.spec import Model


def _model(own: int, shared: int, window: int, arch: str = "gemma3n"):
    # own layers, "4:1" (a full layer every fifth), then `shared` layers reading the last own layer of their type
    layers = own + shared
    return Model(name="m", architecture=arch, params=10**10, layers=layers, attention_heads=8, kv_heads=2,
                 head_dim=256, hidden_size=2048, sliding_window=window, sliding_window_pattern="4:1",
                 shared_kv_layers=shared)


@settings(max_examples=60, deadline=None)
@given(own=st.integers(5, 30), shared=st.integers(0, 20), window=st.sampled_from([128, 512, 1024]),
       ctx=st.integers(0, 200_000), sequences=st.integers(1, 8), cache_type=st.sampled_from(["f16", "bf16"]))
def test_a_shared_kv_layer_adds_zero_bytes(own, shared, window, ctx, sequences, cache_type):
    fmt = format_from_name(cache_type)
    with_tail, without = _model(own, shared, window), _model(own, 0, window)
    for build in (lambda m: cache_layout(m, fmt, fmt),
                  lambda m: transformers_cache(TransformersSpec(), m, fmt, fmt)):
        assert build(with_tail).kv_bytes(ctx, sequences) == build(without).kv_bytes(ctx, sequences)


@settings(max_examples=40, deadline=None)
@given(shared=st.integers(1, 20), ctx=st.integers(1, 100_000), sequences=st.integers(1, 4),
       cache_type=st.sampled_from(["f16", "q8_0"]))
def test_llamacpp_gemma3n_tail_adds_zero_bytes(shared, ctx, sequences, cache_type):
    # llama.cpp's gemma3n loader keeps a cache on layers 0–19 (n_layer_kv_from_start 20) whatever the depth
    fmt = format_from_name(cache_type)
    spec = LlamaCppSpec(flash_attn="on")
    assert (llamacpp_cache(spec, _model(20, shared, 512), fmt, fmt).kv_bytes(ctx, sequences)
            == llamacpp_cache(spec, _model(20, 0, 512), fmt, fmt).kv_bytes(ctx, sequences))
