"""Properties of KV cache policies over generated models, policies and contexts (issue #7)."""

from __future__ import annotations

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from kvplan.engine import tiered
from kvplan.caches.ideal import cache_layout
from kvplan.profiles.policy import PolicySpec
from kvplan.caches.policy import policy_cache
from kvplan.profiles.spec import Model

ctxs = st.integers(min_value=0, max_value=300_000)
formats = st.sampled_from(["f16", "q8_0", "q4_0", 8, 4, {"bits": 4, "group_size": 64, "zero_bytes": 2},
                           {"bits": 3, "group_size": 128, "outlier_fraction": 0.02}])


@st.composite
def models(draw):
    heads = draw(st.sampled_from([2, 4, 8, 16, 32]))
    kv_heads = draw(st.sampled_from([d for d in (1, 2, 4, 8, 16, 32) if heads % d == 0]))
    window = draw(st.one_of(st.none(), st.integers(16, 20_000)))
    pattern = draw(st.sampled_from(["all", "alternating", "5:1"]))
    mla = draw(st.one_of(st.none(), st.just({"kv_lora_rank": 512, "qk_rope_head_dim": 64})))
    return Model(name="m", params=10**9, layers=draw(st.integers(1, 40)), attention_heads=heads, kv_heads=kv_heads,
                 head_dim=draw(st.sampled_from([64, 128])), sliding_window=window,
                 sliding_window_pattern=pattern if window else "all", mla=mla,
                 kv_bits=draw(st.sampled_from([16, 8, 4])))


@st.composite
def full_precision_policies(draw):
    """Tiers whose history keeps every token in the recent format: no compression at all."""
    tier = {"recent_window": draw(st.integers(0, 50_000)), "history": {"ratio": 1},
            "evict_every": draw(st.integers(1, 2048))}
    if draw(st.booleans()):
        return PolicySpec.model_validate(tier)
    return PolicySpec.model_validate({"layer_groups": [{"layers": draw(st.sampled_from(["10%", "50%", 1])), **tier},
                                                       {"layers": "rest"}]})


@st.composite
def policies(draw):
    ratio = draw(st.sampled_from([0, 0.1, 0.2, "33%", 0.5, 1]))
    tier = {"recent_window": draw(st.integers(0 if ratio == 1 else 1, 50_000)),  # below 1 a window is needed
            "history": {"ratio": ratio, "k": draw(formats), "v": draw(formats)},
            "evict_every": draw(st.integers(1, 2048))}
    if draw(st.booleans()):
        tier["k"] = draw(formats)
    try:
        return PolicySpec.model_validate(tier)
    except ValidationError as exc:  # a history format wider than the recent one is refused: not a policy
        assume("more bytes than" not in str(exc))
        raise


@settings(max_examples=150, deadline=None)
@given(models(), full_precision_policies(), ctxs, st.integers(0, 3 * 10**10))
def test_full_precision_policy_equals_the_plain_cache(model, policy, ctx, allowance):
    plain = cache_layout(model)
    cache = policy_cache(model, policy)
    assert cache.kv_bytes(ctx) == plain.kv_bytes(ctx)
    assert cache.kv_peak_bytes(ctx) == plain.kv_bytes(ctx)
    assert cache.kv_bytes(ctx, 3) == plain.kv_bytes(ctx, 3)
    assert cache.kv_bytes_read_over_generation(ctx % 5000) == plain.kv_bytes_read_over_generation(ctx % 5000)
    assert cache.max_ctx(allowance, 2) == plain.max_ctx(allowance, 2)
    assert cache.unbounded == plain.unbounded
    arr = np.array([0, ctx, ctx + 17])
    assert cache.kv_bytes(arr).tolist() == plain.kv_bytes(arr).tolist()


@settings(max_examples=150, deadline=None)
@given(models(), policies(), ctxs)
def test_peak_is_at_least_steady_and_both_grow_with_ctx(model, policy, ctx):
    cache = policy_cache(model, policy)
    for c in (ctx, ctx + 1):
        assert cache.kv_peak_bytes(c) >= cache.kv_bytes(c) >= 0
    assert cache.kv_bytes(ctx + 1) >= cache.kv_bytes(ctx)
    assert cache.kv_peak_bytes(ctx + 1) >= cache.kv_peak_bytes(ctx)
    # the cache never holds more tokens than it has seen, in any tier
    for t in cache.tiers:
        recent, history, deferred = tiered.tier_tokens(ctx, t)
        seen = ctx if t.window_tokens is None else min(ctx, t.window_tokens)
        assert recent + history <= seen and recent + deferred <= seen


@settings(max_examples=150, deadline=None)
@given(models(), policies(), ctxs)
def test_max_ctx_is_exact(model, policy, ctx):
    cache = policy_cache(model, policy)
    allowance = int(cache.kv_peak_bytes(ctx)) + ctx % 997
    best = cache.max_ctx(allowance)
    if best == float("inf"):
        assert cache.unbounded
        return
    assert best >= ctx
    assert cache.kv_peak_bytes(best) <= allowance < cache.kv_peak_bytes(best + 1)


@settings(max_examples=100, deadline=None)
@given(models(), policies(), st.lists(ctxs, min_size=1, max_size=5))
def test_arrays_match_scalars(model, policy, values):
    cache = policy_cache(model, policy)
    arr = np.array(values)
    assert cache.kv_bytes(arr).tolist() == [cache.kv_bytes(v) for v in values]
    assert cache.kv_peak_bytes(arr).tolist() == [cache.kv_peak_bytes(v) for v in values]
