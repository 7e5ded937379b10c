"""hf: models through the CLI: check, import hf, GGUF headers by range, errors — against the fake Hub of tests/hub.

kvplan runs in a subprocess (huggingface_hub reads HF_ENDPOINT, HF_HUB_CACHE and HF_HUB_OFFLINE when it is
imported); the fixtures ``hub`` and ``hub_env`` are those of tests/hub/conftest.py.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

HUB_TESTS = Path(__file__).resolve().parent.parent / "hub"
sys.path.insert(0, str(HUB_TESTS))
from hubfake import LLAMA_CONFIG, FakeRepo, write_tiny_audio_mmproj, write_tiny_llama_gguf  # noqa: E402

_spec = importlib.util.spec_from_file_location("kvplan_hub_test_fixtures", HUB_TESTS / "conftest.py")
_fixtures = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fixtures)
hub, hub_env = _fixtures.hub, _fixtures.hub_env

pytest.importorskip("huggingface_hub")

REPO = "TinyLlama/TinyLlama-1.1B-Chat-v1.0"


def kvplan(env: dict, *args, **extra_env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kvplan", *map(str, args)], env={**env, **extra_env},
                          capture_output=True, text=True, timeout=120, check=False)


def config_repo(repo_id: str = REPO) -> FakeRepo:
    return FakeRepo(repo_id, {"config.json": json.dumps(LLAMA_CONFIG).encode(), "README.md": b"# model\n"},
                    safetensors={"parameters": {"BF16": 1_100_048_384}, "total": 1_100_048_384})


def test_check_with_a_hub_model_online_then_offline_from_the_cache(hub, hub_env):
    repo = hub.add(config_repo())
    online = kvplan(hub_env, "check", "--device", "pixel8", "--model", f"hf:{REPO}", "--ctx", "8k", "--format", "json")
    assert online.returncode in (0, 1), online.stderr
    doc = json.loads(online.stdout)
    assert doc["model"] == "tinyllama-1.1b-chat-v1.0" and doc["ctx"] == 8192
    assert f"hf:{REPO}@{repo.commit}/config.json" in online.stderr  # the note says where the profile came from
    served = len(hub.log)
    offline = kvplan(hub_env, "check", "--device", "pixel8", "--model", f"hf:{REPO}", "--ctx", "8k", "--format",
                     "json", HF_HUB_OFFLINE="1")
    assert offline.returncode == online.returncode, offline.stderr
    assert json.loads(offline.stdout) == doc
    assert len(hub.log) == served  # offline means offline
    assert "kvplan's Hub cache" in offline.stderr


def test_check_without_kvplans_cache_then_offline_with_the_hub_gone(hub, hub_env):
    """KVPLAN_NO_CACHE=1: only the Hugging Face cache remembers the model; offline it gives the same check."""
    hub.add(FakeRepo(REPO, {"config.json": json.dumps(LLAMA_CONFIG).encode()}))  # params from the config both times
    env = {**hub_env, "KVPLAN_NO_CACHE": "1"}
    args = ("check", "--device", "pixel8", "--model", f"hf:{REPO}", "--ctx", "8k", "--format", "json")
    online = kvplan(env, *args)
    assert online.returncode in (0, 1), online.stderr
    hub.server.shutdown()
    hub.server.server_close()
    offline = kvplan(env, *args, HF_HUB_OFFLINE="1")
    assert offline.returncode == online.returncode, offline.stderr
    assert json.loads(offline.stdout) == json.loads(online.stdout)
    assert "kvplan's Hub cache" not in offline.stderr  # it came from the Hugging Face cache


def test_check_offline_from_a_populated_hugging_face_cache(tmp_path, hub_env):
    """A config.json in the standard cache layout (as transformers leaves it), never resolved by kvplan."""
    commit = "0123456789abcdef0123456789abcdef01234567"
    root = tmp_path / "prepared-cache" / "models--org--cached-model"
    (root / "blobs").mkdir(parents=True)
    (root / "refs").mkdir()
    (root / "refs" / "main").write_text(commit)
    snap = root / "snapshots" / commit
    snap.mkdir(parents=True)
    (root / "blobs" / ("a" * 40)).write_bytes(json.dumps(LLAMA_CONFIG).encode())
    (snap / "config.json").symlink_to(f"../../blobs/{'a' * 40}")
    env = {**hub_env, "HF_HUB_CACHE": str(tmp_path / "prepared-cache"), "HF_HUB_OFFLINE": "1"}
    done = kvplan(env, "check", "--device", "pixel8", "--model", "hf:org/cached-model", "--ctx", "8k")
    assert done.returncode in (0, 1), done.stderr
    assert "cached-model" in done.stdout and f"hf:org/cached-model@{commit}/config.json" in done.stderr


def test_import_hf_from_the_hub_then_validate_and_check(hub, hub_env, tmp_path):
    repo = hub.add(config_repo())
    out = tmp_path / "x.yaml"
    done = kvplan(hub_env, "import", "hf", REPO, "-o", out)
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    assert "name: tinyllama-1.1b-chat-v1.0" in text and "params: 1100048384" in text and repo.commit in text
    assert f"wrote model profile 'tinyllama-1.1b-chat-v1.0' to {out}" in done.stderr
    assert kvplan(hub_env, "profiles", "validate", out).returncode == 0
    assert kvplan(hub_env, "check", "-d", "pixel8", "-m", out, "--ctx", "4k").returncode in (0, 1)
    # hf: prefix and --name work too; a local config.json still works as before
    named = kvplan(hub_env, "import", "hf", f"hf:{REPO}", "--name", "mine")
    assert named.returncode == 0 and "name: mine" in named.stdout, named.stderr
    local = tmp_path / "config.json"
    local.write_text(json.dumps(LLAMA_CONFIG))
    assert "layers: 22" in kvplan(hub_env, "import", "hf", local).stdout


def test_gguf_check_reads_the_header_by_range(hub, hub_env, tmp_path):
    path = write_tiny_llama_gguf(tmp_path / "Tiny-Llama-Q4_K_M.gguf", vocab=60000, hidden=256)
    hub.add(FakeRepo("someone/Tiny-Llama-GGUF", {"Tiny-Llama-Q4_K_M.gguf": path, "README.md": b"# gguf\n"}))
    done = kvplan(hub_env, "check", "-d", "pixel8", "-m", "hf:someone/Tiny-Llama-GGUF:Q4_K_M", "--ctx", "4k",
                  "--format", "json")
    assert done.returncode in (0, 1), done.stderr
    assert json.loads(done.stdout)["ctx"] == 4096
    gets = [r for r in hub.log if r.path.endswith(".gguf") and r.method == "GET"]
    assert gets and all(r.status == 206 for r in gets)  # ranges only
    assert hub.bytes_served("Tiny-Llama-Q4_K_M.gguf") < path.stat().st_size


def _audio_gguf_repo(hub, tmp_path):
    model = write_tiny_llama_gguf(tmp_path / "Tiny-Llama-Q4_K_M.gguf", vocab=60000, hidden=256)
    mmproj = write_tiny_audio_mmproj(tmp_path / "mmproj-Tiny-f16.gguf", projection_dim=256)
    hub.add(FakeRepo("someone/Tiny-Audio-GGUF", {"Tiny-Llama-Q4_K_M.gguf": model, "mmproj-Tiny-f16.gguf": mmproj}))
    return mmproj


def test_a_gguf_repositorys_projector_is_read_when_audio_is_priced(hub, hub_env, tmp_path):
    from kvplan.importers.audio import audio_encoder_from_mmproj

    mmproj = _audio_gguf_repo(hub, tmp_path)
    model = "hf:someone/Tiny-Audio-GGUF:Q4_K_M"
    plain = kvplan(hub_env, "check", "-d", "pixel8", "-m", model, "--ctx", "4k", "--format", "json")
    assert plain.returncode in (0, 1), plain.stderr
    assert not [r for r in hub.log if "mmproj" in r.path]  # no audio asked: the projector is not read
    done = kvplan(hub_env, "check", "-d", "pixel8", "-m", model, "--ctx", "4k", "--audio", "1", "--format", "json")
    assert done.returncode in (0, 1), done.stderr
    parts = json.loads(done.stdout)["memory"]["parts"]
    assert parts["audio_encoder_weights"]["bytes"] == audio_encoder_from_mmproj(mmproj)["weights"]
    gets = [r for r in hub.log if r.path.endswith("mmproj-Tiny-f16.gguf") and r.method == "GET"]
    assert gets and all(r.status == 206 for r in gets)  # its header by range, never the whole file
    served = len(hub.log)
    offline = kvplan(hub_env, "check", "-d", "pixel8", "-m", model, "--ctx", "4k", "--audio", "1", "--format", "json",
                     HF_HUB_OFFLINE="1")
    assert offline.returncode == done.returncode, offline.stderr
    assert json.loads(offline.stdout)["memory"]["parts"] == parts and len(hub.log) == served


def test_mmproj_named_on_the_hub(hub, hub_env, tmp_path):
    _audio_gguf_repo(hub, tmp_path)
    model, ref = "hf:someone/Tiny-Audio-GGUF:Q4_K_M", "hf:someone/Tiny-Audio-GGUF/mmproj-Tiny-f16.gguf"
    done = kvplan(hub_env, "check", "-d", "pixel8", "-m", model, "--ctx", "4k", "--audio", "1", "--mmproj", ref,
                  "--format", "json")
    assert done.returncode in (0, 1), done.stderr
    assert json.loads(done.stdout)["memory"]["parts"]["audio_kv"]["audio_encoder"] == "qwen2a"
    missing = kvplan(hub_env, "check", "-d", "pixel8", "-m", model, "--ctx", "4k", "--audio", "1", "--mmproj",
                     "hf:someone/Tiny-Audio-GGUF/mmproj-none.gguf")
    assert missing.returncode == 2 and "mmproj-Tiny-f16.gguf" in missing.stderr
    assert len([ln for ln in missing.stderr.splitlines() if ln.startswith("kvplan: error")]) == 1
    offline = kvplan(hub_env, "check", "-d", "pixel8", "-m", model, "--ctx", "4k", "--audio", "1", "--mmproj",
                     "hf:someone/Tiny-Audio-GGUF/mmproj-other.gguf", HF_HUB_OFFLINE="1")
    assert offline.returncode == 2 and "HF_HUB_OFFLINE" in offline.stderr


def test_missing_repository_is_one_line_exit_2(hub, hub_env):
    done = kvplan(hub_env, "check", "-d", "pixel8", "-m", "hf:nobody/nothing", "--ctx", "4k")
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kvplan: error: ") and "not found" in lines[0], done.stderr
    imported = kvplan(hub_env, "import", "hf", "nobody/nothing")
    assert imported.returncode == 2 and len(imported.stderr.strip().splitlines()) == 1


def test_hub_reference_as_a_device_is_refused(hub_env):
    done = kvplan(hub_env, "check", "-d", "hf:org/name", "-m", "7b", "--ctx", "4k")
    assert done.returncode == 2 and "name models, not devices" in done.stderr


def test_gate_file_with_a_hub_model(hub, hub_env, tmp_path):
    hub.add(config_repo())
    gate = tmp_path / "gate.yaml"
    gate.write_text(f"configurations:\n  - name: tiny\n    device: pixel8\n    model: hf:{REPO}\n    ctx: 4k\n")
    done = kvplan(hub_env, "gate", gate)
    assert done.returncode in (0, 1), done.stderr
    assert "not found" not in done.stderr and "does not exist" not in done.stderr


def test_a_local_gguf_file_as_the_model(hub_env, tmp_path):
    """--model file.gguf reads only the header, with the parser hf:…:QUANT uses (every shard of a split model)."""
    from kvplan.hub.gguf_remote import read_local_header

    path = write_tiny_llama_gguf(tmp_path / "Tiny-Q8_0.gguf", vocab=3000, hidden=128)
    done = kvplan(hub_env, "check", "-d", "pixel8", "-m", path, "--ctx", "4k", "--format", "json")
    assert done.returncode in (0, 1), done.stderr
    doc = json.loads(done.stdout)
    assert doc["model"] == "tiny-q8_0" and doc["memory"]["weights_bytes"] == sum(t.nbytes for t in read_local_header(path).tensors)
    assert "GGUF header read" in done.stderr
    write_tiny_llama_gguf(tmp_path / "Split.gguf", vocab=300, hidden=64, split_max_tensors=20)
    shards = sorted(tmp_path.glob("Split-*-of-*.gguf"))
    assert len(shards) == 2
    split = kvplan(hub_env, "check", "-d", "pixel8", "-m", shards[0], "--ctx", "1k", "--format", "json")
    assert split.returncode in (0, 1), split.stderr
    total = sum(t.nbytes for s in shards for t in read_local_header(s).tensors)
    assert json.loads(split.stdout)["memory"]["weights_bytes"] == total
    second = kvplan(hub_env, "check", "-d", "pixel8", "-m", shards[1], "--ctx", "1k", "--format", "json")
    assert json.loads(second.stdout)["memory"]["weights_bytes"] == total  # any shard names the whole model
    shards[1].unlink()
    broken = kvplan(hub_env, "check", "-d", "pixel8", "-m", shards[0], "--ctx", "1k")
    assert broken.returncode == 2 and "not beside it" in broken.stderr and len(broken.stderr.splitlines()) == 1
    missing = kvplan(hub_env, "check", "-d", "pixel8", "-m", tmp_path / "none.gguf", "--ctx", "1k")
    assert missing.returncode == 2 and "no such GGUF file" in missing.stderr
