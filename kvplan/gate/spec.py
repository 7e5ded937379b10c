"""The gate file: named configurations plus thresholds, as ``defaults:`` and per-configuration overrides.

The same file format feeds ``kvplan gate`` and ``kvplan report``. Every configuration key
that sets a knob is a field of :class:`KnobSpec`, built from the knob table (:mod:`kvplan.knob_table`) and named
like the :class:`~kvplan.plan.knobs.Knobs` field it fills; the older keys ``pinned_prefix``, ``os_reserve`` and
``margin`` are accepted as aliases, and an error names a knob by the key the file wrote. Validation reports every problem of the file at once as ``file:line: field: message``,
including unknown device and model names, which point at the line of the configuration using them,
and what building and evaluating each configuration refuses (a runtime's limits): a field error, worded with the
file's keys at the line of the key it is about.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

from pydantic import (AliasChoices, BaseModel, BeforeValidator, ConfigDict, Discriminator, Field, Tag, ValidationError,
                      create_model, field_validator, model_validator)

from kvplan.hub.catalog import user_catalog
from kvplan.profiles.catalog import Catalog, Resolved, _looks_like_path
from kvplan.plan import Knobs, build_scenario
from kvplan.plan.knobs import check_bit_width
from kvplan.profiles.field_rules import check_weight_bits
from kvplan.errors import FieldError, FieldText, KvplanError, ProfileError, ProfileNotFoundError
from kvplan.knob_table import KNOBS
from kvplan.engine.formats import format_from_name
from kvplan.profiles.loading import ONE_LINE_PATTERN, validate_document
from kvplan.plan import Evaluation, Scenario, evaluate
from kvplan.profiles.policy import NO_POLICY, PolicySpec, load_policy_file
from kvplan.profiles.spec import Bits, PositiveInt, SizeBytes, StrictBool, Tokens, WeightBits
from kvplan.units import parse_size_bytes, parse_tokens
from kvplan.files.yamlio import YamlDocument, load_yaml

# Older gate-file key → the knob it names (kvplan.knob_table: the file's keys are the knobs' names, these still work).
KNOB_ALIASES = {alias: k.name for k in KNOBS for alias in k.gate_aliases}


def _fraction_or_percent(value: object) -> float:
    """``0.1`` or ``"10%"`` → 0.1 in [0, 1), by kvplan's one rule for fractions (:func:`kvplan.units.parse_fraction`:
    a bare 10 is refused with "did you mean 10%?")."""
    from kvplan.units import parse_fraction

    try:
        return parse_fraction(value, zero_ok=True, one_ok=False)
    except KvplanError as exc:
        raise ValueError(str(exc)) from None


def _real_at_least_zero(value: object) -> object:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"expected a finite number, got {value!r}")
    return value


def _in_kvplans_words(check):
    """A BeforeValidator running kvplan's rule for a knob (``check(value)``, a FieldError) on a number, before
    the schema's own bounds, so an out-of-range value reads as on the command line (``must be a whole number
    from 1 to 32, got 64``), not in pydantic's words; the file places it at the key, so the field's name is
    left out. Anything else (text, a fraction for a bit width) is left to the schema's checks."""
    def validate(value: object) -> object:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            try:
                check(value)
            except FieldError as exc:
                raise ValueError(exc.worded(lead=False)) from None
        return value
    return BeforeValidator(validate)


def _bit_width(field: str):
    def check(value: float) -> None:
        if isinstance(value, int) or value.is_integer():  # 4.0 is 4, as the schema reads it
            check_bit_width(field, int(value))
    return check


def _known_cache_type(value: object) -> object:
    if value is not None:
        format_from_name(str(value))
    return value


@dataclass(frozen=True)
class HeadroomLimit:
    """A minimum headroom: absolute bytes, or a fraction of the configuration's budget."""

    bytes: int | None = None
    fraction: float | None = None

    def limit_bytes(self, budget_bytes: int) -> int:
        return self.bytes if self.bytes is not None else math.ceil(self.fraction * budget_bytes)


def _headroom_limit(value: object) -> object:
    if isinstance(value, HeadroomLimit):
        return value
    if isinstance(value, str) and value.strip().endswith("%"):
        return HeadroomLimit(fraction=_fraction_or_percent(value))
    try:
        return HeadroomLimit(bytes=parse_size_bytes(value))
    except KvplanError as exc:
        number = _bare_fraction(value)
        if number is not None:  # 0.1: a fraction or a size? a refusal with both readings beats a guess
            raise ValueError(f"{value} has no unit: write '{number * 100:g}%' for that share of the budget, or a "
                             f"size such as '{value} GB'") from None
        raise ValueError(f"{exc}, or a percentage of the budget like '10%'") from None


def _bare_fraction(value: object) -> float | None:
    """A unit-less number between 0 and 1 (``0.1``, ``'0.1'``), else None."""
    if isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if 0 < number <= 1 else None


def _runtime_value(value: object) -> object:
    """``llama.cpp`` or ``{name: llama.cpp, parallel: 2, …}`` → a RuntimeSpec, as Knobs.runtime.

    ``ideal`` stays the name ``"ideal"``: an explicit choice that overrides a model profile's ``runtime``.
    """
    from kvplan.profiles.runtime import file_runtime

    spec = file_runtime(value)
    return "ideal" if spec is None else spec


def _policy_branch(value: object) -> str | None:
    if isinstance(value, PolicySpec | dict):
        return "dict"
    return "str" if isinstance(value, str) else None


Margin = Annotated[float, BeforeValidator(_fraction_or_percent)]
TokensOrZero = Annotated[int, BeforeValidator(lambda v: parse_tokens(v, positive=False))]
CacheType = Annotated[str, BeforeValidator(_known_cache_type)]
def _seconds(value: object) -> object:
    """A bare number is seconds (the key says ``_s``); text takes a unit as a profile's durations do (``500 ms``)."""
    if isinstance(value, str) and not _BARE_NUMBER_RE.match(value):
        from kvplan.units import parse_duration_s

        try:
            return parse_duration_s(value)
        except KvplanError as exc:
            raise ValueError(str(exc)) from None
    return _real_at_least_zero(_number_text(value))


def _tokens_per_s(value: object) -> object:
    """A bare number is tokens/s (the key says ``_tok_s``); text may say so (``12.8 tok/s``, ``12.8 tokens/s``)."""
    if isinstance(value, str) and not _BARE_NUMBER_RE.match(value):
        match = _TOKENS_PER_S_RE.match(value)
        if not match:
            raise ValueError(f"expected a decode rate like '12.8 tok/s' (or a bare number of tokens/s), got {value!r}")
        value = match["num"]
    return _real_at_least_zero(_number_text(value))


def _number_text(value: object) -> object:
    """``"1.1"`` (a quoted bare number) read as the number it spells."""
    return float(value) if isinstance(value, str) and _BARE_NUMBER_RE.match(value) else value


_BARE_NUMBER_RE = re.compile(r"^\s*[+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?\s*$")
_TOKENS_PER_S_RE = re.compile(r"^\s*(?P<num>[+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)\s*"
                              r"(?:tok/s|tokens/s|t/s|tok/sec|tokens/sec)\s*$")
Seconds = Annotated[float, BeforeValidator(_seconds), Field(ge=0)]
TokensPerS = Annotated[float, BeforeValidator(_tokens_per_s), Field(gt=0)]
Headroom = Annotated[HeadroomLimit, BeforeValidator(_headroom_limit)]
Runtime = Annotated[object, BeforeValidator(_runtime_value)]
# A policy file (relative to the gate file's folder), "none", or an inline policy mapping.
KvPolicy = Annotated[Annotated[PolicySpec, Tag("dict")] | Annotated[str, Field(min_length=1), Tag("str")],
                     Discriminator(_policy_branch, custom_error_type="kv_policy",
                                   custom_error_message="expected a policy file path, 'none' or a policy mapping")]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True, defer_build=True,
                              arbitrary_types_allowed=True)


def _gate_type(knob):
    """How a gate file writes ``knob`` (by its kind, kvplan.knob_table): the type pydantic validates it with."""
    if knob.kind == "bits":
        return Annotated[Bits, _in_kvplans_words(_bit_width(knob.name))]
    if knob.kind == "tokens":
        return TokensOrZero if knob.default == 0 else Tokens
    return {"count": PositiveInt, "fractional_bits": Annotated[WeightBits, _in_kvplans_words(check_weight_bits)],
            "weight_format": str, "cache_type": CacheType, "size": SizeBytes, "fraction": Margin, "runtime": Runtime,
            "policy": KvPolicy, "model": str, "image_size": str, "seconds": Annotated[float, Field(gt=0, le=86_400)], "path": str, "layers": Annotated[int, Field(ge=0, strict=True)], "text": str,
            "app_limit": Literal["standard", "increased"]}[knob.kind]  # a kind without a gate type: a KeyError at import, and the parity test


class _OneSpelling(_Strict):
    """A knob given by its name and by an older key at once is refused (pydantic would call one of them unknown)."""

    @model_validator(mode="before")
    @classmethod
    def _one_key_per_knob(cls, data):
        if isinstance(data, dict):
            for knob in KNOBS:
                given = [key for key in (knob.name, *knob.gate_aliases) if key in data]
                if len(given) > 1:
                    raise ValueError(f"{' and '.join(given)} are one knob ({given[1]} is the older name of "
                                     f"{knob.name}): give it once")
        return data


# Knobs a configuration may set (``None`` or absent keeps the profile's or the default): one field per knob of the
# table that a gate file takes, keyed by the knob's name, its older keys accepted as aliases.
KnobSpec = create_model(
    "KnobSpec", __base__=_OneSpelling, __module__=__name__,
    **{k.name: (_gate_type(k) | None, Field(None, validation_alias=AliasChoices(k.name, *k.gate_aliases))
                if k.gate_aliases else None) for k in KNOBS if k.in_gate})


class ThresholdSpec(_Strict):
    """What a configuration must achieve; absent thresholds are not checked (``must_fit`` defaults to true)."""

    must_fit: StrictBool | None = None
    min_headroom: Headroom | None = None
    min_decode_tok_s: TokensPerS | None = None
    max_total: SizeBytes | None = None
    max_weights: SizeBytes | None = None
    max_swap_in_s: Seconds | None = None
    min_max_ctx: Tokens | None = None


class Settings(KnobSpec, ThresholdSpec):
    device: str | None = Field(None, min_length=1)
    model: str | None = Field(None, min_length=1)
    ctx: Tokens | None = None


class Defaults(Settings):
    """Settings every configuration inherits unless it sets its own (``null`` clears one)."""


class Configuration(Settings):
    name: str = Field(min_length=1, max_length=200, pattern=ONE_LINE_PATTERN)


class GateSpec(_Strict):
    """The whole file."""

    title: str | None = None
    defaults: Defaults = Defaults()
    configurations: list[Configuration]

    @field_validator("configurations")
    @classmethod
    def _not_empty(cls, value: list[Configuration]) -> list[Configuration]:
        if not value:
            raise ValueError("at least one configuration is needed")
        return value


THRESHOLD_NAMES = tuple(ThresholdSpec.model_fields)
KNOB_NAMES = tuple(KnobSpec.model_fields)


@dataclass(frozen=True)
class Thresholds:
    """The thresholds in force for one configuration (``None``: not checked)."""

    must_fit: bool = True
    min_headroom: HeadroomLimit | None = None
    min_decode_tok_s: float | None = None
    max_total: int | None = None
    max_weights: int | None = None
    max_swap_in_s: float | None = None
    min_max_ctx: int | None = None


@dataclass(frozen=True)
class GateConfig:
    """One configuration, resolved: its scenario and the thresholds it must meet."""

    name: str
    line: int | None
    scenario: Scenario
    thresholds: Thresholds
    explicit_thresholds: bool  # the file set at least one threshold for it
    device: Resolved
    model: Resolved
    evaluation: Evaluation | None = None  # computed while loading (that is where its errors are reported)


@dataclass(frozen=True)
class GateFile:
    path: str
    title: str | None
    configurations: tuple[GateConfig, ...]
    notes: tuple[str, ...] = ()


def to_knobs(values: dict) -> Knobs:
    """Knobs from the set knob keys of a merged configuration (the knobs' names, or their older keys)."""
    return Knobs(**{KNOB_ALIASES.get(k, k): v for k, v in values.items()
                    if KNOB_ALIASES.get(k, k) in KNOB_NAMES and v is not None})


def _set_fields(model: BaseModel) -> dict:
    return {name: getattr(model, name) for name in model.model_fields_set}


class _Profiles:
    """Each distinct device/model reference resolved once per run (errors too)."""

    def __init__(self, catalog: Catalog, base_dir: Path):
        self.catalog, self.base_dir = catalog, base_dir
        self._cache: dict[tuple[str, str], Resolved | PolicySpec | KvplanError] = {}

    def get(self, kind: str, ref: str) -> Resolved:
        if _looks_like_path(ref) and not Path(ref).is_absolute():
            ref = str(self.base_dir / ref)
        key = (kind, ref)
        if key not in self._cache:
            try:
                self._cache[key] = getattr(self.catalog, kind)(ref)
            except KvplanError as exc:
                self._cache[key] = exc
        found = self._cache[key]
        if isinstance(found, KvplanError):
            raise found
        return found

    def policy(self, ref: str) -> PolicySpec:
        """A kv_policy path, relative to the gate file's folder (each file read once)."""
        path = Path(ref).expanduser()
        key = ("kv_policy", str(path if path.is_absolute() else self.base_dir / path))
        if key not in self._cache:
            try:
                self._cache[key] = load_policy_file(key[1])
            except KvplanError as exc:
                self._cache[key] = exc
        found = self._cache[key]
        if isinstance(found, KvplanError):
            raise found
        return found


def load_gate(path: str, catalog: Catalog | None = None) -> GateFile:
    """Load, validate and resolve a gate file; every problem is collected into one ProfileError.

    When some configurations break the schema, the others are still resolved (their scenario built
    and evaluated once), so build errors come in the same round as the schema errors.
    """
    doc = _without_extensions(load_yaml(path))
    catalog = catalog or user_catalog()  # hf: models and the device 'this' too
    try:
        spec = validate_document(GateSpec, doc, what="gate file")
    except ProfileError as exc:
        # Report unknown device/model names and the valid configurations' build errors together with the
        # schema problems, not in a second round.
        problems = exc.problems + _name_problems(doc, catalog) + _duplicate_names(doc)
        valid = _valid_part(doc)
        if valid is not None:
            part, indices = valid
            try:
                resolve(part, doc, catalog, indices=indices)
            except ProfileError as more:
                problems += more.problems
        raise ProfileError(_in_file_order(problems, doc)) from None
    return resolve(spec, doc, catalog)


EXTENSION_PREFIX = "x-"


def _without_extensions(doc: YamlDocument) -> YamlDocument:
    """The document without its ``x-`` keys (at the top, under ``defaults`` and in each configuration): a place
    to hold YAML anchors and notes of one's own, as in docker compose, which kvplan reads nothing from."""
    def strip(mapping: object) -> object:
        if not isinstance(mapping, dict):
            return mapping
        return {k: v for k, v in mapping.items() if not (isinstance(k, str) and k.startswith(EXTENSION_PREFIX))}

    data = strip(doc.data)
    if isinstance(data, dict):
        if "defaults" in data:
            data["defaults"] = strip(data["defaults"])
        if isinstance(data.get("configurations"), list):
            data["configurations"] = [strip(c) for c in data["configurations"]]
    return YamlDocument(data, doc.path, doc.lines)


def _valid_part(doc: YamlDocument) -> tuple[GateSpec, list[int]] | None:
    """The configurations of a file that failed validation which are valid on their own, with their indices.

    A configuration is skipped when it has a schema error itself or inherits a default that has one.
    """
    data = doc.data
    if not isinstance(data, dict) or not isinstance(data.get("configurations"), list):
        return None
    raw_defaults = data.get("defaults", {})
    if not isinstance(raw_defaults, dict) or any(not isinstance(k, str) for k in raw_defaults):
        return None
    bad: set = set()
    try:
        defaults = Defaults.model_validate(raw_defaults)
    except ValidationError as exc:
        bad = {error["loc"][0] for error in exc.errors() if error["loc"]}
        try:
            defaults = Defaults.model_validate({k: v for k, v in raw_defaults.items() if k not in bad})
        except ValidationError:
            return None
    configurations, indices = [], []
    for i, raw in enumerate(data["configurations"]):
        if not isinstance(raw, dict) or not bad <= set(raw):
            continue
        try:
            configurations.append(Configuration.model_validate(raw))
        except ValidationError:
            continue
        indices.append(i)
    if not configurations:
        return None
    return GateSpec.model_construct(title=None, defaults=defaults, configurations=configurations), indices


def _duplicate_names(doc: YamlDocument) -> list[str]:
    """A name given to more than one configuration, read from the raw file so that it is found whatever
    else is wrong with either configuration (names are compared as the schema keeps them: stripped)."""
    data = doc.data
    configurations = data.get("configurations") if isinstance(data, dict) else None
    if not isinstance(configurations, list):
        return []
    problems, first_of = [], {}
    for i, raw in enumerate(configurations):
        name = raw.get("name") if isinstance(raw, dict) else None
        if not isinstance(name, str) or not name.strip():
            continue
        name = name.strip()
        if name in first_of:
            problems.append(f"{doc.where(('configurations', i, 'name'))}: configurations.{i}.name: {name!r} is "
                            f"already the name of configurations.{first_of[name]}; names must be unique")
        first_of.setdefault(name, i)
    return problems


def _in_file_order(problems: list[str], doc: YamlDocument) -> list[str]:
    """Problems (each with its indented continuation lines) sorted by line, duplicates dropped."""
    at_line = re.compile(re.escape(doc.path) + r":(\d+):")
    groups: list[list[str]] = []
    for problem in dict.fromkeys(problems):
        if problem.startswith("  ") and groups:
            groups[-1].append(problem)
        else:
            groups.append([problem])

    def line(group: list[str]) -> int:
        found = at_line.match(group[0])
        return int(found.group(1)) if found else 0

    return [p for group in sorted(groups, key=line) for p in group]


def _written(doc: YamlDocument, loc: tuple) -> dict[str, str]:
    """Knob name → the older key the mapping at ``loc`` writes it with (``pinned_prefix``), for the knobs it does."""
    raw = doc.data
    for part in loc:
        raw = raw.get(part) if isinstance(raw, dict) else raw[part] if isinstance(raw, list) else None
    return {KNOB_ALIASES[key]: key for key in raw if key in KNOB_ALIASES} if isinstance(raw, dict) else {}


def _file_key(field: str, written: dict[str, str] | None = None) -> str:
    """A field as the gate file names it: a knob by the key the file used for it (its name, or its older key, from
    ``written``), ``runtime.parallel`` as is."""
    top, dot, rest = field.partition(".")
    return (written or {}).get(top, top) + dot + rest


def _placed_wording(exc: FieldError, key: str | None, written: dict[str, str] | None = None) -> str:
    """The error in the file's keys (as ``written``), placed at ``key`` (None: at the configuration). Placed at a key,
    a field of the error inside it is named relative to it (``runtime.parallel`` at ``runtime``: ``parallel``),
    and a single leading name goes when it is not (``kv_bits`` at ``kv_bits``, ``k_type`` at ``kv_bits``)."""
    inside = (_file_key(key, written) + ".") if key is not None else None

    def name(field: str, value: str | None) -> str:
        text = _file_key(field, written)
        if inside and field in exc.fields and text.startswith(inside):
            text = text[len(inside):]
        return text if value is None else f"{text}: {value}"

    drop = (inside is not None and exc.lead is not None and len(exc.fields) == 1
            and not _file_key(exc.fields[0], written).startswith(inside))
    return exc.worded(name, lead=not drop)


def _name_problems(doc: YamlDocument, catalog: Catalog) -> list[str]:
    """Unknown device/model names anywhere in a file that failed validation (best effort on raw data)."""
    profiles = _Profiles(catalog, Path(doc.path).parent)
    data = doc.data if isinstance(doc.data, dict) else {}
    places = [(("defaults",), data.get("defaults"))]
    configurations = data.get("configurations")
    if isinstance(configurations, list):
        places += [(("configurations", i), c) for i, c in enumerate(configurations)]
    problems: list[str] = []
    for loc, mapping in places:
        for kind in ("device", "model"):
            ref = mapping.get(kind) if isinstance(mapping, dict) else None
            if isinstance(ref, str) and ref.strip():
                at = loc + (kind,)
                problems += _profile_problems(profiles, kind, ref, f"{doc.where(at)}: {'.'.join(map(str, at))}")
    return problems


def _indented(problem: str) -> str:
    """A profile's problem under the line that names the profile; one that names a field stays one (FieldText)."""
    return FieldText(problem.fields, "  " + problem.message) if isinstance(problem, FieldText) else f"  {problem}"


def _profile_problems(profiles: _Profiles, kind: str, ref: str, where: str) -> list[str]:
    try:
        profiles.get(kind, ref)
    except ProfileError as exc:
        return [f"{where}: invalid {kind} profile {ref!r}:"] + [_indented(p) for p in exc.problems]
    except ProfileNotFoundError as exc:  # its pointer names a field: the reporter words it (the CLI: a flag)
        return [FieldText(exc.names, f"{where}: {exc.message}")]
    except KvplanError as exc:
        return [f"{where}: {exc}"]
    return []


def resolve(spec: GateSpec, doc: YamlDocument, catalog: Catalog, indices: list[int] | None = None) -> GateFile:
    """Resolve every configuration: profiles, policy files, the scenario, one evaluation (its checks).

    ``indices``: each configuration's place in the file, when ``spec`` holds only some of them.
    """
    profiles = _Profiles(catalog, Path(doc.path).parent)
    defaults = _set_fields(spec.defaults)
    problems: list[str] = []
    notes: list[str] = []
    configs: list[GateConfig] = []
    if indices is None:  # a file that failed validation has its duplicates found by load_gate, on the raw data
        problems += _duplicate_names(doc)
    for j, cfg in enumerate(spec.configurations):
        i = j if indices is None else indices[j]
        own = _set_fields(cfg)
        values = {**defaults, **own}
        loc = ("configurations", i)
        own_keys, default_keys = _written(doc, loc), _written(doc, ("defaults",))
        # each knob in force by the key the file gave it with (its name, or an older key)
        written = {**{k: v for k, v in default_keys.items() if k not in own}, **own_keys}

        def where(key: str) -> str:
            at = (loc + (own_keys.get(key, key),) if key in own else ("defaults", default_keys.get(key, key))
                  if key in defaults else loc)
            return f"{doc.where(at)}: {'.'.join(map(str, at))}"

        resolved: dict[str, Resolved] = {}
        for kind in ("device", "model", "ctx"):
            if values.get(kind) is None:
                problems.append(f"{doc.where(loc)}: {'.'.join(map(str, loc))}.{kind}: required "
                                f"(give it here or under defaults)")
            elif kind != "ctx":
                found = _profile_problems(profiles, kind, values[kind], where(kind))
                if found:
                    problems += found
                else:
                    resolved[kind] = profiles.get(kind, values[kind])
        if len(resolved) < 2 or values.get("ctx") is None:
            continue
        notes += [r.note for r in resolved.values() if r.note]
        policy = values.get("kv_policy")
        if isinstance(policy, str) and policy.strip().lower() != NO_POLICY:
            try:
                values["kv_policy"] = profiles.policy(policy)
            except ProfileError as exc:
                problems += [f"{where('kv_policy')}: invalid kv policy file {policy!r}:"] + [
                    f"  {p}" for p in exc.problems]
                continue
            except KvplanError as exc:
                problems.append(f"{where('kv_policy')}: {exc}")
                continue
        try:
            scenario = build_scenario(resolved["device"].profile, resolved["model"].profile, values["ctx"],
                                      to_knobs(values))
            evaluation = evaluate(scenario)  # a runtime refusing the model or the ctx: this file's error
        except KvplanError as exc:
            problems.append(_build_problem(doc, loc, own, defaults, exc, written))
            continue
        given = {k: v for k, v in values.items() if k in THRESHOLD_NAMES and v is not None}
        thresholds = Thresholds(**{k: v for k, v in values.items() if k in THRESHOLD_NAMES
                                   and (v is not None or k != "must_fit")})
        if not thresholds.must_fit and not given.keys() - {"must_fit"}:
            notes.append(f"{doc.where(loc)}: {cfg.name}: must_fit is false and no other threshold is set: nothing "
                         "is checked, so it passes whatever its figures")
        configs.append(GateConfig(cfg.name, doc.line_of(loc), scenario, thresholds, bool(given),
                                  resolved["device"], resolved["model"], evaluation))
    if problems:
        raise ProfileError(_in_file_order(problems, doc))
    return GateFile(doc.path, spec.title, tuple(configs), tuple(dict.fromkeys(notes)))


def _build_problem(doc: YamlDocument, loc: tuple, own: dict, defaults: dict, exc: KvplanError,
                   written: dict[str, str] | None = None) -> str:
    """``file:line: configurations.N.key: message`` at the first key the error is about that is set (in the
    configuration, else under ``defaults``), else at the configuration; worded with the file's keys (``written``)."""
    if isinstance(exc, FieldError):
        keys = dict.fromkeys(f.split(".")[0] for f in exc.fields + exc.about)
        for key in keys:
            if own.get(key) is not None or defaults.get(key) is not None:
                text = _file_key(key, written)
                at = loc + (text,) if own.get(key) is not None else ("defaults", text)
                return f"{doc.where(at)}: {'.'.join(map(str, loc + (text,)))}: {_placed_wording(exc, key, written)}"
        return f"{doc.where(loc)}: {'.'.join(map(str, loc))}: {_placed_wording(exc, None, written)}"
    return f"{doc.where(loc)}: {'.'.join(map(str, loc))}: {exc}"
