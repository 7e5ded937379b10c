"""What the importers share: layer-pattern compression, names, and writing the profile YAML."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from kvplan.errors import FieldError
from kvplan.profiles.spec import Model


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
    when no layer is local.
    """
    local = sorted(set(local_layers))
    if not local:
        return None
    if local == list(range(layers)):
        return "all"
    if local == list(range(0, layers, 2)):
        return "alternating"
    for n in range(1, layers):
        if local == [i for i in range(layers) if i % (n + 1) < n]:
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
    import yaml

    return yaml.safe_load(text) == text


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
           notes: list[str] | None = None) -> ImportedProfile:
    """Render the YAML and validate it as a model, so a surprising input fails here, not later."""
    from kvplan.profiles.loading import validate_document
    from kvplan.files.yamlio import parse_yaml

    text = render_yaml(fields, header)
    model = validate_document(Model, parse_yaml(text, f"{where} (imported profile)"), what="model profile")
    return ImportedProfile(model, text, tuple(notes or ()))
