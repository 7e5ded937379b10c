"""Finding profiles: built-in names and aliases, user profile folders, and paths.

Built-in profiles live once, in the repository's ``device_profiles/`` and
``model_profiles/``; the wheel carries them as ``kvplan/_data/…`` and an editable
install or a checkout reads the root folders directly. A name is found by its file
name first (``pixel8`` → ``pixel8.yaml``); only an alias or a typo needs the small
index of every file's ``name`` and ``aliases``.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, Literal, TypeVar

from kvplan.errors import NotFoundError, ProfileNotFoundError

Kind = Literal["device", "model"]
KIND_DIRS: dict[str, str] = {"device": "device_profiles", "model": "model_profiles"}
ENV_VAR = "KVPLAN_PROFILES"

P = TypeVar("P")


@dataclass(frozen=True)
class Resolved(Generic[P]):
    """A loaded profile and where it came from."""

    profile: P
    path: Path
    origin: Literal["builtin", "user", "file", "hub", "probe"]
    note: str | None = None  # e.g. a user profile shadowing a built-in one


# An external resolver: (reference, fast) → Resolved. The catalog knows none itself: layers above it
# (kvplan.hub.catalog.user_catalog) install them, keyed by (kind, key) where a key ending in ':' is a
# prefix ("hf:") and any other key is a whole name ("this").
Resolver = Callable[[str, bool], "Resolved"]
_SCHEME_RE = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+):(?![\\/])")


def builtin_dir(kind: Kind) -> Path:
    """Folder of the built-in profiles of ``kind`` (wheel data, else the checkout's root folder)."""
    # kvplan is a regular package on disk, so its data folder sits next to this file (what
    # importlib.resources.files would return, without importing it on every start).
    package = Path(__file__).resolve().parent.parent
    packaged = package / "_data" / KIND_DIRS[kind]
    if packaged.is_dir():
        return packaged
    return package.parent / KIND_DIRS[kind]


def user_dirs(profiles_dirs: list[str] | None = None) -> list[Path]:
    """User folders searched before the built-ins: ``--profiles-dir`` options, then ``$KVPLAN_PROFILES``."""
    given = [Path(d) for d in (profiles_dirs or [])]
    env = os.environ.get(ENV_VAR, "")
    from_env = [Path(d) for d in env.split(os.pathsep) if d]
    for d in given + from_env:
        if not d.is_dir():
            what = "is a file, not a folder" if d.exists() else "does not exist"
            where = f" (in ${ENV_VAR})" if d in from_env and d not in given else ""
            raise NotFoundError(f"profiles folder {str(d)!r}{where} {what}")
    return given + from_env


def _scheme(ref: str) -> str | None:
    """``hf`` for ``hf:org/name``: a reference to something outside the profile folders (never a path)."""
    match = _SCHEME_RE.match(str(ref).strip())
    return match.group(1).lower() if match else None


def _looks_like_path(ref: str) -> bool:
    if _scheme(ref) is not None and not Path(ref).exists():
        return False
    return "/" in ref or os.sep in ref or ref.endswith((".yaml", ".yml"))


class Catalog:
    """Resolves ``--device`` / ``--model`` references to validated profiles."""

    def __init__(self, profiles_dirs: list[str] | None = None, *, fast: bool = True,
                 resolvers: Mapping[tuple[Kind, str], Resolver] | None = None):
        self.user_dirs = user_dirs(profiles_dirs)
        # fast: a profile validated before may come back as a record from the cache (kvplan.profiles.cache)
        # instead of a pydantic object; commands that need pydantic's introspection pass fast=False.
        self.fast = fast
        # external resolvers by (kind, prefix ending in ':' or whole name), consulted before the folders
        self.resolvers: dict[tuple[Kind, str], Resolver] = {(k, key.lower()): fn
                                                            for (k, key), fn in (resolvers or {}).items()}

    def external(self, kind: Kind, ref: str) -> Resolver | None:
        """The resolver installed for ``ref`` (``hf:…``, ``this``), or None."""
        low = str(ref).strip().lower()
        for (k, key), fn in self.resolvers.items():
            if k == kind and (low.startswith(key) if key.endswith(":") else low == key):
                return fn
        return None

    # --- public API ---

    def device(self, ref: str):
        return self._resolve("device", ref)

    def model(self, ref: str):
        return self._resolve("model", ref)

    def entries(self, kind: Kind) -> list[tuple[str, list[str], Path, str]]:
        """(name, aliases, path, origin) of every profile of ``kind``, user folders first."""
        return [(name, aliases, path, origin) for name, aliases, path, origin in self._index(kind)]

    # --- resolution ---

    def _dirs(self, kind: Kind) -> list[tuple[Path, str]]:
        dirs: list[tuple[Path, str]] = []
        for d in self.user_dirs:
            sub = d / KIND_DIRS[kind]
            dirs.append((sub if sub.is_dir() else d, "user"))
        dirs.append((builtin_dir(kind), "builtin"))
        return dirs

    def _resolve(self, kind: Kind, ref: str) -> Resolved:
        ref = str(ref).strip()
        if not ref:
            raise NotFoundError(f"empty {kind} name")
        hook = self.external(kind, ref)
        if hook is not None:
            return hook(ref, self.fast)
        scheme = _scheme(ref)
        if scheme is not None and not Path(ref).exists():
            if scheme == "hf" and kind == "device":
                raise NotFoundError(f"device {ref!r}: Hugging Face Hub references (hf:…) name models, not devices")
            raise NotFoundError(f"{kind} {ref!r}: '{scheme}:' references are not supported here")
        if _looks_like_path(ref):
            return Resolved(load_profile(kind, ref, fast=self.fast), Path(ref), "file")
        key = ref.lower()
        dirs = self._dirs(kind)
        for i, (folder, origin) in enumerate(dirs):
            if origin == "builtin":
                path = folder / f"{ref}.yaml"  # built-in files are named after their profile: no index needed
                if path.is_file():
                    return self._loaded(kind, path, origin, [])
            matches = sorted({path for name, aliases, path in _folder_index(kind, folder)
                              if key == name.lower() or key in aliases})
            if len(matches) > 1:
                files = ", ".join(str(p) for p in matches)
                raise NotFoundError(f"{kind} {ref!r} is ambiguous in {folder}: {files} all use that name or alias")
            if matches:
                return self._loaded(kind, matches[0], origin, dirs[i + 1:])
        raise ProfileNotFoundError("kind", self._not_found_message(kind, ref), lead=None)

    def _loaded(self, kind: Kind, path: Path, origin: str, later: list[tuple[Path, str]]) -> Resolved:
        """The profile at ``path``, with a note when it hides a profile of a later folder (``later``: the
        folders searched after its own) that shares one of its names or aliases."""
        profile = load_profile(kind, path, fast=self.fast)
        note = None
        if origin == "user":
            names = {profile.name.lower(), *(a.lower() for a in profile.aliases)}
            for folder, folder_origin in later:
                hidden = [(name, other) for name, aliases, other in _folder_index(kind, folder)
                          if names & {name.lower(), *aliases} and other.resolve() != path.resolve()]
                if hidden:
                    what = f"the built-in {hidden[0][0]!r}" if folder_origin == "builtin" else f"{hidden[0][1]}"
                    note = f"using user {kind} profile {path} (shadows {what})"
                    break
        return Resolved(profile, path, origin, note)

    def suggestions(self, kind: Kind | None, ref: str, n: int = 3) -> list[str]:
        """Up to ``n`` profile names close to ``ref``, best first, each profile once by its own name.

        Names and aliases are both matched (a typo of an alias finds its profile), but an alias
        is shown as the name it belongs to, so ``pixle8`` suggests ``pixel8`` once, not ``pixel8,
        pixel-8`` (its alias) as two choices. ``kind`` None: devices and models alike.
        """
        canonical: dict[str, str] = {}
        for k in (kind,) if kind else ("device", "model"):
            for name, aliases, _, _ in self._index(k):
                for key in (name.lower(), *aliases):
                    canonical.setdefault(key, name)
        close = difflib.get_close_matches(str(ref).strip().lower(), list(canonical), n=len(canonical), cutoff=0.6)
        return list(dict.fromkeys(canonical[key] for key in close))[:n]

    def _not_found_message(self, kind: Kind, ref: str) -> str:
        """The message of :class:`ProfileNotFoundError`: ``{kind=…}`` is worded by the reporter (the CLI: its flag)."""
        guesses = self.suggestions(kind, ref)
        hint = f"; did you mean {', '.join(guesses)}?" if guesses else ""
        return f"unknown {kind} {ref!r}{hint} (see 'kvplan profiles list {{kind={kind}}}', or pass a YAML path)"

    # --- index of names and aliases (read only when a direct file-name lookup fails) ---

    @staticmethod
    def _kind_of(path: Path) -> Kind | None:
        return _kind_of_data(_quick_load(path))

    def _index(self, kind: Kind):
        cache = self.__dict__.setdefault("_index_cache", {})
        if kind not in cache:
            rows = []
            for folder, origin in self._dirs(kind):
                rows += [(name, aliases, path, origin) for name, aliases, path in _folder_index(kind, folder)]
            cache[kind] = rows
        return cache[kind]


def natural_key(path: Path) -> tuple:
    """Profiles in natural order of their file names: a shorter name before the names it begins
    (``galaxy-s24`` before ``galaxy-s24-ultra``; sorting the file names put ``-ultra.yaml`` first, as ``-``
    sorts before ``.``), and numbers by value (``macbook-air-m2-8gb`` before ``…-16gb``)."""
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part)
                 for part in re.split(r"(\d+)", path.stem.lower()) if part), path.suffix


def _folder_index(kind: Kind, folder: Path) -> list[tuple[str, list[str], Path]]:
    """(name, aliases, path) of the profiles of ``kind`` in one folder (cached by the folder's listing)."""
    from kvplan.profiles import cache as profile_cache

    cached = profile_cache.load_index(kind, folder)
    if cached is not None:
        return [(name, aliases, Path(path)) for name, aliases, path in cached]
    rows = []
    for path in sorted([*folder.glob("*.yaml"), *folder.glob("*.yml")], key=natural_key):  # both YAML spellings
        data = _quick_load(path)
        if not isinstance(data, dict) or _kind_of_data(data) not in (kind, None):
            continue
        name = str(data.get("name", path.stem))
        aliases = [str(a).lower() for a in data.get("aliases") or [] if isinstance(a, (str, int))]
        rows.append((name, aliases, path))
    profile_cache.store_index(kind, folder, [[n, a, str(p)] for n, a, p in rows])
    return rows


def _kind_of_data(data: object) -> Kind | None:
    if not isinstance(data, dict):
        return None
    if "ram" in data or "memory_bandwidth" in data:
        return "device"
    if "layers" in data or "attention_heads" in data:
        return "model"
    return None


def load_profile(kind: Kind, path, *, fast: bool = False):
    """Load and validate one profile file, saying so plainly when it is a profile of the other kind.

    With ``fast``, a profile validated before (unchanged since) comes back from the cache as a record.
    """
    from kvplan.profiles import cache as profile_cache

    if fast:
        record = profile_cache.load_record(kind, Path(path))
        if record is not None:
            return record
    from kvplan.errors import ProfileError
    from kvplan.profiles.loading import validate_document
    from kvplan.profiles.spec import Device, Model
    from kvplan.files.yamlio import load_yaml

    cls = Device if kind == "device" else Model
    doc = load_yaml(path)
    if isinstance(doc.data, dict):
        other = {"device": ("layers", "attention_heads", "head_dim"), "model": ("ram", "memory_bandwidth")}[kind]
        if any(key in doc.data for key in other) and not any(key in doc.data for key in _KEYS_OF[kind]):
            wrong = "model" if kind == "device" else "device"
            raise ProfileError([f"{path}: this is a {wrong} profile, but a {kind} profile is needed here"])
    profile = validate_document(cls, doc, what=f"{kind} profile")
    profile_cache.store(kind, Path(path), profile)
    return profile


_KEYS_OF = {"device": ("ram", "memory_bandwidth", "flash_read"), "model": ("layers", "attention_heads", "head_dim")}


def _quick_load(path: Path):
    """Parse a profile for the name index only (validation happens when it is used)."""
    import yaml

    from kvplan.files.yamlio import FAST_LOADER

    try:
        with open(path, "rb") as handle:
            return yaml.load(handle, Loader=FAST_LOADER)
    except (OSError, yaml.YAMLError, ValueError):
        return None


def resolve_distinct(catalog, kind: Kind, refs) -> list[Resolved]:
    """Each named profile once, in the order named: ``pixel8`` and its alias ``pixel-8`` (or its file path) are one
    device, so a comparison gets one row for it, not two identical ones."""
    lookup = catalog.device if kind == "device" else catalog.model
    found: dict[tuple, Resolved] = {}
    for ref in dict.fromkeys(refs):
        resolved = lookup(ref)
        found.setdefault((str(Path(resolved.path).resolve()), resolved.profile.name), resolved)
    return list(found.values())
