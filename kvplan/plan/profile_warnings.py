"""What a user should know about one profile on its own, before any configuration: figures that validate but are
almost surely a unit slip, and a sliding window llama.cpp does not honour. ``profiles list`` / ``show`` print
these and carry them in their JSON ``warnings``; the thresholds are :mod:`kvplan.plan.warnings`' own. Facts
(:class:`kvplan.plan.facts.WarningFact`), worded by :mod:`kvplan.render.warnings`."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kvplan.plan.facts import WarningFact
    from kvplan.profiles.spec import Device, Model


def device_warnings(d: Device) -> list[WarningFact]:
    from kvplan.plan.warnings import implausible_device

    return implausible_device(d)


def model_warnings(m: Model) -> list[WarningFact]:
    """A window the ideal formula honours but llama.cpp ignores (it then keeps the whole context on every layer)."""
    windows = m.schedule.windows()
    if not windows:
        return []
    from kvplan.caches.llamacpp import window_ignored_because
    from kvplan.plan.facts import warning

    why = window_ignored_because(m.architecture)
    if why is None:
        return []
    return [warning("model_window_ignored", model=m.name, window=windows[0], reason=why)]


def model_problems(m: Model) -> dict[str, str]:
    """{field: message} for what validates field by field but no command can use: a ``weight_type`` that cannot
    be priced tensor by tensor for want of the profile's shape fields."""
    if not getattr(m, "weight_type", None):
        return {}
    from kvplan.errors import FieldError
    from kvplan.plan.weights import priced_weights

    try:
        priced_weights(m, m.weight_type)
    except FieldError as exc:
        return {"weight_type": exc.worded(lead=False)}
    return {}


def profile_warnings(kind: str, profile) -> list[WarningFact]:
    """:func:`device_warnings` or :func:`model_warnings` by the profile's kind."""
    return device_warnings(profile) if kind == "device" else model_warnings(profile)
