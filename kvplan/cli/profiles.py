"""``kvplan profiles``: list, show, validate profiles, and print their JSON Schema."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from kvplan.cli.options import declarations as o
from kvplan.cli.options.formats import TABLE_JSON, FormatOpt, OutputFormat, format_option

HELP = """Device and model profiles: list the known ones, show one with its sources,
validate profile files, print the JSON Schema of either kind."""


class KindChoice(str, Enum):
    device = "device"
    model = "model"


KindOpt = Annotated[KindChoice | None, typer.Option("--kind", "-k", help="Only this kind of profile.",
                                                                 case_sensitive=False)]

app = typer.Typer(help=HELP, no_args_is_help=True, add_completion=False, rich_markup_mode=None,
                  context_settings={"help_option_names": ["-h", "--help"]})

LIST_HELP = """List the built-in and user profiles with their key figures.

Devices: RAM, budget (RAM − OS reserve), memory bandwidth and efficiency, flash read.
Models: params, layers, heads / KV heads / head_dim, window, KV bytes per token at fp16.
User profiles (--profiles-dir, $KVPLAN_PROFILES) come first; a built-in one they shadow is marked."""


@app.command("list", help=LIST_HELP)
def list_(
    kind: KindOpt = None,
    name: Annotated[str | None, typer.Option("--name", help="Only profiles whose name or an alias contains "
                                             "this text (case-insensitive).")] = None,
    output_format: FormatOpt = OutputFormat.table,
    units: o.UnitsOpt = o.Units.si,
    profiles_dir: o.ProfilesDirOpt = None,
) -> None:
    from kvplan.hub.catalog import user_catalog
    from kvplan.cli import terminal
    from kvplan.errors import ProfileError
    from kvplan.profiles.loading import load_model_file
    from kvplan.profiles.spec import Device, Model
    from kvplan.plan.profile_figures import figures_of
    from kvplan.plan.profile_warnings import profile_warnings
    from kvplan.render import profiles as render
    from kvplan.render.warnings import word

    catalog = user_catalog(profiles_dir, fast=False)
    needle = (name or "").lower()
    entries: list[tuple[dict, object]] = []
    warnings: list[str] = []
    invalid_rows: list[str] = []
    for k in (kind.value,) if kind else ("device", "model"):
        cls = Device if k == "device" else Model
        taken: set[str] = set()  # names and aliases of the profiles listed so far: they win the lookup
        for entry_name, aliases, path, origin in catalog.entries(k):
            names = list(dict.fromkeys([entry_name.lower(), *aliases]))
            shadowed_names = [n for n in names if n in taken]
            taken.update(names)
            if needle and not any(needle in n for n in [entry_name.lower(), *aliases]):
                continue
            try:
                profile = load_model_file(cls, path, what=f"{k} profile")
            except ProfileError as exc:
                entries.append((render.invalid_row_json(k, entry_name, path, origin, exc.problems, shadowed_names),
                                None))
                invalid = f"invalid {k} profile {path} (see 'kvplan profiles validate {path}')"
                terminal.display_note(invalid)  # the table marks the row INVALID; JSON carries it as a warning
                invalid_rows.append(invalid)
                continue
            warnings.extend(word(w) for w in profile_warnings(k, profile))
            entries.append((render.list_row_json(k, profile, path, origin, shadowed_names, figures_of(k, profile)),
                            profile))
    if output_format is OutputFormat.json:
        terminal.display_json(render.list_json([row for row, _ in entries], invalid_rows + warnings))
    else:
        for warning in warnings:
            terminal.display_warning(warning)
        terminal.display_tables(render.list_tables(entries, units.value), output_format.value)


SHOW_HELP = """Show one profile: every field in base units and human units, the figures derived from it
(budget; KV bytes per token, weight size), and where each figure came from (each source once,
wrapped to the terminal's width, or $COLUMNS, or 100 columns in a pipe).
NAME is a built-in name, an alias, a user profile, a YAML path, a Hub id hf:ORG/NAME[@REV][:QUANT]
or 'this' (this machine: its last probe, kept in the cache; 'kvplan profiles probe' refreshes it).

--weights lists a model's weights tensor by tensor in a named format (--weight-type, else the
profile's weight_type): one row per tensor name pattern, shape and storage type, with count,
bytes and share, the total and the bits per weight; --format json lists every tensor. Without a
named format it says what the uniform weight_bits gives."""


@app.command("show", help=SHOW_HELP)
def show(
    name: Annotated[str, typer.Argument(help="Profile name, alias, or YAML path.", show_default=False)],
    kind: KindOpt = None,
    output_format: FormatOpt = OutputFormat.table,
    units: o.UnitsOpt = o.Units.si,
    profiles_dir: o.ProfilesDirOpt = None,
    weights: Annotated[bool, typer.Option("--weights", help="A model's weights tensor by tensor (see above).")] = False,
    weight_type: o.knob_option("weight_type") = None,
    weight_group_size: o.knob_option("weight_group_size") = None,
) -> None:
    from kvplan.hub.catalog import user_catalog
    from kvplan.cli import terminal
    from kvplan.errors import UsageError
    from kvplan.plan.profile_figures import figures_of
    from kvplan.plan.profile_warnings import profile_warnings
    from kvplan.render import profiles as render
    from kvplan.render.warnings import word

    if not weights and (weight_type is not None or weight_group_size is not None):
        flag = "--weight-type" if weight_type is not None else "--weight-group-size"
        raise UsageError(f"{flag} applies to the weight breakdown: add --weights")
    catalog = user_catalog(profiles_dir, fast=False)
    found_kind, resolved = _resolve_any(catalog, name, kind.value if kind else None)
    if weights and found_kind != "model":
        raise UsageError(f"--weights lists a model's tensors; {name!r} is a {found_kind}")
    if resolved.note:
        terminal.display_note(resolved.note)
    warnings = [word(w) for w in profile_warnings(found_kind, resolved.profile)]
    if weights:
        _show_weights(resolved.profile, weight_type, weight_group_size, warnings, output_format, units)
        return
    if output_format is OutputFormat.json:
        terminal.display_json(render.show_json(found_kind, resolved.profile, resolved.path, resolved.origin,
                                             figures_of(found_kind, resolved.profile), warnings))
    else:
        for warning in warnings:
            terminal.display_warning(warning)
        width = None if output_format is OutputFormat.markdown else terminal.text_width()
        tables = render.show_tables(found_kind, resolved.profile, resolved.path, resolved.origin,
                                    figures_of(found_kind, resolved.profile), units.value, width)
        terminal.display_tables(tables, output_format.value)


def _show_weights(model, weight_type, group_size, warnings, output_format, units) -> None:
    from kvplan.cli import terminal
    from kvplan.plan.weight_breakdown import weight_breakdown
    from kvplan.render.profiles import JSON_SCHEMA_VERSION
    from kvplan.render.weight_table import weights_json, weights_tables

    breakdown = weight_breakdown(model, weight_type, group_size)
    if output_format is OutputFormat.json:
        terminal.display_json(weights_json(breakdown, warnings, JSON_SCHEMA_VERSION))
        return
    for warning in warnings:
        terminal.display_warning(warning)
    terminal.display_tables(weights_tables(breakdown, units.value), output_format.value)


def _resolve_any(catalog, ref: str, kind: str | None):
    """Resolve ``ref`` as the given kind, or as whichever kind knows it (a path: by its keys)."""
    from kvplan.profiles.catalog import Catalog, _looks_like_path
    from kvplan.errors import NotFoundError, UsageError

    if kind:
        return kind, getattr(catalog, kind)(ref)
    if _looks_like_path(ref):
        detected = Catalog._kind_of(Path(ref)) if Path(ref).is_file() else None
        if detected is None and Path(ref).is_file():  # as validate: say so, rather than list a model's errors
            raise UsageError(f"{ref}: cannot tell a device from a model by its keys; add --kind device or --kind model")
        return (detected or "model"), getattr(catalog, detected or "model")(ref)
    hits = []
    for k in ("device", "model"):
        try:
            hits.append((k, getattr(catalog, k)(ref)))
        except NotFoundError:
            continue
    if len(hits) > 1:
        raise UsageError(f"{ref!r} names both a device and a model; add --kind device or --kind model")
    if not hits:
        guesses = catalog.suggestions(None, ref)
        hint = f"; did you mean {', '.join(guesses)}?" if guesses else ""
        raise NotFoundError(f"no device or model named {ref!r}{hint} (see 'kvplan profiles list', or pass a YAML path)")
    return hits[0]


VALIDATE_HELP = """Validate profile files: every problem in every file, as file:line: field: message.

The kind (device or model) is told by the keys (ram / memory_bandwidth → device;
layers / attention_heads → model) unless --kind is given.
A valid profile can still carry a warning (a figure that is almost surely a unit left out, a
window llama.cpp ignores), as 'profiles show' prints it: on stderr, and in JSON under
'warnings' (each file's own, and all of them once at the top). Warnings never change the exit
code: 0 when every file is valid, 2 when any is not."""


@app.command("validate", help=VALIDATE_HELP)
def validate(
    files: Annotated[list[Path], typer.Argument(help="Profile YAML files.", show_default=False)],
    kind: KindOpt = None,
    # problems are lines, not a table: no markdown form
    output_format: format_option(TABLE_JSON, help="Output format: table (plain lines) or json.") = OutputFormat.table,
) -> None:
    from kvplan.cli import terminal
    from kvplan.cli.options.fieldnames import cli_message
    from kvplan.cli.terminal import ExitCode
    from kvplan.profiles.check import validate_file
    from kvplan.render.profiles import JSON_SCHEMA_VERSION

    results = [_with_model_problems(validate_file(path, kind.value if kind else None)) for path in files]
    bad = [r for r in results if r.problems]
    found = [_valid_profile_warnings(r) for r in results]
    every = list(dict.fromkeys(w for warnings in found for w in warnings))
    if output_format is OutputFormat.json:
        terminal.display_json({"schema_version": JSON_SCHEMA_VERSION, "warnings": every, "ok": not bad,
                               "files": [{**r.as_json(), "errors": [cli_message(p) for p in r.problems], "warnings": w}
                                         for r, w in zip(results, found)]})
    else:
        for warning in every:
            terminal.display_warning(warning)
        lines = []
        for r in results:
            lines.extend(map(cli_message, r.problems) if r.problems else [f"{r.path}: ok ({r.kind} {r.name})"])
        n_problems = sum(len(r.problems) for r in bad)
        lines.append(f"{len(results)} file{'s' if len(results) != 1 else ''} checked: "
                     + (f"{len(bad)} invalid ({n_problems} problem{'s' if n_problems != 1 else ''})"
                        if bad else "all valid"))
        terminal.display_text("\n".join(lines))
    raise typer.Exit(ExitCode.BAD_INPUT if bad else ExitCode.OK)


def _with_model_problems(result):
    """A model file that validates field by field, with what no command could use (kvplan.plan.profile_warnings)."""
    if result.problems or result.kind != "model":
        return result
    from dataclasses import replace

    from kvplan.files.yamlio import load_yaml
    from kvplan.plan.profile_warnings import model_problems
    from kvplan.profiles.loading import load_model_file
    from kvplan.profiles.spec import Model

    problems = model_problems(load_model_file(Model, Path(result.path), what="model profile"))
    if not problems:
        return result
    doc = load_yaml(result.path)
    return replace(result, problems=[f"{doc.where((name,))}: {name}: {message}" for name, message in problems.items()])


def _valid_profile_warnings(result) -> list[str]:
    """What ``profiles show`` warns about a valid file's profile (an invalid one has its problems instead)."""
    if result.problems:
        return []
    from kvplan.plan.profile_warnings import profile_warnings
    from kvplan.profiles.loading import load_model_file
    from kvplan.profiles.spec import Device, Model
    from kvplan.render.warnings import word

    cls = Device if result.kind == "device" else Model
    return [word(w) for w in
            profile_warnings(result.kind, load_model_file(cls, Path(result.path), what=f"{result.kind} profile"))]


SCHEMA_HELP = """Print the JSON Schema (draft 2020-12) of a device or model profile file.

Point your editor at it for completion and checking, with a first line such as
'# yaml-language-server: $schema=https://…/docs/schema/device.schema.json'."""


@app.command("schema", help=SCHEMA_HELP)
def schema(
    kind: Annotated[KindChoice, typer.Option("--kind", "-k", help="Which kind of profile.",
                                                             case_sensitive=False)],
) -> None:
    from kvplan.cli import terminal
    from kvplan.profiles.jsonschema import profile_json_schema

    terminal.display_json(profile_json_schema(kind.value))


PROBE_HELP = """Write a device profile of the machine kvplan runs on: installed RAM, an OS reserve by rule,
memory bandwidth measured (STREAM copy and triad with numpy threads; the larger, a lower bound),
compute measured (float32 matrix product through numpy's BLAS; compute_efficiency 1.0) and flash
read/write measured (a 512 MiB file in the temp folder, bypassing the page cache), each figure
with its 'sources' entry.

A few seconds; --quick skips the disk (flash read is then the conservative 500 MB/s default).
Check the result against the spec sheet (docs/profiles.md, 'Profiling this machine').
Every run also replaces the probe '--device this' reads from kvplan's cache: run it again to
refresh 'this' (after a hardware change, or to measure the disk too)."""


@app.command("probe", help=PROBE_HELP)
def probe(
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write the profile to this file (whole, "
                                                "atomically) instead of stdout.")] = None,
    quick: Annotated[bool, typer.Option("--quick", help="Skip the disk measurement; flash read is then the "
                                        "conservative default.")] = False,
    name: Annotated[str | None, typer.Option("--name", help="Profile name (default: this-HOSTNAME).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing --output file.")] = False,
) -> None:
    from kvplan.cli import terminal
    from kvplan.errors import UsageError
    from kvplan.files.outfiles import check_writable, is_stdout, write_text_atomic
    from kvplan.hub.catalog import probed_profile
    from kvplan.profiles.field_rules import check_profile_name

    if output is not None:  # refused before a measurement, not after
        if output.exists() and not is_stdout(output) and not force:
            raise UsageError(f"{output} exists; add --force to overwrite it")
        check_writable(output)
    if name is not None:
        check_profile_name(name)
    text, mapping = probed_profile(quick=quick, progress=lambda step: terminal.display_note(f"probe: {step}"),
                                   name=name)
    from kvplan.probe import cache as probe_cache

    if probe_cache.folder() is not None:
        terminal.display_note("probe: kept in kvplan's cache as this machine's profile: '--device this' now uses it")
    if output is None:
        terminal.display_text(text)
    else:
        write_text_atomic(output, text)
        terminal.display_written(f"wrote device profile {mapping['name']!r} to {output} "
                              f"(use it with --device {output})")
