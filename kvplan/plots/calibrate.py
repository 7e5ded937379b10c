"""``kvplan calibrate --plot``: measured time per token against bytes read per token, with the fitted line."""

from __future__ import annotations

from kvplan.plots.axes import COLORS, new_figure


def calibration_figure(points: list[tuple[float, float, str]], bandwidth_bytes_per_s: float, latency_s: float,
                       title: str):
    """``points`` are (bytes/token, measured s/token, label); the line is ``bytes / bandwidth + latency``."""
    fig = new_figure(7.0, 4.4)
    ax = fig.add_subplot(1, 1, 1)
    xs = [p[0] for p in points]
    x_end = max(xs) * 1.1
    line_x = [0.0, x_end]
    line_y = [(x / bandwidth_bytes_per_s + latency_s) * 1e3 for x in line_x]
    ax.plot([x / 1e9 for x in line_x], line_y, color=COLORS["decode"], linewidth=1.8, gid="fit",
            label=f"fit: bytes / {bandwidth_bytes_per_s / 1e9:.1f} GB/s + {latency_s * 1e3:.2f} ms")
    ax.scatter([x / 1e9 for x in xs], [p[1] * 1e3 for p in points], color=COLORS["flash"], zorder=3,
               label="measured (llama-bench tg)", gid="measured")
    for x, t, label in points:
        ax.annotate(label, (x / 1e9, t * 1e3), textcoords="offset points", xytext=(6, -12), fontsize=8)
    ax.set_xlim(0, x_end / 1e9)
    ax.set_ylim(0, max(max(line_y), max(p[1] * 1e3 for p in points)) * 1.1)
    ax.set_xlabel("bytes read per token [GB]")
    ax.set_ylabel("time per token [ms]")
    ax.set_title(title, fontsize=11)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper left", fontsize=9)
    return fig
