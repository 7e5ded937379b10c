"""``kvplan plot KIND``: the pictures behind the numbers (memory, attention, decode, fitmap).

matplotlib and numpy are imported inside the commands, only when a plot is drawn.
"""

from __future__ import annotations

from typing import Annotated

import typer

from kvplan.cli.options import declarations as o
from kvplan.cli.options import planning as p
from kvplan.cli.options import knob_groups as g
from kvplan.cli.options.groups import Given, with_groups

HELP = """Draw a plot: memory, attention, decode or fitmap (PNG, SVG or PDF by the file's extension).

Each kind writes one file (-o/--output, default kvplan-KIND.png) and exits 0; a bad
path or extension is an error (exit 2) reported before anything is computed. What check
would warn about the configurations drawn goes to stderr, each warning once (at --ctx;
without it at the end of the context axis)."""

DevicesOpt = Annotated[list[str], typer.Option(
    "--device", "-d", callback=p.split_devices, help="Device: built-in name, alias, YAML path, or 'this' "
    "(probe this machine) (repeatable, or "
    "comma-separated: -d pixel8,oneplus-12).")]
ModelsOpt = Annotated[list[str], typer.Option(
    "--model", "-m", callback=p.split_models, help="Model: built-in name, alias, YAML path, or Hub id "
    "hf:ORG/NAME[@REV][:QUANT] (repeatable, or "
    "comma-separated: -m 7b,llama-3.1-8b).")]
OptionalDeviceOpt = Annotated[str | None, typer.Option("--device", "-d", help="Device (only its runtime "
                                                       "rules matter here; optional).")]
OptionalCtxOpt = Annotated[str | None, typer.Option("--ctx", "-c", help=f"Mark this context (8192, 8k). {o.TOKENS_HELP}")]
CtxMaxOpt = Annotated[str | None, typer.Option("--ctx-max", help="End of the context axis (default: past the "
                                               f"max-context crossing and --ctx). {o.TOKENS_HELP}")]
UnitsOpt = Annotated[o.Units, typer.Option("--units", help="Memory axes in GB (si) or GiB (iec).", case_sensitive=False)]
DecodeUnitsOpt = Annotated[o.Units, typer.Option("--units", help="Sizes in the labels (the overflow streamed "
                                                 "from flash) in GB (si) or GiB (iec).", case_sensitive=False)]

# The cache options of check, each kind taking those that change its picture: attention draws the cache alone
# (no weights, budget or speed); only decode draws a target rate.
_KV_ONLY = ("sequences", "kv_bits", "k_bits", "v_bits", "kv_group_size", "kv_type", "k_type", "v_type",
            "sliding_window")
_NO_TARGET = tuple(param.name for param in g.CACHE.parameters if param.name != "target_tokens_per_s")
CACHE_ATTENTION = g.CACHE.only(*_KV_ONLY)
CACHE_MEMORY = g.CACHE.only(*_NO_TARGET)


def _output_opt(kind: str):
    return Annotated[str, typer.Option("--output", "-o", help=f"File to write: .png, .svg or .pdf "
                                       f"(default kvplan-{kind}.png).")]


plot_app = typer.Typer(help=HELP, no_args_is_help=True, rich_markup_mode=None, add_completion=False,
                       context_settings={"help_option_names": ["-h", "--help"]})


def _start(output: str, ctx: str | None, ctx_max: str | None) -> tuple[int | None, int | None]:
    from kvplan.plots.save import check_plot_path

    check_plot_path(output)
    ctx_tokens = o.parse_ctx(ctx) if ctx is not None else None
    ctx_max_tokens = o.parse_ctx(ctx_max, "--ctx-max") if ctx_max is not None else None
    if ctx_max_tokens is not None and ctx_max_tokens < 16:
        from kvplan.errors import UsageError

        raise UsageError(f"--ctx-max: must be at least 16 tokens, got {ctx_max_tokens}")
    if ctx_tokens and ctx_max_tokens is not None and ctx_tokens > ctx_max_tokens:
        from kvplan.cli import terminal

        terminal.display_note(f"--ctx {ctx_tokens:,} lies past --ctx-max {ctx_max_tokens:,}: the plot does not mark it")
    return ctx_tokens, ctx_max_tokens


def _scenarios(devices: list[str], models: list[str], ctx: int, profiles_dir, knobs):
    """``[device][model]`` scenarios, built exactly as ``kvplan check`` builds one from the same options."""
    from kvplan.hub.catalog import user_catalog
    from kvplan.cli import terminal
    from kvplan.plan import build_scenario

    from kvplan.profiles.catalog import resolve_distinct

    catalog = user_catalog(profiles_dir)
    devs = resolve_distinct(catalog, "device", devices)
    mods = resolve_distinct(catalog, "model", models)
    for resolved in (*devs, *mods):
        if resolved.note:
            terminal.display_note(resolved.note)
    knobs = o.with_draft_resolved(knobs, catalog)
    return [[build_scenario(d.profile, m.profile, ctx, knobs) for m in mods] for d in devs]


def _first_series(kind: str, scenarios: list, what: str):
    """The configurations drawn (the first :data:`~kvplan.plots.series.MAX_SERIES`) and their count; a warning on
    stderr names how many were left out and how to draw them."""
    from kvplan.plots.series import count_series

    count = count_series(len(scenarios))
    if count.left_out:
        from kvplan.cli import terminal

        terminal.display_warning(
            f"plot {kind}: {count.total} {what} (--device × --model); drew the first {count.shown}, left out "
            f"{count.left_out}: give fewer --device/--model values, or split them over several plots")
    return scenarios[:count.shown], count


def _warn(*groups) -> None:
    """Each distinct warning of the configurations drawn, once, on stderr (as ``sweep`` does; never in the
    image): what ``check`` would print at the context the plot quotes (``--ctx``, else the axis end)."""
    from kvplan.cli import terminal
    from kvplan.render.warnings import words

    for warning in words(w for group in groups for w in group):
        terminal.display_warning(warning)


def _done(path) -> None:
    from kvplan.cli import terminal

    terminal.display_written(f"wrote {path}")


@plot_app.command("memory", help="Weights, KV cache, runtime buffers and overhead stacked against context, the "
                  "budget line and the max-context crossing; one panel per device × model (repeat --device / "
                  "--model; at most 12 panels).")
@with_groups(cache_knobs=CACHE_MEMORY, policy_knobs=g.POLICY, runtime_knobs=g.RUNTIME)
def memory(
    device: DevicesOpt,
    model: ModelsOpt,
    ctx: OptionalCtxOpt = None,
    ctx_max: CtxMaxOpt = None,
    output: _output_opt("memory") = "kvplan-memory.png",
    cache_knobs: Given = None,
    policy_knobs: Given = None,
    runtime_knobs: Given = None,
    units: UnitsOpt = o.Units.si,
    profiles_dir: o.ProfilesDirOpt = None,
) -> None:
    ctx_tokens, ctx_max_tokens = _start(output, ctx, ctx_max)
    knobs = g.knobs_of(cache_knobs, policy_knobs, runtime_knobs)
    grid = _scenarios(device, model, ctx_tokens or 0, profiles_dir, knobs)
    scenarios, count = _first_series("memory", [s for row in grid for s in row], "panels")
    from kvplan import curves as data
    from kvplan.plots.memory import memory_figure
    from kvplan.plots.save import save_figure

    curves = [data.memory_curves(s, ctx_max_tokens, show_ctx=ctx_tokens is not None) for s in scenarios]
    columns = len(model) if len(device) > 1 and len(model) > 1 else None
    if columns and count.left_out:  # the grid is cut: rows of devices no longer line up, fill rows of 4
        columns = min(count.shown, 4)
    _warn(*(c.warnings for c in curves))
    _done(save_figure(memory_figure(curves, units.value, columns, count), output))


@plot_app.command("attention", help="KV bytes against context for the model's own shape as MHA, GQA at several "
                  "group counts, MQA, with a sliding window and with a quantized (q8_0, q4_0) cache.")
@with_groups(cache_knobs=CACHE_ATTENTION, policy_knobs=g.POLICY, runtime_knobs=g.RUNTIME)
def attention(
    model: o.ModelOpt,
    ctx: Annotated[str | None, typer.Option("--ctx", "-c", help="Quote every variant's size at this context "
                                            f"(default: the model's trained context, else 4k). {o.TOKENS_HELP}")] = None,
    ctx_max: CtxMaxOpt = None,
    output: _output_opt("attention") = "kvplan-attention.png",
    device: OptionalDeviceOpt = None,
    cache_knobs: Given = None,
    policy_knobs: Given = None,
    runtime_knobs: Given = None,
    units: UnitsOpt = o.Units.si,
    profiles_dir: o.ProfilesDirOpt = None,
) -> None:
    ctx_tokens, ctx_max_tokens = _start(output, ctx, ctx_max)
    knobs = g.knobs_of(cache_knobs, policy_knobs, runtime_knobs)
    stand_in: set = set()  # the neutral device's own warnings: about no device the user named
    if device is None:
        from kvplan.hub.catalog import user_catalog
        from kvplan.plan import build_scenario
        from kvplan.profiles.spec import Device

        # KV bytes do not depend on the device; a neutral one stands in when none is named.
        neutral = Device(name="any-device", ram="1 PB", os_reserve="0 B", memory_bandwidth="1 GB/s",
                         flash_read="1 GB/s")
        mod = user_catalog(profiles_dir).model(model)
        scenario = build_scenario(neutral, mod.profile, ctx_tokens or 0, knobs)
        from kvplan.plan.profile_warnings import device_warnings

        stand_in = set(device_warnings(neutral))  # facts, as the curves' warnings
    else:
        scenario = _scenarios([device], [model], ctx_tokens or 0, profiles_dir, knobs)[0][0]
    from kvplan import curves as data
    from kvplan.plots.attention import attention_figure
    from kvplan.plots.save import save_figure

    curves = data.attention_curves(scenario, ctx_max_tokens, ctx_tokens)
    _warn([w for w in curves.warnings if w not in stand_in])
    _done(save_figure(attention_figure(curves, units.value), output))


@plot_app.command("decode", help="Decode tokens/s against context: from RAM (check's decode rate; past the budget "
                  "as if it fit) and, past the budget, with the overflow streamed from flash (check's flash "
                  "table), the tight and over-budget zones and an optional target line; repeat --device / "
                  "--model to overlay configurations (at most 12).")
@with_groups(cache_knobs=g.CACHE, policy_knobs=g.POLICY, runtime_knobs=g.RUNTIME)
def decode(
    device: DevicesOpt,
    model: ModelsOpt,
    ctx: OptionalCtxOpt = None,
    ctx_max: CtxMaxOpt = None,
    output: _output_opt("decode") = "kvplan-decode.png",
    cache_knobs: Given = None,
    policy_knobs: Given = None,
    runtime_knobs: Given = None,
    units: DecodeUnitsOpt = o.Units.si,
    profiles_dir: o.ProfilesDirOpt = None,
) -> None:
    ctx_tokens, ctx_max_tokens = _start(output, ctx, ctx_max)
    knobs = g.knobs_of(cache_knobs, policy_knobs, runtime_knobs)
    grid = _scenarios(device, model, ctx_tokens or 0, profiles_dir, knobs)
    scenarios, count = _first_series("decode", [s for row in grid for s in row], "configurations")
    from kvplan.plan import evaluate
    from kvplan import curves as data
    from kvplan.plots.decode import decode_figure
    from kvplan.plots.save import save_figure

    if ctx_max_tokens is None and len(scenarios) > 1:  # one axis for all: the widest default
        ctx_max_tokens = max(data.default_ctx_max(evaluate(s), ctx_tokens is not None) for s in scenarios)
    curves = [data.decode_curves(s, ctx_max_tokens, show_ctx=ctx_tokens is not None) for s in scenarios]
    _warn(*(c.warnings for c in curves))
    _done(save_figure(decode_figure(curves, units.value, count), output))


@plot_app.command("fitmap", help="Devices × models heatmap of the largest context that fits, or of the "
                  "headroom at --ctx.")
@with_groups(cache_knobs=CACHE_MEMORY, policy_knobs=g.POLICY, runtime_knobs=g.RUNTIME)
def fitmap(
    device: DevicesOpt,
    model: ModelsOpt,
    ctx: Annotated[str | None, typer.Option("--ctx", "-c", help="Show headroom and verdict at this context "
                                            f"instead of the largest context that fits. {o.TOKENS_HELP}")] = None,
    output: _output_opt("fitmap") = "kvplan-fitmap.png",
    cache_knobs: Given = None,
    policy_knobs: Given = None,
    runtime_knobs: Given = None,
    units: UnitsOpt = o.Units.si,
    profiles_dir: o.ProfilesDirOpt = None,
) -> None:
    ctx_tokens, _ = _start(output, ctx, None)
    knobs = g.knobs_of(cache_knobs, policy_knobs, runtime_knobs)
    grid = _scenarios(device, model, ctx_tokens or 0, profiles_dir, knobs)
    from kvplan import curves as data
    from kvplan.plots.fitmap import fitmap_figure
    from kvplan.plots.save import save_figure

    fits = data.fit_map(grid, ctx_tokens)
    _warn(fits.warnings)
    _done(save_figure(fitmap_figure(fits, units.value), output))
