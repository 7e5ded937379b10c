"""The plots that match ``kvplan check``'s tables, from its :class:`~kvplan.plan.Evaluation`.

``--plot FILE`` gets one summary figure (memory and decode side by side: the memory table
and the speed/flash tables); ``--plot-dir DIR`` gets one file per kind that applies.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pathlib import Path

if TYPE_CHECKING:
    from kvplan.plan.results import Evaluation


CHECK_KINDS = ("memory", "decode", "attention")


AXIS_OVER_CTX = 8


def summary_figure(ev: Evaluation, units: str = "si"):
    from kvplan import curves as data
    from kvplan.plots.axes import new_figure
    from kvplan.plots.decode import draw_decode
    from kvplan.plots.memory import draw_memory
    from kvplan.render.fmt import n_tokens

    s = ev.scenario
    fig = new_figure(14, 5.6)
    ax_mem, ax_dec = fig.subplots(1, 2)
    # the axis reaches the max-context crossing, but not past 8 × the context asked for (or trained): a 32k
    # configuration drawn to 5M tokens (a windowed model's crossing) was a mark squeezed against the left edge
    end = min(data.default_ctx_max(ev), data.nice_ctx_ceil(AXIS_OVER_CTX * max(s.ctx, ev.max_ctx_trained or 0)))
    draw_memory(ax_mem, data.memory_curves(s, ctx_max_tokens=end), units, title="memory")
    draw_decode(ax_dec, [data.decode_curves(s, ctx_max_tokens=end)], units=units)
    ax_dec.set_title("decode speed", fontsize=11)
    for ax in (ax_mem, ax_dec):  # one column: the decode labels name both terms of the rate and are long
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), ncols=1, frameon=False, fontsize=9)
    fig.suptitle(f"{s.device.name} × {s.model.name} at {n_tokens(s.ctx)} — {ev.verdict.value.upper()}",
                 fontsize=12)
    return fig


def check_figures(ev: Evaluation, units: str = "si") -> dict:
    """``{kind: Figure}`` for every kind that applies to one configuration."""
    from kvplan import curves as data
    from kvplan.plots.attention import attention_figure
    from kvplan.plots.decode import decode_figure
    from kvplan.plots.memory import memory_figure

    s = ev.scenario
    return {
        "memory": memory_figure([data.memory_curves(s)], units),
        "decode": decode_figure([data.decode_curves(s)], units),
        "attention": attention_figure(data.attention_curves(s), units),
    }


def dir_paths(folder: str | Path, extension: str = "png") -> dict[str, Path]:
    return {kind: Path(folder) / f"kvplan-{kind}.{extension}" for kind in CHECK_KINDS}


def write_check_plots(ev: Evaluation, plot_file: str | None, plot_dir: str | None, units: str = "si") -> list[Path]:
    """Write the summary to ``plot_file`` and/or one PNG per kind into ``plot_dir``; return the paths written."""
    from kvplan.plots.save import make_plot_dir, save_figure

    written = []
    if plot_file:
        written.append(save_figure(summary_figure(ev, units), plot_file))
    if plot_dir:
        make_plot_dir(plot_dir)
        figures = check_figures(ev, units)
        for kind, path in dir_paths(plot_dir).items():
            written.append(save_figure(figures[kind], path))
    return written
