"""``kvplan report``: a design-review report (Markdown or self-contained HTML) for a file of configurations."""

from __future__ import annotations

from typing import Annotated

import typer

from kvplan.cli import options as o

HELP = """Write a design-review report for the configurations of a gate file.

Per configuration: the memory and speed tables, the verdict, the threshold results (when the
file gives thresholds), a plot of memory and decode speed against context, then the
assumptions and the source of every device and model figure. -o review.md writes Markdown with
its plots in review_files/; -o review.html writes one self-contained page. Without -o, Markdown
(without plots) goes to stdout. Exit code 0 when written (thresholds missed are reported, not
failed: use kvplan gate for that), 2 on bad input."""

FileArg = Annotated[str, typer.Argument(metavar="FILE", help="Configurations in the gate file format (YAML).")]
OutputOpt = Annotated[str | None, typer.Option("--output", "-o", metavar="FILE",
                                               help="Report file: .md / .markdown or .html / .htm.")]
NoPlotsOpt = Annotated[bool, typer.Option("--no-plots", help="Leave the plots out (no matplotlib work).")]


def report(
    file: FileArg,
    output: OutputOpt = None,
    no_plots: NoPlotsOpt = False,
    units: o.UnitsOpt = o.Units.si,
    profiles_dir: o.ProfilesDirOpt = None,
) -> None:
    import kvplan
    from kvplan.hub.catalog import user_catalog
    from kvplan.cli import terminal
    from kvplan.files.outfiles import check_outputs
    from kvplan.gate.checker import check_gate
    from kvplan.gate.spec import load_gate
    from kvplan.report.build import build_report
    from kvplan.report.markdown import render_markdown
    from kvplan.report.write import check_report_path, write_report

    plots = not no_plots and output is not None
    if output:
        check_outputs([file], [output])
        check_report_path(output, plots)
    gate_file = load_gate(file, user_catalog(profiles_dir))
    for note in gate_file.notes:
        terminal.display_note(note)
    result = check_gate(gate_file)
    from kvplan.advice import changes_to_fit

    changes = {i: changes_to_fit(res.evaluation) for i, res in enumerate(result.configurations)
               if not res.evaluation.fits}
    document = build_report(gate_file, result, units.value, plots=plots, version=kvplan.__version__,
                            changes=changes)
    if output is None:
        terminal.display_text(render_markdown(document))
        return
    written = write_report(document, output, units.value)
    terminal.display_note(f"wrote {written[-1]}" + (f" and {len(written) - 1} plot"
                                                   f"{'s' if len(written) > 2 else ''}" if len(written) > 1 else ""))
