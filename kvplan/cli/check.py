"""``kvplan check``: does this model, at this context, fit on this device, and how fast will it decode?"""

from __future__ import annotations

from kvplan.cli import options as o
from kvplan.cli import policy_options as po
from kvplan.cli import runtime_options as ro
from kvplan.cli.plot import PlotDirOpt, PlotFileOpt, check_plot_targets, write_check_plots

HELP = """Check one configuration: memory against the device budget, decode speed, max context.

Prints the memory breakdown (weights, KV cache, overhead, total, headroom), the verdict
(fit / tight / over), KV bytes per token, decode tokens/s, the largest context that fits
and, when over, the flash cost and the simplest changes that would make it fit.
Exit code 0 when it fits (fit or tight), 1 when over, 2 on bad input."""


def check(
    device: o.DeviceOpt,
    model: o.ModelOpt,
    ctx: o.CtxOpt,
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
    os_reserve: o.OsReserveOpt = None,
    margin: o.MarginOpt = "10%",
    target_tok_s: o.TargetOpt = None,
    sliding_window: o.SlidingWindowOpt = None,
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
    output_format: o.FormatOpt = o.OutputFormat.table,
    units: o.UnitsOpt = o.Units.si,
    profiles_dir: o.ProfilesDirOpt = None,
    plot: PlotFileOpt = None,
    plot_dir: PlotDirOpt = None,
) -> None:
    import typer

    from kvplan.advice import changes_to_fit
    from kvplan.profiles.catalog import Catalog
    from kvplan.cli import terminal
    from kvplan.cli.terminal import ExitCode
    from kvplan.plan import build_scenario
    from kvplan.plan import evaluate
    from kvplan.render import check as render

    check_plot_targets(plot, plot_dir)  # a bad plot path fails before any work
    ctx_tokens = o.parse_ctx(ctx)
    knobs = o.knobs(
        sequences=sequences, pinned_prefix=pinned_prefix, weight_bits=weight_bits, kv_bits=kv_bits, k_bits=k_bits,
        v_bits=v_bits, kv_group_size=kv_group_size, kv_type=kv_type, k_type=k_type, v_type=v_type,
        sliding_window=sliding_window, os_reserve=os_reserve, margin=margin, target_tok_s=target_tok_s,
        kv_policy=po.policy_knob(kv_policy, kv_recent_window, kv_history_ratio, kv_history_bits,
                                 kv_history_group_size, kv_evict_every),
        runtime=ro.runtime_knob(runtime, parallel, kv_unified, ubatch, batch, swa_full, flash_attn, cache,
                                max_cache_len))
    catalog = Catalog(profiles_dir)
    dev, mod = catalog.device(device), catalog.model(model)
    for resolved in (dev, mod):
        if resolved.note:
            terminal.display_note(resolved.note)
    scenario = build_scenario(dev.profile, mod.profile, ctx_tokens, knobs)
    ev = evaluate(scenario)
    changes = changes_to_fit(ev) if not ev.fits else None
    if output_format is o.OutputFormat.json:
        document = render.format_json(ev)
        document["changes_to_fit"] = [render.change_json(c) for c in changes or []]
        terminal.display_json(document)
    else:
        terminal.display_tables(render.check_tables(ev, changes, units.value), output_format.value)
    write_check_plots(ev, plot, plot_dir, units.value)
    raise typer.Exit(ExitCode.OK if ev.fits else ExitCode.FAILED)
