"""``kvplan sweep``: every combination of contexts, devices, models, weight/KV bits and sequences."""

from __future__ import annotations

from typing import Annotated

import typer

from kvplan.cli.options import declarations as o
from kvplan.cli.options import planning as p
from kvplan.cli.options.formats import FormatByOutputOpt, OutputFormat, choose_format
from kvplan.cli import terminal
from kvplan.cli.options import knob_groups as g
from kvplan.cli.options.groups import Given, with_groups
from kvplan.cli.sweep.plot import SweepPlotOpt, check_sweep_plot, write_sweep_plot

HELP = """Evaluate a grid of configurations at once (vectorized: a million points in well under a second).

Every combination of --ctx (a list 1k,4k,8k or an inclusive range START..STOP[:STEP] such as
1k..32k:1k), --device, --model, --weight-bits / --weight-type, --kv-bits / --kv-type (or --k-bits / --k-type ×
--v-bits / --v-type) and --sequences is one row with exact integer bytes: KV cache (steady and
peak; the total counts the peak), weights, total, budget,
headroom, verdict, decode tokens/s and the largest context that fits (under --runtime or a
--kv-policy, that runtime's or policy's exact cache). Output as a table
(first and last rows unless --all), CSV, JSON or Markdown; -o writes a file;
--plot FILE also draws the grid (PNG, SVG or PDF). With --n-gpu-layers, --n-cpu-moe, --override-tensor or
--stream-experts (or a device with its own GPU memory) each row also has each memory's total, headroom and
verdict (gpu_*, ram_*, flash_bytes), and its verdict is the worse memory's. CSV and JSON are streamed in chunks:
a million rows take about 2 s end to end as CSV and about 5 s as JSON.
Exit code 0 (whatever the verdicts), 2 on bad input."""

TABLE_HEAD_ROWS = 10
# Show a progress bar (on a terminal) from this many points; smaller grids finish in a blink.
PROGRESS_FROM_POINTS = 200_000
EVAL_CHUNK_POINTS = 262_144
PRETTY_JSON_MAX_ROWS = 10_000

CtxGridOpt = Annotated[list[str], typer.Option("--ctx", "-c", help="Contexts: 8192, a list 1k,4k,8k, or an "
                                               "inclusive range START..STOP[:STEP] (1k..32k:1k); repeatable. A number "
                                               "with thousands separators needs ', ' between the values (1k, 8,192); "
                                               f"256,512 alone is ambiguous and refused. {o.TOKENS_HELP}")]
SequencesListOpt = Annotated[list[str] | None, typer.Option("--sequences", "-n", help="Concurrent sequences: "
                                                            "1,2,4 or 1..8 (default 1).")]
WeightBitsListOpt = Annotated[list[str] | None, typer.Option("--weight-bits", help="Bits per weight: 4,8 "
                                                             "(may be fractional; default: the model's).")]
WeightTypeListOpt = Annotated[list[str] | None, typer.Option("--weight-type", help="Weight formats by name, "
                                                             "priced tensor by tensor as in check: q4_k_m,q8_0 "
                                                             "(swept like --weight-bits, with which they may be "
                                                             "listed together).")]
KvBitsListOpt = Annotated[list[str] | None, typer.Option("--kv-bits", help="Bits per cached K and V value: "
                                                         "16,8,4 (default: the model's).")]
KBitsListOpt = Annotated[list[str] | None, typer.Option("--k-bits", help="Bits per cached key: 16,8 (crossed "
                                                        "with --v-bits, or with --kv-bits for V).")]
VBitsListOpt = Annotated[list[str] | None, typer.Option("--v-bits", help="Bits per cached value: 8,4 (crossed "
                                                        "with --k-bits, or with --kv-bits for K).")]
KvTypeListOpt = Annotated[list[str] | None, typer.Option("--kv-type", help="Cache types by runtime name for K and "
                                                         "V: f16,q8_0,q4_0 (swept like --kv-bits, with which "
                                                         "they may be listed together).")]
KTypeListOpt = Annotated[list[str] | None, typer.Option("--k-type", help="Key cache types: f16,q8_0 (swept like "
                                                        "--k-bits).")]
VTypeListOpt = Annotated[list[str] | None, typer.Option("--v-type", help="Value cache types: q8_0,q4_0 (swept "
                                                        "like --v-bits).")]
AllOpt = Annotated[bool, typer.Option("--all", help="Table/Markdown: print every row, not the first and last "
                                      f"{TABLE_HEAD_ROWS}.")]


def _types(values, option: str) -> list[tuple[str, str]]:
    """``--kv-type f16,q8_0`` → [("type", "f16"), ("type", "q8_0")], each name checked."""
    from kvplan.errors import KvplanError, UsageError
    from kvplan.engine.formats import format_from_name

    names = [item.strip() for value in values or [] for item in str(value).split(",")]
    if values and not all(names):
        raise UsageError(f"{option}: empty value in {', '.join(map(repr, values))}; write types like f16,q8_0")
    for name in names:
        try:
            format_from_name(name)
        except KvplanError as exc:
            raise UsageError(f"{option}: {exc}") from None
    return [("type", name) for name in dict.fromkeys(names)]  # a type given twice is one row


def _weight_formats(weight_bits, weight_type) -> list[dict]:
    """The weight formats swept, as knobs: ``{"weight_bits": 4.0}``, ``{"weight_type": "q4_k_m"}``, or ``{}``
    (the model's own). Bits first, then types, each in the order given (a format given twice is one row)."""
    from kvplan.errors import UsageError
    from kvplan.engine.weight_formats import weight_format_key
    from kvplan.grids import parse_float_list

    formats = [{"weight_bits": b} for b in (parse_float_list(weight_bits, "--weight-bits") if weight_bits else [])]
    names = [item.strip() for value in weight_type or [] for item in str(value).split(",")]
    if weight_type and not all(names):
        raise UsageError(f"--weight-type: empty value in {', '.join(map(repr, weight_type))}; write formats like "
                         "q4_k_m,q8_0")
    try:
        keys = [weight_format_key(name) for name in names]
    except ValueError as exc:
        raise UsageError(f"--weight-type: {exc}") from None
    formats += [{"weight_type": key} for key in dict.fromkeys(keys)]
    return formats or [{}]


def _format_pairs(kv_bits, k_bits, v_bits, kv_type=None, k_type=None, v_type=None) -> list[tuple]:
    """The (K, V) cache formats swept: each side ``("bits", n)``, ``("type", name)`` or None (the model's).

    Bits and types of one side are listed together (``--kv-bits 16 --kv-type q8_0``: two formats); K and V
    lists are crossed, either falling back to the ``--kv-*`` list."""
    from kvplan.grids import parse_int_list

    kv = [("bits", b) for b in (parse_int_list(kv_bits, "--kv-bits", 1, 32) if kv_bits else [])]
    kv += _types(kv_type, "--kv-type")
    k = [("bits", b) for b in (parse_int_list(k_bits, "--k-bits", 1, 32) if k_bits else [])]
    k += _types(k_type, "--k-type")
    v = [("bits", b) for b in (parse_int_list(v_bits, "--v-bits", 1, 32) if v_bits else [])]
    v += _types(v_type, "--v-type")
    if not k and not v:
        return [(f, f) for f in kv] or [(None, None)]
    return [(kf, vf) for kf in (k or kv or [None]) for vf in (v or kv or [None])]


def _spelled(pair) -> str:
    """How a (K, V) pair was asked for: ``--kv-bits 16``, or ``--k-type q8_0 --v-bits 4``."""
    if pair[0] == pair[1]:
        return f"--kv-{pair[0][0]} {pair[0][1]}"
    return " ".join(f"--{side}-{spec[0]} {spec[1]}" for side, spec in zip("kv", pair) if spec is not None)


def _distinct_pairs(pairs: list[tuple], group_size: int | None) -> tuple[list[tuple], list[str]]:
    """``pairs`` less those that name a format already listed (``--kv-bits 16 --kv-type f16``: both f16, which
    printed two identical rows), and a note for each dropped."""
    from kvplan.engine.formats import format_from_bits, format_from_name

    def fmt(spec):
        if spec is None:
            return None
        return format_from_bits(spec[1], group_size or 0) if spec[0] == "bits" else format_from_name(spec[1])

    kept, seen, notes = [], {}, []
    for pair in pairs:
        key = tuple(fmt(spec) for spec in pair)
        if key in seen:
            names = "/".join(dict.fromkeys(f.name for f in key if f is not None))
            notes.append(f"{_spelled(pair)} is the cache format of {_spelled(seen[key])} ({names}): swept once")
            continue
        seen[key] = pair
        kept.append(pair)
    return kept, notes


def _format_knobs(pair, group_size: int | None, any_bits: bool) -> dict:
    """:func:`kvplan.cli.options.declarations.knobs` arguments for one (K, V) pair; ``--kv-group-size`` applies to the
    pairs given in bits (a pair of runtime types has its own blocks), or to all when no bits are listed (so
    the knobs refuse it: "kv_group_size needs kv_bits", as check does)."""
    out = {}
    for side, spec in zip(("k", "v"), pair):
        if spec is not None:
            out[f"{side}_{spec[0]}"] = spec[1]
    if group_size is not None and (not any_bits or any(spec and spec[0] == "bits" for spec in pair)):
        out["kv_group_size"] = group_size
    return out


@with_groups(policy_knobs=g.POLICY, runtime_knobs=g.RUNTIME)
def sweep(
    device: p.DevicesOpt = None,
    model: p.ModelsOpt = None,
    ctx: CtxGridOpt = None,
    sequences: SequencesListOpt = None,
    weight_bits: WeightBitsListOpt = None,
    weight_type: WeightTypeListOpt = None,
    weight_group_size: o.knob_option("weight_group_size") = None,
    kv_bits: KvBitsListOpt = None,
    k_bits: KBitsListOpt = None,
    v_bits: VBitsListOpt = None,
    kv_type: KvTypeListOpt = None,
    k_type: KTypeListOpt = None,
    v_type: VTypeListOpt = None,
    kv_group_size: o.knob_option("kv_group_size") = None,
    pinned_prefix_tokens: o.knob_option("pinned_prefix_tokens") = o.knob_default("pinned_prefix_tokens"),
    sliding_window: o.knob_option("sliding_window") = None,
    images: o.knob_option("images") = o.knob_default("images"),
    image_size: o.knob_option("image_size") = None,
    audio: o.knob_option("audio") = o.knob_default("audio"),
    audio_seconds: o.knob_option("audio_seconds") = None,
    mmproj: o.knob_option("mmproj") = None,
    os_reserve_bytes: o.knob_option("os_reserve_bytes") = None,
    gpu_working_set_bytes: o.knob_option("gpu_working_set_bytes") = None,
    app_limit: o.knob_option("app_limit") = None,
    margin_fraction: o.knob_option("margin_fraction") = o.knob_default("margin_fraction"),
    target_tokens_per_s: o.knob_option("target_tokens_per_s") = None,
    draft: o.knob_option("draft") = None,
    draft_kv_type: o.knob_option("draft_kv_type") = None,
    n_gpu_layers: o.knob_option("n_gpu_layers") = None,
    n_cpu_moe: o.knob_option("n_cpu_moe") = None,
    override_tensor: o.knob_option("override_tensor") = None,
    stream_experts: o.knob_option("stream_experts") = None,
    expert_cache_hit: o.knob_option("expert_cache_hit") = None,
    policy_knobs: Given = None,
    runtime_knobs: Given = None,
    output_format: FormatByOutputOpt = None,
    output: p.OutputOpt = None,
    show_all: AllOpt = False,
    plot: SweepPlotOpt = None,
    units: o.UnitsOpt = o.Units.si,
    profiles_dir: o.ProfilesDirOpt = None,
) -> None:
    from kvplan.errors import UsageError
    from kvplan.grids import parse_ctx_grid, parse_int_list

    if not device:
        raise UsageError("--device: give at least one device (repeat --device for more)")
    if not model:
        raise UsageError("--model: give at least one model (repeat --model for more)")
    if not ctx:
        raise UsageError("--ctx: give contexts, e.g. --ctx 1k,4k,8k or --ctx 1k..32k:1k")
    fmt_ = choose_format(output_format, output)
    if output:
        from kvplan.files.outfiles import check_writable

        check_writable(output)
    check_sweep_plot(plot)  # a bad plot path or extension fails before the grid is evaluated
    ctx_values = parse_ctx_grid(ctx, "--ctx")
    seq_values = parse_int_list(sequences, "--sequences", 1, 1_000_000) if sequences else [1]
    parallel = runtime_knobs["parallel"]
    if parallel is not None:  # llama.cpp's -np is the sweep's sequences (one value)
        if sequences:
            raise UsageError("--parallel and --sequences: under llama.cpp both are -np; give --sequences "
                             "(a list) or --parallel (one value)")
        seq_values = [parallel]
    runtime_value = runtime_knobs.build()
    policy_value = policy_knobs.build()
    weight_values = _weight_formats(weight_bits, weight_type)
    pairs = _format_pairs(kv_bits, k_bits, v_bits, kv_type, k_type, v_type)
    any_bits = any(spec is not None and spec[0] == "bits" for pair in pairs for spec in pair)
    pairs, same = _distinct_pairs(pairs, kv_group_size)

    from kvplan.hub.catalog import user_catalog
    from kvplan.cli import terminal
    from kvplan.plan import build_scenario

    catalog = user_catalog(profiles_dir)
    from kvplan.profiles.catalog import resolve_distinct

    devices = resolve_distinct(catalog, "device", device)
    models = resolve_distinct(catalog, "model", model)
    for resolved in devices + models:
        if resolved.note:
            terminal.display_note(resolved.note)
    for note in same:
        terminal.display_note(note)
    from kvplan.plan.mtp_head import is_mtp

    # resolved as --model is; "mtp": the model's own MTP head, resolved by each row's scenario
    draft_profile = draft if draft and is_mtp(draft) else catalog.model(draft).profile if draft else None
    bases = [build_scenario(d.profile, m.profile, 1, o.knobs(pinned_prefix_tokens=pinned_prefix_tokens, **w,
                                                              weight_group_size=weight_group_size,
                                                              **_format_knobs(pair, kv_group_size, any_bits),
                                                              sliding_window=sliding_window,
                                                              images=images, image_size=image_size,
                                                              audio=audio, audio_seconds=audio_seconds,
                                                              mmproj=mmproj,
                                                              os_reserve_bytes=os_reserve_bytes,
                                                              gpu_working_set_bytes=gpu_working_set_bytes,
                                                              app_limit=app_limit,
                                                              margin_fraction=margin_fraction,
                                                              target_tokens_per_s=target_tokens_per_s,
                                                              draft=draft_profile, draft_kv_type=draft_kv_type,
                                                              n_gpu_layers=n_gpu_layers, n_cpu_moe=n_cpu_moe,
                                                              override_tensor=override_tensor,
                                                              stream_experts=stream_experts,
                                                              expert_cache_hit=expert_cache_hit,
                                                              runtime=runtime_value,
                                                              kv_policy=policy_value))
             for d in devices for m in models for w in weight_values for pair in pairs]
    parts = _evaluate(bases, ctx_values, seq_values)
    from kvplan.cli.sweep.warnings import sweep_warnings

    _emit(parts, fmt_, output, show_all, units.value, target_tokens_per_s, sweep_warnings(bases, ctx_values, seq_values))
    write_sweep_plot(parts, plot, units.value)


def _evaluate(bases, ctx_values, seq_values):
    """One vectorized evaluation per group (in chunks, so a long sweep can show progress)."""
    from kvplan import sweep as engine_sweep
    from kvplan.cli import terminal

    ctx_grid, seq_grid = engine_sweep.grid(ctx_values, seq_values)
    points = len(ctx_grid) * len(bases)
    parts = []
    with terminal.progress(points, "evaluating", points >= PROGRESS_FROM_POINTS) as bar:
        for base in bases:
            chunks = []
            for start in range(0, len(ctx_grid), EVAL_CHUNK_POINTS):
                stop = start + EVAL_CHUNK_POINTS
                chunks.append(engine_sweep.evaluate_group(base, ctx_grid[start:stop], seq_grid[start:stop]))
                bar.advance(len(chunks[-1]))
            parts.append(engine_sweep.concat(chunks))
    return parts


def _stream(chunks, rows: int, what: str, output) -> None:
    """Write ``chunks`` (bytes) to ``output`` (a temporary file renamed into place) or stdout, as they come."""
    from kvplan.cli import terminal

    with terminal.progress(rows, f"writing {what}", rows >= PROGRESS_FROM_POINTS) as bar:
        def counted():
            for n, data in chunks:
                yield data
                bar.advance(n)

        if output:
            from kvplan.files.outfiles import write_atomic

            def produce(tmp) -> None:
                with open(tmp, "wb") as f:
                    for data in counted():
                        f.write(data)

            write_atomic(output, produce)
        else:
            terminal.display_bytes(counted())
    if output:
        terminal.display_written(f"wrote {rows:,} row{'' if rows == 1 else 's'} to {output}")


def _emit(parts, fmt_, output, show_all: bool, units: str, target_tok_s: float | None = None,
          warnings=()) -> None:
    from kvplan.render import sweep as render

    rows = sum(len(part) for part in parts)
    if fmt_ is OutputFormat.csv:  # CSV has no place for them: warnings go to stderr
        from kvplan.cli import terminal
        from kvplan.render.warnings import words

        for warning in words(warnings):
            terminal.display_warning(warning)
        def csv():
            yield 0, render.csv_header(parts[0].columns()).encode()
            yield from render.csv_chunks(parts)

        _stream(csv(), rows, "CSV", output)
        return
    if fmt_ is OutputFormat.json and rows > PRETTY_JSON_MAX_ROWS:
        def compact():  # vectorized, byte for byte what json.dumps writes (pretty-printing is ~20x slower)
            yield 0, render.json_head(rows, parts[0].columns(), warnings)
            yield from render.json_chunks(parts)
            yield 0, render.JSON_TAIL

        _stream(compact(), rows, "JSON", output)
        return

    from kvplan import sweep as engine_sweep
    from kvplan.cli import terminal

    cols = engine_sweep.concat(parts)
    if fmt_ is OutputFormat.json:
        import json

        text = json.dumps(render.json_document(cols, warnings), indent=2, allow_nan=False)
        terminal.write_or_display_text(text + "\n", output)
        return

    import numpy as np

    head = TABLE_HEAD_ROWS
    if show_all or rows <= 2 * head:
        indices, after, omitted = np.arange(rows), None, 0
    else:
        indices = np.concatenate([np.arange(head), np.arange(rows - head, rows)])
        after, omitted = head - 1, rows - 2 * head
    title = f"sweep: {rows:,} configuration{'s' if rows != 1 else ''}"
    tables = [render.table(cols, indices, after, omitted, units, title, target_tok_s, warnings)]
    if output:
        from kvplan.render.tables import to_markdown, to_plain

        text = to_markdown(tables) if fmt_ is OutputFormat.markdown else to_plain(tables)
        terminal.write_or_display_text(text, output)
    else:
        terminal.display_tables(tables, fmt_.value)
