"""``kvplan gate``: check a release's configurations against their thresholds, for CI."""

from __future__ import annotations

from typing import Annotated

import typer

from kvplan.cli.options import declarations as o
from kvplan.cli.options.formats import FormatOpt, OutputFormat

HELP = """Check every configuration of one or more release files against their thresholds (a CI gate).

The file lists named configurations (device, model, ctx, precision, …) with thresholds
(must_fit, min_headroom, min_decode_tok_s, max_total, max_weights, max_swap_in_s, min_max_ctx)
under defaults: and per configuration; see docs/ci-gate.md. Every configuration is evaluated.
Exit code 0 when all pass, 1 when any fails, 2 when the file is bad."""

FilesArg = Annotated[list[str], typer.Argument(metavar="FILE", help="Gate files (YAML), e.g. release.yaml; "
                                               "several are checked together (one JUnit testsuite each).")]
JunitOpt = Annotated[str | None, typer.Option("--junit", metavar="FILE",
                                              help="Also write JUnit XML (one testcase per configuration).")]
JsonOpt = Annotated[str | None, typer.Option("--json", metavar="FILE", help="Also write the JSON document.")]
MarkdownOpt = Annotated[str | None, typer.Option("--markdown", metavar="FILE",
                                                 help="Also write a Markdown summary (e.g. $GITHUB_STEP_SUMMARY).")]


def gate(
    files: FilesArg,
    junit: JunitOpt = None,
    json_file: JsonOpt = None,
    markdown_file: MarkdownOpt = None,
    output_format: FormatOpt = OutputFormat.table,
    units: o.UnitsOpt = o.Units.si,
    profiles_dir: o.ProfilesDirOpt = None,
) -> None:
    from kvplan.hub.catalog import user_catalog
    from kvplan.cli import terminal
    from kvplan.cli.terminal import ExitCode
    from kvplan.errors import ProfileError
    from kvplan.render import gate as reporters
    from kvplan.gate.checker import check_gate
    from kvplan.gate.spec import load_gate
    from kvplan.files.inputs import distinct_paths
    from kvplan.files.outfiles import check_outputs, check_writable, write_text_atomic

    outputs = {"junit": junit, "json": json_file, "markdown": markdown_file}
    outputs = {name: path for name, path in outputs.items() if path}
    check_outputs(files, outputs.values())
    for path in outputs.values():
        check_writable(path)

    catalog = user_catalog(profiles_dir)
    gate_files, problems = [], []
    for file in distinct_paths(files):
        try:
            gate_files.append(load_gate(file, catalog))
        except ProfileError as exc:  # report the problems of every file, not only the first bad one
            problems += exc.problems
    if problems:
        raise ProfileError(problems)
    check_outputs(files, outputs.values())  # again, now that the profiles and policy files are read too
    for note in dict.fromkeys(n for g in gate_files for n in g.notes):
        terminal.display_note(note)
    results = [check_gate(g) for g in gate_files]

    for name, path in outputs.items():
        write_text_atomic(path, reporters.render(name, results, units.value))
        terminal.display_written(f"wrote {path}")
    if output_format is OutputFormat.json:
        terminal.display_json(reporters.json_document(results))
    elif output_format is OutputFormat.markdown:
        terminal.display_text(reporters.to_markdown_text(results, units.value))
    else:
        terminal.display_tables(reporters.tables(results, units.value), output_format.value)
    raise typer.Exit(ExitCode.OK if all(r.passed for r in results) else ExitCode.FAILED)

