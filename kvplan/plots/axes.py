"""Shared look of every plot: figures without pyplot, context axes in k/M tokens, memory axes in GB or GiB.

Curves are plotted in base units (tokens, bytes) so that a figure's data are the engine's
numbers; locators and formatters show them as ``8k`` and ``4.3 GB``.
"""

from __future__ import annotations

import math

_SI = ((10**12, "TB"), (10**9, "GB"), (10**6, "MB"), (10**3, "kB"), (1, "B"))
_IEC = ((2**40, "TiB"), (2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB"), (1, "B"))

COLORS = {
    "weights": "#4c72b0", "kv": "#dd8452", "pinned": "#937860", "overhead": "#8c8c8c", "budget": "#c44e52",
    "margin": "#f2c14e", "total": "#222222", "ctx": "#555555", "max_ctx": "#c44e52", "decode": "#4c72b0",
    "roofline": "#9aa9c9", "flash": "#c44e52", "target": "#55a868", "ctx_limit": "#8172b3", "buffers": "#64b5cd", "process": "#b3a36b",
    "parts": "#55a868",
    "tight": "#f2c14e",
    "gpu": "#ff9df0",  # an offloaded configuration's GPU memory: what it holds and its budget
}


def new_figure(width_in: float, height_in: float):
    """A Figure on the Agg backend, outside pyplot's registry (nothing to close, no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    return Figure(figsize=(width_in, height_in), layout="constrained")


def byte_unit(max_bytes: float, units: str = "si") -> tuple[int, str]:
    """The largest unit not above ``max_bytes`` (GB for a 6 GB budget; MB for a 300 MB cache)."""
    for scale, name in _IEC if units == "iec" else _SI:
        if max_bytes >= scale:
            return scale, name
    return 1, "B"


def ctx_label(n: float) -> str:
    """Tick text for a context: 8192 → 8k, 10240 → 10k, 1536 → 1.5k, 1048576 → 1M, 2**40 → 1T, 500 → 500."""
    n = int(round(n))
    for unit, suffix in ((2**40, "T"), (2**30, "G"), (2**20, "M"), (2**10, "k")):
        if n >= unit and (n * 4) % unit == 0:
            return f"{round(n / unit, 6):,g}{suffix}"  # :g alone turns 1,048,576M into 1.04858e+06M
    return f"{n:,}"


def ctx_limit_label(limit: tuple[int, str]) -> str:
    """The mark of a cache's hard context limit: ``(16384, "max_cache_len")`` → ``max_cache_len 16,384``."""
    tokens, option = limit
    return f"{option} {tokens:,}"


def draw_ctx_limit(ax, limit: tuple[int, str] | None, x_end: float, color: str | None = None, gid: str = "ctx_limit",
                   labelled: bool = True):
    """A dash-dot line at the context a cache cannot go past, labelled with the option that sets it (``labelled``
    False: another label at that line already names it — max context "(= max_cache_len)")."""
    if not limit or limit[0] > x_end:
        return
    color = color or COLORS["ctx_limit"]
    ax.axvline(limit[0], color=color, linestyle="-.", linewidth=1.8, clip_on=False, zorder=6, gid=gid)
    if not labelled:
        return
    ax.annotate(ctx_limit_label(limit), (limit[0], 0.5), xycoords=ax.get_xaxis_transform(), xytext=(-4, 0),
                textcoords="offset points", rotation=90, ha="right", va="center", fontsize=9, color=color,
                gid=f"{gid}_label")


def inward(x: float, x_start: float, x_end: float, gap: float = 5) -> dict:
    """``annotate`` arguments that put a label beside a vertical line at ``x`` on the side with more room, so
    it stays inside the axes (a max-context label at 147k of a 192k axis ran past its right edge)."""
    right = x - x_start > 0.6 * (x_end - x_start)
    return {"xytext": (-gap if right else gap, 0), "textcoords": "offset points", "ha": "right" if right else "left"}


def size_label(n: float, units: str = "si", unit: tuple[int, str] | None = None) -> str:
    """``4294967296`` → ``4.29 GB``; ``unit`` fixes the unit (to quote several sizes alike)."""
    scale, name = unit or byte_unit(abs(n), units)
    sign = "−" if n < 0 else ""
    return f"{sign}{abs(n) / scale:,.2f} {name}" if scale > 1 else f"{sign}{abs(n):,.0f} B"


def _pow2_ticks(vmin: float, vmax: float, max_ticks: int):
    import numpy as np

    span = max(vmax - vmin, 1.0)
    step = 1
    while span / step > max_ticks:
        step *= 2
    start = math.ceil(vmin / step) * step
    return np.arange(start, vmax + step * 1e-9, step)


def ctx_axis(axis, max_ticks: int = 8, label: str = "context [tokens]") -> None:
    """Ticks on multiples of powers of two, labelled 2k, 4k, …; ``axis`` is ``ax.xaxis`` or ``ax.yaxis``."""
    from matplotlib.ticker import FuncFormatter, Locator

    class Pow2Locator(Locator):
        def __call__(self):
            return self.tick_values(*self.axis.get_view_interval())

        def tick_values(self, vmin, vmax):
            return _pow2_ticks(min(vmin, vmax), max(vmin, vmax), max_ticks)

    axis.set_major_locator(Pow2Locator())
    axis.set_major_formatter(FuncFormatter(lambda x, _pos: ctx_label(x)))
    axis.set_label_text(label)


def byte_ticks(scale: float):
    """(locator, formatter) for data in bytes shown in a unit of ``scale`` bytes: ticks at round numbers of that
    unit (1, 2, 2.5, 5 × a power of ten GiB), not at round numbers of bytes read in it (1.86265 GiB)."""
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    class ScaledLocator(MaxNLocator):
        def tick_values(self, vmin, vmax):
            return super().tick_values(vmin / scale, vmax / scale) * scale

    return ScaledLocator(nbins=7, steps=[1, 2, 2.5, 5, 10]), FuncFormatter(lambda x, _pos: f"{x / scale:g}")


def bytes_axis(axis, max_bytes: float, units: str = "si", label: str = "memory") -> None:
    """Ticks at round numbers of GB (or GiB, MB …) on an axis whose data are bytes."""
    scale, name = byte_unit(max_bytes, units)
    locator, formatter = byte_ticks(scale)
    axis.set_major_locator(locator)
    axis.set_major_formatter(formatter)
    axis.set_label_text(f"{label} [{name}]")
