"""``kvplan report``: a design-review report (Markdown or self-contained HTML) for a file of configurations."""

from __future__ import annotations

from typing import Annotated

import typer

from kvplan.cli.options import declarations as o

HELP = """Write a design-review report for the configurations of one or more gate files.

Per configuration: the memory and speed tables, the verdict, the threshold results (when the
file gives thresholds), a plot of memory and decode speed against context, then the
assumptions and the source of every device and model figure. Several files make one report
(every problem of every file is listed at once when any is bad). -o review.md writes Markdown
with its plots in review_files/; -o review.html writes one self-contained page. Without -o,
Markdown (without plots) goes to stdout. A configuration with sequences above 1 (the gate-file
key) gets its decode rate per sequence, with the aggregate beside it. Exit code 0 when written (thresholds missed
are reported, not failed: use kvplan gate for that), 2 on bad input."""

FilesArg = Annotated[list[str], typer.Argument(metavar="FILE", help="Configurations in the gate file format (YAML); "
                                               "several files make one report.")]
OutputOpt = Annotated[str | None, typer.Option("--output", "-o", metavar="FILE",
                                               help="Report file: .md / .markdown or .html / .htm.")]
NoPlotsOpt = Annotated[bool, typer.Option("--no-plots", help="Leave the plots out (no matplotlib work).")]


def report(
    files: FilesArg,
    output: OutputOpt = None,
    no_plots: NoPlotsOpt = False,
    units: o.UnitsOpt = o.Units.si,
    profiles_dir: o.ProfilesDirOpt = None,
) -> None:
    import kvplan
    from kvplan.advice import changes_to_fit
    from kvplan.hub.catalog import user_catalog
    from kvplan.cli import terminal
    from kvplan.errors import ProfileError
    from kvplan.files.inputs import distinct_paths
    from kvplan.files.outfiles import check_outputs, is_stdout
    from kvplan.gate.checker import check_gate
    from kvplan.gate.spec import load_gate
    from kvplan.report.build import build_report
    from kvplan.report.markdown import render_markdown
    from kvplan.report.write import check_report_path, write_report

    if is_stdout(output):  # -o -: the Markdown on standard output, as without -o (its plots need a folder)
        output = None
    plots = not no_plots and output is not None
    if output:
        check_outputs(files, [output])
        check_report_path(output, plots)
    catalog = user_catalog(profiles_dir)
    gate_files, problems = [], []
    for file in distinct_paths(files):
        try:
            gate_files.append(load_gate(file, catalog))
        except ProfileError as exc:  # the problems of every file, not only the first bad one
            problems += exc.problems
    if problems:
        raise ProfileError(problems)
    if output:
        check_outputs(files, [output])  # again, now that the profiles and policy files are read too
    for note in dict.fromkeys(n for g in gate_files for n in g.notes):
        terminal.display_note(note)
    results = [check_gate(g) for g in gate_files]
    # the changes that keep the model, per configuration over budget (by file, then index in the file)
    changes = [{i: changes_to_fit(res.evaluation) for i, res in enumerate(result.configurations)
                if not res.evaluation.fits} for result in results]
    document = build_report(gate_files, results, units.value, plots=plots, version=kvplan.__version__,
                            changes=changes)
    if output is None:
        terminal.display_text(render_markdown(document))
        return
    written = write_report(document, output, units.value)
    terminal.display_written(f"wrote {written[-1]}" + (f" and {len(written) - 1} plot"
                                                   f"{'s' if len(written) > 2 else ''}" if len(written) > 1 else ""))
