"""Audio encoders (kvplan/engine/audio_encoder.py) against llama.cpp build 11434's mtmd, and the token rules by hand.

Measured: tests/data/llamacpp/mmproj/audio.json (tests/harness/make_mmproj_gguf.py + mmproj_buffers.py: clip_init's
audio context on weight-less Ultravox / Qwen2-Audio / Voxtral projectors, and the chunks and tokens mtmd's Whisper
preprocessor makes of silent clips).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvplan.engine import audio_encoder as aud
from kvplan.importers.audio import audio_encoder_from_hf_config

DATA = json.loads((Path(__file__).resolve().parents[1] / "data" / "llamacpp" / "mmproj" / "audio.json").read_text())
CONFIGS = Path(__file__).resolve().parents[1] / "data" / "hf_configs_audio"
# GGUF of the harness → (family config, weight type)
FILES = {"mmproj-ultravox-v0.5-1b-f16.gguf": ("ultravox-v0.5-1b", "f16"),
         "mmproj-ultravox-v0.5-1b-q8_0.gguf": ("ultravox-v0.5-1b", "q8_0"),
         "mmproj-qwen2-audio-7b-f16.gguf": ("qwen2-audio-7b", "f16"),
         "mmproj-voxtral-mini-3b-f16.gguf": ("voxtral-mini-3b", "f16")}
MIB = 2**20


def _encoder(family: str) -> dict:
    return audio_encoder_from_hf_config(json.loads((CONFIGS / f"{family}.json").read_text()))


def _shape(e: dict) -> dict:
    return dict(n_embd=e["hidden_size"], n_ff=e["intermediate_size"], n_layer=e["layers"], n_mel=e["mel_bins"],
                projection_dim=e["projection_dim"], stack_factor=e.get("stack_factor", 0),
                projector_hidden=e.get("projector_hidden", 0))


def test_the_data_is_build_11434_and_covers_every_file():
    assert "11434" in DATA["llama_cpp"]
    assert {r["gguf"] for r in DATA["runs"]} == set(FILES)


@pytest.mark.parametrize("run", DATA["runs"], ids=lambda r: f"{r['gguf']}-{r['flash_attn_requested']}")
def test_weights_and_compute_buffer_equal_llama_cpps(run):
    family, weight_type = FILES[run["gguf"]]
    e = _encoder(family)
    weights = aud.audio_encoder_weight_bytes(e["kind"], n_positions=e["positions"], weight_type=weight_type,
                                             **_shape(e))
    assert abs(weights - run["weights_bytes"]) <= 0.001 * run["weights_bytes"]
    compute = aud.audio_encoder_compute_bytes(e["kind"], n_head=e["heads"], flash_attn=run["flash_attn"], **_shape(e))
    assert abs(compute - run["compute_bytes"]) <= max(0.05 * run["compute_bytes"], 8 * MIB)
    assert run["audio"]["warmup_audio_size"] == aud.CHUNK_FRAMES and run["audio"]["n_mel_bins"] == e["mel_bins"]
    assert run["audio"]["chunk_tokens"] == aud.llamacpp_chunk_tokens(e["kind"], e.get("stack_factor", 0))


def test_qwen2_audio_weights_by_hand():
    # E 1280, F 5120, 32 layers, 128 mel bins, D 4096, F16 matrices:
    # conv1 3·128·1280·2 = 983,040 + bias 5,120; conv2 3·1280·1280·2 = 9,830,400 + bias 5,120;
    # position embedding 1500·1280·4 = 7,680,000;
    # per layer: q, k, v, out 4·1280²·2 = 13,107,200; biases q, v, out 3·1280·4 = 15,360; ln1/ln2 4·1280·4 = 20,480;
    # fc1 1280·5120·2 = 13,107,200 + bias 20,480; fc2 13,107,200 + bias 5,120 → 39,383,040 × 32 = 1,260,257,280;
    # post_ln 10,240; mm.a.fc 1280·4096·2 = 10,485,760 + bias 16,384
    e = _encoder("qwen2-audio-7b")
    expected = 983_040 + 5_120 + 9_830_400 + 5_120 + 7_680_000 + 1_260_257_280 + 10_240 + 10_485_760 + 16_384
    assert aud.audio_encoder_weight_bytes("qwen2a", **{k: v for k, v in _shape(e).items()}) == expected
    assert expected == 1_289_273_344  # what llama.cpp's clip loader counted


def test_chunk_tokens_by_hand():
    # clip_n_output_tokens of a 3,000-frame chunk: Ultravox align(3000, 8)/8 = 375, /2 (stride-2 conv) = 187;
    # Qwen2-Audio 3000/2 = 1500, /2 (average pool) = 750; Voxtral align(3000, 4)/4 = 750, /2 = 375, /2 = 187
    assert aud.llamacpp_chunk_tokens("ultravox", 8) == 3000 // 8 // 2 == 187
    assert aud.llamacpp_chunk_tokens("qwen2a") == 3000 // 2 // 2 == 750
    assert aud.llamacpp_chunk_tokens("voxtral", 4) == 3000 // 4 // 2 // 2 == 187


def test_llama_cpp_chunks_of_a_clip_equal_mtmds():
    # log_mel_spectrogram appends 480,000 zero samples: 29.98 s → (479,680 + 480,000) // 160 + 1 = 5,999 frames,
    # one whole chunk; 29.99 s → 6,000 frames, two; 120 s → 15,001 frames, five
    assert [aud.llamacpp_chunks(s) for s in (29.98, 29.99, 120)] == [5_999 // 3000, 6_000 // 3000, 15_001 // 3000]
    for run in (r for r in DATA["runs"] if "clips" in r):
        e = _encoder(FILES[run["gguf"]][0])
        # a clip's chunks are all 3,000 frames: reserving a clip of any length gives the warmup's buffer
        compute = aud.audio_encoder_compute_bytes(e["kind"], n_head=e["heads"], **_shape(e))
        for clip in run["clips"]:
            assert aud.llamacpp_chunks(clip["seconds"]) == clip["chunks"], (run["gguf"], clip)
            assert abs(clip["compute_bytes"] - compute) <= max(0.05 * compute, 8 * MIB)
            assert clip["chunks"] * aud.llamacpp_chunk_tokens(e["kind"], e.get("stack_factor", 0)) == clip["tokens"]


def test_processor_tokens_by_hand():
    # Qwen2-Audio (processing_qwen2_audio.py): L = ⌈n/160⌉ frames, at most 3,000; (⌊(L−1)/2⌋ + 1 − 2) // 2 + 1
    # 10 s: L = 1,000 → 500 → (498 // 2) + 1 = 250; 45 s: L = 3,000 → 1,500 → 750
    assert aud.processor_tokens("qwen2a", 10) == (((1000 - 1) // 2 + 1) - 2) // 2 + 1 == 250
    assert aud.processor_tokens("qwen2a", 45) == (((3000 - 1) // 2 + 1) - 2) // 2 + 1 == 750
    # Ultravox (ultravox_processing.py): ⌈round(n / 320) / 8⌉: 10 s → 500 → 63; 45 s → 2,250 → 282
    assert aud.processor_tokens("ultravox", 10, 8) == -(-500 // 8) == 63
    assert aud.processor_tokens("ultravox", 45, 8) == -(-2250 // 8) == 282
    # Voxtral: whole 30 s chunks, 1,500 encoder frames / 4 = 375 each: 10 s → 375; 45 s → 750
    assert aud.processor_tokens("voxtral", 10) == 1500 // 4 == 375
    assert aud.processor_tokens("voxtral", 45) == 2 * 375


def test_config_import_gives_the_converters_figures():
    u = _encoder("ultravox-v0.5-1b")
    assert (u["kind"], u["hidden_size"], u["layers"], u["heads"], u["mel_bins"]) == ("ultravox", 1280, 32, 20, 128)
    assert (u["stack_factor"], u["projector_hidden"], u["projection_dim"]) == (8, 4096, 2048)
    v = _encoder("voxtral-mini-3b")
    assert (v["kind"], v["intermediate_size"], v["stack_factor"], v["projection_dim"]) == ("voxtral", 5120, 4, 3072)
    q = _encoder("qwen2-audio-7b")
    assert q["kind"] == "qwen2a" and "stack_factor" not in q and q["projection_dim"] == 4096


def test_flash_attention_off_holds_the_scores():
    # without flash attention a layer holds KQ: 1,500 × 1,500 × 20 heads × 4 B = 180,000,000 B, which the buffer
    # must exceed; with it, no T × T tensor at all
    e = _encoder("qwen2-audio-7b")
    off = aud.audio_encoder_compute_bytes("qwen2a", n_head=20, flash_attn=False, **_shape(e))
    on = aud.audio_encoder_compute_bytes("qwen2a", n_head=20, flash_attn=True, **_shape(e))
    assert off > 1500 * 1500 * 20 * 4 > on
