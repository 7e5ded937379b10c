"""What ``kvplan profiles list`` and ``kvplan profiles show`` print: key figures, JSON and tables.

Everything here takes validated profiles and returns plain data or neutral tables; the
figures derived from a profile (budget, KV bytes per token, weight size) come from the
engine through :mod:`kvplan.plan`, never from a second formula.
"""

from __future__ import annotations

from pathlib import Path

from kvplan.profiles.spec import Device, Model
from kvplan.render import fmt
from kvplan.render.tables import Table

# How `profiles show` prints a field for humans (fields not named here get no human column).
_HUMAN = {"ram": "size", "os_reserve": "size", "memory_bandwidth": "rate", "flash_read": "rate",
          "flash_write": "rate", "bandwidth_efficiency": "fraction", "compute": "flops", "runtime_overhead": "size",
          "gpu_working_set": "size", "gpu_memory": "size", "gpu_memory_bandwidth": "rate",
          "app_memory_limit": "size", "app_memory_limit_increased": "size",
          "params": "count", "max_context": "tokens", "sliding_window": "tokens",
          "weights": "size"}
_NOT_FIGURES = {"name", "aliases", "description", "sources"}

JSON_SCHEMA_VERSION = 1

# JSON keys of the figures a YAML field holds: the unit in the name, as `check --format json` says them
# (memory.ram_bytes, memory.os_reserve_bytes, memory.weights_bytes). docs/cli.md lists these renames.
JSON_NAMES = {"ram": "ram_bytes", "os_reserve": "os_reserve_bytes",
              "memory_bandwidth": "memory_bandwidth_bytes_per_s", "flash_read": "flash_read_bytes_per_s",
              "flash_write": "flash_write_bytes_per_s", "runtime_overhead": "runtime_overhead_bytes",
              "gpu_working_set": "gpu_working_set_bytes", "gpu_memory": "gpu_memory_bytes",
              "gpu_memory_bandwidth": "gpu_memory_bandwidth_bytes_per_s",
              "app_memory_limit": "app_memory_limit_bytes", "app_memory_limit_increased": "app_memory_limit_increased_bytes",
              "compute": "compute_flops_per_s", "decode_latency": "decode_latency_s", "weights": "weights_bytes"}


def _json_keys(mapping: dict) -> dict:
    return {JSON_NAMES.get(k, k): v for k, v in mapping.items()}


def list_json(rows: list[dict], warnings: list[str]) -> dict:
    """The ``profiles list --format json`` document."""
    return {"schema_version": JSON_SCHEMA_VERSION, "warnings": list(warnings), "profiles": rows}


def list_row_json(kind: str, profile, path: Path, origin: str, shadowed_names: list[str], figures: dict) -> dict:
    """One ``profiles list`` entry; ``figures``: :func:`kvplan.plan.profile_figures.figures_of` the profile;
    ``shadowed_names``: its names and aliases that find a profile listed before it instead."""
    return {"kind": kind, "name": profile.name, "aliases": list(profile.aliases), "origin": origin,
            "shadowed": bool(shadowed_names), "shadowed_names": list(shadowed_names), "path": str(path),
            **_json_keys(figures)}


def invalid_row_json(kind: str, name: str, path: Path, origin: str, problems: list[str],
                     shadowed_names: list[str] = ()) -> dict:
    return {"kind": kind, "name": name, "aliases": [], "origin": origin, "shadowed": bool(shadowed_names),
            "shadowed_names": list(shadowed_names), "path": str(path), "errors": problems}


def _heads(m: Model) -> str:
    kv = m.kv_heads if isinstance(m.kv_heads, int) else f"{min(m.kv_heads)}-{max(m.kv_heads)}"
    dims = str(m.head_dim) if m.v_dim == m.head_dim else f"{m.head_dim}/{m.v_dim}"
    mla = f" MLA {m.mla.kv_lora_rank}+{m.mla.qk_rope_head_dim}" if m.mla else ""
    return f"{m.attention_heads}/{kv}/{dims}{mla}"


def _window(m: Model) -> str:
    chunk = getattr(m, "attention_chunk_size", None)
    if not m.sliding_window and not chunk:
        return "—"
    pattern = m.sliding_window_pattern
    shown = pattern if isinstance(pattern, str) else f"{len(pattern)} layers"
    return f"chunks of {chunk:,} ({shown})" if chunk else f"{m.sliding_window:,} ({shown})"


def _origin(row: dict) -> str:
    hidden = row.get("shadowed_names") or []
    if not hidden:
        return row["origin"]
    if row["name"].lower() in hidden:  # not reachable by its own name
        return row["origin"] + " (shadowed)"
    return row["origin"] + f" (shadowed: {', '.join(hidden)})"  # only some aliases find another profile


def list_tables(entries: list[tuple[dict, object]], units: str = "si") -> list[Table]:
    """Tables of ``(row JSON, profile or None when invalid)`` entries, devices then models."""
    tables = []
    devices = [r for r, _ in entries if r["kind"] == "device"]
    models = [(r, p) for r, p in entries if r["kind"] == "model"]
    if devices:
        t = Table(f"devices ({len(devices)})", ["name", "aliases", "RAM", "budget", "bandwidth", "efficiency",
                                                "flash read", "origin"])
        t.align = ["left", "left", "right", "right", "right", "right", "right", "left"]
        for r in devices:
            if "errors" in r:
                t.add(r["name"], "", "", "", "", "", "", f"{r['origin']}: INVALID")
                continue
            t.add(r["name"], ", ".join(r["aliases"]), fmt.bytes_(r["ram_bytes"], units),
                  fmt.bytes_(r["budget_bytes"], units), fmt.rate(r["memory_bandwidth_bytes_per_s"], units),
                  f"{r['bandwidth_efficiency']:g}", fmt.rate(r["flash_read_bytes_per_s"], units), _origin(r))
        tables.append(t)
    if models:
        t = Table(f"models ({len(models)})", ["name", "aliases", "params", "layers", "heads/kv/head_dim",
                                              "window", "KV B/token fp16", "origin"])
        t.align = ["left", "left", "right", "right", "right", "right", "right", "left"]
        for r, m in models:
            if "errors" in r:
                t.add(r["name"], "", "", "", "", "", "", f"{r['origin']}: INVALID")
                continue
            t.add(r["name"], ", ".join(r["aliases"]), f"{r['params'] / 1e9:.2f}B", str(r["layers"]), _heads(m),
                  _window(m), f"{r['kv_bytes_per_token_fp16']:,}", _origin(r))
        tables.append(t)
    return tables


def _human(value, how: str | None, units: str) -> str:
    if value is None:
        return "—"
    if how == "size":
        return fmt.bytes_(value, units)
    if how == "rate":
        return fmt.rate(value, units)
    if how == "flops":
        return f"{value / 1e12:.2f} TFLOP/s"
    if how == "count":
        return f"{value / 1e9:.3f}B"
    if how == "tokens":
        return f"{value:,} tokens"
    if how == "fraction":
        return fmt.percent(value)
    return ""


def _base(value) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        return f"{int(value):,}"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, list):
        return "[" + ", ".join(str(v) for v in value) + "]"
    if hasattr(value, "model_dump") and "mel_bins" in value.model_dump():  # an audio encoder: one line
        d = value.model_dump()
        stack = f", {d['stack_factor']} frames a token" if d.get("stack_factor") else ""
        return (f"{d['kind']}: Whisper encoder {d['layers']}×{d['hidden_size']} ({d['heads']} heads, MLP "
                f"{d['intermediate_size']}), {d['mel_bins']} mel bins{stack} → {d['projection_dim']}, {d['weight_type']}")
    if hasattr(value, "model_dump") and "projection_dim" in value.model_dump():  # a vision encoder: one line
        d = value.model_dump()
        return (f"{d['kind']}: ViT {d['layers']}×{d['hidden_size']} ({d['heads']} heads, MLP {d['intermediate_size']}), "
                f"patch {d['patch_size']}, {d['image_size']} px → {d['projection_dim']}, {d['weight_type']}")
    if hasattr(value, "model_dump"):
        return ", ".join(f"{k} {v}" for k, v in value.model_dump().items() if v is not None and v != [])
    return str(value)


# fields only Gemma 3n sets; a profile that leaves them at their default shows no key or row for them
_GEMMA3N_FIELDS = ("shared_kv_layers", "hidden_size_per_layer_input", "vocab_size_per_layer_input")


def schedule_json(model) -> list[dict]:
    """The model's schedule as ``profiles show --format json`` writes it: one entry per run of identical layers,
    its 0-based ``first_layer``/``last_layer``, ``layers`` (how many), ``kind`` and the kind's own figures
    (attention: ``kv_heads``, ``k_head_dim``, ``v_head_dim``, ``window_tokens``, ``latent_rank``, ``chunked``;
    state: ``mixer``, ``conv_channels``, ``conv_kernel_tokens``, ``recurrent_values``; shared KV: ``source_layer``,
    ``window_tokens``; parallel: ``attention`` and ``state``, each an object of its kind's figures)."""

    def figures(layer) -> dict:  # a parallel layer: its attention's and its state's figures, each under its kind
        if layer.kind == "parallel":
            return {"attention": layer.attention.as_dict(), "state": layer.state.as_dict()}
        return layer.as_dict()

    return [{"first_layer": first, "last_layer": last, "layers": last - first + 1, "kind": layer.kind,
             **figures(layer)} for first, last, layer in model.schedule.spans()]


def show_json(kind: str, profile, path: Path, origin: str, figures: dict, warnings: list[str]) -> dict:
    """Every field in base units (figures named as ``check`` names them, :data:`JSON_NAMES`), a model's
    ``schedule`` (:func:`schedule_json`), the figures derived from them (one equal to the field of the same key
    is not repeated), the sources by YAML field."""
    fields = _json_keys(profile.model_dump(mode="json"))
    if fields.get("encoder", 0) is None:  # only multimodal models have a vision encoder: no key for the others
        del fields["encoder"]
    elif isinstance(fields.get("encoder"), dict):  # the fields of its own kind only
        fields["encoder"] = {k: v for k, v in fields["encoder"].items() if v is not None}
    if fields.get("audio_encoder", 0) is None:  # only speech-in models have an audio encoder
        del fields["audio_encoder"]
    elif isinstance(fields.get("audio_encoder"), dict):
        fields["audio_encoder"] = {k: v for k, v in fields["audio_encoder"].items() if v is not None}
    if fields.get("state", 0) is None:  # only hybrid models have state layers: no key for the others
        del fields["state"]
    elif isinstance(fields.get("state"), dict):  # the fields of its own mixer only
        fields["state"] = {k: v for k, v in fields["state"].items() if v is not None}
    for key in _GEMMA3N_FIELDS:  # only Gemma 3n has shared-KV layers and per-layer embeddings
        if key in fields and not fields[key]:
            del fields[key]
    sources = fields.pop("sources")
    derived = {k: v for k, v in _json_keys(figures).items() if k not in fields or fields[k] != v}
    schedule = {"schedule": schedule_json(profile)} if kind == "model" else {}
    return {"schema_version": JSON_SCHEMA_VERSION, "warnings": list(warnings), "kind": kind, "origin": origin,
            "path": str(path), **fields, **schedule, "derived": derived, "sources": sources}


def _state_words(layer) -> str:
    recurrent = f" + recurrent {layer.recurrent_values:,} values" if layer.recurrent_values else ""
    return (f"state ({layer.mixer}): conv {layer.conv_channels:,} channels × {layer.conv_kernel_tokens} "
            f"taps{recurrent} per sequence")


def schedule_table(model) -> Table:
    """The model's layers as runs of identical layers: which layers, their kind, K/V heads, head dims, window."""
    t = Table("schedule", ["layers", "kind", "K/V heads", "K/V head dims", "window"])
    t.align = ["left", "left", "right", "right", "right"]
    for first, last, layer in model.schedule.spans():
        span = str(first) if first == last else f"{first}–{last}"
        if layer.kind == "state":
            t.add(span, _state_words(layer), "", "", "")
            continue
        if layer.kind == "parallel":  # attention and a state side by side: the attention's figures, both kinds named
            a = layer.attention
            window = "global" if a.window_tokens is None else \
                f"chunks of {a.window_tokens:,} tokens" if a.chunked else f"{a.window_tokens:,} tokens"
            t.add(span, f"attention + {_state_words(layer.state)}", str(a.kv_heads),
                  f"{a.k_head_dim} / {a.v_head_dim or '—'}", window)
            continue
        if layer.kind == "shared_kv":  # no cache of its own: it attends through its source's
            window = "global" if layer.window_tokens is None else f"{layer.window_tokens:,} tokens"
            t.add(span, f"shared KV (reads layer {layer.source_layer}'s cache, holds none)", "", "", window)
            continue
        if layer.kind != "attention":  # kinds with no figures of their own (feed-forward only)
            t.add(span, layer.kind, "", "", "")
            continue
        kind = "attention" if layer.latent_rank is None else \
            f"attention, MLA latent {layer.latent_rank} + RoPE key {layer.k_head_dim - layer.latent_rank}"
        dims = f"{layer.k_head_dim} / {layer.v_head_dim or '—'}"
        window = "global" if layer.window_tokens is None else \
                f"chunks of {layer.window_tokens:,} tokens" if layer.chunked else f"{layer.window_tokens:,} tokens"
        t.add(span, kind, str(layer.kv_heads), dims, window)
    return t


def show_tables(kind: str, profile, path: Path, origin: str, figures: dict, units: str = "si",
                width: int | None = None) -> list[Table]:
    """The fields, the derived figures, and each source once, wrapped to ``width`` columns (None: unwrapped)."""
    spec = [(n, _HUMAN.get(n)) for n in type(profile).model_fields if n not in _NOT_FIGURES]
    title = f"{kind} {profile.name}" + (f" ({', '.join(profile.aliases)})" if profile.aliases else "")
    t = Table(title, ["field", "value", "human", "source"])
    t.align = ["left", "right", "right", "left"]
    defaults = type(profile).model_fields
    for name, how in spec:
        value = getattr(profile, name)
        if name not in profile.model_fields_set and value == defaults[name].default and value is None:
            continue
        if name in _GEMMA3N_FIELDS and not value:  # the Gemma 3n fields, unset: no row for other models
            continue
        source = "see sources" if name in profile.sources else ("(default)" if name not in profile.model_fields_set
                                                               else "")
        t.add(name, _base(value), _human(value, how, units), source)
    if profile.description:
        t.notes.append(profile.description)
    t.notes.append(f"{origin} profile: {path}")
    d = Table("derived", ["figure", "value", "human"])
    f = figures
    if kind == "device":
        capped = f["budget_bytes"] < profile.ram - profile.os_reserve
        d.add("budget = ram − os_reserve" if not capped else "budget = the per-app memory limit (< ram − os_reserve)",
              f"{f['budget_bytes']:,} B", fmt.bytes_(f["budget_bytes"], units))
        d.add("effective bandwidth = bandwidth × efficiency", f"{f['effective_bandwidth_bytes_per_s']:,.0f} B/s",
              fmt.rate(f["effective_bandwidth_bytes_per_s"], units))
    else:
        d.add("KV bytes per token at fp16", f"{f['kv_bytes_per_token_fp16']:,} B",
              fmt.bytes_(f["kv_bytes_per_token_fp16"], units))
        fmt_name = f["k_format"] if f["k_format"] == f["v_format"] else f"K {f['k_format']} / V {f['v_format']}"
        d.add(f"KV bytes per token at the profile's {fmt_name}", f"{f['kv_bytes_per_token']:,} B",
              fmt.bytes_(f["kv_bytes_per_token"], units))
        d.add("layers global / windowed", f"{f['global_layers']} / {f['windowed_layers']}", "")
        d.add(f"weights at {profile.weight_bits:g} bits", f"{f['weights_bytes']:,} B",
              fmt.bytes_(f["weights_bytes"], units))
        d.add("weights read per decode step", f"{f['weights_read_bytes']:,} B",
              fmt.bytes_(f["weights_read_bytes"], units))
    tables = [t, schedule_table(profile), d] if kind == "model" else [t, d]
    return tables + [sources_table(profile, width)] if profile.sources else tables


def sources_table(profile, width: int | None) -> Table:
    """Each source once, field order first: long text wrapped into continuation rows of at most ``width``
    columns in all (never inside a word or a URL), so a pipe or a log reads it without 700-character lines."""
    import textwrap

    order = [n for n in type(profile).model_fields if n in profile.sources]
    keys = order + sorted(set(profile.sources) - set(order))
    key_width = max(len("field"), *(len(k) for k in keys))
    text_width = None if width is None else max(width - key_width - 2, 30)
    table = Table("sources", ["field", "source"])
    table.align = ["left", "left"]
    for key in keys:
        text = " ".join(str(profile.sources[key]).split())
        lines = (textwrap.wrap(text, text_width, break_long_words=False, break_on_hyphens=False)
                 if text_width else [text]) or [""]
        table.add(key, lines[0])
        for line in lines[1:]:
            table.add("", line)
    return table
