"""Plot data equal the engine's numbers (reference figures from the contract, arithmetic beside each)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kvplan.profiles.catalog import Catalog
from kvplan.engine.formats import NAMED_FORMATS
from kvplan.plan import Scenario, evaluate
from kvplan import curves as data
from tests.conftest import DATA, REF_7B, REF_PHONE

REF_SWA = DATA / "plots" / "ref-swa.yaml"


@pytest.fixture(scope="module")
def ref():
    cat = Catalog()
    return cat.device(str(REF_PHONE)).profile, cat.model(str(REF_7B)).profile, cat.model(str(REF_SWA)).profile


def _at(ctx_tokens, values, c):
    i = int(np.searchsorted(ctx_tokens, c))
    assert ctx_tokens[i] == c, f"{c} is not on the grid"
    return values[i]


def test_nice_ctx_ceil_and_grid():
    assert data.nice_ctx_ceil(9011) == 10240  # 2^13 = 8192, step 8192/4 = 2048, ceil(9011/2048) = 5 → 10240
    assert data.nice_ctx_ceil(6270) == 7168  # step 4096/4 = 1024 → 7 × 1024
    assert data.nice_ctx_ceil(4096) == 4096
    grid = data.ctx_grid(10240, (5016, 20000))
    assert grid[0] == 0 and grid[-1] == 10240 and 5016 in grid and 20000 not in grid
    assert np.all(np.diff(grid) > 0)


def test_memory_curves_reference(ref):
    phone, m7b, _ = ref
    c = data.memory_curves(Scenario(phone, m7b, 4096))
    ev = c.evaluation
    # 6 GB budget − 1.75 GB weights = 4.25e9 bytes of cache; ⌊4.25e9 / 524,288⌋ = 8,106 tokens
    assert ev.max_ctx == 8106
    assert _at(c.ctx_tokens, c.kv_bytes, 4096) == 2_147_483_648  # 524,288 × 4,096
    assert _at(c.ctx_tokens, c.total_bytes, 4096) == 1_750_000_000 + 2_147_483_648
    assert _at(c.ctx_tokens, c.total_bytes, 8106) <= ev.budget_bytes < 1_750_000_000 + 524_288 * 8107
    # axis end: 1.25 × 8,106 = 10,132.5 → step 2,048 → 10,240
    assert c.ctx_tokens[-1] == 10240


def test_memory_curves_equal_evaluate_at_sample_points(ref):
    phone, _, swa = ref
    s = Scenario(phone, swa, 3000, sequences=3, pinned_prefix_tokens=100)
    c = data.memory_curves(s)
    for ctx in c.ctx_tokens[:: len(c.ctx_tokens) // 17]:
        ev = evaluate(s.with_changes(ctx=int(ctx)))
        assert _at(c.ctx_tokens, c.kv_bytes, ctx) == ev.kv_peak_bytes
        assert _at(c.ctx_tokens, c.total_bytes, ctx) == ev.total_bytes


def test_windowed_kv_flattens(ref):
    phone, _, swa = ref
    c = data.memory_curves(Scenario(phone, swa, 0), ctx_max_tokens=4096, show_ctx=False)
    assert c.ctx_tokens[-1] == 4096
    # 3 local layers × 512 B × min(ctx, 1024) + 1 global layer × 512 B × ctx; at 2,048: 1,572,864 + 1,048,576
    assert _at(c.ctx_tokens, c.kv_bytes, 2048) == 3 * 512 * 1024 + 512 * 2048
    assert 1024 in c.ctx_tokens  # the window edge is an exact grid point


def test_decode_curves_reference(ref):
    phone, m7b, _ = ref
    s = Scenario(phone, m7b, 8192)
    c = data.decode_curves(s, target_tokens_per_s=10)
    # 50e9 / (1.75e9 + 2,147,483,648) = 12.829 tok/s at 4k
    assert _at(c.ctx_tokens, c.decode_tokens_per_s, 4096) == pytest.approx(50e9 / 3_897_483_648)
    assert c.target_tokens_per_s == 10
    # fits up to 8,106 tokens: no streamed rate there; at 8,192 it is evaluate's flash rate
    assert math.isnan(_at(c.ctx_tokens, c.streamed_tokens_per_s, 8106))
    ev = evaluate(s)
    assert ev.flash.overflow_bytes > 0
    assert _at(c.ctx_tokens, c.streamed_tokens_per_s, 8192) == pytest.approx(ev.flash.streamed_decode_tokens_per_s)
    assert _at(c.ctx_tokens, c.decode_tokens_per_s, 8192) == pytest.approx(ev.decode_tokens_per_s)


def test_attention_variants_reference(ref):
    phone, m7b, _ = ref
    c = data.attention_curves(Scenario(phone, m7b, 0))
    assert c.ref_ctx == 4096  # no ctx, no trained context in the fixture → 4k
    by = {(v.kind, v.kv_heads, v.k_format): v for v in c.variants}
    mha = by[("mha", 32, "f16")]
    assert mha.is_own and sum(v.is_own for v in c.variants) == 1  # ref-7b is MHA: that line is "this model"
    assert _at(c.ctx_tokens, mha.kv_bytes, 4096) == 2_147_483_648  # 2.1 GB
    assert _at(c.ctx_tokens, by[("gqa", 8, "f16")].kv_bytes, 4096) == 536_870_912  # 131,072 × 4,096 = 0.54 GB
    assert by[("mqa", 1, "f16")].bytes_per_token == 16_384  # 2 × 32 × 1 × 128 × 2
    # q8_0: 34 bytes per 32 values; a 4,096-value row → 128 blocks × 34 = 4,352 B; × 2 (K, V) × 32 layers
    assert by[("quant", 32, "q8_0")].bytes_per_token == 2 * 32 * 4352 == 278_528
    window = next(v for v in c.variants if v.kind == "window")
    assert window.window_tokens == 2048  # default: min(2,048, 8,192 / 4)
    assert _at(c.ctx_tokens, window.kv_bytes, 8192) == 524_288 * 2048


def test_attention_own_line_for_windowed_gqa_model_with_quantized_cache(ref):
    phone, _, swa = ref
    q8 = NAMED_FORMATS["q8_0"]
    c = data.attention_curves(Scenario(phone, swa, 4096, k_format=q8, v_format=q8))
    own = [v for v in c.variants if v.is_own]
    # head variants keep the model's window pattern and cache type, so GQA with 2 KV heads *is* this model
    assert len(own) == 1 and (own[0].kind, own[0].kv_heads, own[0].k_format) == ("gqa", 2, "q8_0")
    assert _at(c.ctx_tokens, own[0].kv_bytes, 4096) == evaluate(
        Scenario(phone, swa, 4096, k_format=q8, v_format=q8)).kv_bytes
    assert not any(v.kind == "quant" and v.k_format == "q8_0" for v in c.variants)  # no duplicate of its own


def test_fit_map(ref):
    phone, m7b, swa = ref
    m = data.fit_map([[Scenario(phone, m7b, 0), Scenario(phone, swa, 0)]])
    assert m.devices == ("ref-phone",) and m.models == ("ref-7b", "ref-swa")
    assert m.max_ctx_tokens[0, 0] == 8106
    # ref-swa: kv(c) = 512·c + 3 × 512 × 1,024 past the window; (5e9 − 1,572,864) / 512 = 9,762,553
    assert m.max_ctx_tokens[0, 1] == evaluate(Scenario(phone, swa, 0)).max_ctx == 9_762_553
    at = data.fit_map([[Scenario(phone, m7b, 8192)]], 8192)
    assert at.headroom_bytes[0, 0] == 6_000_000_000 - 1_750_000_000 - 524_288 * 8192
    assert at.verdict_codes[0, 0] == 2  # over
