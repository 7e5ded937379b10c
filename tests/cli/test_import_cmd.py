"""`kvplan import hf | gguf` from the command line: stdout, -o FILE, and what the file is good for."""

from __future__ import annotations

import sys

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


def test_import_gguf_without_the_package_is_one_line(run, tmp_path, monkeypatch):
    path = tmp_path / "m.gguf"
    path.write_bytes(b"GGUF")
    monkeypatch.setitem(sys.modules, "gguf", None)
    result = run("import", "gguf", path)
    assert result.exit_code == 2
    assert result.stderr == ("kvplan: error: reading GGUF files needs the optional 'gguf' package: "
                             "pip install gguf (or install kvplan with its [gguf] extra: pip install '.[gguf]')\n")
