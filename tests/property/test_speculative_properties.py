"""Speculative decoding's expected tokens per step (kvplan.engine.speculative, Leviathan et al. 2023 eq. 1):
the closed form is the geometric series of the accepted prefix, bounded by 1 and k + 1, and grows with A and k."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from kvplan.engine import speculative as sp

rates = st.floats(min_value=1e-6, max_value=1 - 1e-6)
drafts = st.integers(min_value=0, max_value=64)


@given(rates, drafts)
def test_expected_tokens_is_the_geometric_series(a, k):
    # token i (0-based) of a step is produced when the first i drafted tokens are accepted: P = A^i
    assert math.isclose(sp.expected_tokens_per_step(a, k), sum(a**i for i in range(k + 1)), rel_tol=1e-9)


@given(rates, drafts)
def test_expected_tokens_between_one_and_k_plus_one(a, k):
    e = sp.expected_tokens_per_step(a, k)
    assert 1 - 1e-12 <= e <= k + 1 + 1e-9
    assert sp.expected_tokens_per_step(a, 0) == 1


@given(rates, rates, drafts)
def test_expected_tokens_grow_with_the_rate_and_the_draft(a, b, k):
    lo, hi = min(a, b), max(a, b)
    assert sp.expected_tokens_per_step(lo, k) <= sp.expected_tokens_per_step(hi, k) + 1e-9
    assert sp.expected_tokens_per_step(a, k) <= sp.expected_tokens_per_step(a, k + 1)


@given(rates, drafts, st.floats(min_value=1e-4, max_value=1.0), st.floats(min_value=1e-4, max_value=1.0))
def test_speculation_pays_only_when_the_tokens_outgrow_the_draft_steps(a, k, t_draft, t_verify):
    # faster than plain decode (1 / t_verify) exactly when E > 1 + k · t_draft / t_verify
    rate = sp.speculative_tokens_per_s(sp.expected_tokens_per_step(a, k), k, t_draft, t_verify)
    e = sp.expected_tokens_per_step(a, k)
    if not math.isclose(e, 1 + k * t_draft / t_verify, rel_tol=1e-9):
        assert (rate > 1 / t_verify) == (e > 1 + k * t_draft / t_verify)
