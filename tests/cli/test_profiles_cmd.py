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
    assert doc["schema_version"] == 1 and doc["warnings"] == []
    # figures named as `check --format json` names them (memory.ram_bytes …), not by their YAML field
    assert doc["ram_bytes"] == 8_000_000_000 and doc["os_reserve_bytes"] == 2_000_000_000
    assert "ram" not in doc and "memory_bandwidth" not in doc
    assert doc["memory_bandwidth_bytes_per_s"] == 50e9 and doc["bandwidth_efficiency"] == 0.5
    assert doc["derived"]["budget_bytes"] == 6_000_000_000  # 8 GB − 2 GB
    assert doc["derived"]["effective_bandwidth_bytes_per_s"] == 25e9  # 50 GB/s × 0.5
    assert doc["sources"]["ram"] == "test fixture"


def test_show_model_json(run_json):
    code, doc = run_json("profiles", "show", str(REF_7B))
    assert code == 0 and doc["kind"] == "model"
    assert doc["params"] == 7_000_000_000 and doc["weights_bytes"] == 1_750_000_000
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
    # a size needs its unit (a bare number is refused with a suggestion), so the schema offers no bare integer
    assert all(s.get("type") == "string" and "pattern" in s for s in ram["anyOf"])
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


# --- issue 14 points 6–7, issue 15 point 1: suggestions, one surface, piped output, --weights -------------------

def test_show_suggests_like_check_does(run):
    result = run("profiles", "show", "pixle8")
    assert result.exit_code == 2
    assert result.stderr == ("kvplan: error: no device or model named 'pixle8'; did you mean pixel8, pixel8-pro? "
                             "(see 'kvplan profiles list', or pass a YAML path)\n")


def test_suggestions_name_each_profile_once_by_its_own_name(run):
    # pixel8's alias pixel-8 and pixel8-pro's alias pixel8pro are as close as the names: one entry each
    result = run("check", "-d", "pixle8", "-m", "7b", "-c", "4096")
    assert result.exit_code == 2 and "did you mean pixel8, pixel8-pro?" in result.stderr
    # llama-2-7b's aliases llama2-7b and llama-2-7b-hf both match 'lama-2-7b': llama-2-7b once
    result = run("check", "-d", "pixel8", "-m", "lama-2-7b", "-c", "4096")
    guesses = result.stderr.split("did you mean ")[1].split("?")[0].split(", ")
    assert guesses[0] == "llama-2-7b" and len(guesses) == len(set(guesses))
    assert not {"llama2-7b", "llama-2-7b-hf"} & set(guesses)


def test_list_json_carries_schema_version_warnings_and_checks_key_names(run_json):
    code, doc = run_json("profiles", "list", "--kind", "device", "--name", "pixel8")
    assert code == 0 and doc["schema_version"] == 1 and doc["warnings"] == []
    row = next(r for r in doc["profiles"] if r["name"] == "pixel8")
    _, check = run_json("check", "-d", "pixel8", "-m", "7b", "-c", "4096")
    assert row["ram_bytes"] == check["memory"]["ram_bytes"] == 8_000_000_000
    assert row["os_reserve_bytes"] == check["memory"]["os_reserve_bytes"] == 2_000_000_000
    assert row["budget_bytes"] == check["memory"]["budget_bytes"] == 6_000_000_000  # 8 GB − 2 GB
    assert {"ram", "os_reserve", "memory_bandwidth", "flash_read"}.isdisjoint(row)
    assert row["memory_bandwidth_bytes_per_s"] == 68.3e9 and row["flash_read_bytes_per_s"] == 2.1e9


def test_model_row_uses_checks_names_too(run_json):
    _, doc = run_json("profiles", "list", "--kind", "model", "--name", "llama-2-7b")
    row = next(r for r in doc["profiles"] if r["name"] == "llama-2-7b")
    _, check = run_json("check", "-d", "pixel8", "-m", "llama-2-7b", "-c", "4096")
    # 6,740,000,000 params × 4 bits / 8 = 3,370,000,000 B
    assert row["weights_bytes"] == check["memory"]["weights_bytes"] == 3_370_000_000
    assert row["kv_bytes_per_token"] == check["kv_bytes_per_token"] == 524_288


def test_list_and_show_warn_about_a_window_llama_cpp_ignores(run, run_json):
    _, doc = run_json("profiles", "show", "mistral-7b-v0.1")
    assert len(doc["warnings"]) == 1 and "llama.cpp ignores its 4,096-token sliding window" in doc["warnings"][0]
    _, listed = run_json("profiles", "list", "--kind", "model", "--name", "mistral-7b-v0.1")
    assert listed["warnings"] == doc["warnings"]
    result = run("profiles", "show", "mistral-7b-v0.1")
    assert "kvplan: warning: model mistral-7b-v0.1: llama.cpp ignores" in result.stderr
    _, gemma = run_json("profiles", "show", "gemma-3-1b")  # llama.cpp honours Gemma 3's window
    assert gemma["warnings"] == []


def test_show_piped_prints_each_source_once_wrapped(run):
    result = run("profiles", "show", "7b")  # conftest sets COLUMNS=120
    out = result.stdout
    assert result.exit_code == 0
    assert max(len(line) for line in out.splitlines() if "builtin profile:" not in line) <= 120
    assert out.count("model card (https://huggingface.co/meta-llama/Llama-2-7b-hf)") == 1
    assert "sources (in full)" not in out and "\nsources\n" in out
    assert "https://huggingface.co/meta-llama/Llama-2-7b-hf/blob/main/config.json" in out  # a URL is never broken


def test_show_wraps_to_the_columns_of_a_pipe(run, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    lines = run("profiles", "show", "7b").stdout.splitlines()
    # only a word that cannot be broken (a URL) may carry its row, and the rule under the headings, past 80
    long = [line for line in lines if len(line) > 80 and "builtin profile:" not in line
            and "Meta Llama 2 7B" not in line and "https://" not in line and not line.startswith("---")]
    assert long == []
    assert any("https://" in line and len(line) > 80 for line in lines)  # the config URL, whole


def test_list_on_a_100_column_terminal_splits_columns_and_says_so():
    import io

    from rich.console import Console

    from kvplan.cli.terminal import _print_rich
    from kvplan.render.tables import Table

    t = Table("devices (1)", ["name", "aliases", "RAM", "budget", "bandwidth", "efficiency", "flash read", "origin"])
    t.add("macbook-pro-m4-pro-24gb", "mbp-m4-pro-24gb, m4-pro-24gb, m4pro-24gb", "25.77 GB", "17.18 GB",
          "273.00 GB/s", "0.909", "2.78 GB/s", "builtin")
    buffer = io.StringIO()
    _print_rich([t], Console(file=buffer, width=100, color_system=None, force_terminal=False))
    text = buffer.getvalue()
    for heading in t.columns:  # nothing dropped
        assert heading.split()[0] in text
    assert "devices (1) (continued)" in text and "origin" in text and "builtin" in text


def test_show_weights_breakdown_of_llama_2_7b_q4_k_m(run):
    result = run("profiles", "show", "7b", "--weights", "--weight-type", "q4_k_m")
    assert result.exit_code == 0
    out = result.stdout
    # 32 layers: use_more_bits picks i < 4, i ≥ 28 and (i − 4) % 3 == 2 → 0-3, 6, 9, …, 27, 28-31 = 16 layers
    assert "blk.{0-3,6,9,12,15,18,21,24,27-31}.attn_v.weight" in out
    # 16 × 4096 rows × 4096/256 blocks × 210 B (Q6_K) = 220,200,960
    assert "220,200,960" in out and 16 * 4096 * (4096 // 256) * 210 == 220_200_960
    # output: 32,000 rows × 16 blocks × 210 B = 107,520,000 in Q6_K
    assert "output.weight" in out and "107,520,000" in out
    assert "total" in out and "4,080,263,168" in out and "4.844 bits per weight" in out


def test_show_weights_json_has_every_tensor(run_json):
    code, doc = run_json("profiles", "show", "llama-2-7b", "--weights", "--weight-type", "q4_k_m")
    assert code == 0 and doc["schema_version"] == 1 and doc["model"] == "llama-2-7b"
    w = doc["weights"]
    assert w["type"] == "q4_k_m" and w["weights_bytes"] == sum(t["bytes"] for t in w["tensors"]) == 4_080_263_168
    # 32 layers × 9 tensors (q, k, v, o, gate, up, down, 2 norms) + token_embd, output, output_norm = 291
    assert len(w["tensors"]) == 32 * 9 + 3 == 291
    assert sum(g["count"] for g in w["groups"]) == 291
    assert w["bytes_by_type"]["q6_K"] == 107_520_000 + 220_200_960 + 16 * 4096 * (11008 // 256) * 210


def test_show_weights_without_a_format_says_what_uniform_bits_give(run):
    result = run("profiles", "show", "7b", "--weights")
    assert result.exit_code == 0
    # 6,740,000,000 params × 4 bits / 8 = 3,370,000,000 B
    assert "uniform 4 bits per weight" in result.stdout and "3,370,000,000 B" in result.stdout
    assert "--weight-type q4_k_m" in result.stdout


def test_show_weights_group_size_of_an_mlx_format(run_json):
    _, g64 = run_json("profiles", "show", "7b", "--weights", "--weight-type", "mlx-4bit")
    _, g32 = run_json("profiles", "show", "7b", "--weights", "--weight-type", "mlx-4bit", "--weight-group-size", "32")
    assert g32["weights"]["group_size"] == 32 and g32["weights"]["weights_bytes"] > g64["weights"]["weights_bytes"]


def test_show_weights_errors_are_one_line(run):
    assert run("profiles", "show", "pixel8", "--weights").stderr == \
        "kvplan: error: --weights lists a model's tensors; 'pixel8' is a device\n"
    assert run("profiles", "show", "7b", "--weight-type", "q4_0").stderr == \
        "kvplan: error: --weight-type applies to the weight breakdown: add --weights\n"
    result = run("profiles", "show", "7b", "--weights", "--weight-type", "q4_k_m", "--weight-group-size", "32")
    assert result.exit_code == 2 and result.stderr.startswith("kvplan: error: --weight-group-size: ")
    result = run("profiles", "show", "7b", "--weights", "--weight-type", "q9")
    assert result.exit_code == 2 and "unknown weight format 'q9'" in result.stderr


IMPLAUSIBLE = DATA / "acceptance" / "implausible.yaml"
# ram 200 MB, memory_bandwidth 500 MB/s, flash_read 5 MB/s: each under kvplan.plan.warnings' threshold
IMPLAUSIBLE_WARNINGS = [
    "device tiny-board: ram 200,000,000 B is under 256 MB — is a unit missing?",
    "device tiny-board: memory_bandwidth 500,000,000 B/s is under 1 GB/s — is a unit missing?",
    "device tiny-board: flash_read 5,000,000 B/s is under 10 MB/s — is a unit missing?"]


def test_validate_prints_the_warnings_of_a_valid_profile(run):
    result = run("profiles", "validate", str(IMPLAUSIBLE), str(REF_PHONE))
    assert result.exit_code == 0  # valid: warnings never change the exit code
    assert f"{IMPLAUSIBLE}: ok (device tiny-board)" in result.stdout
    assert result.stderr.splitlines() == [f"kvplan: warning: {w}" for w in IMPLAUSIBLE_WARNINGS]
    # as `profiles show` prints them
    assert run("profiles", "show", str(IMPLAUSIBLE)).stderr == result.stderr


def test_validate_warns_of_a_window_llamacpp_ignores_and_keeps_exit_2(run):
    mistral = Path(__file__).resolve().parents[2] / "model_profiles" / "mistral-7b-v0.1.yaml"  # the built-in
    result = run("profiles", "validate", str(mistral), str(BROKEN))
    assert result.exit_code == 2  # BROKEN is invalid, as without warnings
    assert result.stderr.splitlines() == [
        "kvplan: warning: model mistral-7b-v0.1: llama.cpp ignores its 4,096-token sliding window (Mistral is "
        "converted to GGUF as architecture llama, which has no window) and caches the whole context on every "
        "layer; the runtime llama.cpp prices that"]


def test_validate_json_has_schema_version_and_warnings(run):
    result = run("profiles", "validate", str(IMPLAUSIBLE), str(IMPLAUSIBLE), str(BROKEN), "--format", "json")
    assert result.exit_code == 2
    doc = json.loads(result.stdout)
    assert list(doc) == ["schema_version", "warnings", "ok", "files"]
    assert doc["schema_version"] == 1
    assert doc["warnings"] == IMPLAUSIBLE_WARNINGS  # each once, though two files carry them
    assert [f["warnings"] for f in doc["files"]] == [IMPLAUSIBLE_WARNINGS, IMPLAUSIBLE_WARNINGS, []]
    assert [f["ok"] for f in doc["files"]] == [True, True, False]
    assert result.stderr == ""  # JSON carries them; stderr stays quiet


def test_validate_json_without_warnings(run):
    doc = json.loads(run("profiles", "validate", str(REF_PHONE), "--format", "json").stdout)
    assert doc["schema_version"] == 1 and doc["warnings"] == [] and doc["files"][0]["warnings"] == []
