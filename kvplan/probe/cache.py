"""The last probe of this machine, kept so that ``--device this`` does not measure on every run.

One JSON file per machine in ``<kvplan cache>/probe/`` — the folder rule of the profile cache
(:mod:`kvplan.profiles.cache`: ``KVPLAN_CACHE_DIR``, else ``$XDG_CACHE_HOME/kvplan`` or
``~/.cache/kvplan``; ``KVPLAN_NO_CACHE=1`` turns it off). The file is named and keyed by what
makes a probe belong to a machine: host name, OS machine id (Linux ``/etc/machine-id``), OS and
architecture, CPU model and count, installed RAM in bytes — plus kvplan's probe and profile code.
The file name comes from the host name, machine id, OS and architecture alone, so a probe that no
longer matches is overwritten by the next one rather than left beside it.
Another machine sharing the home folder, added or removed RAM, a changed CPU affinity, or a new
kvplan probe all miss the entry, and ``this`` probes again. Every ``kvplan profiles probe``
replaces it; deleting the file does too.
"""

from __future__ import annotations

from kvplan.files.keyed_json import load_entry, store_entry

import hashlib
import json
import platform as _platform
from functools import lru_cache
from pathlib import Path

FORMAT = 1


@lru_cache(maxsize=1)
def _code_fingerprint() -> str:
    """kvplan's probe code and profile code: a change in either means the stored probe is stale."""
    from kvplan.profiles import cache as profile_cache

    digest = hashlib.blake2b(f"{FORMAT}:{profile_cache.code_fingerprint()}".encode(), digest_size=12)
    for path in sorted(Path(__file__).resolve().parent.glob("*.py")):
        try:
            digest.update(path.name.encode() + path.read_bytes())
        except OSError:
            digest.update(b"?")
    return digest.hexdigest()


def machine_key() -> dict:
    """What identifies this machine and the probe code (read in well under a millisecond)."""
    from kvplan.probe.system import cpu_count, cpu_model, host_name, installed_ram, machine_id

    return {"host": host_name(), "machine_id": machine_id(), "system": _platform.system(),
            "arch": _platform.machine(), "cpu": cpu_model()[0], "cpus": cpu_count(), "ram_bytes": installed_ram()[0],
            "code": _code_fingerprint()}


def folder() -> Path | None:
    """``<kvplan cache>/probe``, or None when kvplan's cache is off."""
    from kvplan.profiles import cache as profile_cache

    return profile_cache.cache_dir() / "probe" if profile_cache.enabled() else None


def entry_path(key: dict) -> Path | None:
    """One file per machine (host and machine id), so a new probe or a stale one is replaced, never piled up."""
    base = folder()
    if base is None:
        return None
    who = [key.get("host"), key.get("machine_id"), key.get("system"), key.get("arch")]
    digest = hashlib.blake2b(json.dumps(who).encode(), digest_size=12).hexdigest()
    return base / f"this-{digest}.json"


def load(key: dict | None = None) -> dict | None:
    """The stored probe of this machine (whatever :func:`store` was given), or None."""
    key = key or machine_key()
    path = entry_path(key)
    if path is None:
        return None
    data = load_entry(path, key)
    return data if isinstance(data, dict) else None


def store(data: dict, key: dict | None = None) -> Path | None:
    """Keep ``data`` as this machine's probe (atomically); the path, or None when the cache is off or unwritable."""
    key = key or machine_key()
    path = entry_path(key)
    if path is None:
        return None
    return path if store_entry(path, key, data) else None
