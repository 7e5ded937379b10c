"""`kvplan import hf | gguf` from the command line: stdout, -o FILE, and what the file is good for."""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

from tests.conftest import DATA, REF_PHONE

CONFIG = DATA / "hf_configs" / "gemma-3-1b.json"


def test_import_hf_to_stdout_is_a_valid_profile(run):
    result = run("import", "hf", CONFIG)
    assert result.exit_code == 0
    data = yaml.safe_load(result.stdout)
    assert data["name"] == "gemma-3-1b" and data["head_dim"] == 256 and data["sliding_window_pattern"] == "5:1"
    assert data["params"] == 999_885_952 and "derived from config" in data["sources"]["params"]


def test_import_hf_to_a_file_then_validate_and_check(run, run_json, tmp_path):
    out = tmp_path / "mine.yaml"
    result = run("import", "hf", CONFIG, "-o", out, "--name", "mine", "--weight-bits", "4")
    assert result.exit_code == 0 and result.stdout == ""
    assert f"wrote model profile 'mine' to {out}" in result.stderr
    assert run("profiles", "validate", out).exit_code == 0
    code, doc = run_json("check", "--device", REF_PHONE, "--model", out, "--ctx", "32768")
    assert code == 0
    assert doc["memory"]["kv_bytes"] == 4 * 1024 * 32768 + 22 * 1024 * 512  # as the built-in gemma-3-1b
    assert doc["weight_bits"] == 4


def test_import_params_option(run):
    result = run("import", "hf", CONFIG, "--params", "1B")
    data = yaml.safe_load(result.stdout)
    assert data["params"] == 1_000_000_000 and data["sources"]["params"] == "given on the command line (--params)"


def test_import_bad_params_and_bad_file(run, tmp_path):
    assert run("import", "hf", CONFIG, "--params", "1 GB").exit_code == 2
    result = run("import", "hf", tmp_path / "nope.json")
    assert result.exit_code == 2 and "no such file" in result.stderr


def test_import_refuses_an_unwritable_output(run, tmp_path):
    result = run("import", "hf", CONFIG, "-o", tmp_path / "no-folder" / "x.yaml")
    assert result.exit_code == 2 and "does not exist" in result.stderr


def test_import_gguf_needs_no_gguf_package(run, tmp_path, monkeypatch):
    # kvplan reads the header with its own parser (kvplan.importers.gguf_header), as --model x.gguf does: a file
    # that is only a magic number is a damaged header, whether the gguf package is installed or not
    path = tmp_path / "m.gguf"
    path.write_bytes(b"GGUF")
    monkeypatch.setitem(sys.modules, "gguf", None)
    result = run("import", "gguf", path)
    assert result.exit_code == 2
    assert "not a readable GGUF file" in result.stderr and "gguf' package" not in result.stderr


# --- issue 14 point 7: a model folder, the profile's name, the default weight format, --force --------------------

QWEN3 = DATA / "hf_configs" / "qwen3-0.6b.json"  # has no _name_or_path


def _model_folder(tmp_path, folder_name: str, *, model_files: bool) -> object:
    folder = tmp_path / folder_name
    folder.mkdir()
    (folder / "config.json").write_text(QWEN3.read_text())
    if model_files:
        (folder / "tokenizer_config.json").write_text("{}")
    return folder


def test_import_hf_takes_a_model_folder_and_names_the_profile_after_it(run, tmp_path):
    folder = _model_folder(tmp_path, "Qwen3-0.6B", model_files=True)
    for source in (folder, folder / "config.json"):
        result = run("import", "hf", source)
        assert result.exit_code == 0, result.stderr
        assert yaml.safe_load(result.stdout)["name"] == "qwen3-0.6b"
        assert "after the model folder 'Qwen3-0.6B'" in result.stderr


def test_a_lone_config_json_does_not_name_the_profile_after_its_folder(run, tmp_path):
    folder = _model_folder(tmp_path, "my", model_files=False)
    result = run("import", "hf", folder / "config.json")
    assert result.exit_code == 0
    assert yaml.safe_load(result.stdout)["name"] == "qwen3"  # the config's model_type, never 'my'
    assert "'my' holds no model files" in result.stderr


def test_name_or_path_names_the_profile_first(run, tmp_path):
    folder = _model_folder(tmp_path, "my", model_files=True)
    (folder / "config.json").write_text((DATA / "hf_configs" / "llama-2-7b.json").read_text())
    result = run("import", "hf", folder)
    assert yaml.safe_load(result.stdout)["name"] == "llama-2-7b-hf"  # "_name_or_path": "meta-llama/Llama-2-7b-hf"


def test_a_hugging_face_cache_folder_names_the_model(run, tmp_path):
    snapshot = tmp_path / "models--Qwen--Qwen3-0.6B" / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text(QWEN3.read_text())
    assert yaml.safe_load(run("import", "hf", snapshot / "config.json").stdout)["name"] == "qwen3-0.6b"


def test_a_folder_without_config_json_is_one_line(run, tmp_path):
    result = run("import", "hf", tmp_path)
    assert result.exit_code == 2
    assert result.stderr == f"kvplan: error: {tmp_path}: a folder without a config.json (give the config file, " \
                            "or the model folder that holds it)\n"


def test_import_hf_writes_four_bit_weights_by_default_as_every_builtin(run, run_json, tmp_path):
    data = yaml.safe_load(run("import", "hf", CONFIG).stdout)
    assert data["weight_bits"] == 4 and "weight_type" not in data
    folder = Path(__file__).resolve().parents[2] / "model_profiles"
    builtin = [yaml.safe_load(p.read_text()) for p in folder.glob("*.yaml")]
    assert {p["weight_bits"] for p in builtin if "weight_type" not in p} == {4}
    # a model released in one weight format names it instead: gpt-oss's MXFP4 experts
    assert {p["name"]: p["weight_type"] for p in builtin if "weight_type" in p} == {"gpt-oss-20b": "mxfp4"}


def test_import_hf_weight_type_is_written_and_priced(run, run_json, tmp_path):
    out = tmp_path / "q.yaml"
    assert run("import", "hf", CONFIG, "-o", out, "--weight-type", "Q4_K_M").exit_code == 0
    data = yaml.safe_load(out.read_text())
    assert data["weight_type"] == "q4_k_m" and "weight_bits" not in data
    _, with_profile = run_json("check", "-d", REF_PHONE, "-m", out, "-c", "4096")
    _, with_flag = run_json("check", "-d", REF_PHONE, "-m", "gemma-3-1b", "-c", "4096", "--weight-type", "q4_k_m")
    assert with_profile["memory"]["weights_bytes"] == with_flag["memory"]["weights_bytes"]


def test_import_hf_bad_weight_type_is_one_line(run):
    result = run("import", "hf", CONFIG, "--weight-type", "q9_z")
    assert result.exit_code == 2
    assert result.stderr.startswith("kvplan: error: --weight-type: unknown weight format 'q9_z'; known: f32")


def test_import_keeps_an_existing_output_without_force(run, tmp_path):
    out = tmp_path / "kept.yaml"
    out.write_text("name: mine\n")
    result = run("import", "hf", CONFIG, "-o", out)
    assert result.exit_code == 2
    assert result.stderr == f"kvplan: error: --output: {out} exists; add --force to overwrite it\n"
    assert out.read_text() == "name: mine\n"
    assert run("import", "hf", CONFIG, "-o", out, "--force").exit_code == 0
    assert yaml.safe_load(out.read_text())["name"] == "gemma-3-1b"


def test_hub_ids_still_go_to_the_hub(monkeypatch):
    from kvplan.cli.imports import _looks_like_hub_id

    assert _looks_like_hub_id("Qwen/Qwen3-0.6B") and _looks_like_hub_id("hf:org/name@main:Q4_K_M")
    assert not _looks_like_hub_id("./Qwen3-0.6B") and not _looks_like_hub_id("my/config.json")
