"""A cache with a hard context limit (transformers' StaticCache max_cache_len) ends every context axis there."""

from __future__ import annotations

import numpy as np
import pytest

from kvplan.profiles.catalog import Catalog
from kvplan.plan import Scenario, evaluate
from kvplan import curves as data
from kvplan.profiles.runtime import TransformersSpec, runtime_spec
from tests.conftest import REF_7B, REF_PHONE

STATIC_4K = TransformersSpec(cache="static", max_cache_len=4096)
KV_4K = 4096 * 524_288  # ref-7b: 32 layers × 2 × 32 heads × 128 × 2 B = 524,288 B/token → 2,147,483,648 B


@pytest.fixture(scope="module")
def static():
    cat = Catalog()
    # ref-phone × ref-7b at 2,048 tokens in a StaticCache of 4,096: 1.75e9 + 2,147,483,648 = 3,897,483,648 B ≤ 6e9
    return Scenario(cat.device(str(REF_PHONE)).profile, cat.model(str(REF_7B)).profile, 2048, runtime=STATIC_4K)


def test_ctx_limit_of_caches(static):
    assert data.ctx_limit_of(evaluate(static).cache) == (4096, "max_cache_len")
    assert data.ctx_limit_of(evaluate(static.with_changes(runtime=TransformersSpec())).cache) is None
    assert data.ctx_limit_of(evaluate(static.with_changes(runtime=runtime_spec("llama.cpp"))).cache) is None
    assert data.ctx_limit_of(evaluate(static.with_changes(runtime=None)).cache) is None


def test_zero_tokens_hold_no_static_cache(static):
    # the protocol: no tokens, no cache; a 0-token pinned prefix must not add another preallocated cache
    ev = evaluate(static)
    assert ev.cache.kv_bytes(0) == 0 and ev.pinned_prefix_bytes == 0
    assert ev.total_bytes == 1_750_000_000 + KV_4K == 3_897_483_648


def test_memory_curves_stop_at_max_cache_len(static):
    c = data.memory_curves(static)
    assert c.ctx_limit == (4096, "max_cache_len")
    assert c.ctx_tokens[-1] == 4096 and c.ctx_tokens.max() == 4096  # not 1.25 × max_ctx = 5,120
    assert c.evaluation.max_ctx == 4096  # the cache fits: its length is the max context
    assert c.kv_bytes[0] == 0 and np.all(c.kv_bytes[1:] == KV_4K)  # preallocated whatever the ctx ≥ 1
    assert np.all(c.total_bytes[1:] == 3_897_483_648)
    # an asked axis end past the limit is cut at it; one below is kept
    assert data.memory_curves(static, 20_000).ctx_tokens[-1] == 4096
    assert data.memory_curves(static, 3072).ctx_tokens[-1] == 3072


def test_decode_curves_stop_at_max_cache_len(static):
    c = data.decode_curves(static, 1 << 20)
    assert c.ctx_tokens[-1] == 4096 and c.ctx_limit == (4096, "max_cache_len")
    ev = evaluate(static)
    # every ctx ≥ 1 reads the whole preallocated cache: the rate at 4,096 is the check's rate at 2,048
    assert c.decode_tokens_per_s[-1] == pytest.approx(ev.decode_tokens_per_s)


def test_attention_curves_default_ref_ctx_within_the_limit(static):
    small = static.with_changes(ctx=0, runtime=TransformersSpec(cache="static", max_cache_len=3000))
    c = data.attention_curves(small)
    # ref_ctx: the model's trained context (none in ref-7b: 4,096) cut at max_cache_len 3,000
    assert c.ref_ctx == 3000 and c.ctx_tokens[-1] == 3000
    from kvplan.errors import UsageError

    with pytest.raises(UsageError, match="exceeds runtime.max_cache_len"):
        data.attention_curves(small, ref_ctx=4096)


def test_figures_mark_the_limit(static):
    pytest.importorskip("matplotlib")
    from kvplan.plots.check import check_figures, summary_figure

    ev = evaluate(static)
    figures = check_figures(ev)
    for kind in ("memory", "decode"):
        ax = figures[kind].axes[0]
        gid = "ctx_limit" if kind == "memory" else "ctx_limit:0"
        line = [a for a in ax.get_children() if a.get_gid() == gid]
        assert line and list(line[0].get_xdata()) == [4096, 4096]
        assert ax.get_xlim()[1] == 4096
    # the decode panel names the limit on its line; the memory panel's max-context label already says it is the
    # limit, so the line carries no second label there (the two printed over each other)
    assert "max_cache_len 4,096" in [t.get_text() for t in figures["decode"].axes[0].texts]
    mem = figures["memory"].axes[0]
    assert [t.get_text() for t in mem.texts].count("max context\n4,096 tokens\n(= max_cache_len)") == 1
    assert "max_cache_len 4,096" not in [t.get_text() for t in mem.texts]
    summary = summary_figure(ev)
    assert all(ax.get_xlim()[1] == 4096 for ax in summary.axes[:2])


def test_static_cache_that_does_not_fit_says_so(static):
    pytest.importorskip("matplotlib")
    from kvplan.plots.memory import memory_figure

    # 16,384 preallocated tokens × 524,288 = 8,589,934,592 B > 6e9 − 1.75e9: nothing fits, the weights do
    big = static.with_changes(runtime=TransformersSpec(cache="static", max_cache_len=16384))
    ax = memory_figure([data.memory_curves(big)]).axes[0]
    assert "the cache preallocated for max_cache_len 16,384 exceeds the budget" in [t.get_text() for t in ax.texts]


def test_the_checked_point_label_stays_off_the_budget_line():
    """Just under the budget, two lines of label above the point sat on the budget line and hid it behind their
    box: the label goes below the point there, and stays above it elsewhere."""
    pytest.importorskip("matplotlib")
    from kvplan import Catalog
    from kvplan.plan import Knobs, build_scenario
    from kvplan.curves import memory_curves
    from kvplan.plots.memory import memory_figure

    cat = Catalog()
    # Llama-2-7B at 4k on the Pixel 8: 5.52 GB of a 6 GB budget (0.48 GB under it, the axis tops at 1.18 × 7.1 GB)
    near = memory_figure([memory_curves(build_scenario(cat.device("pixel8").profile, cat.model("7b").profile, 4096,
                                                       Knobs()))])
    # at 1k: 3.91 GB, far under the budget
    far = memory_figure([memory_curves(build_scenario(cat.device("pixel8").profile, cat.model("7b").profile, 1024,
                                                      Knobs()))])

    def label(fig):
        return next(t for t in fig.axes[0].texts if t.get_text().startswith(("4k:", "1k:")))

    assert label(near).get_va() == "top" and label(near).xyann[1] < 0
    assert label(far).get_va() == "bottom" and label(far).xyann[1] > 0
