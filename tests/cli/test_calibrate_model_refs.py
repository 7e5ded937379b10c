"""``kvplan calibrate --model`` and ``--base`` name models and devices as every command does: a local .gguf, an
``hf:`` id (the fake Hub of tests/hub, no network) and the device ``this`` (a kept probe, not measured here)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).parents[2]
EXAMPLE = ROOT / "examples" / "llama-bench-m2.json"
HUB_TESTS = ROOT / "tests" / "hub"
sys.path.insert(0, str(HUB_TESTS))
from hubfake import LLAMA_CONFIG, FakeRepo, write_tiny_llama_gguf  # noqa: E402

_spec = importlib.util.spec_from_file_location("kvplan_hub_test_fixtures_calibrate", HUB_TESTS / "conftest.py")
_fixtures = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fixtures)
hub, hub_env = _fixtures.hub, _fixtures.hub_env

MEMORY = ("--ram", "16GiB", "--os-reserve", "5.33GiB", "--flash-read", "2.78GB/s", "--bandwidth", "100GB/s")


def kvplan(env: dict, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kvplan", *map(str, args)], env=env, capture_output=True, text=True,
                          timeout=120, check=False)


def test_model_as_a_local_gguf(run, tmp_path):
    gguf = write_tiny_llama_gguf(tmp_path / "tiny.gguf")
    result = run("calibrate", EXAMPLE, *MEMORY, "-m", gguf, "-o", tmp_path / "d.yaml")
    assert result.exit_code == 0, result.stderr
    # the header is read once although three model types name it
    assert result.stderr.count(f"model {gguf}: GGUF header read") == 1
    # 4 layers × 2 KV heads × head_dim 256 / 8 = 32 × (K + V) × 2 B = 1,024 bytes per token
    assert "llama 7B Q4_0: KV cache 1,024 bytes/token and layer shape from model tiny" in result.stderr


def test_missing_gguf_names_the_file(run, tmp_path):
    result = run("calibrate", EXAMPLE, *MEMORY, "-m", tmp_path / "none.gguf", "-o", tmp_path / "d.yaml")
    assert result.exit_code == 2
    assert result.stderr == f"kvplan: error: model '{tmp_path / 'none.gguf'}': no such GGUF file\n"


def test_model_as_a_hub_id(hub, hub_env, tmp_path):
    repo_id = "TinyLlama/TinyLlama-1.1B-Chat-v1.0"
    repo = hub.add(FakeRepo(repo_id, {"config.json": json.dumps(LLAMA_CONFIG).encode()}))
    result = kvplan(hub_env, "calibrate", EXAMPLE, *MEMORY, "-m", f"hf:{repo_id}", "-o", tmp_path / "d.yaml")
    assert result.returncode == 0, result.stderr
    assert f"hf:{repo_id}@{repo.commit}/config.json" in result.stderr
    # TinyLlama: 22 layers × 4 KV heads × head_dim 2,048 / 32 = 64 × (K + V) × 2 B = 22,528 bytes per token
    assert "KV cache 22,528 bytes/token and layer shape from model tinyllama-1.1b-chat-v1.0" in result.stderr


# Keeps a probe of 'this' machine with the M2 16 GB's figures. It runs in the subprocess's environment: the probe
# cache is keyed by kvplan's code as that process reads it, and its folder is fixed once a process.
KEEP_PROBE = """
from pathlib import Path
from kvplan.files.yamlio import parse_yaml
from kvplan.probe import cache
from kvplan.profiles.loading import validate_document
from kvplan.profiles.spec import Device

text = Path(%r).read_text()
device = validate_document(Device, parse_yaml(text, "m2"), what="device profile")
record = {**device.model_dump(mode="json"), "name": "probed-machine", "aliases": []}
assert cache.store({"yaml_text": text, "record": record, "quick": False, "probed": "2025-01-02T03:04:05"})
""" % str(ROOT / "device_profiles" / "macbook-air-m2-16gb.yaml")


@pytest.fixture
def kept_probe(tmp_path):
    """An environment whose kvplan cache keeps a probe of 'this' machine: nothing is measured."""
    env = {**{k: v for k, v in os.environ.items() if k != "KVPLAN_NO_CACHE"}, "KVPLAN_CACHE_DIR": str(tmp_path / "c")}
    subprocess.run([sys.executable, "-c", KEEP_PROBE], env=env, check=True, timeout=60)
    return env


def test_base_this_is_the_kept_probe(kept_probe, tmp_path):
    out = tmp_path / "mine.yaml"
    result = kvplan(kept_probe, "calibrate", EXAMPLE, "--base", "this", "-o", out)
    assert result.returncode == 0, result.stderr
    assert "device 'this': this machine as probed 2025-01-02 03:04 (full probe)" in result.stderr
    written = yaml.safe_load(out.read_text())
    # the probe's figures in exact base units: 16 GiB = 17,179,869,184 B; 5.33 GiB as the profile rounds it
    assert written["ram"] == "17179869184 B" and written["memory_bandwidth"] == "100000000000 B/s"
    assert written["description"] == "calibrated by kvplan calibrate from llama-bench-m2.json on probed-machine"
    # the fit does not depend on the base: 0.918 and 4.69 ms as from macbook-air-m2-16gb
    assert written["bandwidth_efficiency"] == 0.918 and written["decode_latency"] == "4.69 ms"
    assert kvplan(kept_probe, "profiles", "validate", out).returncode == 0
