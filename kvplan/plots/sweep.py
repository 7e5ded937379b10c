"""The swept grid of ``kvplan sweep --plot``: memory and decode against context, one line per series.

A *series* is one combination of the swept dimensions other than the context (device ×
model × weight bits × K/V bits × sequences): a run of consecutive rows of
:class:`~kvplan.sweep.SweepColumns`. With several contexts, each series is a line in two
panels (total memory with its budget and the max-context crossing; decode tokens/s); with
one context, a grouped bar chart of total memory against budget (and decode tokens/s).

Long series are thinned for drawing to at most :data:`MAX_DRAWN_POINTS` grid points (taken
from the grid, never interpolated, so every drawn point is an exact row of the sweep); the
crossing is drawn at the sweep's own ``max_ctx``, not at a drawn point.

matplotlib and numpy are imported inside the functions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from kvplan.plots import series as _series
from kvplan.plots.axes import COLORS, bytes_axis, ctx_axis, ctx_label, new_figure, size_label
from kvplan.sweep import NO_MAX_CTX, SweepColumns

MAX_DRAWN_POINTS = 2000
MAX_SERIES = _series.MAX_SERIES
# A context axis spanning more than this ratio (1..1M, 256..64k) is drawn on a log scale, so the
# crossing at a few thousand tokens is not squeezed against the left edge.
LOG_CTX_RATIO = 64
# Past this multiple of the largest budget the memory axis is cut (at CUT_BUDGETS× the budget, or
# twice the highest starting total if that is above): the budget and its crossing stay readable; a
# note gives the largest total.
CUT_TOTAL_RATIO = 4
CUT_BUDGETS = 2.5
SERIES_COLORS = _series.SERIES_COLORS
VERDICT_COLORS = ("#2f7d3b", "#a06a00", "#b0302f")  # by verdict code: fit, tight, over
VERDICT_NAMES = ("fit", "tight", "over")
# Columns whose value is fixed inside a series (the last two guard against dimensions the
# sweep might gain: a series never mixes budgets or cache layouts).
_SERIES_KEYS = ("device", "model", "weight_bits", "k_bits", "v_bits", "sequences", "budget_bytes",
                "kv_bytes_per_token")
# The swept dimensions that name a series, in the sweep's row order.
DIMENSIONS = ("device", "model", "weight_bits", "kv_bits", "sequences")


@dataclass(frozen=True)
class Series:
    """One series: the rows to draw (indices into the columns, in increasing ctx) and its fixed values."""

    rows: object  # int64 array of row indices, ≤ MAX_DRAWN_POINTS of them (+2 around the crossing)
    points: int  # rows of the series in the sweep
    device: str
    model: str
    weight_bits: float
    k_bits: int
    v_bits: int
    sequences: int
    budget_bytes: int
    max_ctx: int  # [tokens]; NO_MAX_CTX when nothing fits or the cache is unbounded
    fixed_bytes: int  # weights + overhead + pinned prefix [bytes]: tells "nothing fits" from "unbounded"

    def value(self, dimension: str):
        return (self.k_bits, self.v_bits) if dimension == "kv_bits" else getattr(self, dimension)


def series_bounds(cols: SweepColumns):
    """``(starts, stops)``: the row ranges over which no series key changes."""
    import numpy as np

    n = len(cols)
    change = np.zeros(n, dtype=bool)
    if n:
        change[0] = True
    for name in _SERIES_KEYS:
        column = np.asarray(getattr(cols, name))
        change[1:] |= column[1:] != column[:-1]
    starts = np.flatnonzero(change)
    return starts, np.append(starts[1:], n)


def drawn_rows(ctx, max_ctx: int, max_points: int = MAX_DRAWN_POINTS):
    """Positions in ``ctx`` to draw, in increasing ctx: all of them, or about ``max_points`` (half spread
    evenly, half geometrically, to look smooth on a linear or a log axis) plus the two grid points either
    side of ``max_ctx`` (so a line crosses the budget where the sweep does)."""
    import numpy as np

    ctx = np.asarray(ctx)
    n = len(ctx)
    order = np.arange(n) if n < 2 or bool(np.all(ctx[1:] >= ctx[:-1])) else np.argsort(ctx, kind="stable")
    if n <= max_points:
        return order
    half = max_points // 2
    even = np.round(np.linspace(0, n - 1, half))
    geometric = np.round(np.geomspace(1, n, max_points - half)) - 1
    positions = np.union1d(even, geometric).astype(np.int64)
    if max_ctx != NO_MAX_CTX:
        j = int(np.searchsorted(ctx[order], max_ctx, side="right"))  # first drawn-order position past it
        positions = np.union1d(positions, [p for p in (j - 1, j) if 0 <= p < n])
    return order[positions]


def sweep_series(cols: SweepColumns, max_points: int = MAX_DRAWN_POINTS) -> list[Series]:
    """Every series of the sweep, in row order, with its rows to draw."""
    import numpy as np

    starts, stops = series_bounds(cols)
    out = []
    for a, b in zip(starts.tolist(), stops.tolist()):
        max_ctx = int(cols.max_ctx[a])
        rows = a + drawn_rows(cols.ctx[a:b], max_ctx, max_points)
        out.append(Series(
            rows=np.asarray(rows, dtype=np.int64), points=b - a, device=str(cols.device[a]),
            model=str(cols.model[a]), weight_bits=float(cols.weight_bits[a]), k_bits=int(cols.k_bits[a]),
            v_bits=int(cols.v_bits[a]), sequences=int(cols.sequences[a]), budget_bytes=int(cols.budget_bytes[a]),
            max_ctx=max_ctx,
            fixed_bytes=int(cols.weights_bytes[a]) + int(cols.overhead_bytes[a]) + int(cols.pinned_prefix_bytes[a]),
        ))
    return out


def dimension_label(dimension: str, value) -> str:
    if dimension == "weight_bits":  # a named --weight-type has fractional effective bits (q4_k_m: 4.85)
        return f"{value:.3g}-bit weights"
    if dimension == "kv_bits":
        k, v = value
        return f"KV {k}-bit" if k == v else f"K {k}-bit / V {v}-bit"
    if dimension == "sequences":
        return f"{value} sequence{'s' if value != 1 else ''}"
    return str(value)


def varying_dimensions(series: list[Series]) -> list[str]:
    """The dimensions that take more than one value across the series."""
    return [d for d in DIMENSIONS if len({s.value(d) for s in series}) > 1]


def series_label(s: Series, dimensions: list[str]) -> str:
    return " · ".join(dimension_label(d, s.value(d)) for d in dimensions)


def _fixed_title(series: list[Series], varying: list[str]) -> str:
    s = series[0]
    fixed = [d for d in DIMENSIONS if d not in varying]
    head = " × ".join(str(s.value(d)) for d in ("device", "model") if d in fixed)
    rest = ", ".join(dimension_label(d, s.value(d)) for d in fixed if d not in ("device", "model"))
    return ", ".join(t for t in (head, rest) if t)


def _max_ctx_text(s: Series) -> str:
    if s.max_ctx != NO_MAX_CTX:
        return f"max context {s.max_ctx:,}"
    return "nothing fits" if s.fixed_bytes > s.budget_bytes else "unbounded"


def series_count(cols: SweepColumns, max_series: int = MAX_SERIES) -> tuple[_series.SeriesCount, list[str]]:
    """How many series the sweep has and draws, and the dimensions that vary across them (what to narrow)."""
    import numpy as np

    starts, _ = series_bounds(cols)
    values = {d: [np.asarray(getattr(cols, d))[starts] for d in ((d,) if d != "kv_bits" else ("k_bits", "v_bits"))]
              for d in DIMENSIONS}
    varying = [d for d, arrays in values.items() if len(set(zip(*(a.tolist() for a in arrays)))) > 1]
    return _series.count_series(len(starts), max_series), varying


def sweep_figure(cols: SweepColumns, units: str = "si", max_series: int = MAX_SERIES,
                 max_points: int = MAX_DRAWN_POINTS):
    """The figure for a whole sweep: lines against context, or bars when the sweep has a single context."""
    import numpy as np

    if len(cols) == 0:
        raise ValueError("an empty sweep has nothing to plot")
    series = sweep_series(cols, max_points)
    single_ctx = len(np.unique(cols.ctx)) == 1
    varying = varying_dimensions(series)
    shown = series[:max_series]
    draw = _bars if single_ctx else _lines
    return draw(cols, shown, varying, len(series), units)


def _cache_note(cols: SweepColumns) -> str:
    """The runtime and KV policy every row shares, when not the ideal formula and no policy: the cache the totals
    price (its formats alone would read "KV 16-bit" for a K4/V3 history)."""
    import numpy as np

    from kvplan.render.labels import NO_POLICY, column_labels

    parts = []
    for name, plain, word in (("runtime", "ideal", "runtime"), ("kv_policy", NO_POLICY, "KV policy")):
        values = np.unique(np.asarray(column_labels(name, getattr(cols, name))).astype(str))
        shown = [v for v in values.tolist() if v != plain]
        if shown:
            parts.append(f"{word} {', '.join(shown)}")
    return (", " + ", ".join(parts)) if parts else ""


def _title(kind: str, series: list[Series], varying: list[str], total: int, ctx_note: str = "") -> str:
    fixed = _fixed_title(series, varying)
    head = f"{kind}{ctx_note}" + (f" — {fixed}" if fixed else "")
    left_out = _series.title_note(_series.SeriesCount(total, len(series)))
    return head + (f"\n({left_out})" if left_out else "")


def _budget_lines(ax, shown: list[Series], colors: list[str], units: str) -> list:
    """One dashed line per distinct budget: red when all series share it, else the colour of its only
    series (grey when several series share it), labelled with its size (and its device when they differ)."""
    budgets: dict[int, list[int]] = {}
    for k, s in enumerate(shown):
        budgets.setdefault(s.budget_bytes, []).append(k)
    handles = []
    if len(budgets) == 1:
        budget = shown[0].budget_bytes
        handles.append(ax.axhline(budget, color=COLORS["budget"], linestyle="--", linewidth=1.6,
                                  label=f"budget {size_label(budget, units)}", gid="budget"))
        return handles
    for j, (budget, members) in enumerate(sorted(budgets.items())):
        color = colors[members[0]] if len(members) == 1 else "#555555"
        ax.axhline(budget, color=color, linestyle="--", linewidth=1.3, alpha=0.9, gid=f"budget:{j}",
                   label="_nolegend_")
        devices = list(dict.fromkeys(shown[k].device for k in members))
        name = ", ".join(devices) if len(devices) <= 2 else f"{len(devices)} devices"
        ax.annotate(f"budget {size_label(budget, units)} ({name})", (0.0, budget),
                    xycoords=ax.get_yaxis_transform(), xytext=(4, 2), textcoords="offset points",
                    ha="left", va="bottom", fontsize=8, color=color, zorder=6,
                    bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.8})
    handles.append(ax.plot([], [], color="#555555", linestyle="--", linewidth=1.3,
                           label="dashed: each series' budget")[0])
    return handles


def coincident_styles(lines: list[tuple]) -> list:
    """A line style per line: solid, or, for lines identical to others (same x and y), dashes offset
    so that each colour shows in turn along the shared line (two devices with equal memory, say)."""
    import numpy as np

    groups: dict[bytes, list[int]] = {}
    for k, (x, y) in enumerate(lines):
        groups.setdefault(np.asarray(x).tobytes() + b"|" + np.asarray(y).tobytes(), []).append(k)
    styles: list = ["-"] * len(lines)
    dash = 4.0
    for members in groups.values():
        if len(members) > 1:
            m = len(members)
            for j, k in enumerate(members):
                styles[k] = (j * dash, (dash, (m - 1) * dash))
    return styles


def _lines(cols: SweepColumns, shown: list[Series], varying: list[str], total: int, units: str):
    import numpy as np

    colors = [SERIES_COLORS[k % len(SERIES_COLORS)] for k in range(len(shown))]
    fig = new_figure(10, 8.2)
    ax_mem, ax_dec = fig.subplots(2, 1, sharex=True)
    x_lo, x_hi = int(np.min(cols.ctx)), int(np.max(cols.ctx))
    mem_top = max(s.budget_bytes for s in shown)
    low_top = 0  # the highest of the series' smallest totals: a cut axis still shows where every line starts
    dec_top = 0.0
    from matplotlib.lines import Line2D

    handles = []
    xs = [cols.ctx[s.rows] for s in shown]
    mem_styles = coincident_styles([(x, cols.total_bytes[s.rows]) for x, s in zip(xs, shown)])
    dec_styles = coincident_styles([(x, cols.decode_tokens_per_s[s.rows]) for x, s in zip(xs, shown)])
    for k, (s, color, x) in enumerate(zip(shown, colors, xs)):
        total_bytes = cols.total_bytes[s.rows]
        rate = cols.decode_tokens_per_s[s.rows]
        name = series_label(s, varying) or "total"
        ax_mem.plot(x, total_bytes, color=color, linewidth=1.8, linestyle=mem_styles[k], gid=f"total:{k}")
        handles.append(Line2D([], [], color=color, linewidth=1.8, label=f"{name} — {_max_ctx_text(s)}"))
        ax_dec.plot(x, rate, color=color, linewidth=1.8, linestyle=dec_styles[k], gid=f"decode:{k}")
        mem_top = max(mem_top, int(np.max(total_bytes)))
        low_top = max(low_top, int(np.min(total_bytes)))
        if np.any(np.isfinite(rate)):
            dec_top = max(dec_top, float(np.nanmax(rate)))
        if s.max_ctx != NO_MAX_CTX and x_lo <= s.max_ctx <= x_hi:
            for ax in (ax_mem, ax_dec):
                ax.axvline(s.max_ctx, color=color, linewidth=0.9, linestyle=":", alpha=0.8,
                           gid=f"max_ctx_line:{k}")
            ax_mem.plot([s.max_ctx], [s.budget_bytes], "o", color=color, markersize=7, markeredgecolor="white",
                        markeredgewidth=1.2, zorder=5, gid=f"max_ctx:{k}")
    handles += _budget_lines(ax_mem, shown, colors, units)
    if any(not isinstance(style, str) for style in mem_styles + dec_styles):
        handles.append(Line2D([], [], color="#555555", linewidth=1.8, linestyle=(0, (4, 4)),
                              label="alternating colours: series whose lines coincide"))
    if any(s.max_ctx != NO_MAX_CTX and x_lo <= s.max_ctx <= x_hi for s in shown):
        handles.append(ax_mem.plot([], [], "o", color="#555555", markeredgecolor="white",
                                   label="max context that fits (dotted)")[0])

    budget_top = max(s.budget_bytes for s in shown)
    cut = max(CUT_BUDGETS * budget_top, 2 * low_top)
    if mem_top > CUT_TOTAL_RATIO * budget_top > 0 and mem_top > 1.5 * cut:
        top = cut
        ax_mem.text(0.01, 0.98, f"axis cut at {size_label(cut, units)}: totals reach "
                    f"{size_label(mem_top, units)}", transform=ax_mem.transAxes, ha="left", va="top",
                    fontsize=8, color="#555555", gid="cut_note",
                    bbox={"boxstyle": "round,pad=0.2", "fc": "white", "ec": "none", "alpha": 0.85})
    else:
        top = mem_top * 1.08
    ax_mem.set_ylim(0, top)
    bytes_axis(ax_mem.yaxis, top, units, label="total memory")
    buffers = " + llama.cpp buffers" if np.any(np.asarray(cols.buffers_bytes) > 0) else ""
    ax_mem.set_title(f"total memory (weights + KV cache{buffers} + overhead) against the budget", fontsize=10)
    ax_dec.set_ylim(0, dec_top * 1.1 if dec_top > 0 else 1)
    ax_dec.set_ylabel("decode [tokens/s]")
    ax_dec.set_title("decode speed (from RAM)", fontsize=10)
    ax_dec.set_xlim(x_lo, x_hi)
    if x_lo >= 1 and x_hi > LOG_CTX_RATIO * x_lo:
        log_ctx_axis(ax_dec, x_lo, x_hi)
    else:
        ctx_axis(ax_dec.xaxis, max_ticks=10)
    ax_mem.tick_params(labelbottom=True)
    ax_mem.set_xlabel("")
    for ax in (ax_mem, ax_dec):
        ax.grid(True, alpha=0.3, linewidth=0.6)
        ax.set_axisbelow(True)
    points = sum(s.points for s in shown)
    note = f" ({points:,} points)" if points > len(shown) * MAX_DRAWN_POINTS else ""
    fig.suptitle(_title(f"Sweep against context{note}{_cache_note(cols)}", shown, varying, total), fontsize=12)
    ncols = 1 if len(handles) <= 4 else 2
    fig.legend(handles, [h.get_label() for h in handles], loc="outside lower center", ncols=ncols,
               frameon=False, fontsize=9)
    return fig


def log_ctx_axis(ax, x_lo: int, x_hi: int, max_ticks: int = 11) -> None:
    """A log context axis with ticks at powers of two (every 2nd, 4th … power as needed): 1k, 4k, 16k, 1M."""
    import numpy as np
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    ax.set_xscale("log", base=2)
    lo, hi = math.ceil(math.log2(x_lo)), math.floor(math.log2(x_hi))
    step = 1
    while (hi - lo) // step + 1 > max_ticks:
        step += 1
    ax.xaxis.set_major_locator(FixedLocator(2.0 ** np.arange(lo, hi + 1, step)))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _pos: ctx_label(x)))
    ax.set_xlabel("context [tokens, log scale]")


def _bars(cols: SweepColumns, shown: list[Series], varying: list[str], total: int, units: str):
    import numpy as np
    from matplotlib.patches import Patch

    n = len(shown)
    rows = np.array([int(s.rows[0]) for s in shown])
    totals = cols.total_bytes[rows]
    budgets = np.array([s.budget_bytes for s in shown])
    rates = cols.decode_tokens_per_s[rows]
    verdicts = cols.verdict[rows]
    labels = [series_label(s, varying) or "this configuration" for s in shown]

    fig = new_figure(11, 1.9 + 0.55 * n)
    ax_mem, ax_dec = fig.subplots(1, 2, sharey=True, width_ratios=[3, 2])
    y = np.arange(n)
    h = 0.38
    total_bars = ax_mem.barh(y - h / 2, totals, height=h, color=[VERDICT_COLORS[v] for v in verdicts])
    budget_bars = ax_mem.barh(y + h / 2, budgets, height=h, color="#d9d9d9", edgecolor="#777777",
                              linewidth=0.8, hatch="///")
    for k, (tb, bb) in enumerate(zip(total_bars, budget_bars)):
        tb.set_gid(f"total:{k}")
        bb.set_gid(f"budget:{k}")
    top = float(max(np.max(totals), np.max(budgets))) * 1.3
    for k in range(n):
        verdict = VERDICT_NAMES[int(verdicts[k])]
        ax_mem.annotate(f"{size_label(int(totals[k]), units)} {verdict}", (int(totals[k]), y[k] - h / 2),
                        xytext=(3, 0), textcoords="offset points", va="center", fontsize=8,
                        color=VERDICT_COLORS[int(verdicts[k])], fontweight="bold")
        ax_mem.annotate(size_label(int(budgets[k]), units), (int(budgets[k]), y[k] + h / 2), xytext=(3, 0),
                        textcoords="offset points", va="center", fontsize=8, color="#555555")
    ax_mem.set_xlim(0, top)
    bytes_axis(ax_mem.xaxis, top, units, label="memory")
    ax_mem.set_yticks(y, labels, fontsize=9)
    ax_mem.invert_yaxis()
    ax_mem.set_title("total memory against the budget", fontsize=10)
    legend = [Patch(color=VERDICT_COLORS[v], label=f"total: {VERDICT_NAMES[v]}")
              for v in sorted(set(verdicts.tolist()))]
    legend.append(Patch(facecolor="#d9d9d9", edgecolor="#777777", hatch="///", label="budget"))
    fig.legend(handles=legend, loc="outside lower center", ncols=len(legend), fontsize=9, frameon=False)

    finite = np.where(np.isfinite(rates), rates, 0.0)
    rate_bars = ax_dec.barh(y, finite, height=0.6, color=COLORS["decode"])
    for k, bar in enumerate(rate_bars):
        bar.set_gid(f"decode:{k}")
        ax_dec.annotate(f"{rates[k]:.1f}" if rates[k] < 100 else f"{rates[k]:,.0f}", (finite[k], y[k]),
                        xytext=(3, 0), textcoords="offset points", va="center", fontsize=8)
    ax_dec.set_xlim(0, float(np.max(finite)) * 1.25 or 1)
    ax_dec.set_xlabel("decode [tokens/s]")
    ax_dec.set_title("decode speed (from RAM)", fontsize=10)
    for ax in (ax_mem, ax_dec):
        ax.grid(True, axis="x", alpha=0.3, linewidth=0.6)
        ax.set_axisbelow(True)
    ctx = int(cols.ctx[rows[0]])
    fig.suptitle(_title(f"Sweep{_cache_note(cols)}", shown, varying, total, f" at {ctx_label(ctx)} tokens ({ctx:,})"),
                 fontsize=12)
    return fig
