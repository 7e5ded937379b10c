"""GGUF headers from the Hub without the weights: reading a header by HTTP range, and choosing the file.

:func:`read_remote_header` reads a GGUF header through ``HfFileSystem`` in growing range requests
(2 MiB, then 4, 8, … capped at 32 MiB) until the last tensor info is parsed, and stops: the weights
are never downloaded. The parser itself is :mod:`kvplan.importers.gguf_header` (re-exported here),
the one ``kvplan import gguf`` and a local ``--model x.gguf`` use too.

:func:`header_metadata` returns the ``(metadata, tensors)`` pair in exactly the form of
``kvplan.importers.gguf.read_metadata``, so the profile itself comes from the local importer's
``profile_from_gguf_metadata`` (:func:`profile_mapping_from_gguf`) — one conversion for local
files and Hub files.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from kvplan.errors import NotFoundError, ProfileError
from kvplan.importers.gguf_header import (  # noqa: F401 - re-exported: the parser's home is the importers layer
    _GGML_TYPES, DEFAULT_ALIGNMENT, INITIAL_BLOCK, MAGIC, MAX_BLOCK, MAX_HEADER, SKIPPED_KEYS, GGUFHeader,
    NeedMoreData, TensorInfo, ggml_type, header_metadata, parse_gguf_header, read_local_header, tensor_nbytes)


def profile_mapping_from_gguf(meta: dict, tensors: list[tuple], *, where: str, name: str | None = None,
                              params: int | None = None, weight_bits: float | None = None):
    """Metadata + tensors → the validated profile: ``(mapping, ImportedProfile)``.

    The one conversion both GGUF readers share: it is the local importer's
    ``profile_from_gguf_metadata``; the mapping is its YAML text read back.
    """
    import yaml

    from kvplan.files.yamlio import FAST_LOADER
    from kvplan.importers.gguf import profile_from_gguf_metadata

    imported = profile_from_gguf_metadata(meta, tensors, where=where, name=name, params=params,
                                          weight_bits=weight_bits)
    return yaml.load(imported.yaml_text, Loader=FAST_LOADER), imported


# --- choosing the file in a repository -----------------------------------------------------------

_SPLIT_RE = re.compile(r"^(?P<stem>.*)-(?P<no>\d{5})-of-(?P<count>\d{5})\.gguf$", re.IGNORECASE)


@dataclass(frozen=True)
class GGUFChoice:
    """The GGUF file(s) of one model: one file, or every shard of a split model in order."""

    files: tuple[str, ...]

    @property
    def first(self) -> str:
        return self.files[0]

    @property
    def split(self) -> bool:
        return len(self.files) > 1 or bool(_SPLIT_RE.match(self.files[0]))

    @property
    def stem(self) -> str:
        base = self.files[0].rsplit("/", 1)[-1]
        m = _SPLIT_RE.match(base)
        return m.group("stem") if m else base[: -len(".gguf")]


def _groups(files: list[str]) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {}
    for f in files:
        m = _SPLIT_RE.match(f)
        groups.setdefault(m.group("stem") if m else f, []).append(f)
    return groups


def _complete(key: str, members: list[str], repo_id: str) -> GGUFChoice:
    if len(members) == 1 and not _SPLIT_RE.match(members[0]):
        return GGUFChoice((members[0],))
    shards = sorted(members, key=lambda f: int(_SPLIT_RE.match(f).group("no")))
    count = int(_SPLIT_RE.match(shards[0]).group("count"))
    numbers = [int(_SPLIT_RE.match(f).group("no")) for f in shards]
    if numbers != list(range(1, count + 1)):
        missing = sorted(set(range(1, count + 1)) - set(numbers))
        raise NotFoundError(f"hf:{repo_id}: split GGUF {key}: shard(s) {', '.join(map(str, missing))} of {count} "
                            "are missing from the repository")
    return GGUFChoice(tuple(shards))


def gguf_files(files: list[str]) -> list[str]:
    return sorted(f for f in files if f.lower().endswith(".gguf"))


def pick_gguf(files: list[str], repo_id: str, *, quant: str | None = None, filename: str | None = None) -> GGUFChoice:
    """The GGUF model in ``files`` named by ``filename`` or holding ``quant`` in its name (case-insensitive).

    A quant must match one model (a split model's shards count as one); mmproj (vision projector)
    files are not models. Ambiguity and absence raise NotFoundError listing the candidates.
    """
    ggufs = gguf_files(files)
    if not ggufs:
        raise NotFoundError(f"hf:{repo_id}: the repository has no .gguf files"
                            + (f" (it has {len(files)} files; for a transformers model drop the ':…' part)"
                               if files else ""))
    shown = ", ".join(ggufs[:12]) + (f", … ({len(ggufs)} in all)" if len(ggufs) > 12 else "")
    if filename is not None:
        exact = [f for f in ggufs if f == filename] or [f for f in ggufs if f.lower() == filename.lower()]
        if not exact:
            raise NotFoundError(f"hf:{repo_id}: no file {filename!r}; GGUF files: {shown}")
        m = _SPLIT_RE.match(exact[0])
        if m:  # a shard named: take its whole model
            return _complete(m.group("stem"), _groups(ggufs)[m.group("stem")], repo_id)
        return GGUFChoice((exact[0],))
    models = {k: v for k, v in _groups(ggufs).items() if "mmproj" not in k.rsplit("/", 1)[-1].lower()}
    if quant is None:
        if len(models) == 1:
            key, members = next(iter(models.items()))
            return _complete(key, members, repo_id)
        raise NotFoundError(f"hf:{repo_id}: {len(models)} GGUF models; name one with :QUANT or :FILE.gguf "
                            f"(files: {shown})")
    token = re.compile(rf"(?<![A-Za-z0-9]){re.escape(quant)}(?![A-Za-z0-9_])", re.IGNORECASE)  # Q4_K ≠ Q4_K_M
    hits = {k: v for k, v in models.items() if token.search(k)}
    if not hits:
        raise NotFoundError(f"hf:{repo_id}: no GGUF file matches {quant!r}; GGUF files: {shown}")
    if len(hits) > 1:
        names = ", ".join(sorted(v[0] for v in hits.values()))
        raise NotFoundError(f"hf:{repo_id}: {quant!r} is ambiguous, it matches {len(hits)} models: {names}; "
                            "name the file: hf:ORG/NAME:FILE.gguf")
    key, members = next(iter(hits.items()))
    return _complete(key, members, repo_id)


# --- reading by range ----------------------------------------------------------------------------------

@dataclass
class RemoteRead:
    """What reading a remote header cost: bytes fetched and range requests made, per file."""

    bytes_read: int = 0
    requests: int = 0
    file_sizes: dict = field(default_factory=dict)


def _read_header_from(handle, size: int, what: str, stats: RemoteRead, initial: int) -> GGUFHeader:
    buf = bytearray()
    chunk = initial

    def fetch(n_min: int):
        nonlocal chunk
        while len(buf) < n_min and len(buf) < size:
            want = min(max(chunk, n_min - len(buf)), size - len(buf))
            if len(buf) + want > MAX_HEADER:
                raise ProfileError([f"{what}: the GGUF header is larger than {MAX_HEADER // 2**20} MiB; "
                                    "not read (download the file and use 'kvplan import gguf')"])
            handle.seek(len(buf))
            got = handle.read(want)
            stats.requests += 1
            stats.bytes_read += len(got)
            if not got:
                break
            buf.extend(got)
            chunk = min(chunk * 2, MAX_BLOCK)
        return buf

    fetch(min(initial, size))
    try:
        return parse_gguf_header(buf, fetch)
    except ProfileError as exc:
        raise ProfileError([f"{what}: {p}" for p in exc.problems]) from None


def read_remote_header(repo_id: str, revision: str, choice: GGUFChoice, *, token=None,
                       initial_block: int = INITIAL_BLOCK, label: str | None = None) -> tuple[GGUFHeader, RemoteRead, list[str]]:
    """Read the header of the chosen GGUF model by range requests; never its tensor data.

    A split model: the first shard's header holds the metadata; when it lists fewer tensors than
    ``split.tensors.count``, the other shards' headers are read too (each only its header).
    Returns the header (tensors of every shard), what was read, and notes.
    """
    from kvplan.hub.fetch import hub_errors, require_hub

    fs = require_hub().HfFileSystem(token=token, skip_instance_cache=True)
    stats = RemoteRead()
    notes: list[str] = []

    def one(filename: str) -> GGUFHeader:
        path = f"{repo_id}@{revision}/{filename}"
        what = f"hf:{repo_id}@{revision[:12]}/{filename}"
        with hub_errors(repo_id, revision, filename, label), \
                fs.open(path, "rb", block_size=initial_block, cache_type="none") as handle:
            stats.file_sizes[filename] = handle.size
            return _read_header_from(handle, handle.size, what, stats, initial_block)

    header = one(choice.first)
    if choice.split:
        expected = header.metadata.get("split.tensors.count")
        count = header.metadata.get("split.count", len(choice.files))
        if isinstance(expected, int) and expected == len(header.tensors):
            notes.append(f"split GGUF ({count} shards): the first shard's header lists all {expected} tensors")
        else:
            for shard in choice.files[1:]:
                header.tensors.extend(one(shard).tensors)
            if isinstance(expected, int) and expected != len(header.tensors):
                raise ProfileError([f"hf:{repo_id}: split GGUF {choice.stem}: split.tensors.count is {expected} "
                                    f"but the {len(choice.files)} shard headers list {len(header.tensors)}"])
            notes.append(f"split GGUF ({len(choice.files)} shards): the first shard's header lists only part of "
                         f"the tensors, so the header of every shard was read (headers only, "
                         f"{stats.bytes_read:,} bytes in all)")
    return header, stats, notes
