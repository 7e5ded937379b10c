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

    from kvplan.plots.sweep import series_count

    cols = engine_sweep.concat(parts)
    count, varying = series_count(cols)
    if count.left_out:
        terminal.display_warning(left_out_warning(count, varying))
    save_figure(sweep_figure(cols, units), path)
    terminal.display_written(f"wrote {path}")


# The options that list the values of each swept dimension of a series (kvplan.plots.sweep.DIMENSIONS).
DIMENSION_OPTIONS = {"device": "--device", "model": "--model", "weight_bits": "--weight-bits/--weight-type",
                     "kv_bits": "--kv-bits/--kv-type", "sequences": "--sequences"}


def left_out_warning(count, varying: list[str]) -> str:
    """``sweep --plot: 30 series (--device × --kv-bits/--kv-type); drew the first 12, left out 18: …``."""
    options = " × ".join(DIMENSION_OPTIONS[d] for d in varying)
    return (f"sweep --plot: {count.total} series ({options}); drew the first {count.shown}, left out "
            f"{count.left_out}: list fewer values, or split the sweep over several plots")
