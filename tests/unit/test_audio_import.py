"""The audio tower of a speech-in config.json becomes the profile's ``audio_encoder`` (kvplan import hf), and the
Hub projector references and file choice (kvplan.hub.mmproj)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvplan.errors import UsageError
from kvplan.hub.mmproj import parse_mmproj_ref, pick_mmproj

CONFIGS = Path(__file__).resolve().parents[1] / "data" / "hf_configs_audio"
# a full text model for the wrapper (Voxtral Mini's Ministral text_config figures, from the same flagged copy)
TEXT = {"model_type": "llama", "hidden_size": 3072, "num_hidden_layers": 30, "num_attention_heads": 32,
        "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 8192, "vocab_size": 131072,
        "max_position_embeddings": 131072, "rms_norm_eps": 1e-5, "tie_word_embeddings": False}


def test_import_hf_writes_the_audio_encoder(tmp_path, run):
    config = {**json.loads((CONFIGS / "voxtral-mini-3b.json").read_text()), "text_config": TEXT}
    config.pop("_source")
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    r = run("import", "hf", str(path), "--name", "voxtral-test")
    assert r.exit_code == 0, r.stderr
    import yaml

    profile = yaml.safe_load(r.stdout)
    a = profile["audio_encoder"]
    assert (a["kind"], a["hidden_size"], a["layers"], a["heads"], a["mel_bins"]) == ("voxtral", 1280, 32, 20, 128)
    assert (a["stack_factor"], a["projection_dim"], a["weight_type"]) == (4, 3072, "f16")
    assert "audio_encoder" in profile["sources"]
    assert "audio_config: not counted" in r.stderr and "--audio" in r.stderr
    saved = tmp_path / "voxtral-test.yaml"
    saved.write_text(r.stdout)
    done = run("check", "-d", "pixel8", "-m", str(saved), "-c", "4k", "--audio", "1", "--runtime", "llama.cpp",
               "--format", "json")
    assert done.exit_code in (0, 1), done.stderr
    # one 30 s clip under llama.cpp: two chunks (30 s of padding make 6,001 frames) × 187 tokens
    assert json.loads(done.stdout)["memory"]["parts"]["audio_kv"]["audio_tokens"] == 2 * 187


def test_projector_references():
    ref = parse_mmproj_ref("hf:ggml-org/Voxtral-GGUF/mmproj-Voxtral-f16.gguf")
    assert (ref.repo_id, ref.revision, ref.filename) == ("ggml-org/Voxtral-GGUF", None, "mmproj-Voxtral-f16.gguf")
    ref = parse_mmproj_ref("hf:org/name@" + "a" * 40 + ":mmproj.gguf")
    assert ref.revision == "a" * 40 and ref.filename == "mmproj.gguf"
    with pytest.raises(UsageError):
        parse_mmproj_ref("hf:org/name")


def test_the_projector_file_of_a_repository():
    files = ["model-Q4_K_M.gguf", "mmproj-model-bf16.gguf", "mmproj-model-f16.gguf", "mmproj-model-f32.gguf"]
    assert pick_mmproj(files) == "mmproj-model-f16.gguf"  # convert_hf_to_gguf.py --mmproj's default outtype
    assert pick_mmproj(["model-Q4_K_M.gguf", "mmproj-model-Q8_0.gguf"]) == "mmproj-model-Q8_0.gguf"
    assert pick_mmproj(["model-Q4_K_M.gguf", "README.md"]) is None
