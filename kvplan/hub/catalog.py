"""The catalog the CLI and gate files use: built-in and user profiles, plus ``hf:…`` models and ``this``.

:class:`kvplan.profiles.catalog.Catalog` sits below this layer and knows neither the Hub nor the
probe; :func:`user_catalog` installs both as its external resolvers:

- a model ``hf:ORG/NAME[@REV][:QUANT]`` → :func:`kvplan.hub.resolve.resolve_hub_profile` (cached);
- the device ``this`` → the machine kvplan runs on: its last probe from kvplan's probe cache
  (:mod:`kvplan.probe.cache`, keyed by the machine), else a quick :func:`kvplan.probe.probe_device`
  now, which is then kept there. ``kvplan profiles probe`` replaces the kept probe.

Nothing of the Hub or the probe is imported until such a reference is resolved, so a
``kvplan check`` with named profiles starts as fast as before.
"""

from __future__ import annotations

from pathlib import Path

from kvplan.profiles.catalog import Catalog, Resolved

THIS_DEVICE = "this"
_THIS: dict[str, tuple[str, dict, str]] = {}  # "this" → (YAML text, record, note): resolved once a process


def user_catalog(profiles_dirs: list[str] | None = None, *, fast: bool = True) -> Catalog:
    """A :class:`Catalog` over ``profiles_dirs`` that also resolves ``hf:`` models, local ``*.gguf`` files and the
    device ``this``."""
    return _UserCatalog(profiles_dirs, fast=fast,
                        resolvers={("model", "hf:"): hub_model, ("device", THIS_DEVICE): this_device})


class _UserCatalog(Catalog):
    def model(self, ref: str):
        text = str(ref).strip()
        if text.lower().startswith("ollama:"):
            return ollama_model(text, self.fast)
        if text.lower().endswith(".gguf") and not text.lower().startswith("hf:"):
            return local_gguf_model(text, self.fast)
        if text.lower().endswith(".json") and Path(text).expanduser().is_file():
            return local_hf_config_model(text, self.fast)
        return super().model(ref)


def local_hf_config_model(path_text: str, fast: bool = True) -> Resolved:
    """A Hugging Face ``config.json`` named as a model: imported on the fly, as ``kvplan import hf`` would write it
    (the same reader), so ``--model config.json`` works like ``--model x.gguf`` and ``hf:ORG/NAME``."""
    from kvplan.importers.hf import profile_from_hf_file

    path = Path(path_text).expanduser()
    imported = profile_from_hf_file(path)
    profile = imported.model
    if fast:
        from kvplan.profiles.records import ModelRecord

        profile = ModelRecord(profile.model_dump(mode="json"))
    notes = [n for n in imported.notes if not n.startswith("profile named")]  # import's --name is not an option here
    note = (f"model {path_text}: read as a Hugging Face config.json, profile {profile.name!r} ('kvplan import hf "
            f"{path_text} -o FILE' keeps it)" + "".join(f"; {n}" for n in notes))
    return Resolved(profile, path, "file", note)


def _worded_header(shard: Path):
    from kvplan.hub.gguf_remote import read_local_header
    from kvplan.importers.gguf import worded_damage

    with worded_damage(shard, shard.stat().st_size):
        return read_local_header(shard, what="")


def ollama_model(ref: str, fast: bool = True) -> Resolved:
    """``ollama:NAME[:TAG]`` → the GGUF blob of a model pulled into the local Ollama store (``$OLLAMA_MODELS``, else
    ``~/.ollama/models``, as Ollama reads it), header only, offline; a one-line error when it is not there."""
    import os

    from kvplan.files.ollama_store import manifest_parts, ollama_blob
    from kvplan.importers.common import slug

    name = ref.strip()[len("ollama:"):]
    store = os.environ.get("OLLAMA_MODELS") or "~/.ollama/models"
    blob = ollama_blob(name, store)
    _host, _namespace, model, tag = manifest_parts(name)
    label = slug(f"{model}-{tag}" if tag != "latest" else model)
    resolved = local_gguf_model(str(blob), fast, name=label, shown_as=ref.strip())
    return resolved


def local_gguf_model(path_text: str, fast: bool = True, *, name: str | None = None,
                     shown_as: str | None = None) -> Resolved:
    """A local GGUF file named as a model: its header only (every shard's, for a split model), priced like a Hub
    file — the same parser and conversion as ``hf:…:QUANT``, so no ``gguf`` package is needed. ``name``: the
    profile's name (default: the file's stem); ``shown_as``: what the user named (an ``ollama:`` model)."""
    from kvplan.errors import NotFoundError
    from kvplan.hub.gguf_remote import _SPLIT_RE, header_metadata, profile_mapping_from_gguf, read_local_header
    from kvplan.importers.common import slug
    from kvplan.importers.gguf import check_gguf_start, worded_damage

    path = Path(path_text).expanduser()
    if not path.is_file():
        raise NotFoundError(f"model {path_text!r}: no such GGUF file")
    notes = []
    split = _SPLIT_RE.match(path.name)
    if split:  # the metadata is in the first shard, whichever one was named
        count = int(split.group("count"))
        shards = [path.with_name(f"{split.group('stem')}-{i:05d}-of-{count:05d}.gguf") for i in range(1, count + 1)]
        missing = [s.name for s in shards if not s.is_file()]
        if missing:
            raise NotFoundError(f"model {path_text!r}: split GGUF, shard(s) {', '.join(missing)} not beside it")
        first = shards[0]
        with worded_damage(first, check_gguf_start(first, first)):
            header = read_local_header(first, what="")
        if header.metadata.get("split.tensors.count") != len(header.tensors):
            for shard in shards[1:]:
                check_gguf_start(shard, shard)
            header.tensors[:] = [t for s in shards for t in _worded_header(s).tensors]
            notes.append(f"split GGUF: the headers of all {count} shards were read")
    else:  # the checks and wording of `import gguf` (kvplan.importers.gguf): one parser, one message
        with worded_damage(path_text, check_gguf_start(path, path_text)):
            header = read_local_header(path, what="")
    with worded_damage(path_text, path.stat().st_size):  # tensor sizes: an unknown type surfaces only now
        meta, tensors = header_metadata(header)
    name = name or slug(split.group("stem") if split else path.stem)
    _mapping, imported = profile_mapping_from_gguf(meta, tensors, where=str(path), name=name)
    profile = imported.model
    if fast:
        from kvplan.profiles.records import ModelRecord

        profile = ModelRecord(profile.model_dump(mode="json"))
    size = sum(s.stat().st_size for s in shards) if split else path.stat().st_size
    note = (f"model {shown_as or path_text}: GGUF header read{f' from {path_text}' if shown_as else ''} "
            f"({header.header_bytes:,} of {size:,} bytes; the weights are "
            "priced from the tensor table, never read)" + "".join(f"; {n}" for n in [*notes, *imported.notes]))
    return Resolved(profile, path, "file", note)


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
    """The device ``this``: this machine's last probe from kvplan's probe cache, else a quick probe now (kept)."""
    text, record, note = _this_machine()
    if fast:
        from kvplan.profiles.records import DeviceRecord

        profile = DeviceRecord(record)
    else:
        profile = _validated("device", text, "device 'this' (probed)")
    return Resolved(profile, Path(THIS_DEVICE), "probe", note)


def _this_machine() -> tuple[str, dict, str]:
    """(YAML text, validated record, note) of this machine: from the probe cache, else probed now (once a process)."""
    if THIS_DEVICE in _THIS:
        return _THIS[THIS_DEVICE]
    from kvplan.probe import cache as probe_cache

    kept = probe_cache.load()
    if _usable(kept):
        how = "quick probe: flash read the conservative default" if kept["quick"] else "full probe"
        found = (kept["yaml_text"], kept["record"],
                 f"device {THIS_DEVICE!r}: this machine as probed {kept['probed'][:16].replace('T', ' ')} ({how}), from kvplan's probe "
                 "cache; 'kvplan profiles probe' measures again and replaces it")
    else:
        text, _mapping, device, kept_at = _probe(quick=True)
        record = device.model_dump(mode="json")
        cached = ("kept in kvplan's probe cache for later runs" if kept_at is not None
                  else "KVPLAN_NO_CACHE is set, so every run probes again" if probe_cache.folder() is None
                  else f"not kept: kvplan's cache folder {probe_cache.folder()} cannot be written, so every run "
                       "probes again")
        found = (text, record,
                 f"device {THIS_DEVICE!r}: this machine, probed now (quick: memory bandwidth and compute measured, "
                 f"flash read the conservative default), {cached}; 'kvplan profiles probe' measures the disk too")
    _THIS[THIS_DEVICE] = found
    return found


def _usable(kept) -> bool:
    return (isinstance(kept, dict) and isinstance(kept.get("yaml_text"), str) and isinstance(kept.get("record"), dict)
            and isinstance(kept.get("quick"), bool) and isinstance(kept.get("probed"), str))


def probed_profile(quick: bool = False, progress=None, name: str | None = None, keep: bool = True
                   ) -> tuple[str, dict]:
    """(YAML text, mapping) of a probe of this machine, validated as a device profile.

    ``keep``: it also replaces this machine's entry in kvplan's probe cache (what ``--device this`` reads),
    under the default name whatever ``name`` is.
    """
    text, mapping, _device, _kept_at = _probe(quick, progress, name, keep)
    return text, mapping


def _probe(quick: bool = False, progress=None, name: str | None = None, keep: bool = True):
    """(YAML text, mapping, validated Device, where it was kept or None) of a probe; see :func:`probed_profile`."""
    from kvplan.probe import probe_device

    mapping = probe_device(quick=quick, progress=progress, name=name)
    text = _render_probe(mapping, quick)
    device = _validated("device", text, "probed device profile")
    kept_at = None
    if keep:
        from kvplan.probe import cache as probe_cache
        from kvplan.probe.device import default_name
        from kvplan.probe.system import today

        text_kept, kept = text, device
        if mapping["name"] != default_name():
            text_kept = _render_probe({**mapping, "name": default_name()}, quick)
            kept = _validated("device", text_kept, "probed device profile")
        kept_at = probe_cache.store({"yaml_text": text_kept, "record": kept.model_dump(mode="json"),
                                     "quick": quick, "probed": today()})
        _THIS.pop(THIS_DEVICE, None)
    return text, mapping, device, kept_at


def _render_probe(mapping: dict, quick: bool) -> str:
    from kvplan.importers.common import render_yaml

    header = ["Device profile written by 'kvplan profiles probe" + (" --quick" if quick else "") + "': this machine, "
              "measured where 'sources' says so.",
              "A starting point: check each figure against the spec sheet (docs/profiles.md, 'Profiling this machine')."]
    return render_yaml([(k, v, _comment(k, v)) for k, v in mapping.items()], header)


def _comment(key: str, value) -> str:
    """Sizes are written in exact bytes; the comment gives them in GiB for the reader."""
    if key in ("ram", "os_reserve", "gpu_working_set", "app_memory_limit"):
        from kvplan.units import parse_size_bytes

        return f"{parse_size_bytes(value) / 2**30:.2f} GiB"
    return ""


def _validated(kind: str, text: str, where: str):
    from kvplan.files.yamlio import parse_yaml
    from kvplan.profiles.loading import validate_document
    from kvplan.profiles.spec import Device, Model

    cls = Device if kind == "device" else Model
    return validate_document(cls, parse_yaml(text, where), what=f"{kind} profile")
