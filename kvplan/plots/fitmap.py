"""Devices × models heatmap: the largest context that fits, or the headroom at a given context."""

from __future__ import annotations

from kvplan.plots.axes import byte_ticks, byte_unit, ctx_label, new_figure, size_label
from kvplan.curves import FitMap

_VERDICT = ("fit", "tight", "over")


def _text_color(rgba) -> str:
    r, g, b = rgba[:3]
    return "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.55 else "white"


def draw_fitmap(ax, m: FitMap, units: str = "si"):
    """Cells carry their numbers as text; the image's array holds the engine's values (tokens or bytes)."""
    import numpy as np
    from matplotlib import colormaps
    from matplotlib.colors import LogNorm, TwoSlopeNorm

    if m.ctx is None:
        values = m.max_ctx_tokens
        finite = values[np.isfinite(values) & (values > 0)]
        lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (1.0, 2.0)
        norm = LogNorm(vmin=lo / 2 if lo == hi else lo, vmax=hi * 2 if lo == hi else hi)
        cmap = colormaps["YlGn"].with_extremes(bad="#d9d9d9", over="#00441b")
        shown = np.where(np.isposinf(values), hi * 10, np.where(values <= 0, np.nan, values))
        image = ax.imshow(np.ma.masked_invalid(shown), cmap=cmap, norm=norm, aspect="auto", gid="fitmap")
        bar = ax.figure.colorbar(image, ax=ax, extend="max")
        bar.set_label("largest context that fits [tokens]")
        ticks = [t for t in 2.0 ** np.arange(0, 25) if norm.vmin <= t <= norm.vmax]
        bar.set_ticks(ticks)
        bar.set_ticklabels([ctx_label(t) for t in ticks])
        bar.minorticks_off()
    else:
        values = m.headroom_bytes.astype(float)
        # Each side scaled on its own: any shortfall is clearly red, any fit green.
        norm = TwoSlopeNorm(vcenter=0.0, vmin=min(float(values.min()), -1.0), vmax=max(float(values.max()), 1.0))
        span = max(float(np.max(np.abs(values))), 1.0)
        image = ax.imshow(values, cmap=colormaps["RdYlGn"], norm=norm, aspect="auto", gid="fitmap")
        scale, name = byte_unit(span, units)
        locator, formatter = byte_ticks(scale)
        bar = ax.figure.colorbar(image, ax=ax, ticks=locator, format=formatter)
        bar.set_label(f"headroom at {ctx_label(m.ctx)} tokens [{name}]")

    for i in range(len(m.devices)):
        for j in range(len(m.models)):
            ev = m.evaluations[i][j]
            if m.ctx is None:
                v = m.max_ctx_tokens[i, j]
                if np.isnan(v):
                    text = "none:\nweights too big"
                elif np.isinf(v):  # every layer windowed: memory never runs out; show the trained context
                    trained = ev.max_ctx_trained
                    text = "unbounded\n(windowed" + (f"; trained: {ctx_label(trained)})" if trained else ")")
                else:
                    text = f"{int(v):,}"
                    trained = ev.max_ctx_trained
                    if trained and v > trained:
                        text += f"\n(trained: {ctx_label(trained)})"
            else:
                text = f"{size_label(ev.headroom_bytes, units)}\n{_VERDICT[int(m.verdict_codes[i, j])].upper()}"
            rgba = image.cmap(image.norm(image.get_array()[i, j])) if not np.ma.is_masked(
                image.get_array()[i, j]) else (0.85, 0.85, 0.85, 1)
            ax.text(j, i, text, ha="center", va="center", fontsize=9, color=_text_color(rgba),
                    gid=f"cell:{i}:{j}")
    ax.set_xticks(range(len(m.models)), m.models, rotation=20 if len(m.models) > 3 else 0,
                  ha="right" if len(m.models) > 3 else "center")
    ax.set_yticks(range(len(m.devices)), m.devices)
    ax.set_xlabel("model")
    ax.set_ylabel("device")
    ax.set_xticks(np.arange(len(m.models) + 1) - 0.5, minor=True)
    ax.set_yticks(np.arange(len(m.devices) + 1) - 0.5, minor=True)
    ax.grid(which="minor", color="white", linewidth=2)
    ax.tick_params(which="minor", length=0)
    return image


def fitmap_figure(m: FitMap, units: str = "si"):
    width = min(3.0 + 2.1 * len(m.models), 22)
    height = min(1.8 + 0.75 * len(m.devices), 16)
    fig = new_figure(max(width, 6.5), max(height, 3.4))
    ax = fig.subplots()
    draw_fitmap(ax, m, units)
    what = "largest context that fits" if m.ctx is None else f"headroom at {m.ctx:,} token{'' if m.ctx == 1 else 's'}"
    fig.suptitle(f"Devices × models — {what}", fontsize=12)
    return fig
