"""Thresholds against random limits: pass exactly when the figure is on the right side; the miss is the gap."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from kvplan.profiles.catalog import Catalog
from kvplan.gate.checker import judge
from kvplan.gate.spec import HeadroomLimit, Thresholds
from kvplan.plan import Scenario, evaluate
from tests.conftest import REF_7B, REF_PHONE

_CAT = Catalog()
_DEVICE, _MODEL = _CAT.device(str(REF_PHONE)).profile, _CAT.model(str(REF_7B)).profile


@settings(max_examples=60, deadline=None)
@given(ctx=st.integers(1, 20_000), max_total=st.integers(0, 10**10), min_headroom=st.integers(0, 6 * 10**9),
       fraction=st.floats(0, 0.99), min_max_ctx=st.integers(1, 20_000))
def test_limits_pass_exactly_on_their_side(ctx, max_total, min_headroom, fraction, min_max_ctx):
    ev = evaluate(Scenario(_DEVICE, _MODEL, ctx))
    t = {r.name: r for r in judge(Thresholds(max_total=max_total, min_headroom=HeadroomLimit(bytes=min_headroom),
                                             min_max_ctx=min_max_ctx), ev)}
    assert t["must_fit"].passed == (ev.total_bytes <= ev.budget_bytes)
    assert t["max_total"].passed == (ev.total_bytes <= max_total)
    assert t["min_headroom"].passed == (ev.headroom_bytes >= min_headroom)
    assert t["min_max_ctx"].passed == (ev.max_ctx >= min_max_ctx)
    for r in t.values():
        assert (r.miss is None) == r.passed
        if not r.passed:
            assert r.miss > 0
            assert r.miss == (r.limit - r.actual if r.kind == "min" else r.actual - r.limit)
    share = judge(Thresholds(must_fit=False, min_headroom=HeadroomLimit(fraction=fraction)), ev)[0]
    assert share.limit == math.ceil(fraction * ev.budget_bytes) and share.limit_fraction == fraction
