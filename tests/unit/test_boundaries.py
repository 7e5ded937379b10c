"""Exact boundaries: the cases that tell `<` from `<=` and a rounding up from a rounding down.

Figures use the contract's reference phone and 7B (tests/data/profiles): 1,750,000,000 B of weights and
524,288 B of cache per token, so at 4,096 tokens the total is 1,750,000,000 + 2,147,483,648 = 3,897,483,648 B.
"""

from __future__ import annotations

import pytest

from kvplan import engine
from kvplan.profiles.catalog import Catalog
from kvplan.engine.formats import format_from_name
from kvplan.plan import Scenario, evaluate
from kvplan.caches.ideal import cache_layout
from kvplan.profiles.spec import Device, Model
from tests.conftest import REF_7B, REF_PHONE

TOTAL_AT_4K = 3_897_483_648


@pytest.fixture(scope="module")
def ref():
    cat = Catalog(fast=False)
    return cat.device(str(REF_PHONE)).profile, cat.model(str(REF_7B)).profile


def test_headroom_exactly_zero_fits_as_tight(ref):
    device, model = ref
    # reserve 8,000,000,000 − 3,897,483,648 = 4,102,516,352 leaves a budget equal to the total: headroom 0
    ev = evaluate(Scenario(device, model, 4096, os_reserve_bytes=4_102_516_352))
    assert (ev.budget_bytes, ev.headroom_bytes, ev.verdict.value) == (TOTAL_AT_4K, 0, "tight")
    assert ev.fits and ev.max_ctx == 4096  # the largest ctx with total ≤ budget is this one, exactly
    assert not evaluate(Scenario(device, model, 4097, os_reserve_bytes=4_102_516_352)).fits


def test_headroom_exactly_the_margin_is_fit(ref):
    device, model = ref
    # reserve 205,032,704 → budget 7,794,967,296 = 2 × 3,897,483,648; margin 50 % of it = 3,897,483,648 = headroom
    ev = evaluate(Scenario(device, model, 4096, os_reserve_bytes=205_032_704, margin_fraction=0.5))
    assert ev.headroom_bytes == ev.margin_bytes == TOTAL_AT_4K
    assert ev.verdict.value == "fit"  # tight only when headroom < margin
    one_less = evaluate(Scenario(device, model, 4096, os_reserve_bytes=205_032_705, margin_fraction=0.5))
    assert one_less.verdict.value == "tight"  # headroom 3,897,483,647 < margin 3,897,483,648 (ceil of ½·7,794,967,295)


def test_margin_bytes_round_up():
    device = Device(name="d", ram="8000000005 B", os_reserve="2 GB", memory_bandwidth="50 GB/s", flash_read="2 GB/s")
    model = Catalog(fast=False).model(str(REF_7B)).profile
    # 10 % of 6,000,000,005 = 600,000,000.5 → 600,000,001 bytes (headroom must reach it to be "fit")
    assert evaluate(Scenario(device, model, 1)).margin_bytes == 600_000_001


def test_weights_round_up_to_a_whole_byte():
    # 3 params · 4.5 bits = 13.5 bits = 1.6875 B → 2 B; 10 params · 4 bits = 5 B exactly
    assert engine.weights_bytes(3, 4.5) == 2
    assert engine.weights_bytes(10, 4) == 5


def test_mean_decode_scales_with_efficiency(ref):
    device, model = ref
    half = device.model_copy(update={"bandwidth_efficiency": 0.5})
    # Σ_{k=1..4096} (1.75e9 + 524,288·k) = 4096·1.75e9 + 524,288·4096·4097/2; mean = n · 50e9 · 0.5 / Σ
    total = 4096 * 1.75e9 + 524_288 * 4096 * 4097 / 2
    assert evaluate(Scenario(half, model, 4096)).mean_decode_tokens_per_s == pytest.approx(
        4096 * 50e9 * 0.5 / total, rel=1e-12)


def test_k_and_v_head_dims_and_formats_apart():
    model = Model(name="kv-apart", params="1B", layers=2, attention_heads=4, kv_heads=2, head_dim=192, v_head_dim=128)
    layout = cache_layout(model, format_from_name("q8_0"), format_from_name("f16"))
    # per layer: K 2 heads × 192 = 384 values in q8_0 = 12 blocks × 34 B = 408 B; V 2 × 128 = 256 values × 2 B = 512 B
    # → 920 B per layer, 2 layers → 1,840 B per token (swapping K and V dims or formats gives another number)
    assert layout.bytes_per_token == 1_840
    swapped = cache_layout(model, format_from_name("f16"), format_from_name("q8_0"))
    # K 384 × 2 B = 768 B, V 256 values = 8 blocks × 34 B = 272 B → (768 + 272) × 2 = 2,080 B
    assert swapped.bytes_per_token == 2_080
