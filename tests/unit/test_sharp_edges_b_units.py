"""Issue #27 (sharp edges): durations past minutes, the order of profile lists, counts with their suffix."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvplan.render.fmt import seconds
from kvplan.profiles.catalog import natural_key

YEAR_S = 365.25 * 86400  # 31,557,600 s


@pytest.mark.parametrize("x, text", [
    (119, "119.00 s"),
    (120, "2.0 min"),  # 120 / 60
    (7199, "120.0 min"),  # below 2 h
    (7200, "2.0 h"),  # 7,200 / 3,600
    (3 * 86400, "3.0 d"),
    (7.9 * YEAR_S, "7.9 years"),  # was "4154760.0 min"
    (1234.5 * YEAR_S, "1,234.5 years"),  # digit groups
])
def test_long_durations_use_hours_days_and_years(x, text):
    assert seconds(x) == text


def test_profile_names_in_natural_order():
    names = ["galaxy-s24-ultra.yaml", "galaxy-s24.yaml", "macbook-air-m2-16gb.yaml", "macbook-air-m2-8gb.yaml"]
    assert [p.name for p in sorted(map(Path, names), key=natural_key)] == [
        "galaxy-s24.yaml", "galaxy-s24-ultra.yaml", "macbook-air-m2-8gb.yaml", "macbook-air-m2-16gb.yaml"]


# --- hints that misled ----------------------------------------------------------------------------------------------

def test_a_list_of_grouped_counts_without_spaces_suggests_both_unambiguous_spellings():
    from kvplan.errors import QuantityError
    from kvplan.units import split_token_list

    with pytest.raises(QuantityError) as caught:
        split_token_list("1,024,2,048")
    message = str(caught.value)
    assert "'1, 024'" not in message  # the hint once split a number in two
    assert "('1024,2048')" in message and "('1,024, 2,048')" in message
    # each suggestion reads back as the two counts 1,024 and 2,048
    assert split_token_list("1024,2048") == ["1024", "2048"]
    assert split_token_list("1,024, 2,048") == ["1,024", "2,048"]


def test_a_list_for_a_single_count_says_so_not_thousands_separators():
    from kvplan.errors import QuantityError
    from kvplan.units import parse_tokens

    with pytest.raises(QuantityError) as caught:
        parse_tokens("1k,2k", noun="a prefix")
    assert str(caught.value) == "a prefix is one value, got a list '1k,2k'"
    with pytest.raises(QuantityError, match="thousands separators go every three digits"):
        parse_tokens("1,00")  # a misplaced separator still gets the separator hint


# --- plot labels inside their axes ----------------------------------------------------------------------------------

@pytest.mark.parametrize("device, model, ctx", [
    ("macbook-pro-m4-pro-24gb", "qwen3-0.6b", 32_768),  # max context 147,198 on a 192k axis: the label ran off
    ("pixel8", "7b", 8192),  # max context 5,016 early on the axis
    ("macbook-pro-m4-pro-24gb", "gemma-3-1b", 32_768),  # max context 4,069,431: past the axis, said at its edge
])
def test_max_context_labels_stay_inside_their_axes(device, model, ctx):
    import matplotlib

    matplotlib.use("Agg")
    from kvplan.plan import Scenario, evaluate
    from kvplan.plots.check import summary_figure
    from kvplan.profiles.catalog import Catalog

    catalog = Catalog()
    ev = evaluate(Scenario(catalog.device(device).profile, catalog.model(model).profile, ctx))
    figure = summary_figure(ev)
    figure.canvas.draw()
    labels = [(ax, t) for ax in figure.axes for t in ax.texts if (t.get_gid() or "").startswith("max_ctx_label")]
    assert len(labels) == 2  # one in the memory panel, one in the decode panel
    for ax, text in labels:
        box, frame = text.get_window_extent(), ax.get_window_extent()
        assert frame.x0 <= box.x0 and box.x1 <= frame.x1, (text.get_text(), box, frame)


def test_a_summary_axis_stops_at_eight_times_the_context():
    # gemma-3-1b at 32k (trained to 32,768) crosses the budget at 4,069,431 tokens; the axis stops at
    # 8 × 32,768 = 262,144 (it ran to 5M, the 32k mark squeezed against the left edge)
    import matplotlib

    matplotlib.use("Agg")
    from kvplan.plan import Scenario, evaluate
    from kvplan.plots.check import summary_figure
    from kvplan.profiles.catalog import Catalog

    catalog = Catalog()
    ev = evaluate(Scenario(catalog.device("macbook-pro-m4-pro-24gb").profile, catalog.model("gemma-3-1b").profile,
                           32_768))
    assert ev.max_ctx == 4_069_431
    figure = summary_figure(ev)
    assert all(ax.get_xlim()[1] <= 262_144 for ax in figure.axes)
    texts = [t.get_text() for ax in figure.axes for t in ax.texts]
    assert texts.count("max context 4,069,431 →\n(past this axis)") == 2
