"""Decode tokens/s against context: from RAM, at the roofline, with the overflow streamed from flash."""

from __future__ import annotations

from kvplan.plots.axes import COLORS, ctx_axis, ctx_label, draw_ctx_limit, new_figure
from kvplan.curves import DecodeCurves

_PALETTE = ("#4c72b0", "#dd8452", "#55a868", "#8172b3", "#937860", "#da8bc3", "#8c8c8c", "#ccb974")


def _rate(x: float) -> str:
    return f"{x:.1f}" if x < 100 else f"{x:,.0f}"


def _rate_at_ctx(ev) -> float:
    """The rate the check reports at its ctx: from RAM when it fits, flash-streamed when over [tokens/s]."""
    return ev.flash.streamed_decode_tokens_per_s if ev.flash.overflow_bytes else ev.decode_tokens_per_s


def draw_decode(ax, curves: list[DecodeCurves], max_ticks: int = 8) -> None:
    """Every configuration in its own colour; a single one gets the roofline and the over-budget shading."""
    import numpy as np

    single = len(curves) == 1
    x_end = max(int(c.ctx_tokens[-1]) for c in curves)
    top = 0.0
    any_flash = False
    limits: dict = {}  # (tokens, option) → [(curve index, colour)]
    for k, c in enumerate(curves):
        ev, s = c.evaluation, c.evaluation.scenario
        x = c.ctx_tokens
        color = COLORS["decode"] if single else _PALETTE[k % len(_PALETTE)]
        eff = s.device.bandwidth_efficiency
        if single:
            label = f"from RAM ({eff:.0%} of {s.device.memory_bandwidth / 1e9:.1f} GB/s)"
        else:
            label = f"{s.device.name} × {s.model.name}"
            if c.show_ctx and s.ctx:
                label += f" — {_rate(_rate_at_ctx(ev))} tok/s at {ctx_label(s.ctx)}"
        ax.plot(x, c.decode_tokens_per_s, color=color, linewidth=2, label=label, gid=f"decode:{k}")
        top = max(top, float(np.nanmax(c.decode_tokens_per_s)))
        if single:
            ax.plot(x, c.roofline_tokens_per_s, color=COLORS["roofline"], linewidth=1.2, linestyle="--",
                    label="roofline (100 % of bandwidth)", gid="roofline")
            top = max(top, float(np.nanmax(c.roofline_tokens_per_s)))
        if np.any(np.isfinite(c.streamed_tokens_per_s)):
            label = (f"over budget: overflow streamed from flash ({s.device.flash_read / 1e9:.1f} GB/s)"
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
                ax.axvspan(ev.max_ctx, x_end, color=COLORS["flash"], alpha=0.06, linewidth=0, gid="over_zone")
                ax.annotate(f"max context {ev.max_ctx:,}\nover budget →", (ev.max_ctx, 0.97),
                            xycoords=ax.get_xaxis_transform(), xytext=(5, 0), textcoords="offset points",
                            ha="left", va="top", fontsize=9, color=COLORS["max_ctx"], fontweight="bold")
        if c.show_ctx and s.ctx:
            rate = _rate_at_ctx(ev)
            ax.plot([s.ctx], [rate], "s", color="#222222" if single else color, markersize=6, zorder=5,
                    markeredgecolor="#222222", gid=f"ctx:{k}")
            if not single:
                continue
            right = s.ctx > 0.75 * x_end
            ax.annotate(f"{ctx_label(s.ctx)}: {_rate(rate)} tok/s", (s.ctx, rate),
                        xytext=(-8 if right else 8, 8), textcoords="offset points",
                        ha="right" if right else "left", va="bottom", fontsize=9, fontweight="bold",
                        bbox={"boxstyle": "round,pad=0.25", "fc": "white", "ec": "none", "alpha": 0.85})
    for limit, owners in limits.items():
        k, color = owners[0]
        draw_ctx_limit(ax, limit, x_end, color if len(owners) == 1 and not single else None, gid=f"ctx_limit:{k}")
    if any_flash and not single:  # one legend entry for every dashed flash line
        ax.plot([], [], color="#555555", linewidth=2, linestyle=(0, (4, 2)),
                label="dashed: over budget, overflow streamed from flash")
    targets = {c.target_tokens_per_s for c in curves if c.target_tokens_per_s}
    for target in sorted(targets):
        ax.axhline(target, color=COLORS["target"], linestyle=":", linewidth=1.8,
                   label=f"target {target:g} tok/s", gid="target")
        top = max(top, target)
    ax.set_xlim(0, x_end)
    ax.set_ylim(0, top * 1.12)
    ctx_axis(ax.xaxis, max_ticks=max_ticks)
    ax.set_ylabel("decode [tokens/s]")
    ax.grid(True, alpha=0.3, linewidth=0.6)
    ax.set_axisbelow(True)


def decode_figure(curves: list[DecodeCurves]):
    fig = new_figure(9, 5.4)
    ax = fig.subplots()
    draw_decode(ax, curves)
    if len(curves) == 1:
        s = curves[0].evaluation.scenario
        fig.suptitle(f"Decode speed against context — {s.device.name} × {s.model.name}", fontsize=12)
    else:
        fig.suptitle("Decode speed against context", fontsize=12)
    handles, labels = ax.get_legend_handles_labels()
    ncols = 1 if len(curves) > 1 else (2 if len(labels) > 2 else len(labels))
    fig.legend(handles, labels, loc="outside lower center", ncols=ncols,
               frameon=False, fontsize=9)
    return fig
