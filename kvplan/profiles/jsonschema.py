"""JSON Schema of the profile files, for editors (``# yaml-language-server: $schema=…``) and CI.

The pydantic models in :mod:`kvplan.profiles.spec` hold base-unit numbers once validated, but the
YAML files take quantities as strings with units (``8 GB``, ``51.2 GB/s``, ``6.74B``, ``8k``).
The fragments of :mod:`kvplan.profiles.fields` describe what a file may contain; the models attach
them to their quantity types with ``WithJsonSchema``, so the generated schema accepts exactly what a
profile file may say.
"""

from __future__ import annotations

from typing import Literal

from kvplan.profiles.spec import Device, Model
from kvplan.profiles.fields import (DEVICE_FIELD_DOCS, MLA_FIELD_DOCS, MODEL_FIELD_DOCS, SCHEMA_DIALECT,
                                   STATE_FIELD_DOCS)



def profile_json_schema(kind: Literal["device", "model"]) -> dict:
    """The JSON Schema (draft 2020-12) of a device or model profile file."""
    cls = Device if kind == "device" else Model
    schema = cls.model_json_schema(mode="validation")
    _describe(schema, DEVICE_FIELD_DOCS if kind == "device" else MODEL_FIELD_DOCS)
    if "Mla" in schema.get("$defs", {}):
        _describe(schema["$defs"]["Mla"], MLA_FIELD_DOCS)
    if "StateSpec" in schema.get("$defs", {}):
        _describe(schema["$defs"]["StateSpec"], STATE_FIELD_DOCS)
    _standard_bounds(schema)
    body = {k: v for k, v in schema.items() if k != "title"}
    return {"$schema": SCHEMA_DIALECT, "title": f"kvplan {kind} profile", **body}


_BOUNDS = {"ge": "minimum", "le": "maximum", "gt": "exclusiveMinimum", "lt": "exclusiveMaximum"}


def _standard_bounds(node) -> None:
    """pydantic leaves ``ge``/``le`` of a constraint behind a before-validator as-is; use JSON Schema's names."""
    if isinstance(node, dict):
        if node.get("type") in ("integer", "number"):
            for short, standard in _BOUNDS.items():
                if short in node:
                    node[standard] = node.pop(short)
        for value in node.values():
            _standard_bounds(value)
    elif isinstance(node, list):
        for value in node:
            _standard_bounds(value)


def _describe(schema: dict, docs: dict[str, str]) -> None:
    """Give every property the description of its field (the field's own unit note wins)."""
    for name, prop in schema.get("properties", {}).items():
        own = prop.get("description")
        prop["description"] = docs.get(name, own or "")
        prop.pop("title", None)
