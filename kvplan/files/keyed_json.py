"""Cache entries on disk: one JSON file holding ``{"key": …, "data": …}``, read back only when its key matches.

Written atomically (a temporary file renamed over the entry), so a reader never sees half an entry; a cache that
cannot be read or written is a miss, never an error — the caller computes the figure again.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path


def load_entry(path: Path, key):
    """The ``data`` stored at ``path`` under exactly ``key``, or None (missing, unreadable, another key)."""
    from kvplan.files import jsonio

    try:
        with open(path, encoding="utf-8") as handle:
            stored = jsonio.loads(handle.read())
    except (OSError, ValueError):  # jsonio.JsonError (a damaged entry: deep, huge numbers, duplicates) included
        return None
    if not isinstance(stored, dict) or stored.get("key") != key:
        return None
    return stored.get("data")


def store_entry(path: Path, key, data) -> bool:
    """Write ``data`` under ``key`` to ``path`` atomically; False when the folder cannot be written."""
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump({"key": key, "data": data}, handle)
        os.replace(tmp, path)
    except OSError:
        if tmp:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        return False
    return True
