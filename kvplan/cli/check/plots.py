"""``kvplan check --plot/--plot-dir``: the plots that match check's tables, their options and files."""

from __future__ import annotations

from typing import Annotated

import typer

PlotFileOpt = Annotated[str | None, typer.Option("--plot", help="Also write the plots that match the tables "
                                                 "(memory and decode side by side) to this .png/.svg/.pdf.")]
PlotDirOpt = Annotated[str | None, typer.Option("--plot-dir", help="Also write kvplan-memory.png, "
                                                "kvplan-decode.png and kvplan-attention.png into this folder.")]


def check_plot_targets(plot_file: str | None, plot_dir: str | None) -> None:
    """For ``kvplan check``: fail on a bad plot path before computing anything."""
    if plot_file is None and plot_dir is None:
        return
    from kvplan.plots.check import dir_paths
    from kvplan.plots.save import check_plot_dir, check_plot_path

    if plot_file is not None:
        check_plot_path(plot_file)
    if plot_dir is not None:
        folder = check_plot_dir(plot_dir)
        if folder.is_dir():
            for path in dir_paths(folder).values():
                check_plot_path(path)


def write_check_plots(ev, plot_file: str | None, plot_dir: str | None, units: str) -> None:
    """For ``kvplan check``: write the plots after the evaluation and say where they went (on stderr)."""
    if plot_file is None and plot_dir is None:
        return
    from kvplan.cli import terminal
    from kvplan.plots.check import write_check_plots as write

    for path in write(ev, plot_file, plot_dir, units):
        terminal.display_written(f"wrote {path}")
