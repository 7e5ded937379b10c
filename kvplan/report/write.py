"""Writing a report whole: plots drawn with :mod:`kvplan.plots`, Markdown with a ``<stem>_files/`` folder of
PNGs next to it, or one HTML page with the PNGs embedded."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import quote

from kvplan.files.outfiles import check_extension, check_writable, write_text_atomic
from kvplan.report.document import Report

REPORT_EXTENSIONS = ("md", "markdown", "html", "htm")


def report_kind(path: str | os.PathLike) -> str:
    """``markdown`` or ``html`` by extension; OutputError for anything else."""
    ext = check_extension(path, REPORT_EXTENSIONS, "report")
    return "html" if ext in ("html", "htm") else "markdown"


def files_dir(path: str | os.PathLike) -> Path:
    """Where a Markdown report's plots go: ``review.md`` → ``review_files/`` beside it."""
    p = Path(path)
    return p.with_name(f"{p.stem}_files")


def check_report_path(path: str | os.PathLike, plots: bool) -> str:
    """Fail before any work when the report (or its plot folder) cannot be written; return its kind."""
    kind = report_kind(path)
    check_writable(path)
    if plots and kind == "markdown":
        from kvplan.plots.save import check_plot_dir

        check_plot_dir(files_dir(path))
    return kind


def write_report(report: Report, path: str | os.PathLike, units: str = "si") -> list[Path]:
    """Write the report (and, for Markdown, its PNGs); return every path written, the report last."""
    from kvplan.report.html import render_html
    from kvplan.report.markdown import render_markdown

    kind = report_kind(path)
    if kind == "html":
        return [write_text_atomic(path, render_html(report, _pngs(report, units)))]
    written: list[Path] = []
    links: dict[str, str] = {}
    if report.plots:
        from kvplan.plots.check import summary_figure
        from kvplan.plots.save import make_plot_dir, save_figure

        folder = make_plot_dir(files_dir(path))
        for plot in report.plots:
            written.append(save_figure(summary_figure(plot.evaluation, units), folder / f"{plot.key}.png"))
            links[plot.key] = quote(f"{folder.name}/{plot.key}.png")
    written.append(write_text_atomic(path, render_markdown(report, links)))
    return written


def _pngs(report: Report, units: str) -> dict[str, bytes]:
    if not report.plots:
        return {}
    from kvplan.plots.check import summary_figure
    from kvplan.plots.save import figure_bytes

    return {plot.key: figure_bytes(summary_figure(plot.evaluation, units)) for plot in report.plots}
