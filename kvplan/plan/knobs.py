"""From the knobs a user sets (CLI options or a configuration file) to a :class:`~kvplan.plan.Scenario`.

The CLI and the files (gate, report) fill the same :class:`Knobs`, so a configuration
means the same thing wherever it is written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dataclasses import fields, make_dataclass

from kvplan.errors import FieldError, UsageError
from kvplan.knob_table import KNOBS, VALUE_TYPES
from kvplan.engine.formats import ElementFormat, format_from_bits, format_from_name
from kvplan.plan.scenario import Scenario

if TYPE_CHECKING:  # pydantic stays off the fast path: cached profiles are plain records
    from kvplan.profiles.spec import Device, Model


def _merged(self, other: Knobs) -> Knobs:
    """``other``'s settings over these, field by field (for defaults + per-configuration overrides)."""
    defaults = Knobs()
    values = {f.name: getattr(self, f.name) for f in fields(self)}
    for f in fields(other):
        value = getattr(other, f.name)
        if value != getattr(defaults, f.name):
            values[f.name] = value
    return Knobs(**values)


# Everything besides device, model and ctx that a configuration may set (None: the profile's): one field per row
# of the knob table (kvplan.knob_table), in its order, with its default. ``kv_policy``: a PolicySpec, a policy YAML
# path, a mapping, or "none" (kvplan.profiles.policy); ``runtime``: a RuntimeSpec, a runtime name or mapping
# (kvplan.runtimes), "ideal" for the contract's formula even when the model profile names a runtime, None for the
# model profile's runtime, else ideal.
Knobs = make_dataclass(
    "Knobs", [(k.name, VALUE_TYPES[k.kind] if k.default is not None else VALUE_TYPES[k.kind] | None, k.default)
              for k in KNOBS],
    frozen=True, namespace={"merged": _merged, "__module__": __name__,
                            "__doc__": "Everything besides device, model and ctx that a configuration may set "
                                       "(None: the profile's); one field per row of kvplan.knob_table.KNOBS."})


_BITS = ("kv_bits", "k_bits", "v_bits")


def check_bit_width(field: str, bits) -> None:
    """The one rule for a cache bit width (``kv_bits``, a policy's history bits …): a whole number 1-32."""
    if isinstance(bits, bool) or not isinstance(bits, int) or not 1 <= bits <= 32:
        raise FieldError(field, f"must be a whole number from 1 to 32, got {bits!r}")


def element_formats(k: Knobs) -> tuple[ElementFormat | None, ElementFormat | None]:
    """The (K, V) formats the knobs ask for; ``None`` keeps the model's default for that side."""
    for name in _BITS:
        if getattr(k, name) is not None:
            check_bit_width(name, getattr(k, name))
    for bits_name, type_name in (("kv_bits", "kv_type"), ("k_bits", "k_type"), ("v_bits", "v_type")):
        if getattr(k, bits_name) is not None and getattr(k, type_name):
            raise FieldError(bits_name, f"give {{{bits_name}}} or {{{type_name}}}, not both", lead=None,
                             mentions=(type_name,))
    if k.kv_group_size is not None and k.kv_group_size < 1:
        raise FieldError("kv_group_size", f"must be at least 1, got {k.kv_group_size}")
    if k.kv_group_size and all(b is None for b in (k.kv_bits, k.k_bits, k.v_bits)):
        raise FieldError("kv_group_size", "{kv_group_size} needs {kv_bits} (or {k_bits} / {v_bits})", lead=None,
                         mentions=_BITS)

    def one(bits, type_name, field):
        if type_name:
            try:
                return format_from_name(type_name)
            except UsageError as exc:  # the engine knows the names, not which knob gave this one
                raise FieldError(field, str(exc)) from None
        if bits is not None:
            return format_from_bits(bits, k.kv_group_size or 0)
        return None

    return (one(k.k_bits, k.k_type, "k_type") or one(k.kv_bits, k.kv_type, "kv_type"),
            one(k.v_bits, k.v_type, "v_type") or one(k.kv_bits, k.kv_type, "kv_type"))


def build_scenario(device: Device, model: Model, ctx: int, knobs: Knobs = Knobs()) -> Scenario:
    """Check the knobs against the profiles and assemble the Scenario."""
    if knobs.weight_bits is not None and not 0 < knobs.weight_bits <= 32:
        raise FieldError("weight_bits", f"must be above 0 and at most 32, got {knobs.weight_bits:g}")
    if knobs.sequences < 1:
        raise FieldError("sequences", f"must be at least 1, got {knobs.sequences}")
    if knobs.os_reserve_bytes is not None and knobs.os_reserve_bytes >= device.ram:
        raise FieldError("os_reserve_bytes", f"must be less than the device's RAM ({device.ram:,} bytes)")
    if not 0 <= knobs.margin_fraction < 1:
        raise FieldError("margin_fraction", f"must be at least 0 and below 100 %, got {knobs.margin_fraction}")
    k_format, v_format = element_formats(knobs)
    policy = _policy(knobs.kv_policy)
    runtime, sequences, from_profile = _runtime(knobs, model, policy)
    # every knob the Scenario holds as such (kvplan.knob_table: in_scenario), then what was made of the others
    given = {k.name: getattr(knobs, k.name) for k in KNOBS if k.in_scenario}
    return Scenario(device, model, ctx, **{**given, "sequences": sequences, "kv_policy": policy, "runtime": runtime},
                    k_format=k_format, v_format=v_format, runtime_from_profile=from_profile)


def _runtime(knobs: Knobs, model: Model, policy):
    """Knobs.runtime → (RuntimeSpec or None, sequences, from the profile?): llama.cpp's -np and the
    sequences must agree. Without a runtime in the knobs (``runtime`` not set) the model
    profile's ``runtime`` is the default; an explicit ``ideal`` overrides it."""
    value, from_profile = knobs.runtime, False
    if value is None:
        value = getattr(model, "runtime", None)
        from_profile = value not in (None, "ideal")
    if value is None:
        return None, knobs.sequences, False
    from kvplan.profiles.runtime import RuntimeSpec, parse_runtime, resolve_sequences

    spec = value if isinstance(value, RuntimeSpec) else parse_runtime(value)
    if not from_profile:
        return (*resolve_sequences(spec, knobs.sequences, knobs.pinned_prefix_tokens,
                                           getattr(model, "architecture", None)), False)
    where = f"the model profile {model.name!r} names runtime {spec.name}"
    if policy is not None and not policy.is_plain:
        raise FieldError("kv_policy", f"{where}, whose allocation does not model a compression policy; "
                         "add {runtime=ideal} to use the policy", mentions=("runtime",))
    try:
        return (*resolve_sequences(spec, knobs.sequences, knobs.pinned_prefix_tokens,
                                           getattr(model, "architecture", None)), True)
    except FieldError as exc:
        raise exc.with_note(f" ({where}; {{runtime}} overrides it)", mentions=("runtime",)) from None


def _policy(value):
    """Knobs.kv_policy → a PolicySpec (or None: the model's own policy, if any)."""
    if value is None:
        return None
    from kvplan.profiles.policy import resolve_policy

    return resolve_policy(value)
