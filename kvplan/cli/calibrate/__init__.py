"""``kvplan calibrate``: a device profile whose speed figures are fitted to llama-bench measurements."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kvplan.cli.options import declarations as o
from kvplan.cli.options.formats import TABLE_JSON, OutputFormat, format_option
from kvplan.cli.calibrate.models import model_facts

HELP = """Fit a device profile's speed figures to llama-bench results and write the profile.

Reads every BENCH_FILE (llama-bench -o json, jsonl, csv or md output, one device), fits decode
time per token = bytes per token / bandwidth + latency to the tg rows and a sustained FLOP/s to
the pp rows, prints measured vs fitted for every row with its residual, and writes the device
profile (-o) with every fitted figure's provenance under `sources`. RAM, OS reserve and flash
come from --base or --ram/--os-reserve/--flash-read; with none of them, from the library device
the rows' gpu_info/cpu_info name (one family: the smallest RAM). Without --model, the model is
recognised from model_type and model_n_params. Exit code 0, 2 on bad input."""


def calibrate(
    bench_files: Annotated[list[str], typer.Argument(help="llama-bench output files (json, jsonl, csv, md).",
                                                     show_default=False)],
    output: Annotated[str, typer.Option("--output", "-o", help="Device profile YAML to write.")],
    bandwidth: Annotated[str | None, typer.Option("--bandwidth", help="Peak memory bandwidth ('100 GB/s'); "
                                                  "default: the base device's, else the fitted figure. With no "
                                                  "tg rows, the profile's memory_bandwidth.")] = None,
    base: Annotated[str | None, typer.Option("--base", help="Device (name, alias, YAML or 'this') to take RAM, OS "
                                             "reserve, flash and the peak bandwidth from (default: the library "
                                             "device the rows' gpu_info/cpu_info name).")] = None,
    name: Annotated[str | None, typer.Option("--name", help="Name of the new profile (default: the "
                                             "output file's stem).")] = None,
    ram: Annotated[str | None, typer.Option("--ram", help="Installed RAM ('16 GiB'); overrides --base.")] = None,
    os_reserve: Annotated[str | None, typer.Option("--os-reserve", help="OS reserve ('5.33 GiB'); overrides "
                                                   "--base.")] = None,
    flash_read: Annotated[str | None, typer.Option("--flash-read", help="Sequential flash read ('2.8 GB/s'); "
                                                   "overrides --base.")] = None,
    models: Annotated[list[str] | None, typer.Option("--model", "-m", help="Model of the benchmarked model (name, "
                                                     "alias, YAML, local .gguf or hf: id), for its KV bytes per "
                                                     "token and shape: NAME for every row, or 'MODEL_TYPE=NAME' "
                                                     "(repeatable); default: recognised from model_type and "
                                                     "model_n_params.")] = None,
    latency: Annotated[str | None, typer.Option("--latency", help="Fix the decode latency per token "
                                                "('4 ms') instead of fitting it (with no tg rows, the "
                                                "profile's decode_latency).")] = None,
    allow_mixed: Annotated[bool, typer.Option("--allow-mixed", help="Accept rows whose cpu_info/gpu_info "
                                              "differ.")] = False,
    plot: Annotated[str | None, typer.Option("--plot", help="Also draw time per token against bytes per "
                                             "token with the fitted line (.png, .svg, .pdf).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing output file.")] = False,
    output_format: format_option(TABLE_JSON) = OutputFormat.table,
    profiles_dir: o.ProfilesDirOpt = None,
) -> None:
    from kvplan.calibrate.fit_device import calibrate_device
    from kvplan.calibrate.profile import base_fields, default_name, profile_fields
    from kvplan.calibrate.readers import read_bench
    from kvplan.cli import terminal
    from kvplan.errors import OutputError, UsageError
    from kvplan.files.outfiles import check_outputs, check_writable, is_stdout, write_text_atomic
    from kvplan.hub.catalog import user_catalog
    from kvplan.render import calibrate as render
    from kvplan.units import parse_duration_s, parse_rate_bytes_per_s

    # Outputs first: nothing is fitted for a file that cannot be written.
    if Path(output).exists() and not is_stdout(output) and not force:
        raise OutputError(f"{output}: already exists; pass --force to overwrite it")
    check_outputs(bench_files, [output] + ([plot] if plot else []))
    check_writable(output)
    if plot:
        from kvplan.plots.save import check_plot_path

        check_plot_path(plot)
    # Each option is read here, as typed, so its error names the option and not the field of the profile
    # it would fill; RAM, reserve and flash go into that profile as the user wrote them (with their units).
    from kvplan.profiles.field_rules import check_profile_name
    from kvplan.units import parse_size_bytes

    if name is not None:
        check_profile_name(name)
    peak_bw = o.parse_option("--bandwidth", parse_rate_bytes_per_s, bandwidth) if bandwidth is not None else None
    latency_s = o.parse_option("--latency", parse_duration_s, latency) if latency is not None else None
    for option, text, parse, how in (("--ram", ram, parse_size_bytes, {"positive": True}),
                                     ("--os-reserve", os_reserve, parse_size_bytes, {}),
                                     ("--flash-read", flash_read, parse_rate_bytes_per_s, {})):
        if text is not None:
            o.parse_option(option, parse, text, **how)
    if ram is not None and os_reserve is not None:
        _check_reserve_below_ram({"ram": ram, "os_reserve": os_reserve}, {"ram": ram, "os_reserve": os_reserve}, None)

    rows = [row for path in bench_files for row in read_bench(path)]
    # the catalog of check and sweep: a local .gguf or an hf: id names a model, 'this' the machine
    catalog = user_catalog(profiles_dir)
    notes: list[str] = []
    given = {"ram": ram, "os_reserve": os_reserve, "flash_read": flash_read}
    recognised = None
    if base is None and all(v is None for v in given.values()):
        from kvplan.calibrate.library import recognise_base

        recognised = recognise_base(catalog, rows)
        base = recognised.name
        if base is not None:
            taken = "RAM, OS reserve, flash and peak bandwidth" if bandwidth is None else "RAM, OS reserve and flash"
            notes.append(f"device recognised: {recognised.reason}; {taken} from {base} (give --base or --ram, "
                         "--os-reserve, --flash-read for another)")
    base_fields, base_sources, base_name = base_fields(catalog, base, notes)
    # how messages name the base device: the option the user typed, or the device recognised for them
    base_said = (None if base_name is None else f"--base {base}" if recognised is None
                 else f"the recognised device {base_name}")
    for field, value in given.items():
        if value is not None:
            base_fields[field] = value
            base_sources[field] = "given to kvplan calibrate"
    missing = [f"--{f.replace('_', '-')}" for f in given if f not in base_fields]
    if missing:
        raise UsageError(f"a device profile needs RAM, OS reserve and flash read: give --base DEVICE or "
                         f"{', '.join(missing)}" + (f" ({recognised.reason})" if recognised else ""))
    _check_reserve_below_ram(base_fields, given, base_said)

    decode_rows = [r for r in rows if r.is_decode]
    if plot and not decode_rows:
        raise UsageError("--plot draws the decode fit, but no bench file has a tg row")
    facts = model_facts(catalog, models or [], rows, notes)
    latency_source = "given to kvplan calibrate" if latency_s is not None else None
    given_here = {k for k, v in given.items() if v is not None}  # typed by the user, not copied from the base
    if decode_rows:
        latency_s, latency_source = _fixed_latency(decode_rows, facts, latency_s, latency_source, base_fields,
                                                   base_name, notes)
        if latency_s is not None:
            _check_latency(decode_rows, latency_s, latency, base_name)
    else:
        given_here |= _no_decode_rows(bandwidth, latency, base_fields, base_sources, base_name, notes)
    profile_name = name or default_name(output, base_name)
    calibration = calibrate_device(rows, models=facts, name=profile_name, peak_bandwidth_bytes_per_s=peak_bw,
                                   base_device=base_fields, latency_s=latency_s, latency_source=latency_source,
                                   allow_mixed_hardware=allow_mixed)
    if calibration.decode is not None:
        _check_efficiency(calibration, bandwidth, base_fields, base_said)
    how = f", recognised from the bench file: {recognised.reason}" if recognised and recognised.name else ""
    device, sources = profile_fields(calibration, base_fields, base_sources, base_name, bench_files, profile_name, how,
                               given_here)
    options = {**given, "memory_bandwidth": bandwidth, "decode_latency": latency if not decode_rows else None}
    fitted = set(calibration.sources) | ({"compute_efficiency"} if "compute" in calibration.sources else set())
    text = _validated_yaml(device, sources, _origins(device, fitted, options, base_name))

    from kvplan.plan.profile_warnings import device_warnings
    from kvplan.profiles.spec import Device
    from kvplan.render.warnings import word

    profile = Device.model_validate({**device, "sources": sources})  # valid: _validated_yaml checked it
    warnings = [word(w) for w in device_warnings(profile)]  # what 'profiles show' would say of the written profile
    if output_format is OutputFormat.json:
        terminal.display_json(render.calibrate_json(calibration, profile, output, notes, warnings))
    else:
        for note in notes:
            terminal.display_note(note)
        for warning in warnings:
            terminal.display_warning(warning)
        terminal.display_tables([render.rows_table(calibration), render.fields_table(device, sources)])
    if plot:
        _plot(calibration, plot, profile_name)
    write_text_atomic(output, text)
    if output_format is not OutputFormat.json:
        terminal.display_written(f"wrote {output}" + (f" and {plot}" if plot else ""))


def _check_reserve_below_ram(fields: dict, given: dict, base_said: str | None) -> None:
    """OS reserve below RAM, the error naming the options (or the base device) the two figures came from."""
    from kvplan.errors import UsageError
    from kvplan.units import parse_size_bytes

    ram, reserve = parse_size_bytes(fields["ram"]), parse_size_bytes(fields["os_reserve"])
    if reserve < ram:
        return
    said = {k: (f"--{k.replace('_', '-')} {given[k]}" if given.get(k) is not None else f"{base_said}'s {k} "
                f"{fields[k]}") for k in ("ram", "os_reserve")}
    raise UsageError(f"{said['os_reserve']} must be less than {said['ram']} ({reserve:,} ≥ {ram:,} bytes)")


def _fixed_latency(decode_rows, facts, latency_s, latency_source, base_fields, base_name, notes):
    """The latency to fix, and where it came from, when the tg rows hold a single bytes per token.

    One point (one tg row, or several that read the same bytes: ``-t 4,8``, ``-fa 0,1``, a file given twice)
    is one equation for two unknowns; the latency then comes from --latency, else the base device, else 0."""
    from kvplan.calibrate.fit_device import decode_work
    from kvplan.units import parse_duration_s

    points = set(decode_work(decode_rows, facts))
    if len(points) != 1 or latency_s is not None:
        return latency_s, latency_source
    if "decode_latency" in base_fields:
        latency_s = parse_duration_s(base_fields["decode_latency"])
        where = f"{base_name}'s decode_latency"
        latency_source = f"from {where}"
    else:
        latency_s, where = 0.0, "0 (pure bandwidth)"
        latency_source = "0, pure bandwidth: no latency given and no base device's"
    if len(decode_rows) == 1:
        said = "one tg row gives one equation"
    else:
        said = (f"the {len(decode_rows)} tg rows all read {next(iter(points)):,.0f} bytes per token (one point), "
                "which gives one equation")
    notes.append(f"{said} for two unknowns (bandwidth and latency): one unknown too many; latency fixed at "
                 f"{latency_s * 1e3:.2f} ms from {where}, only the bandwidth fitted (add tg rows of other sizes or "
                 "depths, or --latency)")
    return latency_s, latency_source


def _check_latency(decode_rows, latency_s: float, latency_text: str | None, base_name: str | None) -> None:
    """A fixed latency is below every measured time per token, the error naming where the latency came from."""
    from kvplan.errors import UsageError

    fastest = max(decode_rows, key=lambda r: r.avg_ts)
    if latency_s < 1.0 / fastest.avg_ts:
        return
    said = f"--latency {latency_text}" if latency_text is not None else f"{base_name}'s decode_latency"
    raise UsageError(f"{said}: not below the measured time per token of {fastest.source}:{fastest.line} "
                     f"({1e3 / fastest.avg_ts:.2f} ms at {fastest.avg_ts:g} t/s), which is that latency plus the "
                     "time to read the step's bytes: no bandwidth fits"
                     + ("" if latency_text is not None else " (give --latency)"))


def _no_decode_rows(bandwidth, latency, base_fields: dict, base_sources: dict, base_name, notes) -> set[str]:
    """With no tg rows nothing decode-related is fitted: --bandwidth and --latency go into the profile as typed,
    the rest stays the base device's, and a note says which is which. The fields set from options."""
    from kvplan.errors import UsageError

    if bandwidth is not None:
        base_fields["memory_bandwidth"] = bandwidth
        base_sources["memory_bandwidth"] = "given to kvplan calibrate (peak; no tg rows to fit)"
    elif "memory_bandwidth" not in base_fields:
        raise UsageError("no tg (decode) rows to fit the bandwidth from: give --bandwidth or --base DEVICE")
    if latency is not None:
        base_fields["decode_latency"] = latency
        base_sources["decode_latency"] = "given to kvplan calibrate (--latency; no tg rows to fit)"
    given = [f for f, v in (("memory_bandwidth", bandwidth), ("decode_latency", latency)) if v is not None]
    kept = [f for f in ("memory_bandwidth", "bandwidth_efficiency", "decode_latency")
            if f in base_fields and f not in given]
    said = "no tg rows, so no decode figure is fitted"
    if given:
        said += f"; {' and '.join(given)} as given"
    if kept:
        said += f"; {', '.join(kept)} from {base_name}, not measured here"
        if bandwidth is not None and "bandwidth_efficiency" in kept:
            said += " (its bandwidth_efficiency is relative to its own memory_bandwidth, now replaced)"
    notes.append(said)
    return set(given)


def _check_efficiency(calibration, bandwidth: str | None, base_fields: dict, base_said: str | None) -> None:
    """The effective bandwidth fitted to the tg rows is at most the peak, the error naming where the peak came from."""
    from kvplan.errors import UsageError

    efficiency = calibration.device.get("bandwidth_efficiency")
    if efficiency is None or 0 < efficiency <= 1:
        return
    effective = calibration.decode.bandwidth_bytes_per_s
    if bandwidth is not None:
        said, fix = f"--bandwidth {bandwidth}", "give the device's peak (spec-sheet) bandwidth"
    else:
        said = f"{base_said}'s memory_bandwidth {base_fields.get('memory_bandwidth')}"
        fix = "are the rows from another device? give --base with the right one, or --bandwidth with the peak"
    if efficiency <= 0:  # the profile keeps 3 decimals: under 0.05 % of the peak is written as 0, which is refused
        raise UsageError(f"{said}: the tg rows' effective bandwidth {effective / 1e9:.1f} GB/s is under 0.05 % of "
                         f"this peak (is a unit wrong?); {fix}")
    raise UsageError(f"{said}: the tg rows read faster than this peak (effective bandwidth {effective / 1e9:.1f} "
                     f"GB/s fitted, bandwidth_efficiency would be {efficiency:g}); {fix}")


def _origins(device: dict, fitted: set[str], options: dict[str, str | None], base_name: str | None
             ) -> dict[str, str]:
    """Each profile field → where its value came from, in words for an error about it."""
    origins = {}
    for key in device:
        if options.get(key) is not None:
            origins[key] = f"--{'bandwidth' if key == 'memory_bandwidth' else key.replace('_', '-')} {options[key]}"
        elif key in fitted:
            origins[key] = "fitted to the bench rows"
        elif base_name:
            origins[key] = f"from {base_name}"
    return origins


def _validated_yaml(device: dict, sources: dict, origins: dict[str, str]) -> str:
    """The profile as YAML, validated as a device profile before anything is written.

    A problem is reported against the field and where its value came from (an option, the fit, the base
    device), never at a line of the output file, which is not written."""
    import re

    import yaml

    from kvplan.errors import ProfileError, UsageError
    from kvplan.files.yamlio import parse_yaml
    from kvplan.profiles.loading import validate_document
    from kvplan.profiles.spec import Device

    text = ("# Written by kvplan calibrate: speed figures fitted to llama-bench results (see sources).\n"
            + yaml.safe_dump({**device, "sources": sources}, sort_keys=False, allow_unicode=True, width=100))
    where = "<calibrated profile>"
    try:
        validate_document(Device, parse_yaml(text, where), what="device profile")
    except ProfileError as exc:
        problems = []
        for problem in exc.problems:
            problem = re.sub(rf"^{re.escape(where)}:\d+: ", "", problem)
            field = problem.split(":", 1)[0].split(".", 1)[0]
            problems.append(problem + (f" ({origins[field]})" if field in origins else ""))
        raise UsageError("the calibrated device profile would be invalid, so nothing was written: "
                         + "; ".join(problems)) from None
    return text


def _plot(calibration, path: str, profile_name: str) -> None:
    from kvplan.plots.calibrate import calibration_figure
    from kvplan.plots.save import save_figure

    decode = [r for r in calibration.table if r.kind == "decode"]
    points = [(r.work, 1.0 / r.measured_tokens_per_s, f"{r.model_type} {r.test}") for r in decode]
    fit = calibration.decode
    save_figure(calibration_figure(points, fit.bandwidth_bytes_per_s, fit.latency_s,
                                   f"{profile_name}: decode time per token (llama-bench)"), path)
