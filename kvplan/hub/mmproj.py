"""Projector (mmproj) GGUF headers from the Hub: ``--mmproj hf:ORG/NAME[@REVISION]/FILE.gguf``, and the one a GGUF
model repository carries.

The header is read by range requests as a model's is (:func:`kvplan.hub.gguf_remote.read_remote_header`, never the
tensor data) and kept in kvplan's hub cache (``$KVPLAN_CACHE_DIR/hub``, the rules of :mod:`kvplan.hub.resolve`):
only what pricing an encoder reads — the ``clip.*`` keys and the tensor table. With ``HF_HUB_OFFLINE=1``, or a
reference pinned to a full commit, a header read before is answered from there without a request.

:func:`pick_mmproj` chooses a repository's projector file for :mod:`kvplan.hub.resolve`: the only one, else the
F16 one (``convert_hf_to_gguf.py --mmproj``'s default outtype), else the first by name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kvplan.errors import NotFoundError, UsageError

_REF_RE = re.compile(r"^hf:(?P<repo>[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*)(?:@(?P<rev>[A-Za-z0-9._/-]+?))?"
                     r"[/:](?P<file>[^:@]+\.gguf)$", re.IGNORECASE)
_COMMIT_RE = re.compile(r"^[0-9a-f]{40}$")
_FORM = "hf:ORG/NAME[@REVISION]/FILE.gguf"


@dataclass(frozen=True)
class MmprojRef:
    """A parsed projector reference; ``revision`` None: the default branch."""

    repo_id: str
    revision: str | None
    filename: str

    def __str__(self) -> str:
        return f"hf:{self.repo_id}" + (f"@{self.revision}" if self.revision else "") + f"/{self.filename}"


@dataclass
class MmprojHeader:
    """What pricing an encoder reads of a projector GGUF's header: its metadata and its tensor table."""

    metadata: dict
    tensors: list


def parse_mmproj_ref(text: str) -> MmprojRef:
    """``hf:ORG/NAME[@REVISION]/FILE.gguf`` (or ``…:FILE.gguf``, as ``--model`` names a file) → its parts."""
    m = _REF_RE.match(str(text).strip())
    if m is None:
        raise UsageError(f"{text!r}: expected a projector on the Hub as {_FORM}")
    return MmprojRef(m["repo"], m["rev"], m["file"])


def is_mmproj_file(name: str) -> bool:
    """Whether a repository file is a projector GGUF (``mmproj`` in its name, as llama.cpp's converter names it)."""
    base = name.rsplit("/", 1)[-1].lower()
    return base.endswith(".gguf") and "mmproj" in base


def pick_mmproj(files) -> str | None:
    """The projector file of a repository's ``files``: the only one, else the F16 one, else the first by name."""
    found = sorted(f for f in files if is_mmproj_file(f))
    if len(found) <= 1:
        return found[0] if found else None
    f16 = [f for f in found if re.search(r"(?<![A-Za-z0-9])f16(?![A-Za-z0-9])", f.rsplit("/", 1)[-1], re.IGNORECASE)]
    return (f16 or found)[0]


def _keep(meta: dict) -> dict:
    return {k: v for k, v in meta.items() if k.startswith("clip.") or k == "general.architecture"}


def remote_mmproj_header(text: str, *, token=None) -> MmprojHeader:
    """The header of a projector GGUF on the Hub (module docstring); errors are one-line KvplanErrors."""
    from kvplan.hub.fetch import HubAccessError, offline, repo_snapshot
    from kvplan.hub.gguf_remote import GGUFChoice, read_remote_header
    from kvplan.hub.resolve import _Cache, _endpoint_no_import, _fingerprint
    from kvplan.importers.gguf_header import TensorInfo

    ref = parse_mmproj_ref(text)
    cache = _Cache()
    ref_key = ["mmproj", _endpoint_no_import(), ref.repo_id, ref.revision or "main", ref.filename, _fingerprint()]

    def entry_key(commit: str) -> list:
        return ["mmproj", _endpoint_no_import(), ref.repo_id, commit, ref.filename, _fingerprint()]

    def header_of(data) -> MmprojHeader | None:
        if not isinstance(data, dict) or not isinstance(data.get("tensors"), list):
            return None
        tensors = [TensorInfo(t[0], tuple(t[1]), int(t[2]), int(t[3])) for t in data["tensors"]]
        return MmprojHeader(dict(data.get("metadata") or {}), tensors)

    pinned = ref.revision is not None and _COMMIT_RE.match(ref.revision) is not None
    if cache and (offline() or pinned):
        key = entry_key(ref.revision) if pinned else ref_key
        if not pinned:
            pointer = cache._load(cache._name("ref", key), key)
            key = entry_key(pointer.get("commit", "")) if isinstance(pointer, dict) else None
        found = header_of(cache._load(cache._name("entry", key), key)) if key else None
        if found is not None:
            return found
    if offline():
        raise HubAccessError(f"{ref}: projector headers are read from the Hub by range and this one is not in "
                             "kvplan's cache, and HF_HUB_OFFLINE is set — run once online (or unset HF_HUB_OFFLINE)")
    snap = repo_snapshot(ref.repo_id, ref.revision, token=token, label=str(ref))
    if ref.filename not in snap.files:
        others = ", ".join(sorted(f for f in snap.files if is_mmproj_file(f))) or "none"
        raise NotFoundError(f"{ref}: no such file in the repository (projector files: {others})")
    if cache:
        found = header_of(cache._load(cache._name("entry", entry_key(snap.commit)), entry_key(snap.commit)))
        if found is not None:
            cache._save(cache._name("ref", ref_key), ref_key, {"commit": snap.commit})
            return found
    header, _stats, _notes = read_remote_header(ref.repo_id, snap.commit, GGUFChoice((ref.filename,)), token=token,
                                                label=str(ref))
    found = MmprojHeader(_keep(dict(header.metadata)), list(header.tensors))
    if cache:
        cache._save(cache._name("entry", entry_key(snap.commit)), entry_key(snap.commit),
                    {"metadata": found.metadata, "tensors": [[t.name, list(t.dims), t.type_id, t.offset]
                                                             for t in found.tensors]})
        cache._save(cache._name("ref", ref_key), ref_key, {"commit": snap.commit})
    return found
