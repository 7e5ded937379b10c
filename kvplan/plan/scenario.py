"""One configuration: a device, a model, a context and every knob, each value checked once, here."""

from __future__ import annotations

import math

import operator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from kvplan import engine
from kvplan.engine.formats import ElementFormat, format_from_name
from kvplan.errors import FieldError, UsageError

if TYPE_CHECKING:  # pydantic stays off the fast path: cached profiles are plain records
    from kvplan.profiles.spec import Device, Model


APP_LIMITS = ("standard", "increased")


def app_limit_field(device, choice: str | None = None) -> str | None:
    """Which device field caps an app's memory under ``choice`` (the ``app_limit`` knob): ``increased`` (the
    default, None) takes ``app_memory_limit_increased`` where the device has it — iOS apps that load models ship
    the increased-memory-limit entitlement — else ``app_memory_limit``; ``standard`` takes ``app_memory_limit``.
    None: the device has no such limit (the budget is RAM − OS reserve)."""
    increased = getattr(device, "app_memory_limit_increased", None)
    if choice != "standard" and increased is not None:
        return "app_memory_limit_increased"
    return "app_memory_limit" if getattr(device, "app_memory_limit", None) is not None else None


@dataclass(frozen=True)
class Scenario:
    """Everything that defines one configuration; ``None`` means "the profile's default"."""

    device: Device
    model: Model
    ctx: int
    sequences: int = 1
    pinned_prefix_tokens: int = 0
    weight_bits: float | None = None
    weight_type: str | None = None  # a named format (q4_k_m, mlx-4bit …), priced tensor by tensor
    weight_group_size: int | None = None  # group size of a group-quantized weight_type (mlx, gptq …)
    k_format: ElementFormat | None = None
    v_format: ElementFormat | None = None
    sliding_window: int | None = None
    os_reserve_bytes: int | None = None
    gpu_working_set_bytes: int | None = None  # Metal's recommended working set, over the device's own
    app_limit: str | None = None  # which per-app memory limit caps the budget: "standard" / "increased"
    margin_fraction: float = engine.DEFAULT_MARGIN_FRACTION
    target_tokens_per_s: float | None = None
    kv_policy: object | None = None  # a compression policy (kvplan.profiles.policy), None: plain cache
    runtime: object | None = None  # runtime-exact rules (kvplan.profiles.runtime), None: the ideal formula
    runtime_from_profile: bool = False  # the runtime is the model profile's default (none given)

    def __post_init__(self):
        # The library is the CLI's engine: the same inputs are refused here as on the command line.
        for name, needed in (("device", ("ram", "memory_bandwidth")), ("model", ("layers", "head_dim"))):
            if not all(hasattr(getattr(self, name), attr) for attr in needed):
                raise FieldError(name, f"expected a {name} profile (kvplan.Catalog().{name}(name).profile), "
                                 f"got {type(getattr(self, name)).__name__}")
        for name in ("k_format", "v_format"):  # a runtime type name or bit width is accepted, as on the CLI
            value = getattr(self, name)
            if isinstance(value, (str, int)) and not isinstance(value, bool):
                try:
                    object.__setattr__(self, name, format_from_name(str(value)))
                except UsageError as exc:  # the engine knows the names, not the field that gave this one
                    raise FieldError(name, str(exc)) from None
            elif value is not None and not isinstance(value, ElementFormat):
                raise FieldError(name, f"expected a cache type such as 'q8_0' or an ElementFormat, got {value!r}")
        if self.runtime is not None:  # a runtime name or mapping, as a gate file writes it, or a spec
            from kvplan.profiles.runtime import parse_runtime, resolve_sequences

            spec = parse_runtime(self.runtime) if isinstance(self.runtime, (str, dict)) else self.runtime
            spec, sequences = resolve_sequences(spec, self.sequences, self.pinned_prefix_tokens,
                                                getattr(self.model, "architecture", None))
            object.__setattr__(self, "runtime", spec)
            object.__setattr__(self, "sequences", sequences)
        if isinstance(self.kv_policy, str):
            raise FieldError("kv_policy", "pass a policy (kvplan.profiles.policy.load_policy_file(path)), not a "
                             "path: the library reads no files on its own")
        _check_count("ctx", self.ctx, minimum=0)
        _check_count("sequences", self.sequences, minimum=1)
        _check_count("pinned_prefix_tokens", self.pinned_prefix_tokens, minimum=0)
        if self.sliding_window is not None:
            _check_count("sliding_window", self.sliding_window, minimum=1)
        if self.weight_type is not None:
            from kvplan.engine.weight_formats import weight_format_key

            if self.weight_bits is not None:
                raise FieldError(("weight_bits", "weight_type"), "give one of them: bits for a uniform width, a "
                                 "type for a real quantization format", lead=" and ")
            try:
                object.__setattr__(self, "weight_type", weight_format_key(self.weight_type))
            except ValueError as exc:
                raise FieldError("weight_type", str(exc)) from None
        if self.weight_group_size is not None:
            _check_count("weight_group_size", self.weight_group_size, minimum=1)
            if self.weight_type is None and getattr(self.model, "weight_type", None) is None:
                raise FieldError(("weight_group_size", "weight_type"), "a group size applies to a named weight "
                                 "format (mlx-4bit, gptq-4bit …); give the format too", lead=" without ")
        if self.weight_bits is not None and not (isinstance(self.weight_bits, (int, float))
                                                 and 0 < self.weight_bits <= 32):
            raise FieldError("weight_bits", f"must be above 0 and at most 32, got {self.weight_bits!r}")
        if not (isinstance(self.margin_fraction, (int, float)) and 0 <= self.margin_fraction < 1):
            raise FieldError("margin_fraction", f"must be at least 0 and below 1, got {self.margin_fraction!r}")
        if self.os_reserve_bytes is not None:
            _check_count("os_reserve_bytes", self.os_reserve_bytes, minimum=0)
            if self.os_reserve_bytes >= self.device.ram:
                raise FieldError("os_reserve_bytes", f"must be less than the device's RAM ({self.device.ram:,} bytes)")
        if self.gpu_working_set_bytes is not None:
            _check_count("gpu_working_set_bytes", self.gpu_working_set_bytes, minimum=1)
        if self.app_limit is not None and self.app_limit not in APP_LIMITS:
            raise FieldError("app_limit", f"expected one of {', '.join(APP_LIMITS)}, got {self.app_limit!r}")
        if self.target_tokens_per_s is not None and not (isinstance(self.target_tokens_per_s, (int, float))
                                                         and 0 < self.target_tokens_per_s < math.inf):
            raise FieldError("target_tokens_per_s", f"must be a positive, finite rate, got {self.target_tokens_per_s!r}")

    @property
    def os_reserve_in_force_bytes(self) -> int:
        """The OS reserve this configuration uses: its override, else the device's [bytes]."""
        return self.device.os_reserve if self.os_reserve_bytes is None else self.os_reserve_bytes

    @property
    def gpu_working_set_in_force_bytes(self) -> int | None:
        """The GPU working set this configuration uses: its override, else the device's (None: unknown) [bytes]."""
        if self.gpu_working_set_bytes is not None:
            return self.gpu_working_set_bytes
        return getattr(self.device, "gpu_working_set", None)

    @property
    def app_limit_field_in_force(self) -> str | None:
        """The device field whose per-app limit caps the budget (``app_memory_limit`` or
        ``app_memory_limit_increased``), None where the device has none (:func:`app_limit_field`)."""
        return app_limit_field(self.device, self.app_limit)

    @property
    def app_limit_in_force_bytes(self) -> int | None:
        """The per-app memory limit that caps the budget [bytes]; None: the device has no fixed per-app cap."""
        field = self.app_limit_field_in_force
        return None if field is None else getattr(self.device, field)

    @property
    def budget_bytes(self) -> int:
        """``ram − os_reserve`` with the reserve in force, capped by the per-app limit in force [bytes]."""
        return engine.budget_bytes(self.device.ram, self.os_reserve_in_force_bytes, self.app_limit_in_force_bytes)

    def with_changes(self, **changes) -> Scenario:
        if changes.get("weight_bits") is not None and "weight_type" not in changes:
            changes["weight_type"] = None  # a uniform width replaces a named format
            changes.setdefault("weight_group_size", None)
        field = getattr(self.runtime, "sequences_field", None)
        if "sequences" in changes and "runtime" not in changes and field and getattr(self.runtime, field) is not None:
            # under llama.cpp the sequences are -np (Ollama's OLLAMA_NUM_PARALLEL): a new count re-derives it
            # rather than contradicting it
            changes["runtime"] = replace(self.runtime, **{field: None})
        return replace(self, **changes)


def _check_count(name: str, value, *, minimum: int) -> None:
    try:
        whole = operator.index(value)  # ints and numpy integers; not floats, strings or arrays
    except TypeError:
        whole = None
    if isinstance(value, bool) or whole is None or whole < minimum:
        raise FieldError(name, f"must be a whole number ≥ {minimum}, got {value!r}")
