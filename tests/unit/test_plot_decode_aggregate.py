"""``plot decode -n N``: the aggregate rate over the N sequences beside the per-sequence one, named in the title."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from kvplan import curves as data  # noqa: E402
from kvplan.plan import Scenario  # noqa: E402
from kvplan.plots.decode import decode_figure  # noqa: E402
from kvplan.profiles.catalog import Catalog  # noqa: E402
from tests.conftest import REF_7B, REF_PHONE  # noqa: E402

# ref-phone reads 50 GB/s at efficiency 1 with no latency; ref-7b: 1.75 GB of weights, 32 × 32 × 128 × 2 × 2 =
# 524,288 KV bytes per token. 4 sequences at 2,048 tokens: 4 × 2,048 × 524,288 = 4,294,967,296 B of cache, a step
# reads 1,750,000,000 + 4,294,967,296 = 6,044,967,296 B → 50e9 / 6,044,967,296 = 8.27134 tok/s per sequence,
# and the step emits one token per sequence: 4 × 8.27134 = 33.0854 tok/s over the 4.
PER_SEQUENCE = 50e9 / 6_044_967_296
AGGREGATE = 4 * PER_SEQUENCE


@pytest.fixture(scope="module")
def four():
    catalog = Catalog()
    return Scenario(catalog.device(str(REF_PHONE)).profile, catalog.model(str(REF_7B)).profile, 2048, sequences=4)


def _line(fig, gid):
    (line,) = [a for a in fig.axes[0].get_lines() if a.get_gid() == gid]
    return line


def test_aggregate_curve_is_checks_aggregate_rate(four):
    c = data.decode_curves(four, ctx_max_tokens=4096)
    i = int(np.searchsorted(c.ctx_tokens, 2048))
    assert c.decode_tokens_per_s[i] == pytest.approx(PER_SEQUENCE, rel=1e-12)
    assert c.aggregate_tokens_per_s[i] == pytest.approx(AGGREGATE, rel=1e-12)
    assert c.evaluation.aggregate_decode_tokens_per_s == pytest.approx(AGGREGATE, rel=1e-12)
    np.testing.assert_allclose(c.aggregate_tokens_per_s, 4 * c.decode_tokens_per_s, rtol=1e-12)


def test_one_configuration_draws_and_names_the_aggregate(four):
    fig = decode_figure([data.decode_curves(four, ctx_max_tokens=4096)])
    assert fig._suptitle.get_text() == "Decode speed against context — ref-phone × ref-7b, 4 sequences"
    line = _line(fig, "aggregate:0")
    assert line.get_label() == ("all 4 sequences together (the weights read once per step) — check's aggregate "
                                "rate")
    assert _line(fig, "ctx_aggregate:0").get_ydata()[0] == pytest.approx(AGGREGATE, rel=1e-12)
    texts = {t.get_gid(): t.get_text() for t in fig.axes[0].texts}
    # one label for both marks (two labels at marks this close overlapped), above the aggregate's diamond
    assert texts["ctx_label:0"].startswith("2k: 8.3 tok/s per sequence from RAM\n33.1 tok/s over 4 sequences")
    label = next(t for t in fig.axes[0].texts if t.get_gid() == "ctx_label:0")
    assert label.xy[1] == pytest.approx(AGGREGATE, rel=1e-12)
    assert fig.axes[0].get_ylim()[1] >= AGGREGATE  # the aggregate line is inside the axis


def test_overlay_says_the_sequences_in_title_and_labels(four):
    one = four.with_changes(sequences=1)
    fig = decode_figure([data.decode_curves(s, ctx_max_tokens=4096) for s in (four, four)])
    assert fig._suptitle.get_text() == "Decode speed against context, 4 sequences each"
    assert _line(fig, "aggregate:1").get_color() == _line(fig, "decode:1").get_color()
    mixed = decode_figure([data.decode_curves(s, ctx_max_tokens=4096) for s in (four, one)])
    assert mixed._suptitle.get_text() == "Decode speed against context"
    # (6,044,967,296 B of weights and cache over the 6 GB budget: the flash rate follows)
    assert _line(mixed, "decode:0").get_label().startswith(
        "ref-phone × ref-7b, 4 sequences — 8.3 tok/s from RAM at 2k (33.1 over all), ")
    # one sequence: 50e9 / (1,750,000,000 + 2,048 × 524,288) = 17.68 tok/s, its own rate and no aggregate
    assert _line(mixed, "decode:1").get_label() == "ref-phone × ref-7b — 17.7 tok/s from RAM at 2k"
    assert "aggregate:1" not in [line.get_gid() for line in mixed.axes[0].get_lines()]


def test_one_sequence_draws_no_aggregate(four):
    fig = decode_figure([data.decode_curves(four.with_changes(sequences=1), ctx_max_tokens=4096)])
    assert not [a for a in fig.axes[0].get_lines() if str(a.get_gid()).startswith("aggregate")]
    assert fig._suptitle.get_text() == "Decode speed against context — ref-phone × ref-7b"
    assert fig.axes[0].get_ylabel() == "decode [tokens/s]"
