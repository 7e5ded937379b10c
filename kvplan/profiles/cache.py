"""A cache of validated profiles, so that ``kvplan check`` starts without YAML or pydantic.

Like ``.pyc`` files: the first use of a profile file validates it with pydantic and stores the
validated fields (base units) as JSON; later uses read the JSON when the file's size, mtime and
inode, and kvplan's own profile code, are unchanged. The alias index of a profile folder is cached
the same way, keyed by the folder's listing. The YAML files stay the one source of truth; a
missing, stale or unreadable cache entry is simply rebuilt. ``KVPLAN_NO_CACHE=1`` turns it off;
``KVPLAN_CACHE_DIR`` moves it (default ``$XDG_CACHE_HOME/kvplan`` or ``~/.cache/kvplan``).
"""

from __future__ import annotations

import hashlib
import os
from functools import lru_cache
from pathlib import Path

FORMAT = 1
# Code whose change changes what a validated profile is: the cache is keyed by its bytes.
_CODE = ("profiles/spec.py", "units.py", "engine/formats.py", "profiles/methods.py", "profiles/records.py",
         "profiles/cache.py", "profiles/catalog.py", "profiles/runtime.py")


def enabled() -> bool:
    from kvplan.files.env import env_flag

    return not env_flag("KVPLAN_NO_CACHE") and cache_dir() is not None


@lru_cache(maxsize=1)
def cache_dir() -> Path | None:
    base = os.environ.get("KVPLAN_CACHE_DIR")
    if not base:
        xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        base = os.path.join(xdg, "kvplan")
    return Path(base)


@lru_cache(maxsize=1)
def code_fingerprint() -> str:
    digest = hashlib.blake2b(str(FORMAT).encode(), digest_size=12)
    here = Path(__file__).parent.parent  # the kvplan package
    for name in _CODE:
        try:
            digest.update((here / name).read_bytes())
        except OSError:
            digest.update(b"?")
    return digest.hexdigest()


def _file_key(path: Path) -> list | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return [str(path.resolve()), st.st_size, st.st_mtime_ns, st.st_ino, code_fingerprint()]


def _entry_path(kind: str, key_text: str) -> Path:
    name = hashlib.blake2b(key_text.encode("utf-8", "surrogateescape"), digest_size=16).hexdigest()  # any path bytes
    return cache_dir() / f"{kind}-{name}.json"


def _read(kind: str, key: list) -> object | None:
    from kvplan.files.keyed_json import load_entry

    return load_entry(_entry_path(kind, key[0]), key)


def _write(kind: str, key: list, data: object) -> None:
    from kvplan.files.keyed_json import store_entry

    store_entry(_entry_path(kind, key[0]), key, data)


def load_record(kind: str, path: Path):
    """The cached, already validated profile at ``path`` as a record, or None."""
    if not enabled():
        return None
    key = _file_key(path)
    data = _read(kind, key) if key else None
    if not isinstance(data, dict) or not _looks_validated(kind, data):
        return None  # a damaged entry is a miss: the YAML is validated again and the entry rewritten
    from kvplan.files.inputs import note_input
    from kvplan.profiles.records import RECORDS

    note_input(path)  # the YAML file is this run's input even when its validated fields come from the cache

    return RECORDS[kind](data)


# Fields every validated profile of a kind holds, as the numbers pydantic left there.
_CORE_FIELDS = {"device": ("ram", "os_reserve", "memory_bandwidth", "bandwidth_efficiency"),
                "model": ("params", "layers", "attention_heads", "head_dim")}


def _looks_validated(kind: str, data: dict) -> bool:
    """A cheap check that an entry is what :func:`store` wrote (an edited or damaged file is not trusted)."""
    if not isinstance(data.get("name"), str):
        return False
    return all(isinstance(data.get(f), (int, float)) and not isinstance(data.get(f), bool) and data[f] >= 0
               for f in _CORE_FIELDS.get(kind, ()))


def store(kind: str, path: Path, profile) -> None:
    """Remember a profile pydantic just validated (profiles with a KV policy are not cached)."""
    if not enabled() or getattr(profile, "kv_policy", None) is not None:
        return
    key = _file_key(path)
    if key:
        _write(kind, key, profile.model_dump(mode="json"))


def _listing_key(folder: Path) -> list | None:
    try:
        entries = sorted([e.name, e.stat().st_size, e.stat().st_mtime_ns] for e in os.scandir(folder)
                         if e.name.endswith((".yaml", ".yml")))
    except OSError:
        return None
    return [str(folder.resolve()), entries, code_fingerprint()]


def load_index(kind: str, folder: Path) -> list | None:
    if not enabled():
        return None
    key = _listing_key(folder)
    rows = _read(f"index-{kind}", key) if key else None
    return rows if isinstance(rows, list) else None


def store_index(kind: str, folder: Path, rows: list) -> None:
    if enabled():
        key = _listing_key(folder)
        if key:
            _write(f"index-{kind}", key, rows)
