"""Decode tokens/s against context: from RAM, at the roofline, with the overflow streamed from flash.

The solid line is ``kvplan check``'s "decode at N tokens": weights and cache read from RAM, drawn on past the
budget as if everything fit. Past the budget a dashed line gives the flash table's "decode with the overflow
streamed from flash". At ``--ctx`` both are marked and named, so the plot and check quote the same figures.
"""

from __future__ import annotations

from kvplan.plots.axes import COLORS, ctx_axis, ctx_label, draw_ctx_limit, inward, new_figure, size_label
from kvplan.plots.series import SERIES_COLORS, SeriesCount, count_series, title_note
from kvplan.curves import DecodeCurves


AGGREGATE_COLOR = "#dd8452"  # orange: never taken for the roofline's grey-blue
AGGREGATE_STYLE = (0, (6, 2, 1, 2))  # dash-dot: told from the flash line's dashes


def _rate(x: float) -> str:
    return f"{x:.1f}" if x < 100 else f"{x:,.0f}"


def _sequences(n: int) -> str:
    return f"{n} sequence" + ("s" if n != 1 else "")


def _ram_label(s, latency_s: float) -> str:
    """``from RAM (50 % of 68.30 GB/s + 4.69 ms per token)``: the two terms of the rate."""
    device = s.device
    text = f"{device.bandwidth_efficiency * 100:.1f} % of {device.memory_bandwidth / 1e9:.2f} GB/s"  # as check
    if latency_s:
        text += f" + {latency_s * 1e3:.2f} ms/step"
    return f"from RAM ({text})"


def _spans(ax, c: DecodeCurves, x_end: float) -> None:
    """Shade the tight zone (headroom under the margin) and the over-budget zone of one configuration."""
    ev = c.evaluation
    if c.fit_ctx is not None and ev.scenario.margin_fraction > 0:
        stop = ev.max_ctx if ev.max_ctx is not None else x_end
        if stop > c.fit_ctx:
            ax.axvspan(c.fit_ctx, stop, color=COLORS["tight"], alpha=0.12, linewidth=0, gid="tight_zone",
                       label=f"tight: headroom under the {ev.scenario.margin_fraction * 100:g} % margin")
    if ev.max_ctx is not None and ev.max_ctx <= x_end:
        ax.axvspan(ev.max_ctx, x_end, color=COLORS["flash"], alpha=0.06, linewidth=0, gid="over_zone")


def _mark_ctx(ax, c: DecodeCurves, k: int, color: str, single: bool, x_end: float, units: str) -> None:
    """The rates at ``--ctx``: from RAM (check's headline) and, when over, streamed from flash."""
    ev, s = c.evaluation, c.evaluation.scenario
    ram = ev.decode_tokens_per_s
    over = bool(ev.flash.steady_overflow_bytes)  # decode streams only a steady overflow (not a prefill peak)
    ax.plot([s.ctx], [ram], "s", color="#222222" if single else color, markersize=6, zorder=5,
            markeredgecolor="#222222", gid=f"ctx:{k}")
    if s.sequences > 1:  # check's aggregate: one step emits a token for every sequence
        ax.plot([s.ctx], [ev.aggregate_decode_tokens_per_s], "D", color=AGGREGATE_COLOR if single else color,
                markersize=5, zorder=5, markeredgecolor="#222222", gid=f"ctx_aggregate:{k}")
    if over:
        ax.plot([s.ctx], [ev.flash.streamed_decode_tokens_per_s], "v", color=COLORS["flash"] if single else color,
                markersize=7, zorder=5, markeredgecolor="#222222", gid=f"ctx_flash:{k}")
    if not single:
        return
    right = s.ctx > 0.6 * x_end  # labels to the left of a mark near the right edge, so they stay inside
    box = {"boxstyle": "round,pad=0.25", "fc": "white", "ec": "none", "alpha": 0.85}
    per = " per sequence" if s.sequences > 1 else ""
    # one label for both marks: two labels at marks this close would overlap (the aggregate's diamond is above)
    aggregate = (f"\n{_rate(ev.aggregate_decode_tokens_per_s)} tok/s over {_sequences(s.sequences)} (the diamond)"
                 if s.sequences > 1 else "")
    top = ev.aggregate_decode_tokens_per_s if s.sequences > 1 else ram  # above the highest mark: clear of the rest
    low, high = ax.get_ylim()
    # the flash mark's label sits just above it: when the two marks are close on this axis (a huge context, both
    # rates near 0), the RAM label goes up by the flash label's two lines so the two do not print over each other
    lift = 30 if over and (top - ev.flash.streamed_decode_tokens_per_s) < 0.12 * (high - low) else 0
    ax.annotate(f"{ctx_label(s.ctx)}: {_rate(ram)} tok/s{per} from RAM" + aggregate
                + ("\n(as if it fit)" if over else ""),
                (s.ctx, top), xytext=(-8 if right else 8, 8 + lift), textcoords="offset points",
                ha="right" if right else "left", va="bottom", fontsize=9, fontweight="bold", gid=f"ctx_label:{k}",
                bbox=box)
    if over:
        ax.annotate(f"{_rate(ev.flash.streamed_decode_tokens_per_s)} tok/s: the "
                    f"{size_label(ev.flash.steady_overflow_bytes, units)}\noverflow streamed from flash",
                    (s.ctx, ev.flash.streamed_decode_tokens_per_s), xytext=(-8 if right else 8, 6),
                    textcoords="offset points", ha="right" if right else "left", va="bottom", fontsize=9,
                    fontweight="bold", color=COLORS["flash"], gid=f"ctx_flash_label:{k}", bbox=box)


def _series_label(c: DecodeCurves) -> str:
    """``pixel8 × llama-2-7b — 1.7 tok/s from RAM at 32k, 0.1 streamed from flash``."""
    ev, s = c.evaluation, c.evaluation.scenario
    label = f"{s.device.name} × {s.model.name}" + (f", {_sequences(s.sequences)}" if s.sequences > 1 else "")
    if c.show_ctx and s.ctx:
        label += f" — {_rate(ev.decode_tokens_per_s)} tok/s from RAM at {ctx_label(s.ctx)}"
        if s.sequences > 1:
            label += f" ({_rate(ev.aggregate_decode_tokens_per_s)} over all)"
        if ev.flash.steady_overflow_bytes:
            label += f", {_rate(ev.flash.streamed_decode_tokens_per_s)} streamed from flash"
    at_limit = bool(c.ctx_limit) and ev.max_ctx == c.ctx_limit[0]
    if ev.max_ctx is not None and ev.max_ctx <= c.ctx_tokens[-1] and not at_limit:
        # its vertical line, drawn in the series' colour, is otherwise unlabelled among many
        label += f"; max context {ev.max_ctx:,} (the vertical line)"
    return label


def draw_decode(ax, curves: list[DecodeCurves], max_ticks: int = 8, units: str = "si") -> None:
    """Every configuration in its own colour; a single one gets the roofline and the tight/over shading."""
    import numpy as np

    single = len(curves) == 1
    x_end = max(int(c.ctx_tokens[-1]) for c in curves)
    top = 0.0
    any_flash = any_aggregate = False
    limits: dict = {}  # (tokens, option) → [(curve index, colour)]
    for k, c in enumerate(curves):
        ev, s = c.evaluation, c.evaluation.scenario
        x = c.ctx_tokens
        color = COLORS["decode"] if single else SERIES_COLORS[k % len(SERIES_COLORS)]
        per = " per sequence" if s.sequences > 1 else ""
        label = (("one sequence's rate " if per else "") + _ram_label(s, c.latency_s) + " — check's decode rate"
                 if single else _series_label(c))
        ax.plot(x, c.decode_tokens_per_s, color=color, linewidth=2, label=label, gid=f"decode:{k}")
        top = max(top, float(np.nanmax(c.decode_tokens_per_s)))
        if s.sequences > 1 and c.aggregate_tokens_per_s is not None:
            label = (f"all {_sequences(s.sequences)} together (the weights read once per step) — check's "
                     "aggregate rate" if single else "_nolegend_")
            ax.plot(x, c.aggregate_tokens_per_s, color=AGGREGATE_COLOR if single else color, linewidth=2,
                    linestyle=AGGREGATE_STYLE, label=label, gid=f"aggregate:{k}")
            top = max(top, float(np.nanmax(c.aggregate_tokens_per_s)))
            any_aggregate = True
        if single:
            ax.plot(x, c.roofline_tokens_per_s, color=COLORS["roofline"], linewidth=1.2, linestyle="--",
                    label=f"roofline{per} (100 % of bandwidth, no latency)", gid="roofline")
            top = max(top, float(np.nanmax(c.roofline_tokens_per_s)))
            _spans(ax, c, x_end)
        if np.any(np.isfinite(c.streamed_tokens_per_s)):
            label = (f"past the budget{per}: overflow streamed from flash ({s.device.flash_read / 1e9:.2f} GB/s)"
                     if single else "_nolegend_")
            ax.plot(x, c.streamed_tokens_per_s, color=COLORS["flash"] if single else color, linewidth=2,
                    linestyle=(0, (4, 2)), label=label, gid=f"flash:{k}")
            any_flash = True
        if c.ctx_limit:  # one mark per distinct limit, drawn below; in the curve's colour when it is its own
            limits.setdefault(c.ctx_limit, []).append((k, color))
        at_limit = bool(c.ctx_limit) and ev.max_ctx == c.ctx_limit[0]  # the cache's limit, not the budget
        if ev.max_ctx is not None and ev.max_ctx <= x[-1] and not at_limit:
            ax.axvline(ev.max_ctx, color=COLORS["max_ctx"] if single else color, linewidth=1, alpha=0.6,
                       gid=f"max_ctx:{k}")
            if single:
                ax.annotate(f"max context {ev.max_ctx:,}\nover budget →", (ev.max_ctx, 0.97),
                            xycoords=ax.get_xaxis_transform(), **inward(ev.max_ctx, 0, x_end),
                            va="top", fontsize=9, color=COLORS["max_ctx"], fontweight="bold", gid=f"max_ctx_label:{k}")
        elif single and ev.max_ctx is not None and ev.max_ctx > x[-1]:  # past the axis end: at the right edge
            ax.annotate(f"max context {ev.max_ctx:,} →\n(past this axis)", (1, 0.97), xycoords="axes fraction",
                        xytext=(-5, 0), textcoords="offset points", ha="right", va="top", fontsize=9,
                        color=COLORS["max_ctx"], fontweight="bold", gid=f"max_ctx_label:{k}")
        if c.show_ctx and s.ctx:
            _mark_ctx(ax, c, k, color, single, x_end, units)
    for limit, owners in limits.items():
        k, color = owners[0]
        draw_ctx_limit(ax, limit, x_end, color if len(owners) == 1 and not single else None, gid=f"ctx_limit:{k}")
    if not single:  # one legend entry for each line style shared by every series
        ax.plot([], [], color="#555555", linewidth=2, label="solid: from RAM, check's decode rate "
                "(past the budget: as if it fit)")
        if any_flash:
            ax.plot([], [], color="#555555", linewidth=2, linestyle=(0, (4, 2)),
                    label="dashed: past the budget, the overflow streamed from flash")
        if any_aggregate:
            ax.plot([], [], color="#555555", linewidth=2, linestyle=AGGREGATE_STYLE,
                    label="dash-dot: all the sequences together (aggregate; solid and dashed: per sequence)")
    targets = {c.target_tokens_per_s for c in curves if c.target_tokens_per_s}
    for target in sorted(targets):
        label = f"target {target:g} tok/s"
        ev = curves[0].evaluation
        if single and ev.max_ctx_at_target is not None and target == ev.scenario.target_tokens_per_s:
            # check's "max context at the target": the largest context that fits and decodes at the target
            label += f": met up to {ev.max_ctx_at_target:,} tokens"
            ax.plot([ev.max_ctx_at_target], [target], "o", color=COLORS["target"], markersize=6, zorder=5,
                    gid="max_ctx_at_target")
        ax.axhline(target, color=COLORS["target"], linestyle=":", linewidth=1.8, label=label, gid="target")
        top = max(top, target)
    ax.set_xlim(0, x_end)
    ax.set_ylim(0, top * 1.12)
    ctx_axis(ax.xaxis, max_ticks=max_ticks)
    sequences = {c.evaluation.scenario.sequences for c in curves}
    # with several sequences the axis holds both rates: the legend says which line is which
    ax.set_ylabel("decode [tokens/s]" if sequences == {1} else "decode [tokens/s]: per sequence and aggregate")
    ax.grid(True, alpha=0.3, linewidth=0.6)
    ax.set_axisbelow(True)


def decode_figure(curves: list[DecodeCurves], units: str = "si", count: SeriesCount | None = None):
    """One axis, one line per configuration; ``count``: how many the command had (``curves`` are the first of
    them), by default all up to :data:`~kvplan.plots.series.MAX_SERIES`."""
    count = count or count_series(len(curves))
    curves = curves[:count.shown]
    # several configurations: one legend row each (plus the line styles), below an axis that keeps its height
    fig = new_figure(9, 5.4 if len(curves) == 1 else 4.6 + 0.2 * (len(curves) + 2))
    ax = fig.subplots()
    draw_decode(ax, curves, units=units)
    if len(curves) == 1:
        s = curves[0].evaluation.scenario
        seqs = f", {_sequences(s.sequences)}" if s.sequences > 1 else ""
        fig.suptitle(f"Decode speed against context — {s.device.name} × {s.model.name}{seqs}", fontsize=12)
    else:
        note = title_note(count)
        sequences = {c.evaluation.scenario.sequences for c in curves}
        each = f", {_sequences(sequences.pop())} each" if len(sequences) == 1 and min(sequences) > 1 else ""
        fig.suptitle("Decode speed against context" + each + (f" ({note})" if note else ""), fontsize=12)
    handles, labels = ax.get_legend_handles_labels()
    ncols = 1 if len(curves) > 1 else (2 if len(labels) > 2 else len(labels))
    fig.legend(handles, labels, loc="outside lower center", ncols=ncols,
               frameon=False, fontsize=9)
    return fig
