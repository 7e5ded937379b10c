"""``kvplan compare``: a devices × models matrix at one context."""

from __future__ import annotations

from kvplan.cli import options as o
from kvplan.cli import planopts as p
from kvplan.cli import policy_options as po
from kvplan.cli import runtime_options as ro

HELP = """Compare devices × models at one context: verdict, headroom, decode tokens/s, max context.

Repeat --device and --model. Without --device every built-in device is compared (with the
given models); without --model, every built-in model (on the given devices). The same
knobs as check (--sequences, --pinned-prefix, --weight-bits, --kv-bits, …) apply to
every cell. Exit code 0 (whatever the verdicts), 2 on bad input."""


def compare(
    ctx: o.CtxOpt,
    device: p.DevicesOpt = None,
    model: p.ModelsOpt = None,
    sequences: o.SequencesOpt = 1,
    pinned_prefix: o.PinnedOpt = "0",
    weight_bits: o.WeightBitsOpt = None,
    kv_bits: o.KvBitsOpt = None,
    k_bits: o.KBitsOpt = None,
    v_bits: o.VBitsOpt = None,
    kv_group_size: o.GroupOpt = None,
    kv_type: o.KvTypeOpt = None,
    k_type: o.KTypeOpt = None,
    v_type: o.VTypeOpt = None,
    sliding_window: o.SlidingWindowOpt = None,
    os_reserve: o.OsReserveOpt = None,
    margin: o.MarginOpt = "10%",
    target_tok_s: o.TargetOpt = None,
    kv_policy: po.KvPolicyOpt = None,
    kv_recent_window: po.KvRecentWindowOpt = None,
    kv_history_ratio: po.KvHistoryRatioOpt = None,
    kv_history_bits: po.KvHistoryBitsOpt = None,
    kv_history_group_size: po.KvHistoryGroupOpt = None,
    kv_evict_every: po.KvEvictEveryOpt = None,
    runtime: ro.RuntimeOpt = None,
    parallel: ro.ParallelOpt = None,
    kv_unified: ro.KvUnifiedOpt = False,
    ubatch: ro.UbatchOpt = None,
    batch: ro.BatchOpt = None,
    swa_full: ro.SwaFullOpt = False,
    flash_attn: ro.FlashAttnOpt = None,
    cache: ro.CacheOpt = None,
    max_cache_len: ro.MaxCacheLenOpt = None,
    output_format: p.TabularFormatOpt = None,
    output: p.OutputOpt = None,
    units: o.UnitsOpt = o.Units.si,
    profiles_dir: o.ProfilesDirOpt = None,
) -> None:
    from kvplan.profiles.catalog import Catalog
    from kvplan.cli import terminal
    from kvplan.plan import build_scenario
    from kvplan.errors import UsageError
    from kvplan.plan import evaluate
    from kvplan.render import compare as render

    if not device and not model:
        raise UsageError("give --model (compared on every built-in device), --device (every built-in model), "
                         "or both")
    fmt_ = p.output_format(output_format, output)
    if output:
        from kvplan.files.outfiles import check_writable

        check_writable(output)
    ctx_tokens = o.parse_ctx(ctx)
    knobs = o.knobs(sequences=sequences, pinned_prefix=pinned_prefix, weight_bits=weight_bits, kv_bits=kv_bits,
                    k_bits=k_bits, v_bits=v_bits, kv_group_size=kv_group_size, kv_type=kv_type, k_type=k_type,
                    v_type=v_type, sliding_window=sliding_window, os_reserve=os_reserve,
                    margin=margin, target_tok_s=target_tok_s,
                    runtime=ro.runtime_knob(runtime, parallel, kv_unified, ubatch, batch, swa_full, flash_attn,
                                            cache, max_cache_len),
                    kv_policy=po.policy_knob(kv_policy, kv_recent_window, kv_history_ratio, kv_history_bits,
                                             kv_history_group_size, kv_evict_every))
    catalog = Catalog(profiles_dir)
    devices = _resolve(catalog, "device", device)
    models = _resolve(catalog, "model", model)
    evaluations = []
    for d in devices:
        row = []
        for m in models:
            try:
                row.append(evaluate(build_scenario(d, m, ctx_tokens, knobs)))
            except UsageError as exc:  # e.g. --os-reserve above one device's RAM, a runtime refusing a model
                raise UsageError(f"{d.name} × {m.name}: {exc}") from None
        evaluations.append(row)

    if fmt_ is p.TabularFormat.json:
        import json

        text = json.dumps(render.compare_json(evaluations), indent=2, allow_nan=False) + "\n"
    elif fmt_ is p.TabularFormat.csv:
        text = render.compare_csv(evaluations)
    else:
        tables = render.compare_tables(evaluations, units.value)
        if not output:
            terminal.display_tables(tables, fmt_.value)
            return
        from kvplan.render.tables import to_markdown, to_plain

        text = to_markdown(tables) if fmt_ is p.TabularFormat.markdown else to_plain(tables)
    p.write_or_display_text(text, output)


def _resolve(catalog, kind: str, refs: list[str] | None) -> list:
    """The profiles named, or every built-in one (skipping, with a note, any that does not load)."""
    from kvplan.cli import terminal
    from kvplan.errors import KvplanError

    lookup = catalog.device if kind == "device" else catalog.model
    if refs:
        resolved = [lookup(ref) for ref in dict.fromkeys(refs)]
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
