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


def _write_mixed(path):
    """A tiny projector with both halves (as Qwen2.5-Omni's): the Gemma 3 vision tensors of test_import_mmproj and the
    Qwen2-Audio tensors above, the modality keys clip.vision.projector_type / clip.audio.projector_type."""
    gguf = pytest.importorskip("gguf")
    np = pytest.importorskip("numpy")
    from kvplan.engine.audio_encoder import audio_encoder_tensors
    from kvplan.engine.encoder import encoder_tensors

    w = gguf.GGUFWriter(str(path), "clip")
    w.add_string("clip.vision.projector_type", "gemma3")
    w.add_string("clip.audio.projector_type", "qwen2a")
    w.add_bool("clip.has_vision_encoder", True)
    w.add_bool("clip.has_audio_encoder", True)
    for key, value in (("image_size", 56), ("patch_size", 14), ("embedding_length", 32), ("feed_forward_length", 64),
                       ("block_count", 2), ("attention.head_count", 4), ("projection_dim", 2560)):
        w.add_uint32(f"clip.vision.{key}", value)
    for key, value in (("embedding_length", 32), ("feed_forward_length", 64), ("block_count", 2),
                       ("attention.head_count", 4), ("projection_dim", 2560), ("num_mel_bins", 8)):
        w.add_uint32(f"clip.audio.{key}", value)
    dtypes = {"f16": np.float16, "f32": np.float32}
    tensors = [*encoder_tensors("gemma3", n_embd=32, n_ff=64, n_layer=2, patch_size=14, image_size=56,
                                projection_dim=2560),
               *audio_encoder_tensors("qwen2a", n_embd=32, n_ff=64, n_layer=2, n_mel=8, projection_dim=2560,
                                      n_positions=10)]
    for name, ne, typ in tensors:
        w.add_tensor(name, np.zeros(tuple(reversed(ne)), dtype=dtypes[typ]))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def test_a_file_with_both_encoders_prices_each_half(tmp_path, run_json):
    path = _write_mixed(tmp_path / "mmproj-omni.gguf")
    code, doc = run_json("check", "-d", "pixel8", "-m", "gemma-3-4b", "-c", "4k", "--images", "1", "--audio", "1",
                         "--mmproj", str(path))
    assert code in (0, 1)
    parts = doc["memory"]["parts"]
    # the vision half: 277,248 B (test_import_mmproj's arithmetic); the audio half: WEIGHTS with mm.a.fc at D 2560,
    # 32·2560·2 = 163,840 + bias 10,240 in place of 131,072 + 8,192
    assert parts["encoder_weights"]["bytes"] == 277_248
    assert parts["audio_encoder_weights"]["bytes"] == WEIGHTS - 131_072 - 8_192 + 163_840 + 10_240 == 218_880


def test_gemma_3n_audio_is_refused_with_the_reason():
    from types import SimpleNamespace

    from kvplan.errors import ProfileError
    from kvplan.importers.audio import audio_encoder_from_header

    header = SimpleNamespace(metadata={"clip.has_audio_encoder": True, "clip.vision.projector_type": "gemma3nv",
                                       "clip.audio.projector_type": "gemma3na"}, tensors=[])
    with pytest.raises(ProfileError, match="11434"):
        audio_encoder_from_header(header, where="mmproj-gemma-3n.gguf")


def test_fit_suggests_fewer_clips(tmp_path, run):
    import re

    path = str(write_tiny_audio_mmproj(tmp_path / "mmproj.gguf", projection_dim=2048))
    base = ("--device", "pixel8", "--model", "llama-3.2-1b", "--ctx", "32k", "--audio-seconds", "45", "--mmproj", path)
    text = run("fit", *base, "--audio", "200").stdout
    assert "OVER" in text
    # 200 clips × 750 tokens (the processor keeps 30 s of each) × 32,768 B a token = 4.9 GB more: over the 6 GB
    # budget; fit offers the most clips that still fit, and N + 1 does not
    n = int(re.search(r"(\d+) audio clips", text)[1])
    assert 0 < n < 200
    assert run("check", *base, "--audio", str(n)).exit_code == 0
    assert run("check", *base, "--audio", str(n + 1)).exit_code == 1
