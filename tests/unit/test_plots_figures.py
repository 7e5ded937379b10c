"""The figures draw the engine's numbers: inspect Line2D data, axhline y and image arrays, then the files."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from kvplan.profiles.catalog import Catalog  # noqa: E402
from kvplan.errors import OutputError  # noqa: E402
from kvplan.plan import Scenario, evaluate  # noqa: E402
from kvplan import curves as data  # noqa: E402
from kvplan.plots.attention import attention_figure  # noqa: E402
from kvplan.plots.decode import decode_figure  # noqa: E402
from kvplan.plots.fitmap import fitmap_figure  # noqa: E402
from kvplan.plots.memory import memory_figure  # noqa: E402
from kvplan.plots.save import check_plot_path, save_figure  # noqa: E402
from tests.conftest import REF_7B, REF_PHONE  # noqa: E402


@pytest.fixture(scope="module")
def scenario():
    cat = Catalog()
    # ref-phone × ref-7b at 8k: 1.75e9 + 524,288 × 8,192 = 6,044,967,296 B > the 6e9 budget → over
    return Scenario(cat.device(str(REF_PHONE)).profile, cat.model(str(REF_7B)).profile, 8192)


def _artist(ax, gid):
    found = [a for a in ax.get_children() if a.get_gid() == gid]
    assert found, f"no artist with gid {gid!r}"
    return found[0]


def _y_at(line, x):
    xs, ys = np.asarray(line.get_xdata()), np.asarray(line.get_ydata())
    i = int(np.searchsorted(xs, x))
    assert xs[i] == x
    return ys[i]


def test_memory_figure_data(scenario):
    ev = evaluate(scenario)
    fig = memory_figure([data.memory_curves(scenario)])
    ax = fig.axes[0]
    budget = _artist(ax, "budget")
    assert list(budget.get_ydata()) == [6_000_000_000, 6_000_000_000]  # 8 GB − 2 GB
    crossing = _artist(ax, "max_ctx")
    assert list(crossing.get_xdata()) == [8106] == [ev.max_ctx]  # ⌊4.25e9 / 524,288⌋
    assert crossing.get_ydata()[0] == 1_750_000_000 + 524_288 * 8106 <= 6_000_000_000
    total = _artist(ax, "total")
    for ctx in (0, 1024, 4096, 8106, 8192):
        assert _y_at(total, ctx) == evaluate(scenario.with_changes(ctx=ctx)).total_bytes
    assert _artist(ax, "ctx_point").get_ydata()[0] == ev.total_bytes == 6_044_967_296
    legend_text = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "budget 6.00 GB" in legend_text
    assert "max context\n8,106 tokens" in [t.get_text() for t in ax.texts]
    assert ax.get_xlabel() == "context [tokens]" and ax.get_ylabel() == "memory [GB]"


def test_memory_side_by_side_and_iec(scenario):
    other = scenario.with_changes(os_reserve_bytes=3_000_000_000)
    fig = memory_figure([data.memory_curves(scenario), data.memory_curves(other)], units="iec")
    budgets = [_artist(ax, "budget").get_ydata()[0] for ax in fig.axes[:2]]
    assert budgets == [6_000_000_000, 5_000_000_000]
    assert fig.axes[0].get_ylabel() == "memory [GiB]"
    fig.canvas.draw()  # tick labels are formatted at draw time: k-suffixed contexts
    labels = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert "4k" in labels and "8k" in labels


def test_attention_figure_data(scenario):
    fig = attention_figure(data.attention_curves(scenario.with_changes(ctx=4096)))
    ax = fig.axes[0]
    mha = _artist(ax, "kv:mha:32::f16:own")
    gqa8 = _artist(ax, "kv:gqa:8::f16")
    for ctx in (1024, 4096, 8192):
        assert _y_at(mha, ctx) == evaluate(scenario.with_changes(ctx=ctx)).kv_bytes  # the model's own cache
    assert _y_at(mha, 4096) == 2_147_483_648 and _y_at(gqa8, 4096) == 536_870_912  # 2.1 GB → 0.54 GB
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any(label.startswith("MHA: 32 KV heads — 2.15 GB") for label in labels)
    assert any(label.startswith("GQA: 8 KV heads (4 queries each) — 0.54 GB") for label in labels)


def test_decode_figure_data(scenario):
    ev = evaluate(scenario)
    fig = decode_figure([data.decode_curves(scenario, target_tokens_per_s=10)])
    ax = fig.axes[0]
    decode = _artist(ax, "decode:0")
    for ctx in (0, 4096, 8192):
        assert _y_at(decode, ctx) == pytest.approx(evaluate(scenario.with_changes(ctx=ctx)).decode_tokens_per_s)
    assert _y_at(decode, 4096) == pytest.approx(12.829, abs=1e-3)  # 50e9 / (1.75e9 + 2,147,483,648)
    flash = _artist(ax, "flash:0")
    assert np.isnan(_y_at(flash, 8106))  # fits: no flash line
    assert _y_at(flash, 8192) == pytest.approx(ev.flash.streamed_decode_tokens_per_s)
    assert list(_artist(ax, "target").get_ydata()) == [10, 10]
    assert _artist(ax, "max_ctx:0").get_xdata()[0] == 8106


def test_fitmap_figure_data(scenario):
    phone, m7b = scenario.device, scenario.model
    small = scenario.with_changes(weight_bits=2.0).model  # same shape; weights from params × bits
    grid = data.fit_map([[Scenario(phone, m7b, 0), Scenario(phone, small, 0)]])
    fig = fitmap_figure(grid)
    image = _artist(fig.axes[0], "fitmap")
    assert image.get_array()[0, 0] == 8106 == evaluate(Scenario(phone, m7b, 0)).max_ctx
    assert _artist(fig.axes[0], "cell:0:0").get_text() == "8,106"
    at = data.fit_map([[Scenario(phone, m7b, 8192)]], 8192)
    image = _artist(fitmap_figure(at).axes[0], "fitmap")
    assert image.get_array()[0, 0] == 6_000_000_000 - 6_044_967_296  # −44,967,296 B: over


MAGIC = {"png": b"\x89PNG\r\n\x1a\n", "pdf": b"%PDF-"}


@pytest.mark.parametrize("kind", ["memory", "attention", "decode", "fitmap"])
@pytest.mark.parametrize("ext", ["png", "svg", "pdf"])
def test_each_kind_writes_each_format(scenario, tmp_path, kind, ext):
    fig = {
        "memory": lambda: memory_figure([data.memory_curves(scenario)]),
        "attention": lambda: attention_figure(data.attention_curves(scenario)),
        "decode": lambda: decode_figure([data.decode_curves(scenario)]),
        "fitmap": lambda: fitmap_figure(data.fit_map([[scenario]])),
    }[kind]()
    path = save_figure(fig, tmp_path / f"plot.{ext}")
    raw = path.read_bytes()
    if ext == "svg":
        import xml.etree.ElementTree as ET

        assert ET.fromstring(raw).tag == "{http://www.w3.org/2000/svg}svg"
    else:
        assert raw.startswith(MAGIC[ext])
    assert [p.name for p in tmp_path.iterdir()] == [f"plot.{ext}"]  # no temp file left behind


def test_bad_paths_are_output_errors(tmp_path):
    with pytest.raises(OutputError, match="unknown plot extension .gif"):
        check_plot_path(tmp_path / "x.gif")
    with pytest.raises(OutputError, match="does not exist"):
        check_plot_path(tmp_path / "missing" / "x.png")
    (tmp_path / "d.png").mkdir()
    with pytest.raises(OutputError, match="is a directory"):
        check_plot_path(tmp_path / "d.png")
