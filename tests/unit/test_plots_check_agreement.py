"""Plots draw check's figures: the two-term decode rate, the flash-streamed rate past the budget (labelled as
such), the tight zone, llama.cpp's buffers in the memory stack, and at most 12 series."""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from kvplan import curves as data  # noqa: E402
from kvplan.plan import Scenario, evaluate  # noqa: E402
from kvplan.plots.decode import decode_figure  # noqa: E402
from kvplan.plots.memory import memory_figure  # noqa: E402
from kvplan.plots.series import MAX_SERIES, count_series, title_note  # noqa: E402
from kvplan.profiles.catalog import Catalog  # noqa: E402
from tests.conftest import REF_7B, REF_PHONE  # noqa: E402


@pytest.fixture(scope="module")
def slow_phone(tmp_path_factory):
    """ref-phone (50 GB/s at efficiency 1, flash 2 GB/s, 6 GB budget) with a 5 ms fixed cost per decode step."""
    path = tmp_path_factory.mktemp("dev") / "slow-phone.yaml"
    path.write_text(REF_PHONE.read_text().replace("name: ref-phone", "name: slow-phone").replace(
        "aliases: [refphone]", "aliases: [slowphone]") + "decode_latency: 5 ms\n")
    return Catalog().device(str(path)).profile


@pytest.fixture(scope="module")
def m7b():
    return Catalog().model(str(REF_7B)).profile


def _at(ctx_tokens, values, c):
    i = int(np.searchsorted(ctx_tokens, c))
    assert ctx_tokens[i] == c, f"{c} is not on the grid"
    return values[i]


def _artist(ax, gid):
    found = [a for a in ax.get_children() if a.get_gid() == gid]
    assert found, f"no artist with gid {gid!r}"
    return found[0]


def test_decode_curve_is_the_two_term_model(slow_phone, m7b):
    s = Scenario(slow_phone, m7b, 8192)
    c = data.decode_curves(s)
    # 4k: step = 1.75e9 + 524,288 × 4,096 = 3,897,483,648 B; 3,897,483,648 / 50e9 + 0.005 = 0.08294967296 s
    assert _at(c.ctx_tokens, c.decode_tokens_per_s, 4096) == pytest.approx(1 / 0.08294967296, rel=1e-12)
    # the roofline is the bound: 100 % bandwidth and no latency, 50e9 / 3,897,483,648
    assert _at(c.ctx_tokens, c.roofline_tokens_per_s, 4096) == pytest.approx(50e9 / 3_897_483_648, rel=1e-12)
    assert c.latency_s == 0.005
    for ctx in (0, 1024, 4096, 8106, 8192):  # bit for bit what check prints at every context
        assert _at(c.ctx_tokens, c.decode_tokens_per_s, ctx) == evaluate(s.with_changes(ctx=ctx)).decode_tokens_per_s


def test_latency_zero_is_the_bandwidth_model(m7b):
    phone = Catalog().device(str(REF_PHONE)).profile
    c = data.decode_curves(Scenario(phone, m7b, 4096))
    assert c.latency_s == 0.0
    assert _at(c.ctx_tokens, c.decode_tokens_per_s, 4096) == 50e9 / 3_897_483_648  # 12.829 tok/s


def test_streamed_rate_past_the_budget_is_checks_flash_figure(slow_phone, m7b):
    s = Scenario(slow_phone, m7b, 8192)
    ev = evaluate(s)
    c = data.decode_curves(s)
    # max context ⌊(6e9 − 1.75e9) / 524,288⌋ = 8,106: up to there no flash line
    assert ev.max_ctx == 8106 and math.isnan(_at(c.ctx_tokens, c.streamed_tokens_per_s, 8106))
    # 8k: total 1.75e9 + 4,294,967,296 = 6,044,967,296 B, overflow 44,967,296 B read from flash each step:
    # (6,044,967,296 − 44,967,296) / 50e9 + 44,967,296 / 2e9 + 0.005 = 0.12 + 0.022483648 + 0.005 = 0.147483648 s
    streamed = _at(c.ctx_tokens, c.streamed_tokens_per_s, 8192)
    assert streamed == pytest.approx(1 / 0.147483648, rel=1e-12)
    assert streamed == ev.flash.streamed_decode_tokens_per_s
    # and from RAM, as if it fit: 6,044,967,296 / 50e9 + 0.005 = 0.12589934592 s → 7.94 tok/s (check's headline)
    assert _at(c.ctx_tokens, c.decode_tokens_per_s, 8192) == pytest.approx(1 / 0.12589934592, rel=1e-12)


def test_decode_figure_marks_both_rates_at_an_over_budget_ctx_and_names_them(slow_phone, m7b):
    s = Scenario(slow_phone, m7b, 8192)
    ev = evaluate(s)
    fig = decode_figure([data.decode_curves(s)])
    ax = fig.axes[0]
    assert list(_artist(ax, "ctx:0").get_ydata()) == [ev.decode_tokens_per_s]  # check's "decode at 8,192 tokens"
    assert list(_artist(ax, "ctx_flash:0").get_ydata()) == [ev.flash.streamed_decode_tokens_per_s]
    # 1 / 0.12589934592 = 7.94; 1 / 0.147483648 = 6.78; the overflow 44,967,296 B = 44.97 MB
    assert _artist(ax, "ctx_label:0").get_text() == "8k: 7.9 tok/s from RAM\n(as if it fit)"
    assert _artist(ax, "ctx_flash_label:0").get_text() == "6.8 tok/s: the 44.97 MB\noverflow streamed from flash"
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "from RAM (100.0 % of 50.00 GB/s + 5.00 ms/step) — check's decode rate" in legend
    assert "past the budget: overflow streamed from flash (2.00 GB/s)" in legend
    assert "roofline (100 % of bandwidth, no latency)" in legend


def test_fitting_ctx_has_one_mark_and_no_flash_words(slow_phone, m7b):
    s = Scenario(slow_phone, m7b, 4096)
    fig = decode_figure([data.decode_curves(s)])
    ax = fig.axes[0]
    assert not [a for a in ax.get_children() if a.get_gid() == "ctx_flash:0"]
    # 1 / 0.08294967296 = 12.06 tok/s
    assert _artist(ax, "ctx_label:0").get_text() == "4k: 12.1 tok/s from RAM"


def test_tight_zone_follows_the_margin(slow_phone, m7b):
    c = data.decode_curves(Scenario(slow_phone, m7b, 4096))
    # fit ⇔ total ≤ 6e9 − 10 % = 5.4e9 ⇔ 524,288 × ctx ≤ 3.65e9 ⇔ ctx ≤ ⌊6,961.8⌋ = 6,961
    assert c.fit_ctx == 6961
    assert _at(c.ctx_tokens, c.verdict_codes, 6961) == 0 and _at(c.ctx_tokens, c.verdict_codes, 6962) == 1
    assert _at(c.ctx_tokens, c.verdict_codes, 8106) == 1 and _at(c.ctx_tokens, c.verdict_codes, 8107) == 2
    zone = _artist(decode_figure([c]).axes[0], "tight_zone")
    assert zone.get_label() == "tight: headroom under the 10 % margin"
    wide = data.decode_curves(Scenario(slow_phone, m7b, 4096, margin_fraction=0.2))
    assert wide.fit_ctx == 5817  # total ≤ 4.8e9 ⇔ ctx ≤ ⌊3.05e9 / 524,288⌋ = ⌊5,817.4⌋


def test_multi_series_labels_quote_both_rates(slow_phone, m7b):
    over, fits = Scenario(slow_phone, m7b, 8192), Scenario(slow_phone, m7b, 4096).with_changes(
        os_reserve_bytes=1_000_000_000)
    fig = decode_figure([data.decode_curves(over), data.decode_curves(fits, ctx_max_tokens=10240)])
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    # each series names its max context, whose vertical line is drawn in its colour (issue #27: unlabelled among 12):
    # budget 6e9 − 1.75e9 = 4.25e9 B / 524,288 B per token = ⌊8,106.4⌋ = 8,106; with 1e9 reserved, 7e9 − 1.75e9
    # = 5.25e9 / 524,288 = ⌊10,013.6⌋ = 10,013, inside the 10,240 axis
    assert ("slow-phone × ref-7b — 7.9 tok/s from RAM at 8k, 6.8 streamed from flash; max context 8,106 "
            "(the vertical line)") in legend
    assert "slow-phone × ref-7b — 12.1 tok/s from RAM at 4k; max context 10,013 (the vertical line)" in legend
    assert "dashed: past the budget, the overflow streamed from flash" in legend


@pytest.fixture(scope="module")
def llamacpp_8k():
    cat = Catalog()
    return Scenario(cat.device("pixel8").profile, cat.model("7b").profile, 8192, runtime="llama.cpp")


def test_memory_stacks_llamacpp_buffers_as_check_counts_them(llamacpp_8k):
    ev = evaluate(llamacpp_8k)
    c = data.memory_curves(llamacpp_8k)
    # check's rows: weights 6.74e9 × 4 / 8 = 3,370,000,000 + KV 524,288 × 8,192 = 4,294,967,296 + the compute
    # buffer (its closed form is tested with llama.cpp's measurements elsewhere) + the output buffer, 32,000
    # logits × 4 B = 128,000
    assert ev.compute_buffer_bytes > 0 and ev.output_buffer_bytes == 128_000
    buffers = ev.compute_buffer_bytes + 128_000
    assert _at(c.ctx_tokens, c.buffers_bytes, 8192) == buffers
    # + the llama.cpp process: its heap 10,506,240 + 189 · 32,000 = 16,554,240 B and the libraries' 15,568,896 B
    process = 16_554_240 + 15_568_896
    assert _at(c.ctx_tokens, c.total_bytes, 8192) == ev.total_bytes == 3_370_000_000 + 4_294_967_296 + buffers + process
    for ctx in c.ctx_tokens[:: len(c.ctx_tokens) // 9]:  # the buffers grow with -c: priced at every context
        point = evaluate(llamacpp_8k.with_changes(ctx=int(ctx)))
        assert _at(c.ctx_tokens, c.buffers_bytes, ctx) == point.buffers_bytes
        assert _at(c.ctx_tokens, c.total_bytes, ctx) == point.total_bytes
    ax = memory_figure([c]).axes[0]
    assert _artist(ax, "buffers").get_label() == f"llama.cpp buffers (compute + output, {buffers / 1e6:.2f} MB at 8k)"
    assert _artist(ax, "process").get_label() == "llama.cpp process (heap, libraries, repacked copy; 32.12 MB)"


def test_memory_without_runtime_buffers_has_no_buffer_layer(m7b):
    c = data.memory_curves(Scenario(Catalog().device(str(REF_PHONE)).profile, m7b, 4096))
    assert not np.any(c.buffers_bytes)
    assert not [a for a in memory_figure([c]).axes[0].get_children() if a.get_gid() == "buffers"]


def test_decode_under_llamacpp_counts_the_buffers_in_the_overflow(llamacpp_8k):
    ev = evaluate(llamacpp_8k)
    c = data.decode_curves(llamacpp_8k)
    process = 16_554_240 + 15_568_896  # the llama.cpp process (see test_memory_stacks_llamacpp_buffers_as_check_…)
    assert ev.flash.overflow_bytes == 3_370_000_000 + 4_294_967_296 + ev.buffers_bytes + process - 6_000_000_000
    assert _at(c.ctx_tokens, c.streamed_tokens_per_s, 8192) == ev.flash.streamed_decode_tokens_per_s
    assert _at(c.ctx_tokens, c.decode_tokens_per_s, 8192) == ev.decode_tokens_per_s


def test_series_count_and_title_note():
    assert MAX_SERIES == 12
    assert count_series(30).shown == 12 and count_series(30).left_out == 18
    assert title_note(count_series(30)) == "first 12 of 30 series shown, 18 left out"
    assert title_note(count_series(12)) == ""


def test_figures_draw_at_most_twelve_series(slow_phone, m7b):
    scenarios = [Scenario(slow_phone, m7b, 1024, sequences=n) for n in range(1, 15)]  # 14 configurations
    fig = decode_figure([data.decode_curves(s, ctx_max_tokens=4096) for s in scenarios])
    drawn = [a for a in fig.axes[0].get_children() if str(a.get_gid()).startswith("decode:")]
    assert len(drawn) == 12
    assert fig._suptitle.get_text() == "Decode speed against context (first 12 of 14 series shown, 2 left out)"
    assert fig.axes[0].get_ylabel() == "decode [tokens/s]: per sequence and aggregate"
    fig = memory_figure([data.memory_curves(s, 4096) for s in scenarios], columns=4)
    assert sum(ax.get_visible() for ax in fig.axes) == 12
    assert fig._suptitle.get_text() == "Memory against context (first 12 of 14 series shown, 2 left out)"


def test_a_discrete_gpu_stack_is_judged_against_both_budgets_and_names_the_memory_over():
    from kvplan.plan import Knobs, build_scenario

    catalog = Catalog()
    s = build_scenario(catalog.device("laptop-rtx-4060-16gb").profile, catalog.model("qwen3-30b-a3b").profile,
                       32_768, Knobs(n_cpu_moe=24))
    c = data.memory_curves(s)
    ax = memory_figure([c]).axes[0]
    # the stack holds every part, wherever it lives: its line is RAM's budget plus the GPU's (8 GiB)
    both = _artist(ax, "both_budgets")
    assert both.get_ydata()[0] == c.evaluation.budget_bytes + 8 * 2**30
    assert "RAM + GPU budgets" in both.get_label()
    # check says GPU OVER, RAM FIT at 32k: the point's label names the GPU
    label = [t.get_text() for t in ax.texts if t.get_text().startswith("32k:")]
    assert label and label[0].endswith("OVER (GPU)")


def test_one_memory_has_no_combined_budget_line(m7b):
    ax = memory_figure([data.memory_curves(Scenario(Catalog().device("pixel8").profile, m7b, 4096))]).axes[0]
    assert not [a for a in ax.get_children() if a.get_gid() == "both_budgets"]
