"""The context at a decode target uses the steady cache a step reads, as the decode rate does (not the peak the
memory answer uses); the mean decode under llama.cpp's -np N averages over one sequence's own generation."""

from __future__ import annotations

import pytest

from kvplan.plan import Scenario, evaluate
from kvplan.profiles.catalog import Catalog
from kvplan.profiles.runtime import runtime_spec


@pytest.fixture(scope="module")
def pixel8():
    return Catalog().device("pixel8").profile


def _ev(device, model, ctx, **kw):
    return evaluate(Scenario(device, Catalog().model(model).profile, ctx, **kw))


@pytest.mark.parametrize("model, runtime, target", [("gemma-3-4b", "transformers", 13.0),
                                                    ("mistral-7b-v0.1", "transformers", 8.2)])
def test_context_at_target_is_where_the_decode_rate_crosses_it(pixel8, model, runtime, target):
    spec = runtime_spec(runtime)
    at = _ev(pixel8, model, 1024, runtime=spec, target_tokens_per_s=target).max_ctx_at_target
    # exact to the token, against check's own rate at that context and one more
    assert _ev(pixel8, model, at, runtime=spec).decode_tokens_per_s >= target
    assert _ev(pixel8, model, at + 1, runtime=spec).decode_tokens_per_s < target


def test_gemma_3_4b_at_13_tok_s_reaches_past_the_peak_answer(pixel8):
    # the peak after a one-shot prefill holds every token on the sliding layers; a decode step reads the steady
    # cache (window-sized sliding layers), so the target holds to 23,643 tokens, not the 4,350 the peak gave
    at = _ev(pixel8, "gemma-3-4b", 20_480, runtime=runtime_spec("transformers"), target_tokens_per_s=13.0)
    assert at.max_ctx_at_target == 23_643


def test_mean_decode_under_parallel_streams_is_per_sequence(pixel8):
    llama = runtime_spec("llama.cpp")
    one = _ev(pixel8, "llama-3.1-8b", 16_384, runtime=llama)
    three = _ev(pixel8, "llama-3.1-8b", 16_384, runtime=llama, sequences=3)
    # -c 16,384 over 3 streams: ⌈16,384 / 3⌉ = 5,462 cells padded to 256 → 5,632 tokens per sequence
    assert three.mean_decode_tokens == 5_632 and one.mean_decode_tokens == 16_384
    # each step of the 3 streams reads all three caches: never faster than one sequence over the same -c
    assert three.mean_decode_tokens_per_s < one.mean_decode_tokens_per_s
    assert three.mean_decode_tokens_per_s <= three.decode_tokens_per_s_roofline
