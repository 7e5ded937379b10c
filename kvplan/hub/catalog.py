"""The catalog the CLI and gate files use: built-in and user profiles, plus ``hf:…`` models and ``this``.

:class:`kvplan.profiles.catalog.Catalog` sits below this layer and knows neither the Hub nor the
probe; :func:`user_catalog` installs both as its external resolvers:

- a model ``hf:ORG/NAME[@REV][:QUANT]`` → :func:`kvplan.hub.resolve.resolve_hub_profile` (cached);
- the device ``this`` → a quick :func:`kvplan.probe.probe_device` of the machine kvplan runs on,
  once per process.

Nothing of the Hub or the probe is imported until such a reference is resolved, so a
``kvplan check`` with named profiles starts as fast as before.
"""

from __future__ import annotations

from pathlib import Path

from kvplan.profiles.catalog import Catalog, Resolved

THIS_DEVICE = "this"
_PROBED: dict[bool, tuple[str, dict]] = {}  # quick → (YAML text, mapping): one probe per process


def user_catalog(profiles_dirs: list[str] | None = None, *, fast: bool = True) -> Catalog:
    """A :class:`Catalog` over ``profiles_dirs`` that also resolves ``hf:`` models and the device ``this``."""
    return Catalog(profiles_dirs, fast=fast,
                   resolvers={("model", "hf:"): hub_model, ("device", THIS_DEVICE): this_device})


def hub_model(ref: str, fast: bool = True) -> Resolved:
    """``hf:…`` → a resolved model (a record with ``fast``, else the validated pydantic model)."""
    from kvplan.hub.resolve import resolve_hub_profile

    found = resolve_hub_profile(ref.strip())
    if fast:
        from kvplan.profiles.records import ModelRecord

        profile = ModelRecord(found.record)
    else:
        profile = _validated("model", found.yaml_text, found.origin)
    where = found.origin + (" (kvplan's Hub cache)" if found.from_cache else "")
    note = f"model {ref.strip()}: {where}" + (f"; {'; '.join(found.notes)}" if found.notes and not found.from_cache else "")
    return Resolved(profile, Path(found.origin), "hub", note)


def this_device(ref: str = THIS_DEVICE, fast: bool = True) -> Resolved:
    """The device ``this``: a quick probe of this machine (memory bandwidth measured, flash the default)."""
    text, _mapping = probed_profile(quick=True)
    profile = _validated("device", text, "device 'this' (probed)")
    if fast:
        from kvplan.profiles.records import DeviceRecord

        profile = DeviceRecord(profile.model_dump(mode="json"))
    note = (f"device {THIS_DEVICE!r}: this machine, probed now (quick: memory bandwidth measured, flash read the "
            "conservative default); 'kvplan profiles probe -o me.yaml' writes a full profile to keep")
    return Resolved(profile, Path(THIS_DEVICE), "probe", note)


def probed_profile(quick: bool = False, progress=None, name: str | None = None) -> tuple[str, dict]:
    """(YAML text, mapping) of a probe of this machine, validated as a device profile (a quick unnamed probe
    is done once per process)."""
    key = quick and name is None
    if key and True in _PROBED:
        return _PROBED[True]
    from kvplan.importers.common import render_yaml
    from kvplan.probe import probe_device

    mapping = probe_device(quick=quick, progress=progress, name=name)
    header = ["Device profile written by 'kvplan profiles probe" + (" --quick" if quick else "") + "': this machine, "
              "measured where 'sources' says so.",
              "A starting point: check each figure against the spec sheet (docs/profiles.md, 'Profiling this machine')."]
    text = render_yaml([(k, v, "") for k, v in mapping.items()], header)
    _validated("device", text, "probed device profile")
    if key:
        _PROBED[True] = (text, mapping)
    return text, mapping


def _validated(kind: str, text: str, where: str):
    from kvplan.files.yamlio import parse_yaml
    from kvplan.profiles.loading import validate_document
    from kvplan.profiles.spec import Device, Model

    cls = Device if kind == "device" else Model
    return validate_document(cls, parse_yaml(text, where), what=f"{kind} profile")
