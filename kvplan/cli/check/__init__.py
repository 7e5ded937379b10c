"""``kvplan check``: does this model, at this context, fit on this device, and how fast will it decode?"""

from __future__ import annotations

from kvplan.cli.options import knob_groups as g
from kvplan.cli.options import declarations as o
from kvplan.cli.options.formats import TABLE_JSON_MARKDOWN, FormatOpt, OutputFormat, choose_format
from kvplan.cli.check.plots import PlotDirOpt, PlotFileOpt, check_plot_targets, write_check_plots
from kvplan.cli.options.groups import Given, with_groups
from kvplan.cli.options.planning import OutputOpt

HELP = """Check one configuration: memory against the device budget, decode speed, max context.

Prints the memory breakdown (weights, KV cache, overhead, total, headroom), the verdict
(fit / tight / over), KV bytes per token, decode tokens/s, the largest context that fits
and, when over, the flash cost and the simplest changes that would make it fit.
Exit code 0 when it fits (fit or tight), 1 when over, 2 on bad input."""


@with_groups(cache_knobs=g.CACHE, policy_knobs=g.POLICY, runtime_knobs=g.RUNTIME)
def check(
    device: o.DeviceOpt,
    model: o.ModelOpt,
    ctx: o.CheckCtxOpt = None,
    num_ctx: o.NumCtxOpt = None,
    cache_knobs: Given = None,
    policy_knobs: Given = None,
    runtime_knobs: Given = None,
    output_format: FormatOpt = OutputFormat.table,
    units: o.UnitsOpt = o.Units.si,
    profiles_dir: o.ProfilesDirOpt = None,
    plot: PlotFileOpt = None,
    plot_dir: PlotDirOpt = None,
    output: OutputOpt = None,
) -> None:
    import typer

    from kvplan.advice import changes_to_fit
    from kvplan.cli import terminal
    from kvplan.cli.terminal import ExitCode
    from kvplan.plan import build_scenario, evaluate
    from kvplan.hub.catalog import user_catalog
    from kvplan.render import check as render

    check_plot_targets(plot, plot_dir)  # a bad plot path fails before any work
    output_format = _format_for_output(output_format, output)
    knobs = g.knobs_of(cache_knobs, policy_knobs, runtime_knobs)
    ctx_tokens = o.check_ctx(ctx, num_ctx, getattr(knobs.runtime, "name", None))
    catalog = user_catalog(profiles_dir)
    dev, mod = catalog.device(device), catalog.model(model)
    knobs = o.with_draft_resolved(knobs, catalog)
    for resolved in (dev, mod):
        if resolved.note:
            terminal.display_note(resolved.note)
    if ctx_tokens is None:  # Ollama's own default num_ctx on this device
        from kvplan.cli.check.ollama import default_num_ctx

        ctx_tokens = default_num_ctx(dev.profile, knobs.gpu_working_set_bytes)
    if output or plot:  # neither may replace the profiles just read (--output phone.yaml -d phone.yaml)
        from kvplan.files.outfiles import check_outputs

        check_outputs([], [p for p in (output, plot) if p])
    scenario = build_scenario(dev.profile, mod.profile, ctx_tokens, knobs)
    ev = evaluate(scenario)
    changes = changes_to_fit(ev) if not ev.fits else None
    runtime_command = None
    if ev.llamacpp_buffers_bytes is not None:  # llama.cpp accepts this request: the command that prices it
        from kvplan.cli.check.argv import check_argv

        # llama.cpp's -c is the total of its -np sequences: the same request is -c ctx × sequences
        same_request = scenario.with_changes(ctx=scenario.ctx * scenario.sequences)
        import shlex

        # quoted for a shell, as fit's commands are: a profile path with a space still runs as shown
        runtime_command = shlex.join(check_argv(same_request, device, model, profiles_dir) + ["--runtime", "llama.cpp"])
    if output_format is OutputFormat.json:
        document = render.format_json(ev, runtime_command)
        document["changes_to_fit"] = [render.change_json(c) for c in changes or []]
        if output:
            import json

            terminal.write_or_display_text(json.dumps(document, indent=2, allow_nan=False) + "\n", output)
        else:
            terminal.display_json(document)
    else:
        tables = render.check_tables(ev, changes, units.value, runtime_command)
        if output:
            from kvplan.render.tables import to_markdown, to_plain

            terminal.write_or_display_text(to_markdown(tables) if output_format is OutputFormat.markdown
                                  else to_plain(tables), output)
        else:
            terminal.display_tables(tables, output_format.value)
    write_check_plots(ev, plot, plot_dir, units.value)
    raise typer.Exit(ExitCode.OK if ev.fits else ExitCode.FAILED)


def _format_for_output(chosen: OutputFormat, output: str | None) -> OutputFormat:
    """The format of ``-o out.json`` / ``out.md`` (:func:`~kvplan.cli.options.formats.choose_format`), checked before
    any work so a bad extension never leaves a half-done run. check's ``--format`` shows its default (table), so a
    table asked for is not told apart from none: the extension decides then."""
    if not output:
        return chosen
    from kvplan.files.outfiles import check_writable

    fmt = choose_format(None if chosen is OutputFormat.table else chosen, output, TABLE_JSON_MARKDOWN)
    check_writable(output)
    return fmt
