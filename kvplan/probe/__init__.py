"""Probing the machine kvplan runs on: ``probe_device(quick, progress)`` → a device-profile mapping.

See :mod:`kvplan.probe.device` for the method and its limits. Nothing is imported until it is used.
"""

from __future__ import annotations

__all__ = ["probe_device"]


def probe_device(quick: bool = False, progress=None, **kwargs) -> dict:
    from kvplan.probe.device import probe_device as _probe

    return _probe(quick, progress, **kwargs)
