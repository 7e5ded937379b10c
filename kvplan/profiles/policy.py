"""KV cache compression policies: the YAML spec (pydantic), its element formats, and loading.

A policy says, per group of layers, which format the recent tokens use, how many recent
tokens are kept (``recent_window``), which fraction of the older ones survive eviction and
in which format (``history``), and how often eviction runs (``evict_every``). The math is in
:mod:`kvplan.engine.tiered`; :mod:`kvplan.caches.policy` turns a spec and a model into a
cache model. See docs/kv-policies.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Annotated

from pydantic import (BaseModel, BeforeValidator, ConfigDict, Field, ValidationInfo, WithJsonSchema, field_validator,
                      model_validator)

from kvplan.errors import FieldError, KvplanError, ProfileError, UsageError
from kvplan.engine.formats import ElementFormat, format_from_name
from kvplan.engine.names import did_you_mean
from kvplan.units import parse_fraction, parse_tokens

# --- element formats with outlier channels ---------------------------------------------------


@dataclass(frozen=True)
class OutlierFormat(ElementFormat):
    """A group-quantized format that keeps some channels of every row at higher precision.

    ``n`` outliers per row (``outlier_channels``, or ``⌈outlier_fraction · values⌉``) are
    stored at ``outlier_bits`` each (plus ``outlier_index_bytes`` each when the positions
    vary per token); the other ``values − n`` are packed and grouped as usual::

        row_bytes(values) = base.row_bytes(values − n) + ⌈n · outlier_bits / 8⌉ + n · outlier_index_bytes
    """

    outlier_channels: int = 0
    outlier_fraction: float = 0.0
    outlier_bits: int = 16
    outlier_index_bytes: int = 0

    def outliers_in(self, values: int) -> int:
        """Outlier values in a row of ``values`` elements [count]."""
        if self.outlier_fraction:
            n = math.ceil(exact_fraction(self.outlier_fraction) * values)
        else:
            n = self.outlier_channels
        return min(n, values)

    def row_bytes(self, values: int) -> int:
        n = self.outliers_in(values)
        outliers = -(-n * self.outlier_bits // 8) + n * self.outlier_index_bytes
        return super().row_bytes(values - n) + outliers


def exact_fraction(value: float) -> Fraction:
    """The decimal the user wrote (0.2 → 1/5), not the binary float's expansion."""
    return Fraction(Decimal(repr(value)))


# --- pydantic spec ----------------------------------------------------------------------------


def _whole(value: object) -> object:
    if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
        raise ValueError(f"expected a whole number, got {value!r}")
    if isinstance(value, float):
        return int(value)
    return value


def _tokens(value: object) -> object:
    if isinstance(value, bool):
        raise ValueError(f"expected a token count, got {value!r}")
    if isinstance(value, str | int):
        try:
            return parse_tokens(value, positive=False)
        except KvplanError as exc:
            raise ValueError(str(exc)) from None
    return value


def _fraction(value: object) -> object:
    """0.2 or ``20%`` → a float in [0, 1] (:func:`kvplan.units.parse_fraction`, the one rule for fractions)."""
    try:
        return parse_fraction(value, zero_ok=True)
    except KvplanError as exc:
        raise ValueError(str(exc)) from None


def _outlier_fraction(value: object) -> object:
    """0.01 or ``1%`` → a float in [0, 1): the share of a row's channels kept at higher precision."""
    try:
        return parse_fraction(value, zero_ok=True, one_ok=False)
    except KvplanError as exc:
        raise ValueError(str(exc)) from None


Bits = Annotated[int, BeforeValidator(_whole), Field(ge=1, le=32)]
ByteCount = Annotated[int, BeforeValidator(_whole), Field(ge=0, le=64)]
# JSON Schema of what a YAML file may say (the validators also take "4k" and "20%").
_TOKENS_SCHEMA = {"anyOf": [{"type": "integer", "minimum": 0},
                            {"type": "string", "pattern": r"^\s*(\d{1,3}(,\d{3})+|\d+(\.\d+)?\s*[kKMm]?)\s*$"}],
                  "description": "a token count: 4096, '4,096' or '4k' (k = 1,024, M = 1,048,576)"}
_RATIO_SCHEMA = {"anyOf": [{"type": "number", "minimum": 0, "maximum": 1},
                           {"type": "string", "pattern": r"^\s*(\d+(\.\d*)?|\.\d+)\s*%?\s*$"}],
                 "description": "a fraction (0.2) or a percentage ('20%')"}
TokenCount = Annotated[int, BeforeValidator(_tokens), Field(ge=0), WithJsonSchema(_TOKENS_SCHEMA)]
Ratio = Annotated[float, BeforeValidator(_fraction), Field(ge=0, le=1, allow_inf_nan=False),
                  WithJsonSchema(_RATIO_SCHEMA)]


def _format_mapping(value: object) -> object:
    """A runtime name (``f16``, ``q8_0``) or bit width (``8``) → the mapping form."""
    if isinstance(value, bool):
        raise ValueError(f"expected a format name, a bit width or a mapping, got {value!r}")
    if isinstance(value, str | int):
        try:
            fmt = format_from_name(str(value))
        except KvplanError as exc:
            raise ValueError(str(exc)) from None
        mapping = {"name": fmt.name, "bits": fmt.bits}
        if fmt.group_size:
            mapping.update(group_size=fmt.group_size, scale_bytes=fmt.scale_bytes, zero_bytes=fmt.zero_bytes)
        return mapping
    return value


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True, defer_build=True)


def _format_schema(schema: dict) -> None:
    """The YAML may also name a format (``f16``, ``q8_0``) or give a bit width."""
    mapping = dict(schema)
    schema.clear()
    schema["anyOf"] = [{"type": "string", "description": "runtime name: f16, bf16, fp8, q8_0, q4_0, …"},
                       {"type": "integer", "minimum": 1, "maximum": 32, "description": "bit width"}, mapping]


class FormatSpec(_Strict):
    """How one row of keys or values is stored: ``bits`` per value, groups, scales, outliers."""

    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True, defer_build=True,
                              json_schema_extra=_format_schema)

    name: str | None = None
    bits: Bits
    group_size: Annotated[int, BeforeValidator(_whole), Field(ge=1, le=1 << 20)] | None = None
    scale_bytes: ByteCount = 2
    zero_bytes: ByteCount = 0
    outlier_fraction: Annotated[float, BeforeValidator(_outlier_fraction), Field(ge=0, lt=1, allow_inf_nan=False),
                                WithJsonSchema(_RATIO_SCHEMA)] | None = None
    outlier_channels: Annotated[int, BeforeValidator(_whole), Field(ge=0)] | None = None
    outlier_bits: Bits = 16
    outlier_index_bytes: ByteCount = 0

    @model_validator(mode="before")
    @classmethod
    def _from_name(cls, value):
        return _format_mapping(value)

    @model_validator(mode="after")
    def _consistent(self):
        if self.group_size is None and {"scale_bytes", "zero_bytes"} & self.model_fields_set:
            raise ValueError("scale_bytes and zero_bytes need group_size (values per scale)")
        if self.outlier_fraction is not None and self.outlier_channels is not None:
            raise ValueError("give outlier_fraction or outlier_channels, not both")
        return self

    def element_format(self) -> ElementFormat:
        """The exact storage of this spec as an :class:`~kvplan.engine.formats.ElementFormat`."""
        group = self.group_size or 0
        scale, zero = (self.scale_bytes, self.zero_bytes) if group else (0, 0)
        name = self.name or (f"int{self.bits}/g{group}" if group else {16: "f16", 32: "f32"}.get(
            self.bits, f"int{self.bits}"))
        if zero and not self.name:
            name += "+z"
        if not (self.outlier_fraction or self.outlier_channels):
            return ElementFormat(name, self.bits, group, scale, zero)
        if self.outlier_fraction:
            name += f"+{self.outlier_fraction:g}@{self.outlier_bits}b"
        else:
            name += f"+{self.outlier_channels}ch@{self.outlier_bits}b"
        return OutlierFormat(name, self.bits, group, scale, zero, outlier_channels=self.outlier_channels or 0,
                             outlier_fraction=self.outlier_fraction or 0.0, outlier_bits=self.outlier_bits,
                             outlier_index_bytes=self.outlier_index_bytes)


Format = FormatSpec  # also accepts a runtime name (f16, q8_0) or a bit width


class HistorySpec(_Strict):
    """Tokens older than the recent window: the fraction kept and their format."""

    ratio: Ratio
    k: Format | None = None
    v: Format | None = None


# Row width at which a history format is compared with the recent one (a typical head_dim × heads row).
_COMPARE_ROW = 4096


class TierSpec(_Strict):
    """One policy for a set of layers (all fields optional: nothing set = the plain cache)."""

    k: Format | None = None
    v: Format | None = None
    recent_window: TokenCount | None = None
    history: HistorySpec | None = None
    evict_every: Annotated[int, BeforeValidator(_tokens), Field(ge=1), WithJsonSchema(_TOKENS_SCHEMA)] = 1

    @field_validator("history")
    @classmethod
    def _history_makes_sense(cls, history: HistorySpec | None, info: ValidationInfo):
        if history is None:
            return history
        # Without a recent window every token is "older": a ratio below 1 then evicts the newest tokens too,
        # the ones the next step attends to most, and the cache reports a compression no model would survive.
        if history.ratio < 1 and not info.data.get("recent_window"):
            raise ValueError(f"a ratio of {history.ratio:g} with no recent_window evicts the newest tokens too "
                             f"({1 - history.ratio:.0%} of all tokens, the one just generated included): add "
                             "recent_window (the newest tokens kept whole, e.g. recent_window: 4k), or keep every "
                             "token with ratio: 1")
        for side in ("k", "v"):
            recent, older = info.data.get(side), getattr(history, side)
            if recent is not None and older is not None:
                recent_bytes = recent.element_format().row_bytes(_COMPARE_ROW)
                older_bytes = older.element_format().row_bytes(_COMPARE_ROW)
                if older_bytes > recent_bytes:
                    raise ValueError(f"{side} stores older tokens in more bytes than {side} of the recent ones "
                                     f"({older_bytes:,} > {recent_bytes:,} bytes per {_COMPARE_ROW:,} values): a "
                                     "history format is there to compress; swap the two formats")
        return history

    @model_validator(mode="after")
    def _tiers_consistent(self):
        if self.recent_window is not None and self.history is None:
            raise ValueError("recent_window needs history (history: {ratio: 1} keeps every older token)")
        if self.evict_every != 1 and self.history is None:
            raise ValueError("evict_every needs history (nothing is evicted without it)")
        return self

    @property
    def is_plain(self) -> bool:
        return self.k is None and self.v is None and self.history is None


def _layer_selector(value: object) -> object:
    if isinstance(value, bool):
        raise ValueError(f"expected a layer count, a percentage (20%) or 'rest', got {value!r}")
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


LayerSelector = Annotated[Annotated[int, Field(ge=1)] | Annotated[str, Field(pattern=r"^(rest|\d+(\.\d+)?%)$")],
                          BeforeValidator(_layer_selector)]


class LayerGroupSpec(TierSpec):
    """A run of consecutive layers with its own policy."""

    layers: LayerSelector


_TIER_FIELDS = ("k", "v", "recent_window", "history", "evict_every")


class PolicySpec(TierSpec):
    """A whole policy: tier fields for every layer, or ``layer_groups`` in layer order."""

    name: str = "kv-policy"
    description: str = ""
    layer_groups: list[LayerGroupSpec] | None = Field(None, min_length=1)

    @model_validator(mode="after")
    def _groups_consistent(self):
        if self.layer_groups is not None:
            set_here = [f for f in _TIER_FIELDS if f in self.model_fields_set]
            if set_here:
                raise ValueError(f"with layer_groups, put {', '.join(set_here)} inside each group")
            for group in self.layer_groups[:-1]:
                if group.layers == "rest":
                    raise ValueError("only the last layer group may say 'layers: rest'")
        return self

    @property
    def is_plain(self) -> bool:
        groups = self.layer_groups or [self]
        return all(TierSpec.is_plain.fget(g) for g in groups)

    def layer_ranges(self, layers: int) -> list[tuple[int, int, TierSpec]]:
        """``(start, end, tier)`` runs of 0-based layers ``start ≤ ℓ < end`` covering all ``layers``.

        A count takes the next that many layers; ``P%`` takes ``⌈P · layers / 100⌉`` of them
        (at most the layers left); ``rest`` takes every layer left.
        """
        if self.layer_groups is None:
            return [(0, layers, self)]
        runs, start = [], 0
        for i, group in enumerate(self.layer_groups):
            sel = group.layers
            if sel == "rest":
                n = layers - start
            elif isinstance(sel, str):
                n = min(math.ceil(Fraction(Decimal(sel[:-1])) * layers / 100), layers - start)
            else:
                n = sel
            if start + n > layers:
                raise UsageError(f"kv_policy {self.name}: layer_groups[{i}] asks for layers {start}-{start + n - 1} "
                                 f"but the model has {layers} layers")
            runs.append((start, start + n, group))
            start += n
        if start != layers:
            raise UsageError(f"kv_policy {self.name}: layer_groups cover {start} of the model's {layers} layers; "
                             "end with 'layers: rest'")
        return runs


# --- loading ----------------------------------------------------------------------------------

NO_POLICY = "none"


def load_policy_file(path) -> PolicySpec:
    """Read a policy YAML file; problems raise ProfileError as ``file:line: field: message``.

    A path that is not there gets the close names a policy could be: ``none`` and the YAML files beside it."""
    from pathlib import Path

    from kvplan.profiles.loading import load_model_file

    p = Path(path).expanduser()
    if not p.exists():
        raise ProfileError([f"{path}: no such file{_policy_hint(str(path))}"])
    return load_model_file(PolicySpec, path, what="kv policy")


#: a folder of thousands of files is not searched for a near miss (the error must come at once)
_MAX_SIBLINGS = 1000


def _policy_hint(typed: str) -> str:
    """``"; did you mean …?"`` for a misspelt policy: ``none``, or a YAML file in the folder it names, matched by
    file name and written as the user wrote the folder (``examples/kv-polcy.yaml`` → ``examples/kv-policy.yaml``)."""
    import os
    from pathlib import Path

    folder, name = os.path.split(typed)
    candidates = {NO_POLICY: NO_POLICY}
    try:
        with os.scandir(Path(folder or ".").expanduser()) as entries:
            for i, entry in enumerate(entries):
                if i >= _MAX_SIBLINGS:
                    break
                if entry.name.endswith((".yaml", ".yml")) and entry.name not in candidates and entry.is_file():
                    candidates[entry.name] = os.path.join(folder, entry.name)
    except OSError:  # no such folder, or not readable: "none" is still a guess
        pass
    return did_you_mean(name, candidates)


def resolve_policy(value) -> PolicySpec | None:
    """What :class:`~kvplan.plan.knobs.Knobs` ``kv_policy`` may hold → a spec (or None).

    ``None``: no policy given (the model's own ``kv_policy`` applies, if any);
    a :class:`PolicySpec`; a mapping (validated here); a path to a policy YAML file;
    ``"none"``: explicitly the plain cache (overrides the model's policy).
    """
    if value is None or isinstance(value, PolicySpec):
        return value
    if isinstance(value, dict):
        from pydantic import ValidationError

        try:
            return PolicySpec.model_validate(value)
        except ValidationError as exc:
            problems = [f"kv_policy.{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()]
            raise ProfileError(problems) from None
    text = str(value)
    if text.strip().lower() == NO_POLICY:
        return PolicySpec(name=NO_POLICY)
    from pathlib import Path

    if not Path(text).expanduser().exists():  # the field, so the CLI names its flag
        raise FieldError("kv_policy", f"{text}: no such file{_policy_hint(text)}")
    return load_policy_file(text)
