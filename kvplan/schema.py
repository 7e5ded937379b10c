"""JSON Schema of the profile files, for editors (``# yaml-language-server: $schema=…``) and CI.

The pydantic models in :mod:`kvplan.profiles` hold base-unit numbers once validated, but the
YAML files take quantities as strings with units (``8 GB``, ``51.2 GB/s``, ``6.74B``, ``8k``).
The fragments below describe what a file may contain; ``profiles.py`` attaches them to its
quantity types with ``WithJsonSchema``, so the generated schema accepts exactly what a
profile file may say. The patterns are ECMA-262 (what JSON Schema validators use) and
mirror the regular expressions of :mod:`kvplan.units`.
"""

from __future__ import annotations

from typing import Literal

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"

_NUM = r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?"


def _quantity(number: dict, suffix: str, example: str, description: str) -> dict:
    return {
        "anyOf": [number, {"type": "string", "pattern": rf"^\s*{_NUM}\s*({suffix})?\s*$"}],
        "description": description,
        "examples": [example],
    }


SIZE_SCHEMA = _quantity({"type": "integer", "minimum": 0}, r"([kKMGTP]i?)?B", "8 GB",
                        "a size: '8 GB' (10^9), '8 GiB' (2^30), '512 MB', or a plain number of bytes")
POSITIVE_SIZE_SCHEMA = _quantity({"type": "integer", "minimum": 1}, r"([kKMGTP]i?)?B", "8 GB",
                                 "a positive size: '8 GB', '8 GiB', or a plain number of bytes")
RATE_SCHEMA = _quantity({"type": "number", "exclusiveMinimum": 0}, r"([kKMGTP]i?)?(B/s|Bps)", "51.2 GB/s",
                        "a transfer rate: '51.2 GB/s', '3 GiB/s', or a plain number of bytes/s")
FLOPS_SCHEMA = _quantity({"type": "number", "exclusiveMinimum": 0}, r"[kKMGTP]?(FLOP/s|FLOPS)", "2.1 TFLOP/s",
                         "a compute throughput: '2.1 TFLOP/s' (or 'TFLOPS'), or a plain number of FLOP/s")
COUNT_SCHEMA = _quantity({"type": "integer", "minimum": 1}, r"[kKMBGT]", "6.74B",
                         "a count: '6.74B' (10^9), '494M', '7e9', or a plain integer")
TOKENS_SCHEMA = _quantity({"type": "integer", "minimum": 1}, r"[kKMm]", "8k",
                          "a token count: 131072, '8k' (= 8192), '128k' (= 131072)")


def profile_json_schema(kind: Literal["device", "model"]) -> dict:
    """The JSON Schema (draft 2020-12) of a device or model profile file."""
    from kvplan.profiles import Device, Model

    cls = Device if kind == "device" else Model
    schema = cls.model_json_schema(mode="validation")
    return {"$schema": SCHEMA_DIALECT, "title": f"kvplan {kind} profile", **{
        k: v for k, v in schema.items() if k != "title"}}
