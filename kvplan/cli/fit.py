"""``kvplan fit``: the largest context that fits, and what would make a target context fit."""

from __future__ import annotations

from typing import Annotated

import typer

from kvplan.cli import terminal
from kvplan.cli.options import knob_groups as g
from kvplan.cli.options import declarations as o
from kvplan.cli.options import planning as p
from kvplan.cli.options.formats import FormatByOutputOpt, OutputFormat, choose_format
from kvplan.cli.options.groups import Given, with_groups

HELP = """The largest context that fits a device, and the changes that would make a target context fit.

Prints the largest context that fits (exact to the token), with --target-tok-s the largest
that also decodes at or above that rate, and with --ctx the verdict there; when --ctx does
not fit, the ranked single changes that would make it fit (KV cache at 8 or 4 bits, a
sliding window, fewer sequences, fewer weight bits), each with its headroom, decode speed and
the exact `kvplan check` command that applies it. Changes without a caveat come first; a context
past the model's trained length or a window it was not trained with carries one. Smaller models
of the same family that fit are listed apart (a different model, not a change to this one).
With --sequences above 1 the decode rate is per sequence and the aggregate is shown beside it.
--format csv needs --ctx: a row for the configuration as given, then one per change.
-o FILE writes the output there instead (the format from its extension unless --format is given).
Exit code 0 when --ctx fits (or no --ctx is given), 1 when it does not, 2 on bad input."""

OptionalCtxOpt = Annotated[str | None, typer.Option("--ctx", "-c", help="Target context per sequence (8192, 8k): "
                                                    f"its verdict and, when over, what would make it fit. {o.TOKENS_HELP}")]


@with_groups(cache_knobs=g.CACHE, policy_knobs=g.POLICY, runtime_knobs=g.RUNTIME)
def fit(
    device: o.DeviceOpt,
    model: o.ModelOpt,
    ctx: OptionalCtxOpt = None,
    cache_knobs: Given = None,
    policy_knobs: Given = None,
    runtime_knobs: Given = None,
    output_format: FormatByOutputOpt = None,
    output: p.OutputOpt = None,
    units: o.UnitsOpt = o.Units.si,
    profiles_dir: o.ProfilesDirOpt = None,
) -> None:
    from kvplan.advice import judge
    from kvplan.hub.catalog import user_catalog
    from kvplan.cli import terminal
    from kvplan.cli.terminal import ExitCode
    from kvplan.errors import UsageError
    from kvplan.plan import build_scenario
    from kvplan.plan import evaluate
    from kvplan.render import check as render_check
    from kvplan.cli.check.argv import check_argv
    from kvplan.render import fit as render

    fmt_ = choose_format(output_format, output)  # a bad -o extension fails here, before any work
    if fmt_ is OutputFormat.csv and ctx is None:
        asked = "--format csv" if output_format is not None else f"--output {output} (CSV by its extension)"
        raise UsageError(f"{asked} lists the configuration at --ctx and the changes that make it fit: give "
                         "--ctx (e.g. --ctx 8k); for the largest context alone use --format json or table")
    if output:
        from kvplan.files.outfiles import check_writable

        check_writable(output)
    knobs = g.knobs_of(cache_knobs, policy_knobs, runtime_knobs)
    # The runtime / policy options as given, so each suggested `kvplan check` applies them too.
    extra_argv = g.argv_of(policy_knobs, runtime_knobs)
    ctx_tokens = o.parse_ctx(ctx) if ctx is not None else None
    catalog = user_catalog(profiles_dir)
    dev, mod = catalog.device(device), catalog.model(model)
    knobs = o.with_draft_resolved(knobs, catalog)
    for resolved in (dev, mod):
        if resolved.note:
            terminal.display_note(resolved.note)
    # max_ctx (and at target) do not depend on the context asked about; evaluate at ctx or at 1 token.
    probe = evaluate(build_scenario(dev.profile, mod.profile, ctx_tokens or 1, knobs))
    ev = probe if ctx_tokens is not None else None
    advice = judge(ev, _smaller_models(catalog, mod.profile)) if ev is not None and not ev.fits else None

    def argv_of(change) -> list[str]:
        s = change.evaluation.scenario
        # the runtime as the change runs it (its options as changed, -np as --sequences), else as given
        spec = s.runtime if s.runtime is not None and not s.runtime_from_profile else None
        return check_argv(s, device, change.value if change.kind == "model" else model,
                          profiles_dir) + g.argv_of(policy_knobs, runtime_knobs, spec)

    commands = [argv_of(c) for c in advice.keep_model] if advice else []
    model_commands = [argv_of(c) for c in advice.other_models] if advice else []

    if fmt_ is OutputFormat.json:
        import json

        document = render.fit_json(probe, ev, advice, commands, model_commands)
        terminal.write_or_display_text(json.dumps(document, indent=2, allow_nan=False) + "\n", output)
    elif fmt_ is OutputFormat.csv:
        from kvplan.render.tables import to_csv

        given = check_argv(ev.scenario, device, model, profiles_dir) + extra_argv
        terminal.write_or_display_text(to_csv(render.FIT_CSV_COLUMNS,
                                       render.fit_csv_rows(ev, advice, commands, model_commands, given)), output)
        from kvplan.cli import terminal
        from kvplan.render.rates import warnings_of
        from kvplan.render.warnings import words

        for warning in words(warnings_of(render.shown_evaluations(probe, ev, advice))):  # CSV has no place for them
            terminal.display_warning(warning)
    else:
        tables = [render.limits_table(probe, ev, units.value)]
        if ev is not None:
            tables.append(render_check.memory_table(ev, units.value))
            if advice is not None:
                tables.append(render.changes_table(list(advice.keep_model), commands, units.value,
                                                   ev.scenario.model.name))
                if advice.other_models:
                    tables.append(render.other_models_table(list(advice.other_models), model_commands,
                                                            units.value))
        if output:
            from kvplan.render.tables import to_markdown, to_plain

            terminal.write_or_display_text(to_markdown(tables) if fmt_ is OutputFormat.markdown else to_plain(tables),
                                    output)
        else:
            terminal.display_tables(tables, fmt_.value)
    raise typer.Exit(ExitCode.FAILED if ev is not None and not ev.fits else ExitCode.OK)


def _smaller_models(catalog, model) -> list:
    """Built-in (and user) models of the same family with fewer parameters; unreadable profiles are skipped."""
    from kvplan.advice import smaller_models
    from kvplan.errors import KvplanError

    if not model.family:
        return []
    candidates = []
    for _name, _aliases, path, _origin in catalog.entries("model"):
        try:
            candidates.append(catalog.model(str(path)).profile)
        except KvplanError:
            continue
    return smaller_models(model, candidates)
