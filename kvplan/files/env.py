"""kvplan's on/off environment variables (``KVPLAN_NO_CACHE``, ``KVPLAN_PLAIN``, ``KVPLAN_DEBUG``) read one way:
set and not ``0``, ``false``, ``no`` or ``off`` (any case) is on, so ``KVPLAN_PLAIN=0`` means off everywhere."""

from __future__ import annotations

import os

_OFF = ("", "0", "false", "no", "off")


def env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() not in _OFF
