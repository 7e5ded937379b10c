"""``kvplan sweep --plot FILE``: the option, the path check before any work, and writing the figure."""

from __future__ import annotations

from typing import Annotated

import typer

SweepPlotOpt = Annotated[str | None, typer.Option("--plot", help="Also draw the grid to this .png/.svg/.pdf: "
                                                  "memory against budget and decode tokens/s, one line per "
                                                  "series against context (bars for a single context).")]


def check_sweep_plot(path: str | None) -> None:
    """Fail on a bad plot path or extension before the grid is evaluated."""
    if path is not None:
        from kvplan.plots.save import check_plot_path

        check_plot_path(path)


def write_sweep_plot(parts, path: str | None, units: str) -> None:
    """Draw the evaluated groups to ``path`` (written whole) and say so on stderr."""
    if path is None:
        return
    from kvplan import sweep as engine_sweep
    from kvplan.cli import terminal
    from kvplan.plots.save import save_figure
    from kvplan.plots.sweep import sweep_figure

    save_figure(sweep_figure(engine_sweep.concat(parts), units), path)
    terminal.display_note(f"wrote {path}")
