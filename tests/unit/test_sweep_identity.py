"""Every sweep row adds up: total_bytes = weights_bytes + kv_peak_bytes + pinned_prefix_bytes + overhead_bytes,
under the ideal formula, llama.cpp, transformers and a KV policy (the peak, not the steady kv_bytes)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvplan import sweep
from kvplan.profiles.catalog import Catalog
from kvplan.plan import Knobs, build_scenario

DATA = Path(__file__).parents[1] / "data"
REF_PHONE = str(DATA / "profiles" / "ref-phone.yaml")
REF_7B = str(DATA / "profiles" / "ref-7b.yaml")
WINDOWED = str(DATA / "planning" / "windowed-1b.yaml")
POLICY = str(Path(__file__).parents[2] / "examples" / "kv-policy.yaml")

CASES = {
    "ideal": Knobs(pinned_prefix_tokens=512),
    "llama.cpp": Knobs(runtime="llama.cpp"),
    "llama.cpp unified": Knobs(runtime={"name": "llama.cpp", "kv_unified": True}),
    "transformers": Knobs(runtime="transformers", pinned_prefix_tokens=100),
    "policy": Knobs(kv_policy=POLICY, pinned_prefix_tokens=512),
}


def _columns(model: str, knobs: Knobs, ctx, seq):
    cat = Catalog()
    base = build_scenario(cat.device(REF_PHONE).profile, cat.model(model).profile, 1, knobs)
    return sweep.evaluate_group(base, *sweep.grid(ctx, seq))


def _adds_up(cols) -> bool:
    parts = cols.weights_bytes + cols.kv_peak_bytes + cols.pinned_prefix_bytes + cols.overhead_bytes
    parts = parts + cols.buffers_bytes + (cols.process_bytes if cols.process_bytes is not None else 0)
    return bool(np.array_equal(cols.total_bytes, parts))


@pytest.mark.parametrize("model", [REF_7B, WINDOWED])
@pytest.mark.parametrize("case", list(CASES))
@settings(max_examples=25, deadline=None)
@given(ctx=st.lists(st.integers(1, 300_000), min_size=1, max_size=6),
       seq=st.lists(st.integers(1, 8), min_size=1, max_size=3, unique=True))
def test_total_is_weights_plus_peak_plus_pinned_plus_overhead(model, case, ctx, seq):
    assert _adds_up(_columns(model, CASES[case], ctx, seq))


@pytest.mark.parametrize("case", ["transformers", "policy"])
def test_the_peak_is_what_the_total_counts(case):
    # the windowed model under transformers' DynamicCache (a one-shot prefill holds the whole prompt
    # before the window is cut) and the policy (tokens awaiting the next eviction) peak above the steady
    # cache: total − kv_bytes − the rest is then the gap kv_peak_bytes − kv_bytes, never 0
    cols = _columns(WINDOWED, CASES[case], [5000, 100_000], [1, 2])
    gap = cols.kv_peak_bytes - cols.kv_bytes
    assert (gap > 0).any() and (gap >= 0).all()
    steady = cols.weights_bytes + cols.kv_bytes + cols.pinned_prefix_bytes + cols.overhead_bytes
    assert np.array_equal(cols.total_bytes - steady, gap)
    assert _adds_up(cols)
