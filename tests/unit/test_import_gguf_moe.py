"""A MoE GGUF imports with its expert layout (kvplan.importers.gguf_moe), so the imported profile prices weights per
GGUF type and llama.cpp's buffers as the built-in profile of the same model does.

The headers are those of the weight-less GGUFs the harnesses built with the real shapes and llama.cpp build 11434
loaded (tests/data/gguf_headers, tests/harness/dump_gguf_header.py)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvplan.cli.app import app
from kvplan.importers.gguf import profile_from_gguf_metadata
from kvplan.profiles.catalog import Catalog

HEADERS = Path(__file__).resolve().parents[1] / "data" / "gguf_headers"
MOE = ("experts", "experts_per_token", "expert_intermediate_size", "shared_experts", "dense_layers")

# model: (experts, per token, width, shared, dense), from the files' keys and expert tensors, as the built-in
# profiles have them from the Hugging Face configs
EXPECTED = {
    # llama.expert_count 8, expert_used_count 2; ffn_gate_exps 8 × 14,336 × 4,096: experts 14,336 wide
    "mixtral-8x7b": (8, 2, 14_336, 0, 0),
    # ffn_gate_exps 64 × 512 × 1,536; ffn_up_shexp 1,024 × 1,536: a shared MLP of 1,024 = 2 × 512
    "granite-4.0-h-tiny": (64, 6, 512, 2, 0),
    # ffn_gate_exps 16 × 8,192 × 5,120; ffn_up_shexp 8,192 × 5,120 = 1 × 8,192
    "llama-4-scout-17b-16e": (16, 1, 8_192, 1, 0),
    # ffn_gate_exps 256 × 512 × 2,048; ffn_up_shexp 512 × 2,048 = 1 × 512
    "qwen3.5-35b-a3b": (256, 8, 512, 1, 0),
    # gpt-oss.expert_count 32, expert_used_count 4; ffn_gate_exps 32 × 2,880 × 2,880
    "gpt-oss-20b": (32, 4, 2_880, 0, 0),
    # qwen3moe: ffn_gate_exps 128 × 768 × 2,048
    "qwen3-30b-a3b": (128, 8, 768, 0, 0),
    # deepseek2: ffn_gate_exps 64 × 1,408 × 2,048; ffn_up_shexp 2,816 × 2,048 = 2 × 1,408; leading_dense_block_count 1
    "deepseek-v2-lite": (64, 6, 1_408, 2, 1),
    # lfm2moe: ffn_gate_exps 32 × 1,792 × 2,048; leading_dense_block_count 2
    "lfm2-8b-a1b": (32, 4, 1_792, 0, 2),
}


def _imported(name):
    doc = json.loads(gzip.open(HEADERS / f"{name}.json.gz", "rt").read())
    tensors = [(n, e, b, tuple(s)) for n, e, b, s in doc["tensors"]]
    return profile_from_gguf_metadata(doc["metadata"], tensors, where=doc["source_gguf"], name=f"imported-{name}")


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_expert_layout_is_read_from_the_file(name):
    model = _imported(name).model
    assert tuple(getattr(model, f) for f in MOE) == EXPECTED[name]
    built_in = Catalog().model(name).profile
    assert tuple(getattr(built_in, f) for f in MOE) == EXPECTED[name]
    assert model.params_active is not None and "expert_count" in model.sources["moe"]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_imported_profile_prices_as_the_built_in_one(name, tmp_path):
    path = tmp_path / f"imported-{name}.yaml"
    path.write_text(_imported(name).yaml_text)
    runner = CliRunner()
    figures = []
    for model in (str(path), name):
        result = runner.invoke(app, ["check", "-d", "laptop-rtx-4060-16gb", "-m", model, "--ctx", "4096",
                                     "--runtime", "llama.cpp", "--weight-type", "q4_k_m", "--format", "json"])
        assert result.exit_code in (0, 1), result.output
        d = json.loads(result.output)
        figures.append((d["memory"]["weights_bytes"], d["memory"]["kv_bytes"], d["memory"]["buffers_bytes"],
                        d["warnings"]))
    assert figures[0] == figures[1]
    assert figures[0][2] > 0 and figures[0][3] == []  # the MoE graph is replayed, no "not modelled" warning


def test_a_file_with_interleaved_moe_layers_keeps_params_active_but_no_layout():
    doc = json.loads(gzip.open(HEADERS / "mixtral-8x7b.json.gz", "rt").read())
    # drop the router and experts of block 5: experts on blocks 0–4 and 6–31 only
    tensors = [(n, e, b, tuple(s)) for n, e, b, s in doc["tensors"] if not n.startswith("blk.5.ffn_")]
    imported = profile_from_gguf_metadata(doc["metadata"], tensors, where="x.gguf")
    assert imported.model.experts is None and imported.model.params_active is not None
    assert any("not on every block" in n for n in imported.notes)


def test_a_shared_expert_not_a_multiple_of_the_expert_width_is_not_guessed():
    doc = json.loads(gzip.open(HEADERS / "granite-4.0-h-tiny.json.gz", "rt").read())
    # a shared MLP of 1,000 over 512-wide experts
    def narrow(n, s):
        if n.endswith(("ffn_up_shexp.weight", "ffn_gate_shexp.weight")):
            return (1000, s[1])
        return (s[0], 1000) if n.endswith("ffn_down_shexp.weight") else tuple(s)

    tensors = [(n, e, b, narrow(n, s)) for n, e, b, s in doc["tensors"]]
    imported = profile_from_gguf_metadata(doc["metadata"], tensors, where="x.gguf")
    assert imported.model.experts is None
    assert any("not a whole number of 512-wide experts" in n for n in imported.notes)
