"""Vision encoders: kvplan's figures against llama.cpp build 11434's multimodal library, and the processors' token counts.

tests/data/llamacpp/mmproj/measured.json was written by tests/harness/mmproj_buffers.py: weight-less projector
GGUFs (tests/harness/make_mmproj_gguf.py: the tensors convert_hf_to_gguf.py --mmproj writes, named by gguf-py's own
tensor map) loaded by tools/mtmd/clip.cpp's clip_init on CPU; it records clip_ctx::mem_usage (the "model size" log
line) and clip_ctx::mem_compute (the "compute buffer size" of warmup's reserve) to the byte.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from kvplan.engine import encoder as enc
from kvplan.importers.vision import encoder_from_hf_config

DATA = Path(__file__).resolve().parents[1] / "data"
MEASURED = json.loads((DATA / "llamacpp" / "mmproj" / "measured.json").read_text())
CONFIGS = DATA / "hf_configs_vision"


def _encoder(family: str, weight_type: str) -> dict:
    fields = encoder_from_hf_config(json.loads((CONFIGS / f"{family}.json").read_text()))
    return {**fields, "weight_type": weight_type}


def _kwargs(e: dict) -> tuple[dict, dict]:
    shape = dict(n_embd=e["hidden_size"], n_ff=e["intermediate_size"], n_layer=e["layers"],
                 patch_size=e["patch_size"], projection_dim=e["projection_dim"])
    weights = dict(image_size=e["image_size"], scale_factor=e.get("scale_factor") or 1,
                   weight_type=e["weight_type"], **shape)
    graph = dict(n_head=e["heads"], scale_factor=e.get("scale_factor") or 1, merge=e.get("merge") or 2,
                 n_wa_pattern=e.get("window_pattern") or 0, **shape)
    return weights, graph


RUNS = [(r["gguf"], r["image_max_tokens"], r) for r in MEASURED["runs"]]


@pytest.mark.parametrize("gguf, max_tokens, run", RUNS, ids=[f"{g}-{m}" for g, m, _ in RUNS])
def test_weights_and_compute_buffer_equal_llama_cpp(gguf, max_tokens, run):
    family, weight_type = re.fullmatch(r"mmproj-(.+)-(f16|q8_0)\.gguf", gguf).groups()
    e = _encoder(family, weight_type)
    weights_kw, graph_kw = _kwargs(e)
    weights = enc.encoder_weight_bytes(e["kind"], **weights_kw)
    # the brief's tolerance is 0.1 %; the tensor list is exact
    assert weights == run["weights_bytes"]
    side = enc.warmup_image_side(e["kind"], image_size=e["image_size"], patch_size=e["patch_size"],
                                 merge=e.get("merge") or 2, max_tokens=max_tokens)
    assert side == run["warmup_image_size"]
    # flash attention: clip's auto settles on enabled on CPU; -fa off disables it
    assert run["flash_attn"] == (run["flash_attn_requested"] != "off")
    compute = enc.encoder_compute_bytes(e["kind"], image_width=side, image_height=side,
                                        flash_attn=run["flash_attn"], **graph_kw)
    # tolerance 5 % or 8 MiB; the replayed allocator is exact
    assert compute == run["compute_bytes"]


def test_the_measured_log_lines_agree_with_the_exact_bytes():
    for run in MEASURED["runs"]:
        size = next(float(re.search(r"([\d.]+) MiB", ln)[1]) for ln in run["log"] if "model size" in ln)
        compute = next(float(re.search(r"([\d.]+) MiB", ln)[1]) for ln in run["log"] if "compute buffer size" in ln)
        assert abs(size - run["weights_bytes"] / 2**20) <= 0.005
        assert abs(compute - run["compute_bytes"] / 2**20) <= 0.005


def test_without_flash_attention_each_layer_holds_the_attention_scores():
    # Gemma 3 at 896×896: T = 64² = 4,096 patches, 16 heads: KQ = 4,096² · 16 · 4 B = 1,073,741,824 B,
    # beside it V made contiguous and the layer's inputs: llama.cpp reserves 1,186,988,032 B (measured)
    off = [r for r in MEASURED["runs"] if r["flash_attn_requested"] == "off"]
    assert {r["gguf"] for r in off} == {"mmproj-gemma-3-4b-f16.gguf", "mmproj-qwen2.5-vl-3b-f16.gguf",
                                        "mmproj-smolvlm-256m-f16.gguf"}
    gemma = next(r for r in off if "gemma" in r["gguf"])
    assert gemma["compute_bytes"] > 4096 ** 2 * 16 * 4 > 0


def test_three_families_were_measured():
    families = {re.fullmatch(r"mmproj-(.+)-(f16|q8_0)\.gguf", r["gguf"])[1] for r in MEASURED["runs"]}
    assert families == {"gemma-3-4b", "qwen2.5-vl-3b", "smolvlm-256m"}
    assert "11434" in MEASURED["llama_cpp"]


def test_gemma3_weights_by_hand():
    # SigLIP-So400m as the Gemma 3 mmproj (f16): patch embd F32 14·14·3·1152 = 677,376 values → 2,709,504 B,
    # its bias 1152·4 = 4,608; position embd F32 1152·4096 = 4,718,592 values → 18,874,368 B;
    # per layer: q, k, v, o F16 4·1152² · 2 = 10,616,832 B + 4 biases 4·4,608 = 18,432; ln1/ln2 weight+bias
    # 4·4,608 = 18,432; ffn_up 1152·4304·2 = 9,916,416 + bias 4304·4 = 17,216; ffn_down 9,916,416 + bias 4,608
    # → 30,508,352 B per layer · 27 = 823,725,504; post_ln 2·4,608 = 9,216; mm.input_projection F16
    # 2560·1152·2 = 5,898,240; soft_emb_norm 4,608.
    # total 2,709,504 + 4,608 + 18,874,368 + 823,725,504 + 9,216 + 5,898,240 + 4,608 = 851,226,048
    assert enc.encoder_weight_bytes("gemma3", n_embd=1152, n_ff=4304, n_layer=27, patch_size=14, image_size=896,
                                    projection_dim=2560) == 851_226_048


def test_q8_0_rows_that_are_not_whole_blocks_stay_f16():
    # ffn_down reads 4304 values per row: 4304 / 32 = 134.5 blocks → the converter falls back to F16
    tensors = {n: (ne, t) for n, ne, t in enc.encoder_tensors(
        "gemma3", n_embd=1152, n_ff=4304, n_layer=1, patch_size=14, image_size=896, projection_dim=2560,
        weight_type="q8_0")}
    assert tensors["v.blk.0.ffn_down.weight"] == ((4304, 1152), "f16")
    assert tensors["v.blk.0.ffn_up.weight"] == ((1152, 4304), "q8_0")
    assert tensors["mm.input_projection.weight"][1] == "f16"  # forced F16 (Gemma3VisionModel)


# --- image tokens: the processors' own rules (transformers) --------------------------------------------------


def test_gemma3_takes_256_tokens_whatever_the_size():
    for w, h in ((896, 896), (1920, 1080), (64, 64)):
        assert enc.image_tokens("gemma3", width=w, height=h, patch_size=14, image_size=896) == 256


@pytest.mark.parametrize("w, h, tokens", [
    # smart_resize(factor 28): 1288×1288 stays (multiples of 28) → 92·92 patches / 4 = 2,116
    (1288, 1288, 2116),
    # 1920×1080: round(1080/28)=39 → 1092, round(1920/28)=69 → 1932; 1092·1932 = 2,109,744 ≤ 12,845,056
    # → (1092/14)·(1932/14)/4 = 78·138/4 = 2,691
    (1920, 1080, 2691),
    # 100×100: round(100/28)=4 → 112; 112² = 12,544 ≥ 3,136 → 8·8/4 = 16
    (100, 100, 16),
    # 40×40: round → 28·28 = 784 < 3,136 → beta = √(3136/1600) = 1.4; ceil(56/28)·28 = 56 → 4·4/4 = 4
    (40, 40, 4),
])
def test_qwen25vl_tokens_follow_smart_resize(w, h, tokens):
    assert enc.image_tokens("qwen2.5vl", width=w, height=h, patch_size=14, image_size=560, merge=2,
                            min_pixels=3136, max_pixels=12845056) == tokens


def test_qwen25vl_max_pixels_scales_down():
    # 8000×8000 = 64 Mpx > 12,845,056: beta = √(64e6/12,845,056) = 2.2322; floor(8000/2.2322/28)·28 = 3584
    # → 256·256/4 = 16,384 tokens
    assert enc.qwen_resize(8000, 8000, 28, 3136, 12845056) == (3584, 3584)
    assert enc.image_tokens("qwen2.5vl", width=8000, height=8000, patch_size=14, image_size=560,
                            min_pixels=3136, max_pixels=12845056) == 16384


@pytest.mark.parametrize("w, h, tiles, tokens", [
    # SmolVLM-256M: 64 tokens a tile ((512/16)² / 4²). 512×512: longest edge → 2048 (2048×2048),
    # resize_for_vision_encoder keeps 2048 → 4×4 tiles + the global image = 17 · 64 = 1,088
    (512, 512, (4, 4), 1088),
    # 1920×1080: → 2048 × int(2048/1.7778)=1152 (even); up to tiles: 2048 × ceil(1152/512)·512 = 1536
    # → 3 rows × 4 cols + 1 = 13 · 64 = 832
    (1920, 1080, (3, 4), 832),
])
def test_idefics3_tiles_as_its_processor(w, h, tiles, tokens):
    assert enc.idefics3_tiles(h, w, 2048, 512) == tiles
    assert enc.image_tokens("idefics3", width=w, height=h, patch_size=16, image_size=512, scale_factor=4,
                            longest_edge=2048) == tokens


def test_idefics3_one_tile_has_no_global_image():
    # longest_edge = the tile: 512×512 stays one tile → 64 tokens
    assert enc.idefics3_tiles(512, 512, 512, 512) == (0, 0)
    assert enc.image_tokens("idefics3", width=512, height=512, patch_size=16, image_size=512, scale_factor=4,
                            longest_edge=512) == 64


def test_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="unknown encoder kind"):
        enc.encoder_weight_bytes("llava", n_embd=1, n_ff=1, n_layer=1, patch_size=1, image_size=1, projection_dim=1)


IMAGE_RUNS = [r for r in MEASURED["runs"] if "image" in r]


@pytest.mark.parametrize("run", IMAGE_RUNS, ids=[f"{r['image']['width']}x{r['image']['height']}" for r in IMAGE_RUNS])
def test_qwen25vl_buffer_after_an_image_of_its_own_size(run):
    # llama.cpp reserves the warmup graph, then the graph of each image it encodes: the buffer is the larger
    from kvplan.plan.encoder_parts import encoder_figures
    from kvplan.profiles.spec import EncoderSpec

    e = EncoderSpec(**_encoder("qwen2.5-vl-3b", "f16"))
    w, h = run["image"]["width"], run["image"]["height"]
    f = encoder_figures(e, w, h)
    assert f["compute_bytes"] == run["image"]["compute_bytes"]
    assert run["image"]["compute_bytes"] >= run["compute_bytes"]  # never below the warmup's


def test_three_image_runs_were_measured():
    assert len(IMAGE_RUNS) == 3
