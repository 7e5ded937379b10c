"""``kvplan.plots.sweep``: the drawn lines are rows of the sweep; budget, crossing, bars, thinning, files."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from kvplan import sweep as engine_sweep  # noqa: E402
from kvplan.profiles.catalog import Catalog  # noqa: E402
from kvplan.plan import Knobs, build_scenario  # noqa: E402
from kvplan.plots.save import save_figure  # noqa: E402
from kvplan.plots.sweep import (  # noqa: E402
    MAX_DRAWN_POINTS,
    coincident_styles,
    drawn_rows,
    series_bounds,
    sweep_figure,
    sweep_series,
)
from tests.conftest import REF_7B, REF_PHONE  # noqa: E402

# ref-phone × ref-7b: budget 8 GB − 2 GB = 6,000,000,000 B; weights 1,750,000,000 B; fp16 cache
# 2 · 32 layers · 32 heads · 128 · 2 B = 524,288 B/token; 8-bit: 262,144 B/token.
BUDGET = 6_000_000_000
WEIGHTS = 1_750_000_000
MAX_CTX_16 = 8106  # ⌊(6e9 − 1.75e9) / 524,288⌋ = ⌊8106.2⌋
MAX_CTX_8 = 16212  # ⌊4.25e9 / 262,144⌋ = ⌊16212.5⌋


@pytest.fixture(scope="module")
def profiles():
    cat = Catalog()
    return cat.device(str(REF_PHONE)).profile, cat.model(str(REF_7B)).profile


def _sweep(profiles, ctx, kv_bits=(16,), sequences=(1,), os_reserves=(None,)):
    device, model = profiles
    ctx_grid, seq_grid = engine_sweep.grid(ctx, sequences)
    parts = [engine_sweep.evaluate_group(build_scenario(device, model, 1, Knobs(kv_bits=b, os_reserve_bytes=r)),
                                         ctx_grid, seq_grid)
             for r in os_reserves for b in kv_bits]
    return engine_sweep.concat(parts)


def _artist(ax, gid):
    found = [a for a in ax.get_children() if a.get_gid() == gid]
    assert found, f"no artist with gid {gid!r}"
    return found[0]


def _gids(ax, prefix):
    return sorted(a.get_gid() for a in ax.get_children() if (a.get_gid() or "").startswith(prefix))


def test_lines_are_the_sweep_columns_budget_and_crossing(profiles):
    cols = _sweep(profiles, np.arange(1024, 32769, 1024), kv_bits=(16, 8))
    fig = sweep_figure(cols)
    ax_mem, ax_dec = fig.axes
    assert _gids(ax_mem, "total:") == ["total:0", "total:1"]
    for k, bits in enumerate((16, 8)):
        rows = np.flatnonzero(cols.k_bits == bits)  # the series' 32 rows, ctx ascending
        mem, dec = _artist(ax_mem, f"total:{k}"), _artist(ax_dec, f"decode:{k}")
        assert np.array_equal(mem.get_xdata(), cols.ctx[rows])
        assert np.array_equal(mem.get_ydata(), cols.total_bytes[rows])
        assert np.array_equal(dec.get_ydata(), cols.decode_tokens_per_s[rows])
    # at 4k, fp16: 1.75e9 + 524,288 × 4,096 = 3,897,483,648 B
    line = _artist(ax_mem, "total:0")
    assert line.get_ydata()[list(line.get_xdata()).index(4096)] == 3_897_483_648
    # one budget for both series: a single line at budget_bytes
    assert list(_artist(ax_mem, "budget").get_ydata()) == [BUDGET, BUDGET]
    assert not _gids(ax_mem, "budget:")
    # the crossing at the sweep's max_ctx, on the budget
    for k, max_ctx in enumerate((MAX_CTX_16, MAX_CTX_8)):
        dot = _artist(ax_mem, f"max_ctx:{k}")
        assert list(dot.get_xdata()) == [max_ctx] and list(dot.get_ydata()) == [BUDGET]
        assert max_ctx in set(cols.max_ctx[cols.k_bits == (16, 8)[k]].tolist())
    # the legend names only what varies (the cache width); the title the rest
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "KV 16-bit — max context 8,106" in labels and "KV 8-bit — max context 16,212" in labels
    assert "budget 6.00 GB" in labels
    assert "ref-phone × ref-7b" in fig._suptitle.get_text()
    assert ax_mem.get_ylabel() == "total memory [GB]" and ax_dec.get_ylabel() == "decode [tokens/s]"
    fig.canvas.draw()
    assert "8k" in [t.get_text() for t in ax_dec.get_xticklabels()]


def test_each_series_budget_when_budgets_differ_and_iec(profiles):
    # os reserve 2 GB → 6e9 budget; 3 GB → 5e9 budget: max ctx ⌊3.25e9 / 524,288⌋ = 6198
    cols = _sweep(profiles, np.arange(1024, 16385, 1024), os_reserves=(2_000_000_000, 3_000_000_000))
    fig = sweep_figure(cols, units="iec")
    ax_mem = fig.axes[0]
    budgets = sorted(_artist(ax_mem, g).get_ydata()[0] for g in _gids(ax_mem, "budget:"))
    assert budgets == [5_000_000_000, 6_000_000_000]
    assert [_artist(ax_mem, f"max_ctx:{k}").get_xdata()[0] for k in (0, 1)] == [MAX_CTX_16, 6198]
    assert ax_mem.get_ylabel() == "total memory [GiB]"
    texts = [t.get_text() for t in ax_mem.texts]
    assert "budget 5.59 GiB (ref-phone)" in texts  # 6e9 / 2³⁰ = 5.588


def test_a_long_sweep_is_thinned_to_grid_points_and_keeps_the_exact_crossing(profiles):
    cols = _sweep(profiles, np.arange(1, 1_000_001))  # 10⁶ points, one series
    fig = sweep_figure(cols)
    ax_mem, ax_dec = fig.axes
    line = _artist(ax_mem, "total:0")
    x, y = np.asarray(line.get_xdata()), np.asarray(line.get_ydata())
    assert len(x) <= MAX_DRAWN_POINTS + 2 and x[0] == 1 and x[-1] == 1_000_000
    assert np.all(np.diff(x) > 0)
    # every drawn point is a row of the sweep: ctx i is row i − 1, and its exact total
    assert np.array_equal(y, cols.total_bytes[x - 1])
    assert np.array_equal(y, WEIGHTS + 524_288 * x)
    assert {MAX_CTX_16, MAX_CTX_16 + 1} <= set(x.tolist())  # the grid points either side of the crossing
    assert list(_artist(ax_mem, "max_ctx:0").get_xdata()) == [MAX_CTX_16]
    assert ax_dec.get_xscale() == "log"  # 1..10⁶ spans more than 64×
    # the axis is cut at 2.5 × the budget, saying how high the totals go (1.75e9 + 524,288 × 10⁶ = 526 GB)
    assert ax_mem.get_ylim()[1] == 2.5 * BUDGET
    assert "totals reach 526.04 GB" in _artist(ax_mem, "cut_note").get_text()


def test_drawn_rows_sorts_and_thins():
    ctx = np.array([8, 2, 4, 1])
    assert drawn_rows(ctx, -1).tolist() == [3, 1, 2, 0]  # ascending ctx
    ctx = np.arange(10_000)
    rows = drawn_rows(ctx, 5_000, max_points=100)
    assert len(rows) <= 102 and rows[0] == 0 and rows[-1] == 9_999
    assert {5_000, 5_001} <= set(rows.tolist())


def test_series_bounds_split_where_a_dimension_changes(profiles):
    cols = _sweep(profiles, [1024, 2048, 4096], kv_bits=(16, 8), sequences=(1, 2))
    starts, stops = series_bounds(cols)
    # 2 cache widths × 2 sequence counts = 4 series of 3 contexts
    assert starts.tolist() == [0, 3, 6, 9] and stops.tolist() == [3, 6, 9, 12]
    series = sweep_series(cols)
    assert [(s.k_bits, s.sequences) for s in series] == [(16, 1), (16, 2), (8, 1), (8, 2)]
    # two sequences: ⌊4.25e9 / (2 × 524,288)⌋ = 4053
    assert [s.max_ctx for s in series] == [MAX_CTX_16, 4053, MAX_CTX_8, 8106]


def test_single_ctx_draws_grouped_bars(profiles):
    cols = _sweep(profiles, [8192], kv_bits=(16, 8))
    fig = sweep_figure(cols)
    ax_mem, ax_dec = fig.axes
    # fp16 at 8k: 1.75e9 + 524,288 × 8,192 = 6,044,967,296 (over); 8-bit: 1.75e9 + 262,144 × 8,192 = 3,897,483,648
    widths = [_artist(ax_mem, f"total:{k}").get_width() for k in (0, 1)]
    assert widths == [6_044_967_296, 3_897_483_648] == cols.total_bytes.tolist()
    assert [_artist(ax_mem, f"budget:{k}").get_width() for k in (0, 1)] == [BUDGET, BUDGET]
    assert [_artist(ax_dec, f"decode:{k}").get_width() for k in (0, 1)] == cols.decode_tokens_per_s.tolist()
    assert [t.get_text() for t in ax_mem.get_yticklabels()] == ["KV 16-bit", "KV 8-bit"]
    assert "at 8k tokens" in fig._suptitle.get_text()


def test_more_than_twelve_series_shows_twelve_and_says_how_many_were_left_out(profiles):
    cols = _sweep(profiles, [1024, 2048], sequences=tuple(range(1, 14)))  # 13 series
    fig = sweep_figure(cols)
    assert len(_gids(fig.axes[0], "total:")) == 12
    assert "first 12 of 13 series shown, 1 left out" in fig._suptitle.get_text()
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert any(label.startswith("12 sequences") for label in labels)
    assert not any(label.startswith("13 sequences") for label in labels)


def test_coincident_lines_alternate_dashes():
    x, y = np.array([1, 2]), np.array([3, 4])
    styles = coincident_styles([(x, y), (x, y + 1), (x, y)])
    assert styles[1] == "-"
    assert styles[0] == (0.0, (4.0, 4.0)) and styles[2] == (4.0, (4.0, 4.0))


@pytest.mark.parametrize("ext, magic", [("png", b"\x89PNG\r\n\x1a\n"), ("pdf", b"%PDF-"), ("svg", b"<?xml")])
def test_files_in_each_format(profiles, tmp_path, ext, magic):
    cols = _sweep(profiles, np.arange(1024, 8193, 1024), kv_bits=(16, 8, 4))
    path = save_figure(sweep_figure(cols), tmp_path / f"s.{ext}")
    assert path.read_bytes().startswith(magic)
