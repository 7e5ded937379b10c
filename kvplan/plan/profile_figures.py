"""The key figures ``kvplan profiles show`` prints for one device or model profile, in base units."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kvplan.profiles.spec import Device, Model


def fp16_kv_bytes_per_token(model: Model) -> int:
    """K+V bytes one token adds over all layers at fp16 (below the smallest window)."""
    from kvplan.engine.formats import format_from_bits
    from kvplan.caches.ideal import cache_layout

    fp16 = format_from_bits(16)
    return cache_layout(model, fp16, fp16).bytes_per_token


def _default_app_limit(d: Device) -> int | None:
    from kvplan.plan.scenario import app_limit_field

    field = app_limit_field(d)
    return None if field is None else getattr(d, field)


def device_figures(d: Device) -> dict:
    """Key figures of a device in base units (names as in the YAML; derived ones carry their unit)."""
    from kvplan import engine

    return {
        "ram": d.ram,
        "os_reserve": d.os_reserve,
        "budget_bytes": engine.budget_bytes(d.ram, d.os_reserve, _default_app_limit(d)),
        "memory_bandwidth": d.memory_bandwidth,
        "bandwidth_efficiency": d.bandwidth_efficiency,
        "effective_bandwidth_bytes_per_s": d.memory_bandwidth * d.bandwidth_efficiency,
        "flash_read": d.flash_read,
    }


def model_figures(m: Model) -> dict:
    """Key figures of a model in base units."""
    from kvplan.caches.ideal import cache_layout
    from kvplan.plan.basis import weights_of

    layout = cache_layout(m)
    weights, weights_read, _ = weights_of(m, None)
    return {
        "params": m.params,
        "layers": m.layers,
        "attention_heads": m.attention_heads,
        "kv_heads": m.kv_heads,
        "head_dim": m.head_dim,
        "sliding_window": m.sliding_window,
        "sliding_window_pattern": m.sliding_window_pattern if m.sliding_window else None,
        "global_layers": layout.global_layers,
        "windowed_layers": layout.windowed_layers,
        "kv_bytes_per_token_fp16": fp16_kv_bytes_per_token(m),
        "kv_bytes_per_token": layout.bytes_per_token,
        "k_format": layout.k_format.name,
        "v_format": layout.v_format.name,
        "weights_bytes": weights,
        "weights_read_bytes": weights_read,
    }


def figures_of(kind: str, profile) -> dict:
    """:func:`device_figures` or :func:`model_figures` by the profile's kind."""
    return device_figures(profile) if kind == "device" else model_figures(profile)
