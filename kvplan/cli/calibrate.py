"""``kvplan calibrate``: a device profile whose speed figures are fitted to llama-bench measurements."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from kvplan.cli import options as o

HELP = """Fit a device profile's speed figures to llama-bench results and write the profile.

Reads every BENCH_FILE (llama-bench -o json, jsonl, csv or md output, one device), fits decode
time per token = bytes per token / bandwidth + latency to the tg rows and a sustained FLOP/s to
the pp rows, prints measured vs fitted for every row with its residual, and writes the device
profile (-o) with every fitted figure's provenance under `sources`. RAM, OS reserve and flash
come from --base or --ram/--os-reserve/--flash-read; with none of them, from the library device
the rows' gpu_info/cpu_info name (one family: the smallest RAM). Without --model, the model is
recognised from model_type and model_n_params. Exit code 0, 2 on bad input."""


class CalibrateFormat(str, Enum):
    table = "table"
    json = "json"


# Device fields in the order the written profile shows them.
_ORDER = ("name", "aliases", "description", "platform", "ram", "os_reserve", "memory_bandwidth", "flash_read",
          "flash_write", "bandwidth_efficiency", "decode_latency", "compute", "compute_efficiency",
          "runtime_overhead")


def calibrate(
    bench_files: Annotated[list[str], typer.Argument(help="llama-bench output files (json, jsonl, csv, md).",
                                                     show_default=False)],
    output: Annotated[str, typer.Option("--output", "-o", help="Device profile YAML to write.")],
    bandwidth: Annotated[str | None, typer.Option("--bandwidth", help="Peak memory bandwidth ('100 GB/s'); "
                                                  "default: the base device's, else the fitted figure.")] = None,
    base: Annotated[str | None, typer.Option("--base", help="Device (name, alias or YAML) to take RAM, OS "
                                             "reserve, flash and the peak bandwidth from (default: the library "
                                             "device the rows' gpu_info/cpu_info name).")] = None,
    name: Annotated[str | None, typer.Option("--name", help="Name of the new profile (default: the "
                                             "output file's stem).")] = None,
    ram: Annotated[str | None, typer.Option("--ram", help="Installed RAM ('16 GiB'); overrides --base.")] = None,
    os_reserve: Annotated[str | None, typer.Option("--os-reserve", help="OS reserve ('5.33 GiB'); overrides "
                                                   "--base.")] = None,
    flash_read: Annotated[str | None, typer.Option("--flash-read", help="Sequential flash read ('2.8 GB/s'); "
                                                   "overrides --base.")] = None,
    models: Annotated[list[str] | None, typer.Option("--model", "-m", help="Model profile of the benchmarked "
                                                     "model, for its KV bytes per token and shape: NAME for "
                                                     "every row, or 'MODEL_TYPE=NAME' (repeatable); default: "
                                                     "recognised from model_type and model_n_params.")] = None,
    latency: Annotated[str | None, typer.Option("--latency", help="Fix the decode latency per token "
                                                "('4 ms') instead of fitting it.")] = None,
    allow_mixed: Annotated[bool, typer.Option("--allow-mixed", help="Accept rows whose cpu_info/gpu_info "
                                              "differ.")] = False,
    plot: Annotated[str | None, typer.Option("--plot", help="Also draw time per token against bytes per "
                                             "token with the fitted line (.png, .svg, .pdf).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing output file.")] = False,
    output_format: Annotated[CalibrateFormat, typer.Option("--format", "-f", help="Output format.")]
    = CalibrateFormat.table,
    profiles_dir: o.ProfilesDirOpt = None,
) -> None:
    from kvplan.calibrate.fit_device import calibrate_device
    from kvplan.calibrate.readers import read_bench
    from kvplan.cli import terminal
    from kvplan.errors import OutputError, UsageError
    from kvplan.files.outfiles import check_outputs, check_writable, write_text_atomic
    from kvplan.profiles.catalog import Catalog
    from kvplan.render import calibrate as render
    from kvplan.units import parse_duration_s, parse_rate_bytes_per_s

    # Outputs first: nothing is fitted for a file that cannot be written.
    if Path(output).exists() and not force:
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

    rows = [row for path in bench_files for row in read_bench(path)]
    catalog = Catalog(profiles_dir)
    notes: list[str] = []
    given = {"ram": ram, "os_reserve": os_reserve, "flash_read": flash_read}
    recognised = None
    if base is None and all(v is None for v in given.values()):
        from kvplan.cli.calibrate_recognition import recognise_base

        recognised = recognise_base(catalog, rows)
        base = recognised.name
        if base is not None:
            taken = "RAM, OS reserve, flash and peak bandwidth" if bandwidth is None else "RAM, OS reserve and flash"
            notes.append(f"device recognised: {recognised.reason}; {taken} from {base} (give --base or --ram, "
                         "--os-reserve, --flash-read for another)")
    base_fields, base_sources, base_name = _base_fields(catalog, base)
    for field, value in given.items():
        if value is not None:
            base_fields[field] = value
            base_sources[field] = "given to kvplan calibrate"
    missing = [f"--{f.replace('_', '-')}" for f in given if f not in base_fields]
    if missing:
        raise UsageError(f"a device profile needs RAM, OS reserve and flash read: give --base DEVICE or "
                         f"{', '.join(missing)}" + (f" ({recognised.reason})" if recognised else ""))

    decode_rows = [r for r in rows if r.is_decode]
    if plot and not decode_rows:
        raise UsageError("--plot draws the decode fit, but no bench file has a tg row")
    if len(decode_rows) == 1 and latency_s is None:
        if "decode_latency" in base_fields:
            latency_s = parse_duration_s(base_fields["decode_latency"])
            where = f"{base_name}'s decode_latency"
        else:
            latency_s, where = 0.0, "0 (pure bandwidth)"
        notes.append(f"one tg row gives one equation for two unknowns (bandwidth and latency): one unknown too "
                     f"many; latency fixed at {latency_s * 1e3:.2f} ms from {where}, only the bandwidth fitted "
                     "(add tg rows of other sizes or depths, or --latency)")

    facts = _model_facts(catalog, models or [], rows, notes)
    profile_name = name or _default_name(output, base_name)
    calibration = calibrate_device(rows, models=facts, name=profile_name, peak_bandwidth_bytes_per_s=peak_bw,
                                   base_device=base_fields, latency_s=latency_s,
                                   allow_mixed_hardware=allow_mixed)
    how = f", recognised from the bench file: {recognised.reason}" if recognised and recognised.name else ""
    device, sources = _profile(calibration, base_fields, base_sources, base_name, bench_files, profile_name, how)
    if "memory_bandwidth" not in device:
        if peak_bw is None:
            raise UsageError("no tg (decode) rows to fit the bandwidth from: give --bandwidth or --base DEVICE")
        device["memory_bandwidth"] = f"{peak_bw / 1e9:.1f} GB/s"
        sources["memory_bandwidth"] = "peak given to kvplan calibrate (no tg rows to fit)"
    text = _validated_yaml(device, sources, output)

    from kvplan.plan.profile_warnings import device_warnings
    from kvplan.profiles.spec import Device

    profile = Device.model_validate({**device, "sources": sources})  # valid: _validated_yaml checked it
    warnings = device_warnings(profile)  # what 'profiles show' would say of the written profile
    if output_format is CalibrateFormat.json:
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
    if output_format is not CalibrateFormat.json:
        terminal.display_note(f"wrote {output}" + (f" and {plot}" if plot else ""))


def _base_fields(catalog, ref: str | None) -> tuple[dict, dict, str | None]:
    """The base device's fields as its YAML writes them (units kept), its sources, and its name."""
    if ref is None:
        return {}, {}, None
    from kvplan.files.yamlio import load_yaml

    resolved = catalog.device(ref)
    data = dict(load_yaml(resolved.path).data)
    sources = dict(data.pop("sources", None) or {})
    for key in ("name", "aliases", "description"):
        data.pop(key, None)
    return data, sources, resolved.profile.name


def _default_name(output: str, base_name: str | None) -> str:
    import re

    from kvplan.profiles.spec import SLUG_PATTERN

    stem = Path(output).stem.lower()
    if re.match(SLUG_PATTERN, stem):
        return stem
    return f"{base_name}-calibrated" if base_name else "calibrated-device"


def _model_facts(catalog, specs: list[str], rows, notes: list[str]) -> dict:
    """``model_type`` → ModelFacts from the model profiles named by --model (KV bytes per token, shape)."""
    from kvplan.caches.ideal import cache_layout
    from kvplan.calibrate.fit_device import ModelFacts
    from kvplan.engine.formats import format_from_name
    from kvplan.errors import UsageError

    types = sorted({r.model_type for r in rows})
    by_type: dict[str, str] = {}
    for spec in specs:
        if "=" in spec:
            prefix, ref = (part.strip() for part in spec.split("=", 1))
            matched = [t for t in types if t == prefix or t.startswith(prefix + " ")]
            if not matched:
                raise UsageError(f"--model {spec!r}: no bench row has model type {prefix!r} "
                                 f"(the rows have: {', '.join(types)})")
            by_type.update({t: ref for t in matched})
        elif len(specs) == 1:
            by_type.update({t: spec for t in types if t not in by_type})
        else:
            raise UsageError(f"--model {spec!r}: with several --model, write each as 'MODEL_TYPE=NAME'")
    unnamed = [t for t in types if t not in by_type]
    if unnamed:
        by_type.update(_recognised_models(catalog, rows, unnamed, notes))
    facts = {}
    for model_type, ref in by_type.items():
        model = catalog.model(ref).profile
        typed = [r for r in rows if r.model_type == model_type]
        k_name = next((r.type_k for r in typed if r.type_k), None)
        v_name = next((r.type_v for r in typed if r.type_v), None)
        layout = cache_layout(model, format_from_name(k_name) if k_name else None,
                              format_from_name(v_name) if v_name else None)
        embedding, how = _embedding_bytes(model, model_type, typed[0])
        facts[model_type] = ModelFacts(embedding_bytes=embedding, kv_bytes_per_token=layout.bytes_per_token,
                                       params=None, layers=model.layers, attention_heads=model.attention_heads,
                                       head_dim=model.head_dim)
        notes.append(f"{model_type}: KV cache {layout.bytes_per_token:,} bytes/token and layer shape from "
                     f"model {model.name}; {how}")
    return facts


def _recognised_models(catalog, rows, model_types: list[str], notes: list[str]) -> dict[str, str]:
    """``model_type`` → the library model its rows name (kvplan.calibrate.recognise), each outcome in a note."""
    from kvplan.cli.calibrate_recognition import recognise_models

    found = recognise_models(catalog, rows, model_types)
    by_outcome: dict[tuple[str | None, str], list[str]] = {}
    for model_type, recognition in found.items():
        by_outcome.setdefault((recognition.name, recognition.reason), []).append(model_type)
    for (name, reason), typed in by_outcome.items():
        if name:
            notes.append(f"model recognised: {', '.join(typed)} → {name}: {reason} (--model overrides)")
        else:
            notes.append(f"model not recognised: {', '.join(typed)}: {reason}; its model_size is taken as read in "
                         "full and the KV cache left out (give --model NAME)")
    return {t: r.name for t, r in found.items() if r.name}


def _file_type(model_type: str) -> str | None:
    """The kvplan weight type of a llama-bench ``model_type``: 'llama 7B Q4_0' → 'q4_0', 'llama 3B Q4_K - Medium'
    → 'q4_k_m', 'LLaMA 7B mostly F16' → 'f16', 'IQ4_XS - 4.25 bpw' → 'iq4_xs'; None when not a known GGUF type."""
    import re

    from kvplan.engine.quantize import FILE_TYPES

    match = re.search(r"([A-Za-z0-9_]+)(?: - (Small|Medium|Large|[\d.]+ bpw))?\s*$", model_type.strip())
    if not match:
        return None
    base = match.group(1).lower()
    size = {"Small": "_s", "Medium": "_m", "Large": "_l"}.get(match.group(2) or "", "")
    for key in (base + size, base):
        if key in FILE_TYPES:
            return key
    return None


def _embedding_bytes(model, model_type: str, row) -> tuple[int, str]:
    """Bytes of the input-embedding table a decode step does not read, and how they were found.

    A step reads one row of the table, so its bytes come off the row's ``model_size``. The table's type is the
    one llama.cpp's quantizer gives ``token_embd`` in the row's file type (tensor-by-tensor pricing of the
    model profile); when the file type or the architecture is not priced, the row's mean bits per parameter."""
    if model.tie_embeddings:
        return 0, "tied embeddings: the whole table is the output layer and is read every step"
    if not (model.vocab_size and model.hidden_size):
        return 0, f"no vocab_size/hidden_size in {model.name}: input embeddings not subtracted"
    from kvplan.engine import embedding_bytes
    from kvplan.errors import FieldError
    from kvplan.plan.weights import priced_weights

    file_type = _file_type(model_type)
    if file_type is not None:
        try:
            pricing = priced_weights(model, file_type)
        except FieldError:
            pricing = None
        tables = [t for t in pricing.tensors if t.name == "token_embd.weight"] if pricing is not None else []
        if tables:
            return tables[0].bytes, (f"input embeddings {tables[0].bytes:,} B ({tables[0].dtype}, "
                                     f"{model.vocab_size:,} × {model.hidden_size:,}) not read per token")
    bits = row.model_size_bytes * 8 / row.model_n_params
    table = int(embedding_bytes(model.vocab_size, model.hidden_size, bits))
    return table, (f"input embeddings ≈ {table:,} B ({model.vocab_size:,} × {model.hidden_size:,} at the file's "
                   f"mean {bits:.2f} bits/param) not read per token")


def _profile(calibration, base_fields: dict, base_sources: dict, base_name: str | None, bench_files: list[str],
             profile_name: str, base_how: str = "") -> tuple[dict, dict]:
    fitted = dict(calibration.sources)
    if "compute" in fitted and "compute_efficiency" not in fitted:
        fitted["compute_efficiency"] = "sustained / peak compute from the pp fit (see compute)"
    device = dict(calibration.device)
    device["name"] = profile_name
    files = ", ".join(Path(f).name for f in bench_files)
    device["description"] = (f"calibrated by kvplan calibrate from {files}"
                             + (f" on {base_name}" if base_name else "")
                             + (" (recognised from the bench file's hardware; see sources)" if base_how else ""))
    sources = {}
    for key in _ORDER:
        if key in fitted:
            sources[key] = fitted[key]
        elif key in base_sources and key in device:
            sources[key] = base_sources[key] + (f" (from {base_name}{base_how})" if base_name else "")
    ordered = {k: device[k] for k in _ORDER if k in device}
    ordered.update({k: v for k, v in device.items() if k not in ordered})
    return ordered, sources


def _validated_yaml(device: dict, sources: dict, output: str) -> str:
    """The profile as YAML, validated as a device profile before anything is written."""
    import yaml

    from kvplan.files.yamlio import parse_yaml
    from kvplan.profiles.loading import validate_document
    from kvplan.profiles.spec import Device

    text = ("# Written by kvplan calibrate: speed figures fitted to llama-bench results (see sources).\n"
            + yaml.safe_dump({**device, "sources": sources}, sort_keys=False, allow_unicode=True, width=100))
    validate_document(Device, parse_yaml(text, output), what="device profile")
    return text


def _plot(calibration, path: str, profile_name: str) -> None:
    from kvplan.plots.calibrate import calibration_figure
    from kvplan.plots.save import save_figure

    decode = [r for r in calibration.table if r.kind == "decode"]
    points = [(r.work, 1.0 / r.measured_tokens_per_s, f"{r.model_type} {r.test}") for r in decode]
    fit = calibration.decode
    save_figure(calibration_figure(points, fit.bandwidth_bytes_per_s, fit.latency_s,
                                   f"{profile_name}: decode time per token (llama-bench)"), path)
