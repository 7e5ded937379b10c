"""An audio projector GGUF's header as the model's audio encoder (``--mmproj``, ``--audio``): a tiny Qwen2-Audio
projector written with gguf's writer (tests/hub/hubfake.py ``write_tiny_audio_mmproj``)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "hub"))
from hubfake import write_tiny_audio_mmproj  # noqa: E402

from kvplan.importers.audio import audio_encoder_from_mmproj  # noqa: E402

pytest.importorskip("gguf")

# by hand (E 32, F 64, 2 layers, 8 mel bins, 10 positions, D 2048 = llama-3.2-1b's width, F16 matrices):
# conv1 3·8·32·2 = 1,536 + bias 128; conv2 3·32·32·2 = 6,144 + bias 128; positions 32·10·4 = 1,280;
# per layer: q, k, v, out 4·32·32·2 = 8,192; biases q, v, out 384; ln1/ln2 512; fc1 32·64·2 = 4,096 + bias 256;
# fc2 4,096 + bias 128 → 17,664 × 2 = 35,328; post_ln 256; mm.a.fc 32·2048·2 = 131,072 + bias 8,192
WEIGHTS = 1_536 + 128 + 6_144 + 128 + 1_280 + 35_328 + 256 + 131_072 + 8_192


def test_header_gives_the_audio_encoder_and_its_exact_bytes(tmp_path):
    fields = audio_encoder_from_mmproj(write_tiny_audio_mmproj(tmp_path / "mmproj.gguf", projection_dim=2048))
    assert fields["kind"] == "qwen2a" and fields["weight_type"] == "f16"
    assert (fields["hidden_size"], fields["intermediate_size"], fields["layers"], fields["heads"]) == (32, 64, 2, 4)
    assert (fields["mel_bins"], fields["positions"], fields["projection_dim"]) == (8, 10, 2048)
    assert fields["weights"] == WEIGHTS == 184_064


def test_check_prices_the_clips(tmp_path, run_json):
    path = write_tiny_audio_mmproj(tmp_path / "mmproj.gguf", projection_dim=2048)
    args = ("check", "-d", "pixel8", "-m", "llama-3.2-1b", "-c", "4k", "--audio", "2", "--audio-seconds", "45",
            "--mmproj", str(path))
    code, doc = run_json(*args, "--runtime", "llama.cpp")
    assert code == 0
    parts = doc["memory"]["parts"]
    assert parts["audio_encoder_weights"]["bytes"] == WEIGHTS
    # llama.cpp: 45 s → (720,000 + 480,000) // 160 + 1 = 7,501 frames → 2 whole chunks × 750 tokens, × 2 clips
    assert parts["audio_kv"]["tokens_per_clip"] == 2 * 750 and parts["audio_kv"]["audio_tokens"] == 3000
    assert parts["audio_kv"]["token_rule"] == "llama.cpp" and parts["audio_kv"]["chunks_per_clip"] == 2
    assert parts["audio_encoder_compute"]["encoded_frames"] == 3000
    # the processor (ideal runtime): 45 s is cut to 30 s, 3,000 frames → 1,500 → 750 tokens a clip
    code, doc = run_json(*args)
    assert doc["memory"]["parts"]["audio_kv"]["audio_tokens"] == 2 * 750
    assert doc["memory"]["parts"]["audio_kv"]["token_rule"] == "processor"


def test_audio_needs_an_audio_encoder(run):
    r = run("check", "-d", "pixel8", "-m", "llama-3.2-1b", "-c", "4k", "--audio", "1")
    assert r.exit_code == 2 and "--audio" in r.stderr and "--mmproj" in r.stderr and "\n" not in r.stderr.strip()


def test_bad_clip_length_is_one_line(run, tmp_path):
    path = write_tiny_audio_mmproj(tmp_path / "mmproj.gguf", projection_dim=2048)
    r = run("check", "-d", "pixel8", "-m", "llama-3.2-1b", "-c", "4k", "--audio", "1", "--audio-seconds", "0",
            "--mmproj", str(path))
    assert r.exit_code == 2 and "--audio-seconds" in r.stderr


def test_a_vision_only_model_refuses_an_audio_projector_of_another_width(tmp_path, run):
    path = write_tiny_audio_mmproj(tmp_path / "mmproj.gguf", projection_dim=2048)
    r = run("check", "-d", "pixel8", "-m", "gemma-3-4b", "-c", "4k", "--audio", "1", "--mmproj", str(path))
    assert r.exit_code == 2 and "not this model's projector" in r.stderr
