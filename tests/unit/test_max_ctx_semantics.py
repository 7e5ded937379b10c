"""max_ctx is what fits in MEMORY; the trained context is reported beside it, never a cap.

And one sequence's cache under llama.cpp, whose -c is the total shared by the -np sequences.
Fixtures: tests/data/profiles/ref-phone.yaml (8 GB − 2 GB reserve = 6e9 B budget, 50 GB/s) and
tests/data/maxctx/*.yaml (the reference 7B trained to 4k, the same with every layer windowed, a GQA 8B).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kvplan.advice import changes_to_fit
from kvplan.profiles.catalog import Catalog
from kvplan.plan import Scenario, evaluate
from kvplan.profiles.runtime import runtime_spec

DATA = Path(__file__).parent.parent / "data"


@pytest.fixture(scope="module")
def phone():
    return Catalog().device(str(DATA / "profiles" / "ref-phone.yaml")).profile


def _model(name):
    return Catalog().model(str(DATA / "maxctx" / f"{name}.yaml")).profile


def test_global_model_max_ctx_is_memory_not_trained(phone):
    ev = evaluate(Scenario(phone, _model("ref-7b-4k"), 8192))
    # ⌊(6e9 − 1.75e9) / 524,288⌋ = ⌊8,106.2⌋ = 8,106 tokens fit, past the 4,096 trained
    assert ev.max_ctx == 8106 and ev.max_ctx_limited_by == "memory"
    assert ev.max_ctx_trained == 4096
    # 8,192 > 4,096: needs a context extension
    assert ev.ctx_per_sequence_tokens == 8192 and ev.ctx_beyond_trained is True
    assert evaluate(Scenario(phone, _model("ref-7b-4k"), 4096)).ctx_beyond_trained is False


def test_windowed_model_is_unbounded_by_memory_not_capped_at_trained(phone):
    model = _model("ref-7b-swa")
    ev = evaluate(Scenario(phone, model, 8192))
    # the cache stops at 4,096 · 524,288 = 2,147,483,648 B ≤ 6e9 − 1.75e9: every context fits
    assert ev.kv_bytes == 2_147_483_648
    assert ev.max_ctx is None and ev.max_ctx_limited_by == "unbounded"
    assert ev.max_ctx_trained == 32768 and ev.ctx_beyond_trained is False
    assert evaluate(Scenario(phone, model, 40_000)).ctx_beyond_trained is True  # 40,000 > 32,768


def test_windowed_model_below_its_window_is_limited_by_memory(phone):
    model = _model("ref-7b-swa")
    # reserve 5.25e9 → budget 2.75e9, allowance 2.75e9 − 1.75e9 = 1e9 < the 2,147,483,648 B full window:
    # ⌊1e9 / 524,288⌋ = 1,907 (1,907 · 524,288 = 999,817,216 ≤ 1e9 < 1,908 · 524,288 = 1,000,341,504)
    ev = evaluate(Scenario(phone, model, 1024, os_reserve_bytes=5_250_000_000))
    assert ev.max_ctx == 1907 and ev.max_ctx_limited_by == "memory"


def test_sliding_window_advice_row_is_consistent_with_its_verdict(phone):
    ev = evaluate(Scenario(phone, _model("ref-7b-4k"), 8192))
    # 1.75e9 + 8,192 · 524,288 = 6,044,967,296 B > 6e9: over
    assert ev.verdict.value == "over"
    changes = changes_to_fit(ev)
    (window,) = [c for c in changes if c.kind == "sliding_window"]
    # a 4,096 window on every layer: 1.75e9 + 2,147,483,648 = 3,897,483,648 B fits, at any context
    assert window.value == 4096 and window.evaluation.total_bytes == 3_897_483_648
    assert window.evaluation.max_ctx is None and window.evaluation.max_ctx_limited_by == "unbounded"
    for change in changes:  # every change fits at its own ctx, so its max_ctx is at least that ctx
        c = change.evaluation
        assert c.fits and (c.max_ctx is None or c.max_ctx >= c.scenario.ctx)


def _llama(phone, ctx, sequences, **options):
    spec = runtime_spec("llama.cpp", **options)
    return evaluate(Scenario(phone, _model("ref-8b-gqa"), ctx, sequences=sequences, runtime=spec))


def test_llamacpp_per_sequence_cache_is_one_stream(phone):
    ev = _llama(phone, 8192, 3)
    # -c 8,192 over -np 3: pad(8,192 / 3 = 2,730, 256) = 2,816 cells per stream, 3 streams
    # 2,816 · 131,072 = 369,098,752 B per sequence; 3 · 369,098,752 = 1,107,296,256 B in all
    assert ev.kv_bytes == 1_107_296_256
    assert ev.kv_bytes_per_sequence == 369_098_752
    assert ev.ctx_per_sequence_tokens == 2816
    # 2,816 cells per sequence ≤ 4,096 trained: no context extension
    assert ev.ctx_beyond_trained is False


def test_llamacpp_one_sequence_holds_the_whole_context(phone):
    ev = _llama(phone, 8192, 1)
    # 8,192 · 131,072 = 1,073,741,824 B; 8,192 cells > 4,096 trained
    assert ev.kv_bytes == ev.kv_bytes_per_sequence == 1_073_741_824
    assert ev.ctx_beyond_trained is True


def test_llamacpp_unified_has_no_per_sequence_cache(phone):
    ev = _llama(phone, 8192, 3, kv_unified=True)
    # one stream of 8,192 cells shared by the 3 sequences: 8,192 · 131,072 = 1,073,741,824 B, none owns a part
    assert ev.kv_bytes == 1_073_741_824 and ev.kv_bytes_per_sequence is None
    assert ev.ctx_per_sequence_tokens == 8192


def test_ideal_per_sequence_cache_is_ctx_tokens(phone):
    ev = evaluate(Scenario(phone, _model("ref-8b-gqa"), 8192, sequences=3))
    # the ideal cache's ctx is per sequence: 8,192 · 131,072 = 1,073,741,824 B each, 3× in all
    assert ev.kv_bytes_per_sequence == 1_073_741_824 and ev.kv_bytes == 3_221_225_472


@pytest.mark.parametrize("max_cache_len, max_ctx", [
    # 8,106 · 524,288 = 4,249,878,528 ≤ 6e9 − 1.75e9 = 4.25e9: a static cache of up to 8,106 tokens fits
    (8106, 8106),
    (4096, 4096),
    # 8,107 · 524,288 = 4,250,402,816 > 4.25e9: the preallocation does not fit, although the weights do
    (8107, None),
    (16384, None),
])
def test_a_static_cache_is_limited_by_its_max_cache_len_fitting_or_not(phone, max_cache_len, max_ctx):
    spec = runtime_spec("transformers", cache="static", max_cache_len=max_cache_len)
    ev = evaluate(Scenario(phone, _model("ref-7b-4k"), 1024, runtime=spec))
    assert ev.max_ctx == max_ctx and ev.max_ctx_limited_by == "max_cache_len"


def test_a_static_cache_under_weights_that_exceed_the_budget_is_limited_by_the_weights(phone):
    model = _model("ref-7b-4k").model_copy(update={"weights": 6_000_000_001})  # 1 B over the 6e9 budget
    spec = runtime_spec("transformers", cache="static", max_cache_len=4096)
    ev = evaluate(Scenario(phone, model, 1024, runtime=spec))
    assert ev.max_ctx is None and ev.max_ctx_limited_by == "weights"


def test_a_pinned_prefix_that_leaves_no_room_is_named_not_the_weights(phone):
    # 6e9 − 1.75e9 = 4.25e9 B beside the weights; a 8,107-token prefix takes 8,107 · 524,288 = 4,250,402,816 B
    ev = evaluate(Scenario(phone, _model("ref-7b-4k"), 1, pinned_prefix_tokens=8107))
    assert ev.max_ctx is None and ev.max_ctx_limited_by == "pinned_prefix"
    # 8,106 tokens of prefix leave 4.25e9 − 4,249,878,528 = 121,472 B: less than one 524,288-B token → 0 tokens
    ev = evaluate(Scenario(phone, _model("ref-7b-4k"), 1, pinned_prefix_tokens=8106))
    assert ev.max_ctx == 0 and ev.max_ctx_limited_by == "memory"
