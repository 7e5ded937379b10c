"""``kvplan plot KIND``: the pictures behind the numbers (memory, attention, decode, fitmap).

matplotlib and numpy are imported inside the commands, only when a plot is drawn.
"""

from __future__ import annotations

from typing import Annotated

import typer

from kvplan.cli import options as o
from kvplan.cli import planopts as p
from kvplan.cli import option_groups as g
from kvplan.cli.groups import Given, with_groups

HELP = """Draw a plot: memory, attention, decode or fitmap (PNG, SVG or PDF by the file's extension).

Each kind writes one file (-o/--output, default kvplan-KIND.png) and exits 0; a bad
path or extension is an error (exit 2) reported before anything is computed."""

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
OptionalCtxOpt = Annotated[str | None, typer.Option("--ctx", "-c", help="Mark this context (8192, 8k).")]
CtxMaxOpt = Annotated[str | None, typer.Option("--ctx-max", help="End of the context axis (default: past the "
                                               "max-context crossing and --ctx).")]
SequencesOpt = Annotated[int, typer.Option("--sequences", "-n", min=1, max=1_000_000,
                                           help="Concurrent sequences, each with its own cache.")]
WeightBitsOpt = Annotated[float | None, typer.Option("--weight-bits", help="Bits per weight; default: the "
                                                     "model's.")]
KvBitsOpt = Annotated[int | None, typer.Option("--kv-bits", help="Bits per cached K and V value (1-32).")]
KvTypeOpt = Annotated[str | None, typer.Option("--kv-type", help="Cache type by runtime name: f16, q8_0, "
                                               "q4_0, …")]
UnitsOpt = Annotated[o.Units, typer.Option("--units", help="Memory axes in GB (si) or GiB (iec).")]
TargetOpt = Annotated[float | None, typer.Option("--target-tok-s", min=0.0, help="Draw a target decode "
                                                 "rate line at this many tokens/s.")]


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
    return ctx_tokens, ctx_max_tokens


def _scenarios(devices: list[str], models: list[str], ctx: int, profiles_dir, sequences=1, weight_bits=None,
               kv_bits=None, kv_type=None, os_reserve=None, margin="10%", target=None, cache_knobs=None):
    """``[device][model]`` scenarios, built exactly as ``kvplan check`` builds one.

    ``cache_knobs``: the ``runtime`` / ``kv_policy`` Knobs fields of the option groups."""
    from kvplan.hub.catalog import user_catalog
    from kvplan.cli import terminal
    from kvplan.plan import build_scenario

    knobs = o.knobs(sequences=sequences, weight_bits=weight_bits, kv_bits=kv_bits, kv_type=kv_type,
                    os_reserve=os_reserve, margin=margin, target_tok_s=target, **(cache_knobs or {}))
    catalog = user_catalog(profiles_dir)
    devs = [catalog.device(d) for d in devices]
    mods = [catalog.model(m) for m in models]
    for resolved in (*devs, *mods):
        if resolved.note:
            terminal.display_note(resolved.note)
    return [[build_scenario(d.profile, m.profile, ctx, knobs) for m in mods] for d in devs]


def _done(path) -> None:
    from kvplan.cli import terminal

    terminal.display_note(f"wrote {path}")


@plot_app.command("memory", help="Weights, KV cache and overhead stacked against context, the budget line and "
                  "the max-context crossing; one panel per device × model (repeat --device / --model).")
@with_groups(policy_knobs=g.POLICY, runtime_knobs=g.RUNTIME)
def memory(
    device: DevicesOpt,
    model: ModelsOpt,
    ctx: OptionalCtxOpt = None,
    ctx_max: CtxMaxOpt = None,
    output: _output_opt("memory") = "kvplan-memory.png",
    sequences: SequencesOpt = 1,
    weight_bits: WeightBitsOpt = None,
    kv_bits: KvBitsOpt = None,
    kv_type: KvTypeOpt = None,
    os_reserve: o.OsReserveOpt = None,
    margin: o.MarginOpt = "10%",
    policy_knobs: Given = None,
    runtime_knobs: Given = None,
    units: UnitsOpt = o.Units.si,
    profiles_dir: o.ProfilesDirOpt = None,
) -> None:
    ctx_tokens, ctx_max_tokens = _start(output, ctx, ctx_max)
    cache_knobs = {"runtime": runtime_knobs.build(), "kv_policy": policy_knobs.build()}
    grid = _scenarios(device, model, ctx_tokens or 0, profiles_dir, sequences, weight_bits, kv_bits, kv_type,
                      os_reserve, margin, cache_knobs=cache_knobs)
    from kvplan import curves as data
    from kvplan.plots.memory import memory_figure
    from kvplan.plots.save import save_figure

    curves = [data.memory_curves(s, ctx_max_tokens, show_ctx=ctx_tokens is not None) for row in grid for s in row]
    columns = len(model) if len(device) > 1 and len(model) > 1 else None
    _done(save_figure(memory_figure(curves, units.value, columns), output))


@plot_app.command("attention", help="KV bytes against context for the model's own shape as MHA, GQA at several "
                  "group counts, MQA, with a sliding window and with a quantized (q8_0, q4_0) cache.")
@with_groups(policy_knobs=g.POLICY, runtime_knobs=g.RUNTIME)
def attention(
    model: o.ModelOpt,
    ctx: Annotated[str | None, typer.Option("--ctx", "-c", help="Quote every variant's size at this context "
                                            "(default: the model's trained context, else 4k).")] = None,
    ctx_max: CtxMaxOpt = None,
    output: _output_opt("attention") = "kvplan-attention.png",
    device: OptionalDeviceOpt = None,
    sequences: SequencesOpt = 1,
    kv_bits: KvBitsOpt = None,
    kv_type: KvTypeOpt = None,
    policy_knobs: Given = None,
    runtime_knobs: Given = None,
    units: UnitsOpt = o.Units.si,
    profiles_dir: o.ProfilesDirOpt = None,
) -> None:
    ctx_tokens, ctx_max_tokens = _start(output, ctx, ctx_max)
    cache_knobs = {"runtime": runtime_knobs.build(), "kv_policy": policy_knobs.build()}
    if device is None:
        from kvplan.hub.catalog import user_catalog
        from kvplan.plan import Knobs, build_scenario
        from kvplan.profiles.spec import Device

        # KV bytes do not depend on the device; a neutral one stands in when none is named.
        neutral = Device(name="any-device", ram="1 PB", os_reserve=0, memory_bandwidth=1.0, flash_read=1.0)
        mod = user_catalog(profiles_dir).model(model)
        scenario = build_scenario(neutral, mod.profile, ctx_tokens or 0,
                                  Knobs(sequences=sequences, kv_bits=kv_bits, kv_type=kv_type, **cache_knobs))
    else:
        scenario = _scenarios([device], [model], ctx_tokens or 0, profiles_dir, sequences, None, kv_bits,
                              kv_type, cache_knobs=cache_knobs)[0][0]
    from kvplan import curves as data
    from kvplan.plots.attention import attention_figure
    from kvplan.plots.save import save_figure

    curves = data.attention_curves(scenario, ctx_max_tokens, ctx_tokens)
    _done(save_figure(attention_figure(curves, units.value), output))


@plot_app.command("decode", help="Decode tokens/s against context, with the flash-streamed rate where the "
                  "configuration is over budget and an optional target line; repeat --device / --model to "
                  "overlay configurations.")
@with_groups(policy_knobs=g.POLICY, runtime_knobs=g.RUNTIME)
def decode(
    device: DevicesOpt,
    model: ModelsOpt,
    ctx: OptionalCtxOpt = None,
    ctx_max: CtxMaxOpt = None,
    target_tok_s: TargetOpt = None,
    output: _output_opt("decode") = "kvplan-decode.png",
    sequences: SequencesOpt = 1,
    weight_bits: WeightBitsOpt = None,
    kv_bits: KvBitsOpt = None,
    kv_type: KvTypeOpt = None,
    os_reserve: o.OsReserveOpt = None,
    policy_knobs: Given = None,
    runtime_knobs: Given = None,
    profiles_dir: o.ProfilesDirOpt = None,
) -> None:
    ctx_tokens, ctx_max_tokens = _start(output, ctx, ctx_max)
    cache_knobs = {"runtime": runtime_knobs.build(), "kv_policy": policy_knobs.build()}
    grid = _scenarios(device, model, ctx_tokens or 0, profiles_dir, sequences, weight_bits, kv_bits, kv_type,
                      os_reserve, target=target_tok_s, cache_knobs=cache_knobs)
    from kvplan.plan import evaluate
    from kvplan import curves as data
    from kvplan.plots.decode import decode_figure
    from kvplan.plots.save import save_figure

    scenarios = [s for row in grid for s in row]
    if ctx_max_tokens is None and len(scenarios) > 1:  # one axis for all: the widest default
        ctx_max_tokens = max(data.default_ctx_max(evaluate(s), ctx_tokens is not None) for s in scenarios)
    curves = [data.decode_curves(s, ctx_max_tokens, show_ctx=ctx_tokens is not None) for s in scenarios]
    _done(save_figure(decode_figure(curves), output))


@plot_app.command("fitmap", help="Devices × models heatmap of the largest context that fits, or of the "
                  "headroom at --ctx.")
@with_groups(policy_knobs=g.POLICY, runtime_knobs=g.RUNTIME)
def fitmap(
    device: DevicesOpt,
    model: ModelsOpt,
    ctx: Annotated[str | None, typer.Option("--ctx", "-c", help="Show headroom and verdict at this context "
                                            "instead of the largest context that fits.")] = None,
    output: _output_opt("fitmap") = "kvplan-fitmap.png",
    sequences: SequencesOpt = 1,
    weight_bits: WeightBitsOpt = None,
    kv_bits: KvBitsOpt = None,
    kv_type: KvTypeOpt = None,
    os_reserve: o.OsReserveOpt = None,
    margin: o.MarginOpt = "10%",
    policy_knobs: Given = None,
    runtime_knobs: Given = None,
    units: UnitsOpt = o.Units.si,
    profiles_dir: o.ProfilesDirOpt = None,
) -> None:
    ctx_tokens, _ = _start(output, ctx, None)
    cache_knobs = {"runtime": runtime_knobs.build(), "kv_policy": policy_knobs.build()}
    grid = _scenarios(device, model, ctx_tokens or 0, profiles_dir, sequences, weight_bits, kv_bits, kv_type,
                      os_reserve, margin, cache_knobs=cache_knobs)
    from kvplan import curves as data
    from kvplan.plots.fitmap import fitmap_figure
    from kvplan.plots.save import save_figure

    _done(save_figure(fitmap_figure(data.fit_map(grid, ctx_tokens), units.value), output))
