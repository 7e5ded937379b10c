"""A model profile's ``runtime:`` through every command: the default without --runtime, overridden by it.

tests/data/profile_runtime/tiny-llama-llamacpp.yaml names llama.cpp; one token is 16,384 B at f16
(16 layers × 2 × 4 KV heads × 64 × 2 B). On ref-phone (6 GB budget, 0.5 GB weights) the KV allowance
for max_ctx is 6e9 − 0.5e9 = 5.5e9 B.
"""

from __future__ import annotations

import json

from tests.conftest import DATA, REF_PHONE

MODEL = DATA / "profile_runtime" / "tiny-llama-llamacpp.yaml"
PLAIN = DATA / "gate" / "models" / "tiny-llama.yaml"  # the same shape, no runtime


def test_check_json_says_the_runtime_came_from_the_profile(run_json):
    code, doc = run_json("check", "-d", REF_PHONE, "-m", MODEL, "--ctx", "1000")
    assert code == 0
    assert doc["runtime"]["name"] == "llama.cpp" and doc["runtime"]["from_profile"] is True
    assert "named by the model profile 'tiny-llama-llamacpp'" in doc["runtime"]["rules"][0]
    assert doc["memory"]["kv_bytes"] == 16_777_216  # pad(1000) = 1024 cells × 16,384 B


def test_check_runtime_ideal_overrides_the_profile(run_json):
    code, doc = run_json("check", "-d", REF_PHONE, "-m", MODEL, "--ctx", "1000", "--runtime", "ideal")
    assert doc["runtime"] == {"name": "ideal", "rules": doc["runtime"]["rules"], "cells": None, "from_profile": False,
                              "llamacpp_buffers_bytes": doc["runtime"]["llamacpp_buffers_bytes"]}
    assert doc["memory"]["kv_bytes"] == 16_384_000  # 1000 × 16,384


def test_check_explicit_runtime_is_not_from_the_profile(run_json):
    code, doc = run_json("check", "-d", REF_PHONE, "-m", PLAIN, "--ctx", "1000", "--runtime", "llama.cpp")
    assert doc["runtime"]["from_profile"] is False and doc["memory"]["kv_bytes"] == 16_777_216
    code, doc = run_json("check", "-d", REF_PHONE, "-m", PLAIN, "--ctx", "1000")
    assert doc["runtime"]["name"] == "ideal" and doc["runtime"]["from_profile"] is False


def test_check_table_names_the_profile(run):
    result = run("check", "-d", REF_PHONE, "-m", MODEL, "--ctx", "1000")
    assert result.exit_code == 0
    assert "runtime: llama.cpp" in result.stdout
    assert "runtime llama.cpp named by the model profile 'tiny-llama-llamacpp'" in result.stdout


def test_runtime_options_still_need_runtime(run):
    result = run("check", "-d", REF_PHONE, "-m", MODEL, "--ctx", "1000", "--parallel", "2")
    assert result.exit_code == 2 and "they need --runtime llama.cpp" in result.stderr


def test_sweep_uses_the_profile_runtime(run):
    result = run("sweep", "-d", REF_PHONE, "-m", MODEL, "--ctx", "1000,2000", "--format", "csv")
    rows = result.stdout.splitlines()[1:]
    kv = [int(r.split(",")[9]) for r in rows]
    assert kv == [16_777_216, 33_554_432]  # 1024 and 2048 cells × 16,384 B
    result = run("sweep", "-d", REF_PHONE, "-m", MODEL, "--ctx", "1000", "--runtime", "ideal", "--format", "csv")
    assert int(result.stdout.splitlines()[1].split(",")[9]) == 16_384_000


def test_fit_and_compare_use_the_profile_runtime(run_json):
    # ideal: ⌊5.5e9 / 16,384⌋ = ⌊335,693.4⌋ = 335,693; llama.cpp: the process (its heap 10,506,240 B with no
    # vocabulary, the libraries 15,568,896 B) leaves 5,473,924,864 B, ⌊/ 16,384⌋ = 334,101, the largest -c multiple
    # of 256 below it 1305 × 256 = 334,080
    assert run_json("fit", "-d", REF_PHONE, "-m", MODEL)[1]["max_ctx"] == 334_080
    assert run_json("fit", "-d", REF_PHONE, "-m", MODEL, "--runtime", "ideal")[1]["max_ctx"] == 335_693
    _, doc = run_json("compare", "-d", REF_PHONE, "-m", MODEL, "-m", PLAIN, "--ctx", "1000")
    kv = {r["model"]: r["kv_bytes"] for r in doc["rows"]}
    assert kv == {"tiny-llama-llamacpp": 16_777_216, "tiny-llama": 16_384_000}


def test_gate_uses_the_profile_runtime_unless_the_file_names_one(run, tmp_path):
    gate = tmp_path / "gate.yaml"
    gate.write_text(f"defaults:\n  device: {REF_PHONE}\n  model: {MODEL}\n  ctx: 1000\n"
                    "configurations:\n  - name: profile\n  - name: ideal\n    runtime: ideal\n")
    result = run("gate", gate, "--format", "json")
    assert result.exit_code == 0, result.stderr
    checks = {c["name"]: c["check"] for c in json.loads(result.stdout)["configurations"]}
    assert checks["profile"]["memory"]["kv_bytes"] == 16_777_216 and checks["profile"]["runtime"]["from_profile"]
    assert checks["ideal"]["memory"]["kv_bytes"] == 16_384_000 and checks["ideal"]["runtime"]["name"] == "ideal"
