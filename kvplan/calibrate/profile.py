"""The calibrated device profile as its YAML will read: the fields of the base device it starts from (units kept),
the fitted figures, and every field's provenance under ``sources``, in the order a device profile shows them."""

from __future__ import annotations

from pathlib import Path

# Device fields in the order the written profile shows them.
ORDER = ("name", "aliases", "description", "platform", "ram", "os_reserve", "memory_bandwidth", "flash_read",
         "flash_write", "bandwidth_efficiency", "decode_latency", "compute", "compute_efficiency",
         "runtime_overhead", "gpu_working_set", "app_memory_limit", "app_memory_limit_increased")
# The unit each device field is held in by a profile record (base units), for a base device with no YAML file.
RECORD_UNITS = {"ram": "B", "os_reserve": "B", "runtime_overhead": "B", "memory_bandwidth": "B/s",
                "flash_read": "B/s", "flash_write": "B/s", "compute": "FLOP/s", "decode_latency": "s",
                "gpu_working_set": "B", "app_memory_limit": "B", "app_memory_limit_increased": "B"}


def base_fields(catalog, ref: str | None, notes: list[str]) -> tuple[dict, dict, str | None]:
    """The base device's fields as its YAML writes them (units kept), its sources, and its name."""
    if ref is None:
        return {}, {}, None
    resolved = catalog.device(ref)
    if resolved.note:
        notes.append(resolved.note)
    if resolved.origin == "probe":  # 'this': a probe held as a record in base units, with no YAML file to copy
        data = {k: with_unit(k, v) for k, v in resolved.profile.model_dump().items() if v is not None}
    else:
        from kvplan.files.yamlio import load_yaml

        data = dict(load_yaml(resolved.path).data)
    sources = dict(data.pop("sources", None) or {})
    for key in ("name", "aliases", "description"):
        data.pop(key, None)
    return data, sources, resolved.profile.name


def with_unit(field: str, value):
    """A record's base-unit figure as profile text (``8589934592 B``); a bare number there would be refused."""
    unit = RECORD_UNITS.get(field)
    if unit is None or isinstance(value, str):
        return value
    number = int(value) if float(value).is_integer() else value
    return f"{number!r} {unit}"


def default_name(output: str, base_name: str | None) -> str:
    """The profile's name when none is given: the output file's stem when it is a valid name."""
    import re

    from kvplan.profiles.spec import SLUG_PATTERN

    stem = Path(output).stem.lower()
    if re.match(SLUG_PATTERN, stem):
        return stem
    return f"{base_name}-calibrated" if base_name else "calibrated-device"


def profile_fields(calibration, base: dict, base_sources: dict, base_name: str | None, bench_files: list[str],
                   profile_name: str, base_how: str = "", given: set[str] = frozenset()) -> tuple[dict, dict]:
    """The profile's fields (in :data:`ORDER`) and their ``sources``: fitted figures from ``calibration``, the rest
    from the base device (``base``, already holding the fields ``given`` to the command)."""
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
    for key in ORDER:
        if key in fitted:
            sources[key] = fitted[key]
        elif key in given and key in device:  # typed to kvplan calibrate, not copied from the base
            sources[key] = base_sources[key]
        elif key in base_sources and key in device:
            sources[key] = base_sources[key] + (f" (from {base_name}{base_how})" if base_name else "")
    ordered = {k: device[k] for k in ORDER if k in device}
    ordered.update({k: v for k, v in device.items() if k not in ordered})
    return ordered, sources
