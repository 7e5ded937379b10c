"""What the importers share: layer-pattern compression, names, and writing the profile YAML."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field

from kvplan.errors import FieldError, FieldText, ProfileError
from kvplan.profiles.spec import Model

#: ``sources.params`` of a profile whose parameter count the caller gave (the CLI says which option)
PARAMS_GIVEN = "given by the caller"

#: the note on a mixture of experts whose ``params`` the caller gave: ``params_active`` is not derived then
MOE_PARAMS_GIVEN = FieldText("params", "a mixture of experts: params_active is derived only when params is (no "
                             "{params}); add it from the model card, or decode is priced as if every expert were read")


@dataclass(frozen=True)
class ImportedProfile:
    """A model profile produced by an importer: the validated model and its YAML text."""

    model: Model
    yaml_text: str
    notes: tuple[str, ...] = field(default=())

    @property
    def name(self) -> str:
        return self.model.name


def slug(text: str) -> str:
    """A profile name from free text: ``Qwen/Qwen3-0.6B`` → ``qwen3-0.6b``."""
    from kvplan.profiles.field_rules import suggested_name

    return suggested_name(str(text).strip().rstrip("/").split("/")[-1]) or "imported-model"


def window_pattern(local_layers: list[int], layers: int) -> str | list[int] | None:
    """The compact ``sliding_window_pattern`` for a set of windowed (local) layers.

    ``all`` when every layer is local, ``alternating`` when the even layers are, ``"N:1"`` when
    layer ``i`` is local exactly when ``i % (N+1) < N``, else the explicit 0-based list; None
    when no layer is local. Linear in ``layers``: a period ``N`` pattern has its first global layer
    at ``N``, so that is the one period worth testing (trying every period was quadratic: 14.7 s for
    20,000 layers).
    """
    local = sorted(set(local_layers))
    if not local:
        return None
    is_local = set(local)

    def follows(rule) -> bool:
        return len(local) == sum(1 for i in range(layers) if rule(i)) and all(rule(i) for i in local)

    if follows(lambda i: 0 <= i < layers):
        return "all"
    if follows(lambda i: 0 <= i < layers and i % 2 == 0):
        return "alternating"
    n = next((i for i in range(layers) if i not in is_local), 0)  # the first global layer
    if n >= 1 and follows(lambda i: 0 <= i < layers and i % (n + 1) < n):
        return f"{n}:1"
    return local


def swa_pattern_layers(n_pattern: int, layers: int) -> list[int]:
    """Local layers of a period-``n`` pattern (llama.cpp ``set_swa_pattern``; HF ``sliding_window_pattern``).

    Layer ``i`` is local when ``i % n < n − 1``: the last layer of every period is global.
    ``n = 0`` makes every layer local, ``n = 1`` none.
    """
    if n_pattern == 0:
        return list(range(layers))
    return [i for i in range(layers) if i % n_pattern < n_pattern - 1]


# One rule for every count an importer reads (a config.json key, a GGUF metadata value): a whole number, given as
# an integer or as a float with nothing after the point (4096.0: JSON writers and GGUF float fields produce them,
# and they mean 4096 exactly). A fraction (64.9), a boolean (true), a string ("32768") or a list is refused, never
# truncated or coerced: each once read as a plausible wrong number (64, 1, a crash, …).
def whole_count(value: object, minimum: int = 1) -> int:
    """``value`` as an int under the rule above, at least ``minimum``; else ValueError saying what it is."""
    if isinstance(value, bool):
        raise ValueError(f"expected a whole number, got a boolean ({str(value).lower()})")
    if isinstance(value, float):
        if not math.isfinite(value) or not value.is_integer():
            shown = repr(value) if len(repr(value)) <= 12 else f"{value:.7g}"  # a GGUF float32: 2.7, not 2.70000005
            raise ValueError(f"expected a whole number, got {shown}")
        value = int(value)
    elif isinstance(value, str):
        raise ValueError(f"expected a whole number, got a string {value!r}")
    elif not isinstance(value, int):
        raise ValueError(f"expected a whole number, got {_kind(value)} {_short(value)}")
    if value < minimum:
        raise ValueError(f"expected a positive whole number, got {value}" if minimum == 1
                         else f"expected a whole number, {minimum} or more, got {value}")
    return value


def flag(value: object) -> bool:
    """A JSON/YAML boolean as is; anything else (``"false"``, 0) is a ValueError: ``bool("false")`` is True."""
    if not isinstance(value, bool):
        shown = f"a string {value!r}" if isinstance(value, str) else f"{_kind(value)} {_short(value)}"
        raise ValueError(f"expected true or false, got {shown}")
    return value


def _kind(value: object) -> str:
    return {list: "a list", dict: "an object", type(None): "null"}.get(type(value), f"a {type(value).__name__}")


def _short(value: object) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str) if value is not None else ""
    return text if len(text) <= 40 else text[:37] + "…"


def check_given_params(params: int, **shape) -> None:
    """A parameter count given for this shape that cannot fill it (``7`` for 7B): an error about the field the
    caller gave, not about a line of the profile it was written into."""
    from kvplan.profiles.plausible import params_problem

    problem = params_problem(params, **shape)
    if problem is not None:
        raise FieldError("params", problem)


# The weight format an imported profile gets unless told: 4 bits per weight, what every built-in model profile
# assumes (on-device deployments run 4-bit weights), so an imported model compares like for like with them.
DEFAULT_WEIGHT_BITS = 4


def weight_format_name(text: str) -> str:
    """The canonical weight format name (``Q4_K_M`` → ``q4_k_m``), or a FieldError naming the known ones."""
    from kvplan.engine.weight_formats import weight_format_key

    try:
        return weight_format_key(text)
    except ValueError as exc:
        raise FieldError("weight_type", str(exc)) from None


def weight_fields(weight_bits: float | None, weight_type: str | None) -> list[tuple[str, object, str]]:
    """The ``weight_bits`` / ``weight_type`` rows of a profile whose weights the source does not fix.

    A named format (``--weight-type``) is priced tensor by tensor and wins over ``weight_bits``; a
    width given alone is written as is; with neither, :data:`DEFAULT_WEIGHT_BITS`.
    """
    rows: list[tuple[str, object, str]] = []
    if weight_type is not None:
        rows.append(("weight_type", weight_format_name(weight_type),
                     "given on the command line: priced tensor by tensor"))
    if weight_bits is not None:
        rows.append(("weight_bits", weight_bits, "given on the command line" +
                     ("; weight_type wins where both apply" if weight_type else "")))
    elif weight_type is None:
        rows.append(("weight_bits", DEFAULT_WEIGHT_BITS, "kvplan's default, as every built-in profile (4-bit weights)"))
    return rows


def _scalar(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_scalar(v) for v in value) + "]"
    text = str(value)
    if re.fullmatch(r"[a-z0-9][a-z0-9._-]*|[0-9]+ B", text) and _plain_yaml_reads_back(text):
        return text
    return json.dumps(text, ensure_ascii=False)  # a JSON string is a valid YAML double-quoted scalar


def _plain_yaml_reads_back(text: str) -> bool:
    from kvplan.files.yamlio import reads_back_plain

    return reads_back_plain(text)


def render_yaml(fields: list[tuple[str, object, str]], header: list[str]) -> str:
    """``(key, value, comment)`` rows → YAML text; dict values become one nested level; None is left out."""
    out = [f"# {line}" for line in header]
    for key, value, comment in fields:
        if value is None:
            continue
        if isinstance(value, dict):
            out.append(f"{key}:" + (f"  # {comment}" if comment else ""))
            out.extend(f"  {k}: {_scalar(v)}" for k, v in value.items() if v is not None)
            continue
        line = f"{key}: {_scalar(value)}"
        out.append(f"{line:<34} # {comment}" if comment else line)
    return "\n".join(out) + "\n"


def finish(fields: list[tuple[str, object, str]], header: list[str], where: str,
           notes: list[str] | None = None, *, keys: dict[str, str] | None = None,
           place: str | None = None) -> ImportedProfile:
    """Render the YAML and validate it as a model, so a surprising input fails here, not later.

    The user never saw the generated YAML, so a problem is not reported at its line: with ``keys`` (profile
    field → the source key it came from, ``kv_heads`` → ``num_key_value_heads``) it names the source key at
    ``place`` (default ``where``): ``config.json: num_key_value_heads: 6 does not divide num_attention_heads (32)``.
    """
    from kvplan.profiles.loading import validate_document
    from kvplan.files.yamlio import parse_yaml

    text = render_yaml(fields, header)
    label = f"{where} (imported profile)"
    try:
        model = validate_document(Model, parse_yaml(text, label), what="model profile")
    except ProfileError as exc:
        if keys is None:
            raise
        raise ProfileError(_in_source_terms(exc.problems, label, place or where, keys)) from None
    return ImportedProfile(model, text, tuple(notes or ()))


def _in_source_terms(problems: list[str], label: str, place: str, keys: dict[str, str]) -> list[str]:
    """``label:LINE: field: message`` problems of the generated YAML → ``place: source key: message``, the first
    problem of each field only (a union field adds a problem per branch: "must be a valid list")."""
    out: dict[str, str] = {}
    pattern = re.compile(rf"^{re.escape(label)}:\d+: ([^:]+): (.*)$", re.S)
    for problem in problems:
        match = pattern.match(problem)
        if not match:
            out.setdefault(problem, problem)
            continue
        field_path, message = match.groups()
        top = field_path.split(".")[0]
        key = keys.get(field_path) or keys.get(top)
        for other, source in keys.items():  # the message may name another field: name its key too
            if other != top and re.fullmatch(r"[\w.]+", source):
                message = re.sub(rf"(?<![\w.]){re.escape(other)}(?![\w.])", source, message)
        what = key if key else f"the imported profile's {field_path}"
        out.setdefault(field_path, f"{place}: {what}: {message}")
    return list(out.values())
