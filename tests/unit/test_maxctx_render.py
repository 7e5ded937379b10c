"""The max-context wording under llama.cpp's -np: -c is the total, the trained context is per sequence."""

from __future__ import annotations

import pytest

from kvplan.profiles.catalog import Catalog
from kvplan.plan import Scenario, evaluate
from kvplan.render.maxctx import beyond_trained_note, max_ctx_cell, max_ctx_text
from kvplan.profiles.runtime import runtime_spec
from tests.conftest import DATA, REF_PHONE


@pytest.fixture(scope="module")
def phone():
    return Catalog().device(str(REF_PHONE)).profile


def _ev(phone, model, ctx, sequences=1, runtime="llama.cpp", **options):
    m = Catalog().model(str(DATA / "maxctx" / f"{model}.yaml")).profile
    return evaluate(Scenario(phone, m, ctx, sequences=sequences, runtime=runtime_spec(runtime, **options)))


def test_parallel_sequences_within_the_trained_context(phone):
    ev = _ev(phone, "ref-7b-4k", 4096, 2)
    # 6e9 − 1.75e9 = 4.25e9 B; 4.25e9 / 524,288 = 8,106.2 cells over 2 streams → ≤ 4,053 each → pad down to 256:
    # 3,840 per stream; -c 7,680 (-c 7,681 pads to 7,936 → 3,968 → 4,096 per stream:
    # 8,192 cells × 524,288 > 4.25e9)
    assert ev.max_ctx == 7680
    assert max_ctx_text(ev) == "7,680 tokens of -c (3,840 per sequence; model trained to 4,096)"
    assert max_ctx_cell(ev) == "7,680 (3,840 per sequence)"  # 3,840 ≤ 4,096: nothing past the trained context
    assert beyond_trained_note(ev) is None  # -c 4,096 → 2,048 per sequence


def test_parallel_sequences_past_the_trained_context(phone):
    ev = _ev(phone, "ref-8b-gqa", 10240, 2)
    # 6e9 − 4e9 = 2e9 B; 2e9 / 131,072 = 15,258.8 cells over 2 streams → ≤ 7,629 each → 7,424 (29 × 256);
    # -c 14,848 (-c 14,849 → pad 15,104 → 7,552 → 7,680 per stream: 15,360 × 131,072 = 2,013,265,920 > 2e9)
    assert ev.max_ctx == 14848
    assert max_ctx_text(ev) == "14,848 tokens of -c (7,424 per sequence; model trained to 4,096)"
    assert max_ctx_cell(ev) == "14,848 (7,424 per sequence; trained 4,096)"
    # -c 10,240 over 2: 5,120 cells per sequence > 4,096
    assert beyond_trained_note(ev) == ("ref-8b-gqa was trained to 4,096 tokens; -c 10,240 (5,120 per sequence) "
                                       "needs a context extension (RoPE scaling)")


def test_one_sequence_and_unified_keep_the_plain_wording(phone):
    ev = _ev(phone, "ref-7b-4k", 4096, 1)
    # one stream: pad(c) × 524,288 ≤ 4.25e9 → pad(c) ≤ 8,106 → 7,936 cells (31 × 256), -c 7,936
    assert ev.max_ctx == 7936
    assert max_ctx_text(ev) == "7,936 tokens (model trained to 4,096)"
    assert max_ctx_cell(ev) == "7,936 (trained 4,096)"
    unified = _ev(phone, "ref-7b-4k", 4096, 2, kv_unified=True)
    # one stream shared by both sequences: each can attend the whole -c, so the -c is compared with 4,096
    assert unified.max_ctx == 7936 and max_ctx_cell(unified) == "7,936 (trained 4,096)"


def test_ideal_runtime_is_per_sequence_already(phone):
    ev = _ev(phone, "ref-7b-4k", 4096, 2, runtime=None)
    # ideal: ctx is per sequence, ⌊4.25e9 / 2 / 524,288⌋ = ⌊4,053.1⌋ = 4,053 tokens each
    assert ev.max_ctx == 4053
    assert max_ctx_text(ev) == "4,053 tokens (model trained to 4,096)" and max_ctx_cell(ev) == "4,053"
