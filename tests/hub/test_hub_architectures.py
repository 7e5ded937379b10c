"""hf: references to configs kvplan cannot price as a dense transformer, through the fake Hub (issue #17 point 1).

The error names the reference as the user gave it (``hf:ORG/NAME``), never the endpoint's URL; a recurrent
model is refused naming its architecture, a config lacking keys names all of them, a mixture of experts is
priced with its experts. kvplan runs in a subprocess against the fake Hub of conftest.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hubfake import FakeRepo, resolve_in_subprocess

pytest.importorskip("huggingface_hub")

OTHER = Path(__file__).resolve().parents[1] / "data" / "hf_configs_other"


def repo(repo_id: str, config_file: str) -> FakeRepo:
    return FakeRepo(repo_id, {"config.json": (OTHER / config_file).read_bytes(), "README.md": b"# model\n"})


def kvplan(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kvplan", *args], env=env, capture_output=True, text=True,
                          timeout=120, check=False)


def test_a_recurrent_model_on_the_hub_is_refused_naming_the_reference(hub, hub_env):
    hub.add(repo("RWKV/rwkv-4-169m-pile", "rwkv-4-169m-pile.json"))
    out = resolve_in_subprocess("hf:RWKV/rwkv-4-169m-pile", hub_env)
    assert out["ok"] is False and out["error"] == "ProfileError"
    assert out["message"] == ("hf:RWKV/rwkv-4-169m-pile: model_type 'rwkv' is a recurrent network (RWKV): it keeps "
                              "a fixed-size state instead of a KV cache on every layer, and kvplan prices attention "
                              "KV caches only, so it cannot plan this model")
    assert hub.url not in out["message"]
    # the same through the CLI: one line, exit 2, for check and for import hf (with or without hf:)
    checked = kvplan(hub_env, "check", "-d", "pixel8", "-m", "hf:RWKV/rwkv-4-169m-pile", "-c", "4k")
    assert checked.returncode == 2 and checked.stdout == ""
    assert checked.stderr == f"kvplan: error: {out['message']}\n"
    imported = kvplan(hub_env, "import", "hf", "RWKV/rwkv-4-169m-pile")
    assert imported.returncode == 2 and imported.stderr == f"kvplan: error: {out['message']}\n"


def test_a_config_lacking_keys_names_every_one_and_the_reference(hub, hub_env):
    hub.add(FakeRepo("org/foo", {"config.json": json.dumps({"model_type": "foo"}).encode()}))
    out = resolve_in_subprocess("hf:org/foo@main", hub_env)
    assert out["message"] == ("hf:org/foo@main: cannot build a model profile from this config (model_type 'foo'): "
                              "missing num_hidden_layers, num_attention_heads, hidden_size, vocab_size, "
                              "intermediate_size")


def test_a_mixture_of_experts_on_the_hub_is_priced_with_its_experts(hub, hub_env):
    hub.add(repo("mistralai/Mixtral-8x7B-v0.1", "mixtral-8x7b.json"))
    out = resolve_in_subprocess("hf:mistralai/Mixtral-8x7B-v0.1", hub_env)
    assert out["ok"], out
    m = out["mapping"]
    assert (m["experts"], m["experts_per_token"], m["expert_intermediate_size"], m["dense_layers"]) == (8, 2, 14336, 0)
    # no safetensors metadata: the counts derived from the config (tests/unit/test_import_hf_architectures.py)
    assert (m["params"], m["params_active"]) == (46_702_792_704, 12_879_925_248)
