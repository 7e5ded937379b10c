"""What a user should know about one profile on its own, before any configuration: figures that validate but are
almost surely a unit slip, and a sliding window llama.cpp does not honour. ``profiles list`` / ``show`` print
these and carry them in their JSON ``warnings``; the thresholds are :mod:`kvplan.plan.warnings`' own."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kvplan.profiles.spec import Device, Model


def device_warnings(d: Device) -> list[str]:
    from kvplan.plan import warnings as w

    out = []
    if d.ram < w.MIN_PLAUSIBLE_RAM_BYTES:
        out.append(f"device {d.name}: ram {d.ram:,} B is under 256 MB — is a unit missing?")
    if d.memory_bandwidth < w.MIN_PLAUSIBLE_BANDWIDTH_BYTES_PER_S:
        out.append(f"device {d.name}: memory_bandwidth {d.memory_bandwidth:,.0f} B/s is under 1 GB/s — "
                   "is a unit missing?")
    if d.flash_read < w.MIN_PLAUSIBLE_FLASH_READ_BYTES_PER_S:
        out.append(f"device {d.name}: flash_read {d.flash_read:,.0f} B/s is under 10 MB/s — is a unit missing?")
    return out


def model_warnings(m: Model) -> list[str]:
    """A window the ideal formula honours but llama.cpp ignores (it then keeps the whole context on every layer)."""
    if not m.sliding_window:
        return []
    from kvplan.caches.llamacpp import SWA_ARCHITECTURES

    arch = (m.architecture or "").lower()
    if arch in SWA_ARCHITECTURES:
        return []
    return [f"model {m.name}: llama.cpp ignores its {m.sliding_window:,}-token sliding window (architecture "
            f"{arch or 'unknown'}) and caches the whole context on every layer; 'kvplan check … --runtime "
            "llama.cpp' prices that"]


def profile_warnings(kind: str, profile) -> list[str]:
    """:func:`device_warnings` or :func:`model_warnings` by the profile's kind."""
    return device_warnings(profile) if kind == "device" else model_warnings(profile)
