"""Every built-in profile validates, is uniquely named, is sourced, and matches the JSON Schema we ship."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from kvplan.profiles.catalog import builtin_dir
from kvplan.profiles.check import validate_file
from kvplan.profiles.jsonschema import profile_json_schema

KINDS = ("device", "model")
FILES = [(kind, path) for kind in KINDS for path in sorted(builtin_dir(kind).glob("*.yaml"))]
IDS = [f"{kind}:{path.stem}" for kind, path in FILES]
assert len(FILES) >= 32, "built-in profiles not found: these tests would check nothing"
DEVICE_FIGURES = ("ram", "os_reserve", "memory_bandwidth", "flash_read", "flash_write", "bandwidth_efficiency",
                  "compute", "runtime_overhead", "gpu_working_set")


def _raw(path: Path) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def test_there_are_builtin_profiles_of_both_kinds():
    assert sum(k == "device" for k, _ in FILES) >= 12
    assert sum(k == "model" for k, _ in FILES) >= 20


@pytest.mark.parametrize(("kind", "path"), FILES, ids=IDS)
def test_validates_as_its_kind(kind, path):
    result = validate_file(path)
    assert result.problems == []
    assert result.kind == kind  # told by its keys, and it lives in the folder of that kind


@pytest.mark.parametrize(("kind", "path"), FILES, ids=IDS)
def test_file_name_is_the_name(kind, path):
    assert _raw(path)["name"] == path.stem


@pytest.mark.parametrize("kind", KINDS)
def test_names_and_aliases_never_collide(kind):
    owner: dict[str, str] = {}
    for k, path in FILES:
        if k != kind:
            continue
        data = _raw(path)
        for n in [data["name"], *(data.get("aliases") or [])]:
            n = str(n).lower()
            assert n not in owner, f"{n!r} of {path.name} is already used by {owner[n]}"
            owner[n] = path.name


@pytest.mark.parametrize(("kind", "path"), FILES, ids=IDS)
def test_every_figure_has_a_source(kind, path):
    data = _raw(path)
    sources = data.get("sources") or {}
    needed = [f for f in DEVICE_FIGURES if f in data] if kind == "device" else ["config", "params"]
    missing = [f for f in needed if not str(sources.get(f, "")).strip()]
    assert missing == []


# --- the shipped JSON Schema accepts every shipped file (a small structural validator: no new dependency) ---

def _conforms(value, schema: dict, root: dict) -> bool:
    if "$ref" in schema:
        return _conforms(value, root["$defs"][schema["$ref"].split("/")[-1]], root)
    if "anyOf" in schema:
        return any(_conforms(value, s, root) for s in schema["anyOf"])
    kind = schema.get("type")
    checks = {
        "null": value is None, "boolean": isinstance(value, bool), "string": isinstance(value, str),
        "integer": (isinstance(value, int) and not isinstance(value, bool)
                    or isinstance(value, float) and value.is_integer()),
        "number": isinstance(value, (int, float)) and not isinstance(value, bool),
        "array": isinstance(value, list), "object": isinstance(value, dict),
    }
    if kind is not None and not checks[kind]:
        return False
    if "enum" in schema and value not in schema["enum"]:
        return False
    if "pattern" in schema and not re.search(schema["pattern"], value):
        return False
    if "minimum" in schema and value < schema["minimum"]:
        return False
    if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
        return False
    if "maximum" in schema and value > schema["maximum"]:
        return False
    if kind == "array":
        return all(_conforms(v, schema.get("items", {}), root) for v in value)
    if kind == "object":
        props = schema.get("properties", {})
        if any(r not in value for r in schema.get("required", [])):
            return False
        extra = schema.get("additionalProperties", True)
        for key, v in value.items():
            sub = props.get(key, extra if isinstance(extra, dict) else None)
            if sub is None and extra is False:
                return False
            if sub is not None and not _conforms(v, sub, root):
                return False
    return True


@pytest.mark.parametrize(("kind", "path"), FILES, ids=IDS)
def test_schema_accepts_the_shipped_file(kind, path):
    schema = profile_json_schema(kind)
    assert _conforms(_raw(path), schema, schema)


def test_schema_validator_is_not_a_rubber_stamp():
    schema = profile_json_schema("device")
    good = {"name": "x", "ram": "8 GB", "os_reserve": "2 GiB", "memory_bandwidth": "50 GB/s", "flash_read": "2 GB/s"}
    assert _conforms(good, schema, schema)
    assert not _conforms({**good, "ram": "8 GB/s"}, schema, schema)  # a rate where a size belongs
    assert not _conforms({**good, "bandwith": 1}, schema, schema)  # unknown key
    assert not _conforms({k: v for k, v in good.items() if k != "ram"}, schema, schema)  # required key
    assert not _conforms({**good, "bandwidth_efficiency": 1.5}, schema, schema)


@pytest.mark.parametrize("kind", KINDS)
def test_docs_schema_files_are_current(kind):
    shipped = Path(__file__).resolve().parents[2] / "docs" / "schema" / f"{kind}.schema.json"
    # Regenerate with: kvplan profiles schema --kind KIND > docs/schema/KIND.schema.json
    assert json.loads(shipped.read_text(encoding="utf-8")) == profile_json_schema(kind)
