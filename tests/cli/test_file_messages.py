"""Errors about files in the file's words: no pydantic class names, the full key path of a duplicate key, and a
profiles folder that is a file or comes from $KVPLAN_PROFILES said as such."""

from __future__ import annotations


def test_an_empty_section_is_a_mapping_error_not_a_class_name(run, tmp_path):
    gate = tmp_path / "g.yaml"
    gate.write_text("defaults:\nconfigurations:\n  - null\n")
    err = run("gate", gate).stderr
    assert f"{gate}:1: defaults: must be a mapping of fields (key: value lines), got nothing" in err
    assert f"{gate}:3: configurations.0: must be a mapping of fields (key: value lines), got nothing" in err
    assert "instance of" not in err


def test_a_duplicate_key_names_its_whole_path(run, tmp_path):
    gate = tmp_path / "g.yaml"
    gate.write_text("configurations:\n  - name: a\n    device: pixel8\n    device: pixel8\n    model: 7b\n    ctx: 1k\n")
    assert f"{gate}:4: configurations.0.device: duplicate key (first given on line 3)" in run("gate", gate).stderr


def test_a_profiles_folder_that_is_a_file_or_from_the_environment_says_so(run, tmp_path, monkeypatch):
    file = tmp_path / "ok.yaml"
    file.write_text("name: x\n")
    result = run("check", "-d", "pixel8", "-m", "7b", "-c", "1k", "--profiles-dir", file)
    assert result.exit_code == 2 and f"profiles folder '{file}' is a file, not a folder" in result.stderr
    monkeypatch.setenv("KVPLAN_PROFILES", str(tmp_path / "nope"))
    result = run("check", "-d", "pixel8", "-m", "7b", "-c", "1k")
    assert f"profiles folder '{tmp_path / 'nope'}' (in $KVPLAN_PROFILES) does not exist" in result.stderr


BAD7 = """name: bad7
params: 7B
layers: 32
attention_heads: 32
kv_heads: 32
head_dim: 128
weight_bits: 4
weight_type: mlx-4bit
"""
NEEDS = "pricing 'bad7' by tensor needs architecture, hidden_size, intermediate_size, vocab_size in its profile"


def test_a_profile_weight_type_that_cannot_be_priced_is_the_profiles_fault(run, tmp_path):
    profile = tmp_path / "bad7.yaml"
    profile.write_text(BAD7)
    result = run("check", "-d", "pixel8", "-m", profile, "-c", "4k")
    assert result.exit_code == 2
    assert f"model bad7: weight_type mlx-4bit: {NEEDS}" in result.stderr and "--weight-type" not in result.stderr
    validated = run("profiles", "validate", profile)  # every planning command refuses it: so does validate
    assert validated.exit_code == 2 and f"{profile}:8: weight_type: {NEEDS}" in validated.stdout
    profile.write_text(BAD7.replace("weight_type: mlx-4bit\n", ""))  # the flag's value: the error names the flag
    result = run("check", "-d", "pixel8", "-m", profile, "-c", "4k", "--weight-type", "mlx-4bit")
    assert f"--weight-type: {NEEDS}" in result.stderr


def test_a_utf16_file_is_named_as_such(run, tmp_path):
    config = tmp_path / "config.json"
    config.write_bytes('{"model_type": "llama"}'.encode("utf-16"))  # with its byte-order mark, as Windows saves it
    result = run("import", "hf", config)
    assert result.exit_code == 2 and f"{config}: UTF-16 text; save it as UTF-8" in result.stderr


def test_show_says_when_it_cannot_tell_the_kind_as_validate_does(run):
    from pathlib import Path

    gate = Path(__file__).resolve().parents[2] / "examples" / "release.yaml"
    result = run("profiles", "show", gate)
    assert result.exit_code == 2
    assert f"{gate}: cannot tell a device from a model by its keys; add --kind device or --kind model" in result.stderr
