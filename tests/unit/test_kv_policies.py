"""KV cache compression policies: each term's bytes derived by hand (issue #7)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kvplan.engine import tiered
from kvplan.engine.tiered import Tier
from kvplan.errors import ProfileError, UsageError
from kvplan.plan import Scenario, cache_model_for, evaluate
from kvplan.caches.ideal import cache_layout
from kvplan.cli.options.policy import policy_from_options
from kvplan.profiles.policy import FormatSpec, PolicySpec, load_policy_file, resolve_policy
from kvplan.caches.policy import policy_cache
from kvplan.profiles.spec import Model
from tests.conftest import REF_7B

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "kv-policy.yaml"
DATA = Path(__file__).resolve().parents[1] / "data" / "kv_policies"

# llama-3.1-8b's shape (the example): 32 layers, 8 KV heads, head_dim 128.
LLAMA8B = Model(name="l8", params=8_030_261_248, layers=32, attention_heads=32, kv_heads=8, head_dim=128,
                weight_bits=4, kv_bits=16)


def _row(spec: dict, values: int) -> int:
    return FormatSpec.model_validate(spec).element_format().row_bytes(values)


# --- element formats --------------------------------------------------------------------------

def test_group_quantized_rows_with_scales_and_zero_points():
    # 1,024 values (8 heads × 128): 4 bits → 512 B data; 1024/128 = 8 groups × (2 scale + 2 zero) = 32 → 544
    assert _row({"bits": 4, "group_size": 128, "scale_bytes": 2, "zero_bytes": 2}, 1024) == 544
    # 3 bits → 384 B data + 32 → 416
    assert _row({"bits": 3, "group_size": 128, "scale_bytes": 2, "zero_bytes": 2}, 1024) == 416
    # scale only: 512 + 8 × 2 = 528
    assert _row({"bits": 4, "group_size": 128}, 1024) == 528
    # 3 bits × 100 values = 300 bits → 38 B (rounded up); ⌈100/64⌉ = 2 groups × 2 B → 42
    assert _row({"bits": 3, "group_size": 64}, 100) == 42


def test_outlier_channels_by_count_and_fraction():
    # 8 outliers at fp16 = 16 B; the other 1,016 at 4 bits = 508 B in ⌈1016/128⌉ = 8 groups × 2 B = 16 → 540
    assert _row({"bits": 4, "group_size": 128, "outlier_channels": 8}, 1024) == 540
    # 1 % of 1,024 = 10.24 → 11 outliers: 22 B; 1,013 · 4 bits = 4,052 bits = 506.5 → 507 B; ⌈1013/128⌉ = 8 → 16
    # 22 + 507 + 16 = 545
    assert _row({"bits": 4, "group_size": 128, "outlier_fraction": 0.01}, 1024) == 545
    # with a 2-byte index per outlier (positions vary per token): + 11 · 2 = 22 → 567
    assert _row({"bits": 4, "group_size": 128, "outlier_fraction": 0.01, "outlier_index_bytes": 2}, 1024) == 567
    # outliers at 8 bits: 11 B instead of 22 → 534
    assert _row({"bits": 4, "group_size": 128, "outlier_fraction": 0.01, "outlier_bits": 8}, 1024) == 534


def test_format_names_and_bit_widths_become_specs():
    assert _row("f16", 1024) == 2048  # type: ignore[arg-type]
    assert _row("q8_0", 1024) == 1088  # 32 blocks × 34 B
    assert _row(4, 1024) == 512  # type: ignore[arg-type]


@pytest.mark.parametrize("spec, message", [
    ({"bits": 4, "scale_bytes": 2}, "need group_size"),
    ({"bits": 4, "group_size": 64, "outlier_fraction": 0.1, "outlier_channels": 3}, "not both"),
    ({"bits": 33}, "less than or equal to 32"),
])
def test_bad_format_specs(spec, message):
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match=message):
        FormatSpec.model_validate(spec)


# --- the tier math ----------------------------------------------------------------------------

# W = 4096 recent at 131,072 B/token, r = 1/5 of the history at 30,720 B/token, eviction every 512 tokens
TIER = Tier(None, 4096, 1, 5, 512, 131_072, 30_720, layers=32)


def test_tier_tokens_and_bytes_at_128k():
    recent, history, deferred = tiered.tier_tokens(131_072, TIER)
    # recent = min(131072, 4096) = 4096; older x = 126,976; history = ⌈0.2 · 126,976⌉ = ⌈25,395.2⌉ = 25,396
    assert (recent, history, deferred) == (4096, 25_396, 511)
    # 4,096 · 131,072 = 536,870,912; 25,396 · 30,720 = 780,165,120; sum 1,317,036,032
    assert tiered.kv_bytes(131_072, [TIER]) == 1_317_036_032
    # peak: 511 tokens wait at fp16: (4,096 + 511) · 131,072 = 603,848,704; ⌈0.2 · 126,465⌉ = 25,293 · 30,720
    # = 777,000,960; sum 1,380,849,664
    assert tiered.kv_peak_bytes(131_072, [TIER]) == 1_380_849_664


def test_tier_math_on_arrays_matches_scalars():
    ctx = np.array([0, 1, 4096, 4097, 4607, 131_072])
    got = tiered.kv_bytes(ctx, [TIER])
    peak = tiered.kv_peak_bytes(ctx, [TIER])
    assert got.tolist() == [tiered.kv_bytes(int(c), [TIER]) for c in ctx]
    assert peak.tolist() == [tiered.kv_peak_bytes(int(c), [TIER]) for c in ctx]
    # 4,097: 4,096 · 131,072 + ⌈0.2⌉ = 1 · 30,720 = 536,901,632; peak keeps the 1 older token at fp16: 537,001,984
    assert got[3] == 536_901_632 and peak[3] == 4097 * 131_072


def test_model_window_caps_the_tier():
    # a windowed layer (window 8,192) sees min(ctx, 8192): older = 4,096, history ⌈819.2⌉ = 820
    tier = Tier(8192, 4096, 1, 5, 1, 100, 10)
    assert tiered.kv_bytes(1_000_000, [tier]) == 4096 * 100 + 820 * 10
    assert tier.saturation_tokens == 8192 and tier.growth_bytes_per_token == 0


def test_floor_sum_matches_brute_force():
    for n, m, a, b in [(0, 5, 1, 4), (10, 5, 1, 4), (1000, 7, 3, 6), (37, 1, 0, 0), (500, 100, 33, 99)]:
        assert tiered.floor_sum(n, m, a, b) == sum((a * i + b) // m for i in range(n))


def test_sum_over_generation_matches_brute_force():
    tiers = [Tier(None, 40, 1, 5, 8, 100, 13), Tier(64, 16, 2, 3, 1, 7, 3), Tier(None, None, 1, 1, 1, 5, 5)]
    for n in (0, 1, 39, 40, 41, 63, 64, 65, 500):
        assert tiered.kv_bytes_sum_over_generation(n, tiers) == sum(tiered.kv_bytes(k, tiers) for k in range(1, n + 1))
    arr = tiered.kv_bytes_sum_over_generation(np.array([40, 500]), tiers)
    assert arr.tolist() == [float(tiered.kv_bytes_sum_over_generation(n, tiers)) for n in (40, 500)]


def test_max_ctx_is_exact_to_the_token():
    tiers = [TIER]
    allowance = 1_380_849_664  # the peak at 131,072 exactly
    best = tiered.max_context_tokens(allowance, tiers)
    assert tiered.kv_peak_bytes(best, tiers) <= allowance < tiered.kv_peak_bytes(best + 1, tiers)
    # at 131,072 the kept history is 0.2 · 126,465 = 25,293 exactly; one more token makes it
    # ⌈0.2 · 126,466⌉ = ⌈25,293.2⌉ = 25,294 (+30,720 B), so 131,072 is the last that fits
    assert best == 131_072
    # 30,719 B more still buys nothing: the next 5 tokens need a new history slot; 30,720 buys 131,073 … 131,077
    assert tiered.max_context_tokens(allowance + 30_719, tiers) == 131_072
    assert tiered.max_context_tokens(allowance + 30_720, tiers) == 131_077
    assert tiered.max_context_tokens(-1, tiers) == tiered.NO_CONTEXT_FITS
    assert tiered.max_context_tokens(np.array([allowance, 0]), tiers).tolist() == [131_072, 0]


def test_max_ctx_unbounded_when_history_is_dropped():
    # r = 0: the cache stops at W + N − 1 = 4,096 + 511 tokens at fp16 = 603,848,704 B
    tier = Tier(None, 4096, 0, 1, 512, 131_072, 30_720)
    assert tier.saturation_tokens == 4607
    assert tiered.max_context_tokens(603_848_704, [tier]) == float("inf")
    assert tiered.max_context_tokens(603_848_704, [tier], ctx_limit=131_072) == 131_072
    assert tiered.max_context_tokens(603_848_703, [tier]) == 4606


# --- policies on models -----------------------------------------------------------------------

def test_example_policy_on_llama_3_1_8b():
    cache = policy_cache(LLAMA8B, load_policy_file(EXAMPLE))
    # recent fp16: 32 layers × (2,048 + 2,048) = 131,072 B/token; history K4/V3 g128 with zero points:
    # 32 × (544 + 416) = 30,720 B/token
    assert [(t.recent_bytes_per_token, t.history_bytes_per_token) for t in cache.tiers] == [(131_072, 30_720)]
    # steady: 4,096 · 131,072 + ⌈0.2 · 126,976⌉ = 25,396 · 30,720 = 536,870,912 + 780,165,120
    assert cache.kv_bytes(131_072) == 1_317_036_032
    # peak: (4,096 + 511 awaiting eviction) · 131,072 + ⌈0.2 · 126,465⌉ = 25,293 · 30,720
    assert cache.kv_peak_bytes(131_072) == 1_380_849_664
    assert cache.kv_bytes(131_072, 2) == 2 * 1_317_036_032
    # the plain cache: 131,072 · 131,072 = 17,179,869,184 → 13.04× smaller
    assert cache.fp16_kv_bytes(131_072) == 17_179_869_184
    assert cache.compression_ratio_vs_fp16(131_072) == pytest.approx(17_179_869_184 / 1_317_036_032)


def test_layer_groups_first_20_percent_uncompressed():
    spec = PolicySpec.model_validate({"name": "g", "layer_groups": [
        {"layers": "20%"},
        {"layers": "rest", "k": {"bits": 4, "group_size": 128}, "v": {"bits": 4, "group_size": 128}}]})
    # 20 % of 32 layers = 6.4 → 7 layers uncompressed (0-6), 25 at int4/g128
    assert [(a, b) for a, b, _ in spec.layer_ranges(32)] == [(0, 7), (7, 32)]
    cache = policy_cache(LLAMA8B, spec)
    # 7 × 4,096 = 28,672; 25 × 2 × (512 + 8 × 2) = 25 × 1,056 = 26,400 → 55,072 B/token
    assert cache.kv_bytes(1000) == 55_072 * 1000
    assert cache.max_ctx(55_072 * 1000 + 55_071) == 1000


def test_layer_groups_must_cover_the_model():
    spec = PolicySpec.model_validate({"layer_groups": [{"layers": 10}, {"layers": 10}]})
    with pytest.raises(UsageError, match="cover 20 of the model's 32 layers"):
        spec.layer_ranges(32)
    with pytest.raises(UsageError, match="has 8 layers"):
        spec.layer_ranges(8)


def test_policy_on_a_sliding_window_model():
    # 6 layers, 5 local : 1 global, window 1,024; 1 KV head × 64 dims at fp16: 256 B/token/layer
    m = Model(name="w", params=10**9, layers=6, attention_heads=4, kv_heads=1, head_dim=64, sliding_window=1024,
              sliding_window_pattern="5:1")
    spec = PolicySpec.model_validate({"recent_window": 256, "history": {"ratio": 0.5, "k": 8, "v": 8}})
    cache = policy_cache(m, spec)
    # global layer 5: 256 recent · 256 B + ⌈0.5 · 9,744⌉ = 4,872 history · 128 B = 65,536 + 623,616 = 689,152
    # local layers 0-4: see 1,024: 256 · 1,280 + ⌈0.5 · 768⌉ = 384 · 640 = 327,680 + 245,760 = 573,440
    assert cache.kv_bytes(10_000) == 689_152 + 573_440
    assert cache.global_layers == 1 and cache.windowed_layers == 5


def test_policy_on_a_latent_mla_cache():
    # DeepSeek-V2-Lite-like: 27 layers, latent 512 + 64 = 576 values priced with the K formats
    m = Model(name="mla", params=10**9, layers=27, attention_heads=16, kv_heads=16, head_dim=192, v_head_dim=128,
              mla={"kv_lora_rank": 512, "qk_rope_head_dim": 64})
    spec = PolicySpec.model_validate({"recent_window": 1024, "history": {"ratio": "50%", "k": {
        "bits": 4, "group_size": 128}}})
    cache = policy_cache(m, spec)
    # fp16: 27 × 576 × 2 = 31,104; int4/g128: 576 / 2 = 288 + ⌈576/128⌉ = 5 scales × 2 = 298 → 27 × 298 = 8,046
    assert [(t.recent_bytes_per_token, t.history_bytes_per_token) for t in cache.tiers] == [(31_104, 8_046)]
    # 32,768: 1,024 · 31,104 + 15,872 · 8,046 = 31,850,496 + 127,706,112 = 159,556,608
    assert cache.kv_bytes(32_768) == 159_556_608


def test_plain_spec_falls_back_to_the_layout(ref_models):
    model, device = ref_models
    s = Scenario(device, model, 4096, kv_policy=PolicySpec())
    assert cache_model_for(s) == cache_layout(model)


@pytest.fixture
def ref_models():
    from kvplan.profiles.loading import load_model_file
    from kvplan.profiles.spec import Device
    from tests.conftest import REF_PHONE

    return load_model_file(Model, REF_7B), load_model_file(Device, REF_PHONE)


def test_evaluate_counts_the_peak_against_the_budget(ref_models):
    model, device = ref_models
    spec = PolicySpec.model_validate({"recent_window": 1024, "history": {"ratio": 0.25, "k": 4, "v": 4},
                                      "evict_every": 256})
    ev = evaluate(Scenario(device, model, 8192, kv_policy=spec))
    # ref-7b: 524,288 B/token at fp16, 131,072 at int4. older = 7,168 → 1,792 kept
    # steady: 1,024 · 524,288 + 1,792 · 131,072 = 536,870,912 + 234,881,024 = 771,751,936
    # peak: 255 wait at fp16: 1,279 · 524,288 + ⌈0.25 · 6,913⌉ = 1,729 · 131,072 = 670,564,352 + 226,623,488
    #     = 897,187,840
    assert ev.kv_bytes == 771_751_936 and ev.kv_peak_bytes == 897_187_840
    assert ev.total_bytes == 1_750_000_000 + 897_187_840
    budget_left = 6_000_000_000 - 1_750_000_000
    assert ev.cache.kv_peak_bytes(ev.max_ctx) <= budget_left < ev.cache.kv_peak_bytes(ev.max_ctx + 1)


def test_model_profile_policy_applies_and_none_overrides_it():
    from kvplan.profiles.loading import load_model_file

    model = load_model_file(Model, DATA / "tiny-with-policy.yaml")
    assert model.kv_policy is not None and model.kv_policy.name == "keep-half"
    from kvplan.profiles.catalog import Catalog

    s = Scenario(Catalog().device("pixel8").profile, model, 100)  # the device plays no part in the cache
    # 2 layers × 1 KV head × 64 × 2 (K, V) × 2 B = 512 B/token; W = 10, ½ of 90 older = 45 at int8: 256 B/token
    assert cache_model_for(s).kv_bytes(100) == 10 * 512 + 45 * 256
    plain = s.with_changes(kv_policy=resolve_policy("none"))
    assert cache_model_for(plain).kv_bytes(100) == 100 * 512


def test_policy_file_errors_have_file_line_field():
    with pytest.raises(ProfileError) as err:
        load_policy_file(DATA / "bad-policy.yaml")
    text = str(err.value)
    assert "bad-policy.yaml:4: history.ratio:" in text
    assert "bad-policy.yaml:6: history.k.bitz: unknown field; did you mean 'bits'?" in text


def test_policy_from_flags():
    spec = policy_from_options(recent_window=4096, history_ratio="20%", history_bits="4/3", evict_every=512)
    assert spec.history.k.bits == 4 and spec.history.v.bits == 3 and spec.history.k.group_size == 128
    cache = policy_cache(LLAMA8B, spec)
    # K int4/g128 (scale only): 528; V int3/g128: 384 + 16 = 400 → 32 × 928 = 29,696 B/token
    assert cache.tiers[0].history_bytes_per_token == 29_696
    assert policy_from_options() is None
    with pytest.raises(UsageError, match="--kv-history-ratio"):
        policy_from_options(recent_window=4096)
    with pytest.raises(UsageError, match=r"--kv-history-ratio: must be between 0 and 1 \(or 0–100 %\), got 1.5: did you mean 1.5%\?$"):
        policy_from_options(history_ratio="1.5")
    for bad in ("120%", "-0.1", "nan"):  # above, below, not finite
        with pytest.raises(UsageError, match=f"--kv-history-ratio: must be between 0 and 1 .*, got {bad}$"):
            policy_from_options(history_ratio=bad)
    with pytest.raises(UsageError, match="--kv-history-bits"):
        policy_from_options(history_ratio="0.5", history_bits="4/3/2")


@pytest.mark.parametrize("path", sorted((ROOT / "examples").glob("kv-policy*.yaml")), ids=lambda p: p.name)
def test_shipped_example_policies_load_and_compress(path):
    cache = policy_cache(LLAMA8B, load_policy_file(path))
    # every example stores 128k tokens in less than a third of the plain fp16 cache (17,179,869,184 B)
    assert 0 < cache.kv_peak_bytes(131_072) < 17_179_869_184 / 3
