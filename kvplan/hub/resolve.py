"""``hf:ORG/NAME[@REVISION][:QUANT_OR_FILENAME]`` → a model profile, cached.

- A transformers repository: its ``config.json`` through the Hugging Face cache, converted by
  kvplan's own importer (:func:`kvplan.importers.hf.profile_from_hf_config`); the parameter count
  is then replaced by the exact one from the safetensors metadata when the repository has it.
- A GGUF repository (``:Q4_K_M``, ``:file.gguf``, or a repository with no config.json and one GGUF
  model): the file's header by HTTP range requests, converted by the GGUF importer's
  :func:`kvplan.importers.gguf.profile_from_gguf_metadata`.

The profile is cached by kvplan under ``$KVPLAN_CACHE_DIR/hub`` (default ``~/.cache/kvplan/hub``;
``KVPLAN_NO_CACHE=1`` turns it off), keyed by the endpoint, repository, commit, file and kvplan's
importer code. With ``HF_HUB_OFFLINE=1`` a reference resolved before is answered from there
without importing huggingface_hub; so is a reference pinned to a full commit hash, online or not.
Online, one model_info request finds the commit the reference points to now, so a new commit on
``main`` is noticed.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from kvplan.errors import NotFoundError
from kvplan.hub.spec import HubSpec, parse_hub_spec

CACHE_FORMAT = 1
_COMMIT_RE = re.compile(r"^[0-9a-f]{40}$")
# Code whose change changes the profile a Hub reference gives: entries are keyed by its bytes.
_CODE = ("hub/*.py", "importers/*.py", "profiles/*.py", "profiles.py", "units.py", "engine/ggml_types.py")


@dataclass(frozen=True)
class HubProfile:
    """A model profile resolved from the Hub.

    ``mapping`` is the profile as its YAML file would hold it (``yaml_text`` read back);
    ``record`` its validated fields in base units (``Model.model_dump(mode="json")``), which
    ``kvplan.profiles.records.ModelRecord(record)`` turns into a model without pydantic, as the profile cache does.
    """

    mapping: dict
    origin: str
    record: dict
    yaml_text: str
    commit: str
    notes: tuple[str, ...] = field(default=())
    from_cache: bool = False
    cache_file: str = ""  # the file the entry is keyed by (an offline build is keyed apart: it may lack exact params)


def resolve_hub_model(spec_text: str, *, token=None) -> tuple[dict, str]:
    """``(profile mapping, origin)`` of a Hub reference; see :func:`resolve_hub_profile`."""
    found = resolve_hub_profile(spec_text, token=token)
    return found.mapping, found.origin


def resolve_hub_profile(spec_text: str | HubSpec, *, token=None, use_cache: bool = True) -> HubProfile:
    """Resolve ``hf:…`` to a validated model profile (module docstring). Errors are one-line KvplanErrors."""
    from kvplan.hub.fetch import offline

    spec = spec_text if isinstance(spec_text, HubSpec) else parse_hub_spec(spec_text)
    cache = _Cache() if use_cache else None
    pinned = spec.revision is not None and _COMMIT_RE.match(spec.revision) is not None
    if cache and (offline() or pinned):
        hit = cache.lookup(spec)
        if hit is not None:
            return hit
    if offline():
        found = _resolve_offline(spec)
    else:
        found = _resolve_online(spec, cache, token)
    if cache and not found.from_cache:
        cache.store(spec, found)
    return found


# --- online and offline resolution -----------------------------------------------------------------

def _resolve_online(spec: HubSpec, cache: _Cache | None, token) -> HubProfile:
    from kvplan.hub.fetch import CONFIG_FILE, repo_snapshot
    from kvplan.hub.gguf_remote import gguf_files, pick_gguf

    snap = repo_snapshot(spec.repo_id, spec.revision, token=token, label=str(spec))
    choice = None
    if spec.is_gguf or (CONFIG_FILE not in snap.files and gguf_files(list(snap.files))):
        choice = pick_gguf(list(snap.files), spec.repo_id, quant=spec.quant, filename=spec.filename)
        file_key = choice.first
    elif CONFIG_FILE not in snap.files:
        raise NotFoundError(f"hf:{spec.repo_id}: the repository has neither config.json nor .gguf files "
                            f"({len(snap.files)} files)")
    else:
        file_key = CONFIG_FILE
    if cache:
        hit = cache.read_entry(spec.repo_id, snap.commit, file_key)
        if hit is not None:
            cache.point(spec, hit)
            return hit
    if choice is not None:
        from kvplan.hub.mmproj import pick_mmproj

        return _from_gguf(spec, snap.commit, choice, token, mmproj=pick_mmproj(snap.files))
    return _from_config(spec, snap, token)


def _resolve_offline(spec: HubSpec) -> HubProfile:
    from kvplan.hub.fetch import HubAccessError, cached_index_params, download_config

    if spec.is_gguf:
        raise HubAccessError(f"{spec}: GGUF headers are read from the Hub by range and this one is not in "
                             "kvplan's cache, and HF_HUB_OFFLINE is set — run once online (or unset HF_HUB_OFFLINE)")
    config, _path, commit = download_config(spec.repo_id, spec.revision, label=str(spec))
    params = cached_index_params(spec.repo_id, commit, config)
    return _profile_from_config(spec, config, commit, params,
                                ["offline (HF_HUB_OFFLINE): config.json from the Hugging Face cache"])


def _from_config(spec: HubSpec, snap, token) -> HubProfile:
    from kvplan.hub.fetch import cache_index, download_config, safetensors_params

    # Asked by the revision as written, so that huggingface_hub records refs/<revision> and the standard
    # cache alone answers a later HF_HUB_OFFLINE=1 call (with KVPLAN_NO_CACHE, or from another tool).
    config, _path, commit = download_config(spec.repo_id, spec.revision, token=token, label=str(spec))
    if commit != snap.commit:  # the branch moved between model_info and the download: keep one commit
        config, _path, _commit = download_config(spec.repo_id, snap.commit, token=token, label=str(spec))
    params = safetensors_params(snap, token=token, label=str(spec))
    cache_index(snap, token=token, label=str(spec))  # for an offline call that kvplan's cache cannot answer
    return _profile_from_config(spec, config, snap.commit, params, [])


def _url(repo_id: str, commit: str, filename: str) -> str:
    from kvplan.hub.fetch import endpoint

    return f"{endpoint()}/{repo_id}/blob/{commit}/{filename}"


def _profile_from_config(spec: HubSpec, config: dict, commit: str, params, notes: list[str]) -> HubProfile:
    import yaml

    from kvplan.files.yamlio import FAST_LOADER
    from kvplan.importers.common import slug
    from kvplan.importers.hf import profile_from_hf_config

    where = _url(spec.repo_id, commit, "config.json")
    imported = profile_from_hf_config(config, name=slug(spec.repo_id), where=where, label=str(spec))
    mapping = yaml.load(imported.yaml_text, Loader=FAST_LOADER)
    notes = [*notes, *imported.notes]
    mapping["description"] = f"{spec.repo_id} from the Hugging Face Hub (config.json, commit {commit[:12]})"
    sources = dict(mapping.get("sources") or {})
    sources["config"] = f"{where} (config.json at commit {commit}, read by kvplan)"
    if params is not None and params.total > 0:
        derived = int(mapping["params"])
        active = mapping.get("params_active")
        if active is not None and int(active) > params.total:
            notes.append(f"safetensors count {params.total:,} is below the derived active count {active:,}: "
                         "kept the count derived from the config")
        else:
            mapping["params"] = params.total
            sources["params"] = (f"{params.how}; the config's shapes give {derived:,}"
                                 + (f" ({sources['params']})" if sources.get("params") else ""))
            if params.total != derived:
                notes.append(f"params {params.total:,} from the safetensors metadata, not the {derived:,} derived "
                             "from config.json (a multimodal checkpoint also holds its vision tower)")
    else:
        notes.append("no safetensors metadata: params derived from config.json")
    mapping["sources"] = sources
    file_key = "config.json" + ("#offline" if notes and notes[0].startswith("offline") else "")
    return _finished(spec, mapping, commit, file_key, notes,
                     [f"Model profile resolved by kvplan from hf:{spec.repo_id} (commit {commit}).",
                      "Check every figure against the model card."])


def _from_gguf(spec: HubSpec, commit: str, choice, token, mmproj: str | None = None) -> HubProfile:
    from kvplan.hub.gguf_remote import header_metadata, profile_mapping_from_gguf, read_remote_header
    from kvplan.importers.common import slug

    header, stats, notes = read_remote_header(spec.repo_id, commit, choice, token=token, label=str(spec))
    meta, tensors = header_metadata(header)
    where = _url(spec.repo_id, commit, choice.first)
    mapping, imported = profile_mapping_from_gguf(meta, tensors, where=where,
                                                  name=slug(choice.stem.rsplit("/", 1)[-1]))
    notes = [*notes, *imported.notes]
    mapping["description"] = (f"{spec.repo_id} from the Hugging Face Hub ({choice.first}, GGUF "
                              f"{meta.get('general.architecture')}, commit {commit[:12]})")
    sources = dict(mapping.get("sources") or {})
    size = sum(stats.file_sizes.values())
    sources["config"] = (f"{where} (GGUF header: {header.header_bytes:,} bytes of a {size:,}-byte file, read by "
                         f"{stats.requests} range request(s), {stats.bytes_read:,} bytes in all; the tensor data "
                         "was not downloaded)")
    if mmproj is not None:  # read only when images or audio are priced (kvplan.plan.scenario)
        sources["mmproj"] = (f"hf:{spec.repo_id}@{commit}/{mmproj} (the repository's projector file: its header is "
                             "read when images or audio are priced)")
    mapping["sources"] = sources
    return _finished(spec, mapping, commit, choice.first, notes,
                     [f"Model profile resolved by kvplan from hf:{spec.repo_id} {choice.first} (commit {commit}).",
                      "Check every figure against the model card."])


def _finished(spec: HubSpec, mapping: dict, commit: str, file_key: str, notes: list[str],
              header: list[str]) -> HubProfile:
    """Render the (edited) mapping as YAML and validate it as a model, as the importers do."""
    import yaml

    from kvplan.files.yamlio import FAST_LOADER
    from kvplan.importers.common import finish

    imported = finish([(k, v, "") for k, v in mapping.items()], header, str(spec), notes)  # errors: as typed
    origin = f"hf:{spec.repo_id}@{commit}/{file_key.split('#')[0]}"
    return HubProfile(yaml.load(imported.yaml_text, Loader=FAST_LOADER), origin, imported.model.model_dump(mode="json"),
                      imported.yaml_text, commit, tuple(notes), cache_file=file_key)


# --- kvplan's cache of resolved profiles ----------------------------------------------------------------

@lru_cache(maxsize=1)
def _fingerprint() -> str:
    digest = hashlib.blake2b(str(CACHE_FORMAT).encode(), digest_size=12)
    here = Path(__file__).resolve().parent.parent
    for pattern in _CODE:
        for path in sorted(here.glob(pattern)):
            try:
                digest.update(path.name.encode() + path.read_bytes())
            except OSError:
                digest.update(b"?")
    return digest.hexdigest()


def cache_dir() -> Path | None:
    """``$KVPLAN_CACHE_DIR/hub`` (default ``$XDG_CACHE_HOME/kvplan/hub`` or ``~/.cache/kvplan/hub``), the rule
    of kvplan's profile cache; None when ``KVPLAN_NO_CACHE`` is set."""
    from kvplan.profiles import cache as profile_cache  # one rule for kvplan's cache folder

    return profile_cache.cache_dir() / "hub" if profile_cache.enabled() else None


def _endpoint_no_import() -> str:
    return os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")


class _Cache:
    """Entries ``entry-*.json`` keyed by (endpoint, repo, commit, file, code); pointers ``ref-*.json`` from
    what was asked (repo, revision as written, selector) to the entry last resolved for it."""

    def __init__(self):
        self.folder = cache_dir()

    def __bool__(self) -> bool:
        return self.folder is not None

    @staticmethod
    def _name(kind: str, parts: list) -> str:
        return f"{kind}-{hashlib.blake2b(json.dumps(parts).encode(), digest_size=16).hexdigest()}.json"

    def _entry_key(self, repo_id: str, commit: str, file_key: str) -> list:
        return [_endpoint_no_import(), repo_id, commit, file_key, _fingerprint()]

    def _ref_key(self, spec: HubSpec) -> list:
        return [_endpoint_no_import(), spec.repo_id, spec.revision_or_default, spec.selector, _fingerprint()]

    def _load(self, name: str, key: list):
        from kvplan.files.keyed_json import load_entry

        return load_entry(self.folder / name, key)

    def _save(self, name: str, key: list, data) -> None:
        from kvplan.files.keyed_json import store_entry

        store_entry(self.folder / name, key, data)

    def read_entry(self, repo_id: str, commit: str, file_key: str) -> HubProfile | None:
        key = self._entry_key(repo_id, commit, file_key)
        data = self._load(self._name("entry", key), key)
        if not isinstance(data, dict):
            return None
        try:
            return HubProfile(data["mapping"], data["origin"], data["record"], data["yaml_text"], data["commit"],
                              tuple(data.get("notes") or ()), from_cache=True, cache_file=file_key)
        except (KeyError, TypeError):
            return None

    def lookup(self, spec: HubSpec) -> HubProfile | None:
        key = self._ref_key(spec)
        ref = self._load(self._name("ref", key), key)
        if not isinstance(ref, dict):
            return None
        return self.read_entry(spec.repo_id, ref.get("commit", ""), ref.get("file", ""))

    def point(self, spec: HubSpec, found: HubProfile) -> None:
        key = self._ref_key(spec)
        self._save(self._name("ref", key), key, {"commit": found.commit, "file": found.cache_file})

    def store(self, spec: HubSpec, found: HubProfile) -> None:
        key = self._entry_key(spec.repo_id, found.commit, found.cache_file)
        self._save(self._name("entry", key), key, {
            "mapping": found.mapping, "origin": found.origin, "record": found.record, "yaml_text": found.yaml_text,
            "commit": found.commit, "notes": list(found.notes)})
        self.point(spec, found)
