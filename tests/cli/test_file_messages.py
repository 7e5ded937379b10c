"""Errors about files in the file's words: no pydantic class names, the full key path of a duplicate key, and a
profiles folder that is a file or comes from $KVPLAN_PROFILES said as such."""

from __future__ import annotations

import os
import sys

import pytest


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


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_an_endless_input_is_refused_by_size_not_read_forever(run):
    # /dev/zero reports size 0: the read itself is bounded (1 MiB for YAML, 64 MiB for a bench file)
    result = run("check", "-d", "/dev/zero", "-m", "7b", "-c", "1k")
    assert result.exit_code == 2 and "/dev/zero: file is too large" in result.stderr
    result = run("calibrate", "/dev/zero", "-o", "x.yaml", "--bandwidth", "100GB/s")
    assert result.exit_code == 2 and "/dev/zero:1: file is too large (more than the limit of 67,108,864" in result.stderr
    result = run("import", "gguf", "/dev/zero")
    assert result.exit_code == 2 and "/dev/zero: not a regular file" in result.stderr


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX file names are bytes")
def test_a_profile_under_a_non_utf8_path_is_cached_like_any_other(run, tmp_path, monkeypatch):
    monkeypatch.setenv("KVPLAN_CACHE_DIR", str(tmp_path / "cache"))
    folder = os.path.join(os.fsencode(tmp_path), b"bad\xff")
    os.mkdir(folder)
    device = os.fsdecode(os.path.join(folder, b"p.yaml"))
    with open(device, "w") as handle:
        handle.write("name: p\nram: 8 GB\nos_reserve: 2 GB\nmemory_bandwidth: 50 GB/s\nflash_read: 2 GB/s\n")
    for _ in range(2):  # cold, then from the cache
        result = run("check", "-d", device, "-m", "7b", "-c", "1k", "-f", "json")
        assert result.exit_code == 0, result.stderr


def test_a_hugging_face_config_is_a_model_as_a_gguf_file_is(run_json, run):
    from pathlib import Path

    config = Path(__file__).resolve().parents[1] / "data" / "hf_configs" / "qwen3-0.6b.json"
    _, imported = run_json("check", "-d", "pixel8", "-m", config, "-c", "8k")
    _, builtin = run_json("check", "-d", "pixel8", "-m", "qwen3-0.6b", "-c", "8k")
    # 28 layers × 8 KV heads × 128 × 2 (K, V) × 2 B = 114,688 B/token, the same profile as the built-in one
    assert imported["kv_bytes_per_token"] == builtin["kv_bytes_per_token"] == 114_688
    assert imported["memory"]["weights_bytes"] == builtin["memory"]["weights_bytes"]
    assert "read as a Hugging Face config.json" in run("check", "-d", "pixel8", "-m", config, "-c", "8k").stderr
