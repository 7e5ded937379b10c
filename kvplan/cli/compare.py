"""``kvplan compare``: a devices × models matrix at one context."""

from __future__ import annotations

from kvplan.cli import terminal
from kvplan.cli.options import knob_groups as g
from kvplan.cli.options import declarations as o
from kvplan.cli.options import planning as p
from kvplan.cli.options.formats import FormatByOutputOpt, OutputFormat, choose_format
from kvplan.cli.options.groups import Given, with_groups

HELP = """Compare devices × models at one context: verdict, headroom, decode tokens/s, max context.

Repeat --device and --model. Without --device every built-in device is compared (with the
given models); without --model, every built-in model (on the given devices). Name several
runtimes with commas (--runtime llama.cpp,mlx-lm) to put them side by side, each taking its
own options. The same knobs as check (--sequences, --pinned-prefix, --weight-bits,
--kv-bits, …) apply to every cell. Exit code 0 (whatever the verdicts), 2 on bad input."""


@with_groups(cache_knobs=g.CACHE, policy_knobs=g.POLICY, runtime_knobs=g.RUNTIME)
def compare(
    ctx: o.CtxOpt,
    device: p.DevicesOpt = None,
    model: p.ModelsOpt = None,
    cache_knobs: Given = None,
    policy_knobs: Given = None,
    runtime_knobs: Given = None,
    output_format: FormatByOutputOpt = None,
    output: p.OutputOpt = None,
    units: o.UnitsOpt = o.Units.si,
    profiles_dir: o.ProfilesDirOpt = None,
) -> None:
    from kvplan.hub.catalog import user_catalog
    from kvplan.cli import terminal
    from kvplan.plan import build_scenario
    from kvplan.errors import UsageError
    from kvplan.plan import evaluate
    from kvplan.cli.options.fieldnames import cli_message
    from kvplan.render import compare as render

    if not device and not model:
        raise UsageError("give --model (compared on every built-in device), --device (every built-in model), "
                         "or both")
    fmt_ = choose_format(output_format, output)
    if output:
        from kvplan.files.outfiles import check_writable

        check_writable(output)
    ctx_tokens = o.parse_ctx(ctx)
    variants, several = g.knobs_side_by_side(cache_knobs, policy_knobs, runtime_knobs)
    catalog = user_catalog(profiles_dir)
    devices = _resolve(catalog, "device", device)
    models = _resolve(catalog, "model", model)
    variants = [o.with_draft_resolved(knobs, catalog) for knobs in variants]
    evaluations = []
    for d in devices:
        row = []
        for m in models:
            for knobs in variants:
                try:
                    row.append(evaluate(build_scenario(d, m, ctx_tokens, knobs)))
                except UsageError as exc:  # e.g. --os-reserve above one device's RAM, a runtime refusing a model
                    runtime = f" × {getattr(knobs.runtime, 'name', knobs.runtime)}" if several else ""
                    where = f"{d.name} × {m.name}{runtime}"
                    raise UsageError(f"{where}: {cli_message(exc)}") from None
        evaluations.append(row)

    if fmt_ is OutputFormat.json:
        import json

        text = json.dumps(render.compare_json(evaluations), indent=2, allow_nan=False) + "\n"
    elif fmt_ is OutputFormat.csv:
        text = render.compare_csv(evaluations)
        from kvplan.render.rates import warnings_of
        from kvplan.render.warnings import words

        for warning in words(warnings_of(ev for row in evaluations for ev in row)):  # CSV has no place for them: stderr
            terminal.display_warning(warning)
    else:
        tables = render.compare_tables(evaluations, units.value)
        if not output:
            terminal.display_tables(tables, fmt_.value)
            return
        from kvplan.render.tables import to_markdown, to_plain

        text = to_markdown(tables) if fmt_ is OutputFormat.markdown else to_plain(tables)
    terminal.write_or_display_text(text, output)


def _resolve(catalog, kind: str, refs: list[str] | None) -> list:
    """The profiles named, or every built-in one (skipping, with a note, any that does not load)."""
    from kvplan.cli import terminal
    from kvplan.errors import KvplanError

    lookup = catalog.device if kind == "device" else catalog.model
    if refs:
        from kvplan.profiles.catalog import resolve_distinct

        resolved = resolve_distinct(catalog, kind, refs)
        for r in resolved:
            if r.note:
                terminal.display_note(r.note)
        return [r.profile for r in resolved]
    profiles = []
    for name, _aliases, path, origin in catalog.entries(kind):
        if origin != "builtin":
            continue
        try:
            profiles.append(lookup(str(path)).profile)
        except KvplanError as exc:
            terminal.display_note(f"skipping built-in {kind} {name!r}: {str(exc).splitlines()[0]}")
    return profiles
