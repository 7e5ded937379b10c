"""transformers' cache: steady state and peak, with hand-derived figures (arithmetic in comments)."""

from __future__ import annotations

import pytest

from kvplan.profiles.catalog import Catalog
from kvplan.errors import UsageError
from kvplan.engine.formats import format_from_name
from kvplan.profiles.runtime import TransformersSpec
from kvplan.caches.transformers import transformers_cache


def cache(name, dtype="f16", **spec):
    fmt = format_from_name(dtype)
    return transformers_cache(TransformersSpec(**spec), Catalog().model(name).profile, fmt, fmt)


def test_full_attention_holds_every_token():
    # llama-3.1-8b: 32 layers × 2 × 8 × 128 × 2 B = 131,072 B per token; 4096 → 536,870,912
    c = cache("llama-3.1-8b")
    assert c.kv_bytes(4096) == c.kv_peak_bytes(4096) == 536_870_912


def test_mistral_slides_on_every_layer():
    # mistral-7b-v0.1: window 4096 on all 32 layers, 131,072 B per token
    # steady after decode: min(8192, 4096) = 4096 tokens allocated (the torch.cat result of 4095 + 1) → 536,870,912
    # peak right after a one-shot prefill of 8192: the views keep 8192 tokens → 1,073,741,824
    c = cache("mistral-7b-v0.1")
    assert c.kv_bytes(8192) == 536_870_912
    assert c.kv_peak_bytes(8192) == 1_073_741_824
    t = c.tokens(8192)
    assert (t["sliding_reachable"], t["sliding_allocated"], t["peak_per_layer"]) == (4095, 4096, 8192)


def test_phi3_window_is_honoured():
    # phi-3-mini-4k: window 2047 on 32 layers; 32 × 2 × 32 × 96 × 2 = 393,216 B per token
    # 4096 tokens: steady min(4096, 2047) = 2047 → 804,913,152; peak 4096 → 1,610,612,736
    c = cache("phi-3-mini-4k")
    assert c.kv_bytes(4096) == 804_913_152 and c.kv_peak_bytes(4096) == 1_610_612_736


def test_gemma3_hybrid():
    # gemma-3-1b: 22 sliding (512) + 4 full layers, 1 × 256 f16 K+V = 1024 B per token per layer
    # 4096 tokens: 4 × 1024 × 4096 + 22 × 1024 × 512 = 16,777,216 + 11,534,336 = 28,311,552; peak 26 × 1024 × 4096
    c = cache("gemma-3-1b")
    assert c.kv_bytes(4096) == 28_311_552
    assert c.kv_peak_bytes(4096) == 109_051_904


def test_below_the_window_steady_equals_peak():
    # 100 tokens < window: every layer 100 tokens; 26 × 1024 × 100 = 2,662,400
    c = cache("gemma-3-1b")
    assert c.kv_bytes(100) == c.kv_peak_bytes(100) == 2_662_400


def test_static_cache():
    # StaticCache(max_cache_len 8192) on gemma-3-1b: full 4 × 1024 × 8192 + sliding 22 × 1024 × min(8192, 512)
    # = 33,554,432 + 11,534,336 = 45,088,768, whatever the context up to 8192
    c = cache("gemma-3-1b", cache="static", max_cache_len=8192)
    assert c.kv_bytes(100) == c.kv_bytes(8192) == c.kv_peak_bytes(4096) == 45_088_768
    with pytest.raises(UsageError, match="max_cache_len"):
        c.kv_bytes(9000)


def test_mla_caches_the_latent():
    # deepseek-v2-lite in transformers ≥ 5.15: keys 512 + values 64 = 576 values × 2 B = 1,152 B per token per
    # layer; 27 layers × 1,152 × 4096 = 127,401,984 (≤ 5.14.1 expanded 16 heads × (192 + 128) × 2 B = 10,240 B
    # per token per layer: 27 × 10,240 = 276,480 B/token, named in the rule)
    c = cache("deepseek-v2-lite")
    assert c.kv_bytes(4096) == c.kv_peak_bytes(4096) == 127_401_984
    latent = next(r for r in c.rules if r.kind == "mla_latent")
    assert latent["latent_bytes_per_token"] == 27 * 1_152 == 31_104
    assert latent["expanded_bytes_per_token"] == 276_480


def test_dtypes_and_refusals():
    # bf16 same size as f16; f32 double
    assert cache("llama-3.1-8b", "bf16").kv_bytes(1000) == 131_072_000
    assert cache("llama-3.1-8b", "f32").kv_bytes(1000) == 262_144_000
    with pytest.raises(UsageError, match="model dtype"):
        cache("llama-3.1-8b", "q8_0")


@pytest.mark.parametrize("allowance", [0, 10**6, 123_456_789, 3 * 10**9])
@pytest.mark.parametrize("name", ["mistral-7b-v0.1", "gemma-3-1b", "llama-3.2-1b"])
def test_max_ctx_exact_on_the_peak(name, allowance):
    c = cache(name)
    best = c.max_ctx(allowance, 2)
    assert c.kv_peak_bytes(best, 2) <= allowance < c.kv_peak_bytes(best + 1, 2)


def test_static_max_ctx():
    # 45,088,768 B fit (see test_static_cache): the static cache's max context is its length; one byte less: nothing
    c = cache("gemma-3-1b", cache="static", max_cache_len=8192)
    assert c.max_ctx(45_088_768) == 8192 and c.max_ctx(45_088_767) == -1
