"""`kvplan profiles list | show | validate | schema`."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import DATA, REF_7B, REF_PHONE

HALF_PHONE = DATA / "profiles_cmd" / "half-phone.yaml"
BROKEN = DATA / "profiles_cmd" / "broken-model.yaml"
DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_list_has_the_builtin_devices_and_models(run_json):
    code, doc = run_json("profiles", "list")
    assert code == 0
    kinds = [row["kind"] for row in doc["profiles"]]
    assert kinds.count("device") >= 12 and kinds.count("model") >= 20
    assert {row["origin"] for row in doc["profiles"]} == {"builtin"}


def test_list_filters_by_kind_and_name(run_json):
    code, doc = run_json("profiles", "list", "--kind", "model", "--name", "QWEN3")
    assert code == 0
    names = [row["name"] for row in doc["profiles"]]
    assert names and all("qwen3" in n for n in names)
    assert {row["kind"] for row in doc["profiles"]} == {"model"}


def test_list_name_filter_matches_aliases(run_json):
    _, doc = run_json("profiles", "list", "--kind", "model", "--name", "7b")
    assert "llama-2-7b" in [row["name"] for row in doc["profiles"]]  # alias '7b'


def test_list_row_figures_of_a_builtin_model(run_json):
    _, doc = run_json("profiles", "list", "--kind", "model", "--name", "gemma-3-1b")
    row = next(r for r in doc["profiles"] if r["name"] == "gemma-3-1b")
    # 26 layers × 2 (K, V) × 1 KV head × 256 × 2 bytes = 26,624 bytes per token at fp16
    assert row["kv_bytes_per_token_fp16"] == 26 * 2 * 1 * 256 * 2 == 26_624
    assert (row["global_layers"], row["windowed_layers"]) == (4, 22)  # layers 5, 11, 17, 23 are global


def test_list_table_has_both_sections(run):
    result = run("profiles", "list")
    assert result.exit_code == 0
    out = result.stdout
    assert out.startswith("devices (") and "\nmodels (" in out
    assert "pixel8 " in out and "KV B/token fp16" in out and "26,624" in out


def test_show_device_json_has_every_field_in_base_units(run_json):
    code, doc = run_json("profiles", "show", str(HALF_PHONE))
    assert code == 0
    assert doc["kind"] == "device" and doc["origin"] == "file"
    assert doc["ram"] == 8_000_000_000 and doc["os_reserve"] == 2_000_000_000
    assert doc["memory_bandwidth"] == 50e9 and doc["bandwidth_efficiency"] == 0.5
    assert doc["derived"]["budget_bytes"] == 6_000_000_000  # 8 GB − 2 GB
    assert doc["derived"]["effective_bandwidth_bytes_per_s"] == 25e9  # 50 GB/s × 0.5
    assert doc["sources"]["ram"] == "test fixture"


def test_show_model_json(run_json):
    code, doc = run_json("profiles", "show", str(REF_7B))
    assert code == 0 and doc["kind"] == "model"
    assert doc["params"] == 7_000_000_000 and doc["weights"] == 1_750_000_000
    assert doc["derived"]["kv_bytes_per_token_fp16"] == 2 * 32 * 32 * 128 * 2 == 524_288


def test_show_builtin_by_alias_table(run):
    result = run("profiles", "show", "7b")
    assert result.exit_code == 0
    assert result.stdout.startswith("model llama-2-7b (")
    assert "524,288 B" in result.stdout  # KV bytes per token at fp16
    assert "huggingface.co" in result.stdout  # the source of a figure


def test_show_kind_restricts(run):
    result = run("profiles", "show", "pixel8", "--kind", "model")
    assert result.exit_code == 2
    assert "unknown model 'pixel8'" in result.stderr


def test_show_unknown_name(run):
    result = run("profiles", "show", "no-such-thing")
    assert result.exit_code == 2
    assert "no device or model named 'no-such-thing'" in result.stderr


def test_validate_valid_files(run):
    result = run("profiles", "validate", str(REF_PHONE), str(REF_7B), str(HALF_PHONE))
    assert result.exit_code == 0
    assert f"{REF_PHONE}: ok (device ref-phone)" in result.stdout
    assert f"{REF_7B}: ok (model ref-7b)" in result.stdout
    assert "3 files checked: all valid" in result.stdout


def test_validate_reports_every_error_with_its_line(run):
    result = run("profiles", "validate", str(BROKEN), str(REF_PHONE))
    assert result.exit_code == 2
    lines = result.stdout.splitlines()
    assert f"{BROKEN}:1: name: 'Broken Model' is not a valid name: use lowercase letters, digits, '.', '_' and '-'" \
        in lines
    assert f"{BROKEN}:4: kv_heads: 5 does not divide attention_heads (32)" in lines
    assert f"{BROKEN}:5: head_dim: must be greater than 0" in lines
    assert f"{BROKEN}:6: params: expected a count like '6.74B', got a size '7 GB'" in lines
    assert f"{REF_PHONE}: ok (device ref-phone)" in lines
    assert lines[-1] == "2 files checked: 1 invalid (4 problems)"


def test_validate_json(run):
    result = run("profiles", "validate", str(BROKEN), "--format", "json")
    assert result.exit_code == 2
    doc = json.loads(result.stdout)
    assert doc["ok"] is False and doc["files"][0]["kind"] == "model" and len(doc["files"][0]["errors"]) == 4


def test_validate_kind_option_overrides_detection(run):
    result = run("profiles", "validate", "--kind", "model", str(REF_PHONE))
    assert result.exit_code == 2
    # a device file checked as a model: one plain line instead of a dozen missing/unknown fields
    assert f"{REF_PHONE}: this is a device profile, but a model profile is needed here" in result.stdout


def test_validate_undecidable_kind_and_missing_file(run, tmp_path):
    odd = tmp_path / "odd.yaml"
    odd.write_text("name: odd\n")
    result = run("profiles", "validate", str(odd), str(tmp_path / "missing.yaml"))
    assert result.exit_code == 2
    assert "cannot tell a device from a model" in result.stdout
    assert f"{tmp_path / 'missing.yaml'}: no such file" in result.stdout


def test_schema_equals_the_shipped_schema_files(run):
    for kind in ("device", "model"):
        result = run("profiles", "schema", "--kind", kind)
        assert result.exit_code == 0
        assert result.stdout == (DOCS / "schema" / f"{kind}.schema.json").read_text(encoding="utf-8")


def test_schema_quantities_accept_strings_with_units(run):
    doc = json.loads(run("profiles", "schema", "--kind", "device").stdout)
    ram = doc["properties"]["ram"]
    assert {"type": "integer", "minimum": 1} in ram["anyOf"]
    assert any(s.get("type") == "string" and "pattern" in s for s in ram["anyOf"])
    assert doc["additionalProperties"] is False and "ram" in doc["required"]


def test_schema_needs_a_kind(run):
    result = run("profiles", "schema")
    assert result.exit_code == 2


def test_profiles_doc_describes_every_field():
    from kvplan.profiles.spec import Device, Model

    text = (DOCS / "profiles.md").read_text(encoding="utf-8")
    for cls in (Device, Model):
        missing = [name for name in cls.model_fields if f"`{name}`" not in text]
        assert missing == [], f"docs/profiles.md does not describe {cls.__name__} fields {missing}"
