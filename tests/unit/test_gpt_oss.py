"""gpt-oss-20b priced from its config.json (kvplan issue #23): alternating 128-token windows, attention sinks
(weights only), 32 experts top-4 with biases, MXFP4 experts. Every figure is derived by hand below."""

from __future__ import annotations

import json

import pytest

from kvplan.caches.ideal import cache_layout
from kvplan.caches.llamacpp import llamacpp_cache
from kvplan.caches.transformers import transformers_cache
from kvplan.engine.quantize import gguf_type_for, price_gguf
from kvplan.engine.schedule import Attention
from kvplan.engine.tensors import ModelShape, n_params, tensor_inventory
from kvplan.importers.hf import profile_from_hf_config
from kvplan.profiles.catalog import Catalog
from kvplan.profiles.runtime import LlamaCppSpec, TransformersSpec
from tests.conftest import DATA

CONFIG = json.loads((DATA / "hf_configs" / "gpt-oss-20b.json").read_text())

# one attention layer's K or V row: 8 KV heads × 64 × 2 B (f16/bf16) = 1,024 B; K + V = 2,048 B per token
LAYER_BYTES_PER_TOKEN = 2 * 8 * 64 * 2


@pytest.fixture(scope="module")
def imported():
    return profile_from_hf_config(CONFIG, name="gpt-oss-20b").model


@pytest.fixture(scope="module")
def shipped():
    return Catalog().model("gpt-oss").profile  # the alias


def test_config_is_the_real_shape():
    assert (CONFIG["num_hidden_layers"], CONFIG["num_attention_heads"], CONFIG["num_key_value_heads"],
            CONFIG["head_dim"], CONFIG["num_local_experts"], CONFIG["num_experts_per_tok"],
            CONFIG["sliding_window"]) == (24, 64, 8, 64, 32, 4, 128)
    assert CONFIG["layer_types"] == ["sliding_attention", "full_attention"] * 12


def test_params_count_every_expert_bias_and_sink(imported):
    h, i, e, v = 2880, 2880, 32, 201_088
    q, kv = 64 * 64, 8 * 64  # q width 4,096, k/v width 512
    attention = (h * q + q) + 2 * (h * kv + kv) + (q * h + h)  # q/k/v/o with biases = 26,550,080
    sinks = 64  # GptOssAttention.sinks: one logit per head
    norms = 2 * h
    expert = 3 * h * i + 2 * i + h  # gate_up_proj [H, 2I] + bias 2I, down_proj [I, H] + bias H = 24,891,840
    router = e * h + e  # weight [E, H] + bias [E] = 92,192
    layer = attention + sinks + norms + e * expert + router
    assert (attention, expert, router, layer) == (26_550_080, 24_891_840, 92_192, 823_186_976)
    # embeddings + untied lm_head 2 × 201,088 × 2,880 + 24 layers + final norm
    assert imported.params == 2 * v * h + 24 * layer + h == 20_914_757_184
    active_layer = attention + sinks + norms + 4 * expert + router
    assert imported.params_active == 2 * v * h + 24 * active_layer + h == 4_187_440_704
    # without the input-embedding lookup: 3,608,307,264, the model card's "3.6B active"
    assert imported.params_active - v * h == 3_608_307_264


def test_moe_fields(imported):
    assert (imported.experts, imported.experts_per_token, imported.expert_intermediate_size,
            imported.shared_experts, imported.dense_layers) == (32, 4, 2880, 0, 0)


def test_schedule_alternates_window_128_from_layer_0(imported, shipped):
    for model in (imported, shipped):
        sliding, full = Attention(8, 64, 64, 128), Attention(8, 64, 64, None)
        assert [model.schedule.layer(i) for i in range(24)] == [sliding, full] * 12
        assert [model.schedule.layer(i).window_tokens for i in (0, 1, 22, 23)] == [128, None, 128, None]


def test_without_layer_types_the_class_default_alternates_too():
    config = {k: v for k, v in CONFIG.items() if k != "layer_types"}
    model = profile_from_hf_config(config, name="x").model
    # GptOssConfig: layer i sliding when (i + 1) % 2, i.e. the even layers
    assert (model.sliding_window, model.sliding_window_pattern) == (128, "alternating")


def test_ideal_cache(shipped):
    cache = cache_layout(shipped)
    # 12 full layers × 2,048 B = 24,576 B per token on the full layers, and as much on the 12 sliding ones
    assert 12 * LAYER_BYTES_PER_TOKEN == 24_576
    # 32k: full 24,576 × 32,768 = 805,306,368 + sliding 24,576 × min(32,768, 128) = 3,145,728
    assert cache.kv_bytes(32_768) == 805_306_368 + 3_145_728 == 808_452_096
    # below the window every layer holds the whole context: 24 × 2,048 × 100 = 4,915,200
    assert cache.kv_bytes(100) == 4_915_200


def test_llamacpp_cells_follow_the_iswa_rule(shipped):
    cache = llamacpp_cache(LlamaCppSpec(), shipped)
    assert (cache.global_bytes_per_cell, cache.swa_bytes_per_cell, cache.window_tokens) == (24_576, 24_576, 128)
    cells = cache.cells(32_768, 1)
    # windowed layers: pad(min(32,768, 128 · 1 + 512), 256) = pad(640, 256) = 768
    assert (cells.n_ctx_seq, cells.swa_cells) == (32_768, 768)
    # 24,576 × 32,768 + 24,576 × 768 = 805,306,368 + 18,874,368
    assert cache.kv_bytes(32_768, 1) == 824_180_736


def test_llamacpp_parallel_and_unified(shipped):
    split = llamacpp_cache(LlamaCppSpec(parallel=2), shipped)
    # -c 4096 -np 2: pad(4,096 / 2, 256) = 2,048 cells per stream; windowed pad(min(2,048, 128 + 512), 256) = 768;
    # 2 streams × (24,576 × 2,048 + 24,576 × 768) = 2 × 69,206,016
    assert split.kv_bytes(4096, 2) == 138_412_032
    unified = llamacpp_cache(LlamaCppSpec(parallel=2, kv_unified=True), shipped)
    # one stream of 4,096 cells; windowed pad(min(4,096, 128 · 2 + 512), 256) = pad(768, 256) = 768
    assert unified.cells(4096, 2).swa_cells == 768
    assert unified.kv_bytes(4096, 2) == 24_576 * 4096 + 24_576 * 768 == 119_537_664


def test_llamacpp_swa_full_keeps_the_whole_context(shipped):
    cache = llamacpp_cache(LlamaCppSpec(swa_full=True), shipped)
    assert cache.kv_bytes(32_768, 1) == 24 * LAYER_BYTES_PER_TOKEN * 32_768 == 1_610_612_736


def test_transformers_dynamic_cache_slides_the_sliding_layers(shipped):
    cache = transformers_cache(TransformersSpec(), shipped)
    # after a decode step the 12 sliding layers hold min(N, 128) tokens: as the ideal cache
    assert cache.kv_bytes(32_768) == 808_452_096
    # right after the prefill every layer still holds the N-token tensor: 24 × 2,048 × 32,768
    assert cache.kv_peak_bytes(32_768) == 1_610_612_736


def test_transformers_static_cache(shipped):
    cache = transformers_cache(TransformersSpec(cache="static", max_cache_len=8192), shipped)
    # full layers 8,192 slots, sliding min(8,192, 128): 24,576 × 8,192 + 24,576 × 128
    assert cache.kv_bytes(1000) == 201_326_592 + 3_145_728 == 204_472_320


# --- weights: llama.cpp's GGUF of gpt-oss --------------------------------------------------------------------

SHAPE = ModelShape("gpt_oss", 24, 2880, 64, 8, 64, 2880, 201_088, False, n_expert=32, n_expert_used=4,
                   expert_intermediate=2880)
EXPERT_VALUES = 24 * 3 * 2880 * 2880 * 32  # gate, up, down stacks of every layer = 19,110,297,600
MATRIX_VALUES = 2 * 201_088 * 2880 + 24 * (2 * 2880 * 4096 + 2 * 2880 * 512)  # embd, output, q/o/k/v = 1,795,276,800


def test_tensor_inventory_sums_to_the_derived_params():
    tensors = tensor_inventory(SHAPE)
    assert n_params(tensors) == 20_914_757_184
    names = {t.name for t in tensors if t.layer == 0}
    assert {"blk.0.attn_sinks.weight", "blk.0.post_attention_norm.weight", "blk.0.ffn_gate_inp.bias",
            "blk.0.ffn_down_exps.bias", "blk.0.attn_output.bias"} <= names
    assert "blk.0.ffn_norm.weight" not in names  # post_attention_norm is the FFN's input norm


def test_mxfp4_as_the_converter_writes_it():
    pricing = price_gguf(SHAPE, "mxfp4")
    by_type = {}
    for t in pricing.tensors:
        by_type[t.dtype] = by_type.get(t.dtype, 0) + t.bytes
    # MXFP4: 32 values in 17 bytes (1 E8M0 scale + 16 bytes of nibbles) = 4.25 bits
    assert by_type["mxfp4"] == EXPERT_VALUES * 17 // 32 == 10_152_345_600
    assert by_type["f16"] == MATRIX_VALUES * 2 == 3_590_553_600
    # the rest is F32: biases, norms, sinks, routers = 20,914,757,184 − 19,110,297,600 − 1,795,276,800 values
    assert by_type["f32"] == (20_914_757_184 - EXPERT_VALUES - MATRIX_VALUES) * 4 == 36_731_136
    assert pricing.total_bytes == 13_779_630_336


def test_mxfp4_moe_as_llama_quantize_writes_it():
    pricing = price_gguf(SHAPE, "mxfp4_moe")
    # experts MXFP4; the 2-D matrices, output included, Q8_0 (34 bytes per 32 values)
    assert pricing.total_bytes == 10_152_345_600 + MATRIX_VALUES * 34 // 32 + 36_731_136 == 12_096_558_336
    sinks = next(t for t in tensor_inventory(SHAPE) if t.name == "blk.3.attn_sinks.weight")
    assert gguf_type_for(sinks, "mxfp4_moe", SHAPE) == "f32"  # 1-D: never quantized


def test_mxfp4_converter_gguf_needs_gpt_oss():
    llama = ModelShape("llama", 2, 64, 4, 4, 16, 128, 256, False)
    with pytest.raises(ValueError, match="gpt-oss"):
        price_gguf(llama, "mxfp4")
    # llama-quantize's MXFP4_MOE on a dense model: no 3-D stack, so every matrix is Q8_0
    assert {t.dtype for t in price_gguf(llama, "mxfp4_moe").tensors if len(t.shape) == 2} == {"q8_0"}


def test_the_mxfp4_checkpoint_is_imported_as_weight_type_mxfp4(imported):
    # config quantization_config.quant_method "mxfp4": llama.cpp's converter keeps those blocks
    assert (imported.weight_type, imported.weights) == ("mxfp4", None)
    without = {k: v for k, v in CONFIG.items() if k != "quantization_config"}  # a dequantized (bf16) copy
    assert profile_from_hf_config(without, name="x").model.weight_type is None
    # a width given on the command line wins over the checkpoint's format
    assert profile_from_hf_config(CONFIG, name="x", weight_bits=8).model.weight_type is None
