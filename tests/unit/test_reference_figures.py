"""The contract's reference figures (design.md, "Reference figures"), reproduced exactly.

Every expected number is derived by hand in the comment next to it.
"""

from __future__ import annotations

import math

import pytest

from kvplan import engine
from kvplan.profiles.catalog import Catalog
from kvplan.plan import Scenario, evaluate
from kvplan.caches.ideal import cache_layout
from tests.conftest import REF_7B, REF_PHONE


@pytest.fixture(scope="module")
def ref():
    cat = Catalog()
    return cat.device(str(REF_PHONE)).profile, cat.model(str(REF_7B)).profile


def test_kv_bytes_per_token_mha():
    # 2 (K and V) · 32 layers · 32 heads · 128 head_dim · 2 bytes (fp16) = 524,288
    assert engine.kv_bytes_per_token(32, 32, 128, 2) == 524_288


def test_kv_bytes_per_token_gqa():
    # 2 · 32 · 8 KV heads · 128 · 2 = 131,072
    assert engine.kv_bytes_per_token(32, 8, 128, 2) == 131_072


def test_kv_cache_at_4k_and_8k():
    # 524,288 · 4,096 = 2,147,483,648 (2.1 GB); · 8,192 = 4,294,967,296 (4.3 GB)
    assert engine.kv_bytes(4096, 524_288) == 2_147_483_648
    assert engine.kv_bytes(8192, 524_288) == 4_294_967_296
    # GQA: 131,072 · 4,096 = 536,870,912 (0.54 GB)
    assert engine.kv_bytes(4096, 131_072) == 536_870_912


def test_budget_of_an_8_gb_phone():
    # 8,000,000,000 − 2,000,000,000 = 6,000,000,000 (6 GB)
    assert engine.budget_bytes(8_000_000_000, 2_000_000_000) == 6_000_000_000


def test_decode_time_at_50_gb_s(ref):
    device, model = ref
    ev4 = evaluate(Scenario(device, model, 4096))
    # (1,750,000,000 + 2,147,483,648) B / 50e9 B/s = 0.07795 s = 78 ms → 12.8 tok/s (13 tok/s)
    assert 1 / ev4.decode_tokens_per_s == pytest.approx(0.0779496730, rel=1e-9)
    assert round(ev4.decode_tokens_per_s) == 13
    # (the contract's "77 ms" is the same step with the cache rounded to 2.1 GB: (1.75e9 + 2.1e9) / 50e9)
    ev8 = evaluate(Scenario(device, model, 8192))
    # (1,750,000,000 + 4,294,967,296) / 50e9 = 0.120899 s = 121 ms → 8.27 tok/s (8 tok/s)
    assert 1 / ev8.decode_tokens_per_s == pytest.approx(0.12089934592, rel=1e-9)
    assert round(ev8.decode_tokens_per_s) == 8


def test_flash_swap_in_of_2_1_gb_at_2_gb_s():
    # 2,147,483,648 B / 2e9 B/s = 1.07 s ("about 1 s")
    assert engine.swap_in_s(2_147_483_648, 2e9) == pytest.approx(1.073741824)


def test_weights_of_7e9_params_at_4_bits():
    # 7e9 · 4 / 8 = 3,500,000,000 (3.5 GB, not 1.75 GB)
    assert engine.weights_bytes(7_000_000_000, 4) == 3_500_000_000
    # q4_0 is 4.5 bits: 6.74e9 · 4.5 / 8 = 3,791,250,000
    assert engine.weights_bytes(6_740_000_000, 4.5) == 3_791_250_000


def test_reference_phone_and_7b_at_4k_and_8k(ref):
    device, model = ref
    ev = evaluate(Scenario(device, model, 4096))
    # total = 1,750,000,000 + 2,147,483,648 = 3,897,483,648; headroom = 6e9 − that = 2,102,516,352 ≥ 10 % → fit
    assert ev.total_bytes == 3_897_483_648
    assert ev.headroom_bytes == 2_102_516_352
    assert ev.verdict.value == "fit"
    ev = evaluate(Scenario(device, model, 8192))
    # total = 1,750,000,000 + 4,294,967,296 = 6,044,967,296 > 6e9 → over by 44,967,296
    assert ev.total_bytes == 6_044_967_296
    assert ev.headroom_bytes == -44_967_296
    assert ev.verdict.value == "over"
    # max ctx = ⌊(6,000,000,000 − 1,750,000,000) / 524,288⌋ = ⌊8106.2…⌋ = 8,106
    assert ev.max_ctx == 8106


def test_max_ctx_is_exact_to_the_token(ref):
    device, model = ref
    ev = evaluate(Scenario(device, model, 8106))
    assert ev.fits
    assert not evaluate(Scenario(device, model, 8107)).fits


def test_overflow_streamed_from_flash(ref):
    device, model = ref
    ev = evaluate(Scenario(device, model, 8192))
    # overflow 44,967,296 B; step = 6,044,967,296 B
    # t = (6,044,967,296 − 44,967,296) / 50e9 + 44,967,296 / 2e9 = 0.12 + 0.022483648 = 0.142483648 s
    assert ev.flash.overflow_bytes == 44_967_296
    assert 1 / ev.flash.streamed_decode_tokens_per_s == pytest.approx(0.142483648, rel=1e-12)
    # slowdown = 0.142483648 / 0.12089934592 = 1.17853…
    assert ev.flash.slowdown == pytest.approx(0.142483648 / 0.12089934592, rel=1e-12)


def test_mean_decode_over_a_generation_equals_rate_near_half_length(ref):
    device, model = ref
    ev = evaluate(Scenario(device, model, 4096))
    # Σ_{k=1..4096} (1.75e9 + 524,288·k) = 4096·1.75e9 + 524,288·4096·4097/2
    total = 4096 * 1.75e9 + 524_288 * 4096 * 4097 / 2
    assert ev.mean_decode_tokens_per_s == pytest.approx(4096 * 50e9 / total, rel=1e-12)
    # which is the instantaneous rate at (4096 + 1) / 2 tokens
    half = 50e9 / (1.75e9 + 524_288 * 4097 / 2)
    assert ev.mean_decode_tokens_per_s == pytest.approx(half, rel=1e-12)


def test_sliding_window_layers_cap_at_the_window(ref):
    device, model = ref
    windowed = model.model_copy(update={"sliding_window": 1024, "sliding_window_pattern": "alternating"})
    layout = cache_layout(windowed)
    # 16 global layers (odd) · 16,384 B + 16 local layers (even) · 16,384 B capped at 1,024 tokens
    per_layer = 2 * 32 * 128 * 2  # 16,384 B per token per layer
    assert layout.global_bytes_per_token == 16 * per_layer
    assert layout.windows == ((1024, 16 * per_layer),)
    # at 8,192 tokens: 16·16,384·8,192 + 16·16,384·1,024 = 2,147,483,648 + 268,435,456
    assert layout.kv_bytes(8192) == 2_415_919_104
    assert evaluate(Scenario(device, windowed, 8192)).kv_bytes == 2_415_919_104


def test_all_layers_windowed_is_unbounded():
    # every layer behind a 4,096 window: the cache stops at 4,096 tokens' worth
    assert engine.max_context_tokens(10**12, 0, [(4096, 131_072)]) == math.inf
    assert engine.max_context_tokens(10**12, 0, [(4096, 131_072)], ctx_limit=32768) == 32768
    # but not if even the full window does not fit: ⌊1,000,000 / 131,072⌋ = 7
    assert engine.max_context_tokens(1_000_000, 0, [(4096, 131_072)]) == 7


def test_nothing_fits_when_weights_exceed_the_budget():
    assert engine.max_context_tokens(-1, 524_288) == engine.NO_CONTEXT_FITS
