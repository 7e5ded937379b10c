"""Weights priced tensor by tensor: ggml block sizes, llama-quantize's type choice, other formats.

Hand-derived figures carry their arithmetic; the last test compares against what the real
llama.cpp quantizer chose for weight-less GGUFs (tests/data/llamacpp/quant/<model>.json).
"""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import pytest
import yaml

from kvplan.engine.ggml_types import ggml_type, row_bytes, tensor_bytes
from kvplan.engine.group_quant import awq_bytes, gptq_bytes, grouped_int_bytes, mlx_affine_bytes
from kvplan.engine.quantize import FILE_TYPES, gguf_type_for, price_gguf
from kvplan.engine.weight_formats import price_weights
from kvplan.engine.tensors import ModelShape, tensor_inventory

ROOT = Path(__file__).resolve().parents[2]
PROFILES = ROOT / "model_profiles"
QUANT_DIR = ROOT / "tests" / "data" / "llamacpp" / "quant"

# Profile fields the schema lacks yet (values from each model's HF config.json, tests/data/hf_configs).
EXTRA_FIELDS = {
    "llama-3.1-8b": {"rope_scaling": "llama3"},  # rope_scaling.rope_type
    "llama-3.2-1b": {"rope_scaling": "llama3"},
    "llama-3.2-3b": {"rope_scaling": "llama3"},
    "phi-3.5-mini": {"rope_scaling": "longrope"},  # rope_scaling.type, 48 long/short factors
    "gemma-3-4b": {"gguf_vocab": 262144},  # converter trims token_embd to the tokenizer's 262,144 entries
    "deepseek-v2-lite": {"rope_scaling": "yarn", "n_expert": 64, "n_expert_used": 6, "expert_intermediate": 1408,
                         "n_shared_experts": 2, "leading_dense_layers": 1, "q_lora_rank": 0},
    # session 7's ground truth (llama.cpp build 11434): the MoE counts of the configs, phi-4-mini's longrope factors
    "gpt-oss-20b": {"rope_scaling": "yarn", "n_expert": 32, "n_expert_used": 4, "expert_intermediate": 2880},
    "qwen3-30b-a3b": {"n_expert": 128, "n_expert_used": 8, "expert_intermediate": 768},
    "phi-4-mini": {"rope_scaling": "longrope"},
    # session 9 (build 11434): the profile's MoE fields (experts on every layer, one shared expert of that width);
    # Gemma 4's full-attention layers (layer_types: every fifth) with global_head_dim
    "qwen3.5-35b-a3b": {"n_expert": 256, "n_expert_used": 8, "expert_intermediate": 512, "n_shared_experts": 1},
    "gemma-4-e2b": {"global_head_dim": 512, "full_attention_layers": (4, 9, 14, 19, 24, 29, 34)},
    # session 9 (build 11434): Granite-4.0-H-Tiny's experts and its shared MLP as 2 experts' width; Llama 4 Scout's
    # 16 experts with one shared expert and its llama3 rope scaling
    "granite-4.0-h-tiny": {"n_expert": 64, "n_expert_used": 6, "expert_intermediate": 512, "n_shared_experts": 2},
    "llama-4-scout-17b-16e": {"rope_scaling": "llama3", "n_expert": 16, "n_expert_used": 1,
                              "expert_intermediate": 8192, "n_shared_experts": 1},
    # session 10 (build 11434): Mixtral-8x7B's 8 experts (2 per token) as wide as its intermediate_size
    "mixtral-8x7b": {"n_expert": 8, "n_expert_used": 2, "expert_intermediate": 14336},
    # session 10 (build 11434): LFM2-8B-A1B's 32 experts after its num_dense_layers 2 dense layers
    "lfm2-8b-a1b": {"n_expert": 32, "n_expert_used": 4, "expert_intermediate": 1792, "leading_dense_layers": 2},
}


def _ffn_widths(p: dict) -> dict:
    """A per-layer intermediate_size (Gemma 3n) as ModelShape takes it: the widest, and the list when they differ."""
    widths = p.get("intermediate_size", 0)  # a MoE on every layer (Qwen3.5-35B-A3B) has no dense width
    if not isinstance(widths, list):
        return {"intermediate": widths}
    return {"intermediate": max(widths), "intermediate_per_layer": tuple(widths) if len(set(widths)) > 1 else ()}
_STATE_WIDTHS = ("ssm_heads", "ssm_head_dim", "ssm_groups", "ssm_state_size", "linear_key_heads",
                 "linear_key_head_dim", "linear_value_heads", "linear_value_head_dim")


def _state_fields(p: dict) -> dict:
    st = p.get("state")
    if not st:
        return {}
    return {"state_mixer": st["mixer"], "state_layers": tuple(st["layers"]),
            "feedforward_layers": tuple(st.get("feedforward_layers", [])), "conv_kernel": st["conv_kernel_tokens"],
            **{k: st.get(k, 0) for k in _STATE_WIDTHS}}


def profile_shape(name: str) -> ModelShape:
    p = yaml.safe_load((PROFILES / f"{name}.yaml").read_text())
    mla = p.get("mla") or {}
    return ModelShape(
        p["architecture"], p["layers"], p["hidden_size"], p["attention_heads"], p["kv_heads"], p["head_dim"],
        vocab=p["vocab_size"], tied_embeddings=p["tie_embeddings"], v_head_dim=p.get("v_head_dim", 0),
        kv_lora_rank=mla.get("kv_lora_rank", 0), rope_dim=mla.get("qk_rope_head_dim", 0),
        per_layer_input=p.get("hidden_size_per_layer_input", 0), per_layer_vocab=p.get("vocab_size_per_layer_input", 0),
        **_ffn_widths(p), **_state_fields(p), **EXTRA_FIELDS.get(name, {}))


LLAMA2_7B = ModelShape("llama", 32, 4096, 32, 32, 128, 11008, 32000, False)


# --- ggml block sizes -------------------------------------------------------------------------

@pytest.mark.parametrize("name, values, nbytes, bits", [
    ("q4_K", 256, 144, 4.5),  # 2 fp16 (d, dmin) + 12 scale bytes + 128 bytes of nibbles = 144 → 144·8/256
    ("q6_K", 256, 210, 6.5625),  # 128 ql + 64 qh + 16 scales + 2 = 210 → 1680/256
    ("q5_K", 256, 176, 5.5),  # 4 + 12 + 32 qh + 128 = 176
    ("q3_K", 256, 110, 3.4375),  # 32 hmask + 64 qs + 12 scales + 2 = 110
    ("q2_K", 256, 84, 2.625),  # 16 scales + 64 qs + 2·2 = 84
    ("iq4_xs", 256, 136, 4.25),  # 2 + 2 + 4 + 128 = 136
    ("q8_0", 32, 34, 8.5),  # fp16 + 32 int8
    ("q4_0", 32, 18, 4.5),  # fp16 + 16
    ("q5_0", 32, 22, 5.5),  # fp16 + 4 + 16
    ("q5_1", 32, 24, 6.0),
    ("iq4_nl", 32, 18, 4.5),
    ("bf16", 1, 2, 16.0),
])
def test_block_sizes(name, values, nbytes, bits):
    t = ggml_type(name)
    assert (t.block_values, t.block_bytes, t.bits_per_value) == (values, nbytes, bits)


def test_rows_must_be_whole_blocks():
    # Qwen2.5-0.5B's hidden 896 = 3.5 blocks of 256, 28 blocks of 32
    assert row_bytes("q5_0", 896) == 28 * 22
    with pytest.raises(ValueError, match="whole number"):
        row_bytes("q4_K", 896)
    assert tensor_bytes("q4_K", (4096, 11008)) == 16 * 144 * 11008  # 4096 = 16 blocks per row


# --- llama-quantize's choices, derived by hand ------------------------------------------------

def test_llama2_7b_q4_0_by_hand():
    # 2-D weights but output: per layer 4·4096² + 3·4096·11008 = 202,375,168 values, ×32 layers
    # = 6,476,005,376, + token_embd 32000·4096 = 131,072,000 → 6,607,077,376 values × 18/32 B
    q4_0 = 6_607_077_376 * 18 // 32  # 3,716,481,024
    # output.weight → q6_K (the output rule): 131,072,000 × 210/256 = 107,520,000
    q6_k = 131_072_000 * 210 // 256
    # 65 F32 norms: 32 layers × 2 × 4096 + output_norm 4096 = 266,240 values × 4 B = 1,064,960
    f32 = 266_240 * 4
    p = price_gguf(LLAMA2_7B, "q4_0")
    assert p.total_bytes == q4_0 + q6_k + f32 == 3_825_065_984
    assert Counter(t.dtype for t in p.tensors) == {"q4_0": 225, "q6_K": 1, "f32": 65}


def test_llama2_7b_q4_k_m_by_hand():
    # use_more_bits(i, 32): i < 4, i ≥ 28, or (i − 4) % 3 == 2 → layers 0-3, 6, 9, …, 27, 28-31 = 16 layers
    more = [i for i in range(32) if i < 4 or i >= 28 or (i - 4) % 3 == 2]
    assert len(more) == 16
    p = price_gguf(LLAMA2_7B, "q4_k_m")
    q6 = {t.name for t in p.tensors if t.dtype == "q6_K"}
    assert q6 == {"output.weight"} | {f"blk.{i}.{n}.weight" for i in more for n in ("attn_v", "ffn_down")}
    # q6_K values: 16 attn_v · 4096² + 16 ffn_down · 11008·4096 + output 131,072,000 = 1,120,927,744
    q6_values = 16 * 4096 * 4096 + 16 * 11008 * 4096 + 131_072_000
    q4_values = 6_738_149_376 - q6_values  # all 2-D values (6,607,077,376 + 131,072,000) minus those
    total = q6_values * 210 // 256 + q4_values * 144 // 256 + 1_064_960
    assert p.total_bytes == total == 4_080_263_168  # 4.08 GB
    assert round(p.bits_per_weight, 2) == 4.84  # 4,080,263,168 · 8 / 6,738,415,616


def test_qwen25_05b_falls_back_on_rows_of_896():
    s = profile_shape("qwen2.5-0.5b")
    types = {t.name: t.dtype for t in price_gguf(s, "q4_k_m").tensors}
    assert types["blk.5.attn_q.weight"] == "q5_0"  # q4_K needs rows of 256; 896 → q5_0
    assert types["blk.0.attn_v.weight"] == "q8_0"  # use_more_bits → q6_K → falls back to q8_0
    assert types["blk.5.attn_v.weight"] == "q8_0"  # n/8 = 3: (5 − 3) % 3 == 2 → q6_K → q8_0
    assert types["blk.4.attn_v.weight"] == "q5_0"  # (4 − 3) % 3 = 1: q4_K → q5_0
    assert types["token_embd.weight"] == "q8_0"  # tied: output rule, 896 % 256 ≠ 0 → q8_0
    assert types["blk.0.ffn_down.weight"] == "q6_K"  # rows of 4864 = 19 blocks
    assert types["blk.3.ffn_down.weight"] == "q4_K"
    assert types["blk.0.attn_q.bias"] == "f32"


def test_special_layouts():
    gemma = {t.name: t.dtype for t in price_gguf(profile_shape("gemma-3-1b"), "q4_0").tensors}
    assert gemma["token_embd.weight"] == "q8_0"  # tied; q6_K needs 256 | 1152 → q8_0
    phi = {t.name: t.dtype for t in price_gguf(profile_shape("phi-3-mini-4k"), "q4_k_m").tensors}
    assert phi["blk.0.attn_qkv.weight"] == "q6_K"  # fused QKV takes the attn_v branch
    assert phi["blk.4.attn_qkv.weight"] == "q4_K"
    ds = profile_shape("deepseek-v2-lite")
    dsq = {t.name: t.dtype for t in price_gguf(ds, "q4_k_m").tensors}
    assert dsq["blk.1.ffn_down_exps.weight"] == "q8_0"  # use_more_bits(1, 27): q6_K, rows of 1408 → q8_0
    assert dsq["blk.4.ffn_down_exps.weight"] == "q5_0"  # q4_K, 1408 % 256 ≠ 0 → q5_0
    assert dsq["blk.4.attn_k_b.weight"] == "q5_0"  # rows of 128 (qk_nope)
    assert dsq["blk.4.ffn_gate_inp.weight"] == "f32"  # router never quantized
    inventory = {t.name: t for t in tensor_inventory(ds)}
    assert gguf_type_for(inventory["blk.4.attn_v_b.weight"], "q2_k", ds) == "q2_K"  # no category: base type


def test_plain_float_file_types_keep_norms_f32():
    p = price_gguf(LLAMA2_7B, "f16")
    # 6,738,149,376 2-D values × 2 B + 1,064,960 B of F32 norms
    assert p.total_bytes == 6_738_149_376 * 2 + 1_064_960


# --- other formats, by hand -------------------------------------------------------------------

def test_group_format_unit_sizes():
    # MLX affine 4-bit, group 64: 32 B of values + bf16 scale + bf16 bias = 36 B → 4.5 bits/value
    assert mlx_affine_bytes(64, 1, 4, 64) == 36
    # GPTQ 4-bit g128, 4096×4096: qweight 8,388,608 + qzeros 32·4096/2 = 65,536 + scales 32·4096·2
    # = 262,144 + g_idx 4096·4 = 16,384 → 8,732,672
    assert gptq_bytes(4096, 4096) == 8_732_672
    assert awq_bytes(4096, 4096) == 8_732_672 - 16_384  # no g_idx
    # 8da4w g32: 16 B of int4 pairs + a 16-bit scale = 18 B per 32 values
    assert grouped_int_bytes(32, 1, 4, 32) == 18


def test_mlx_4bit_llama2_7b():
    # every matrix (embedding and head included) at 4.5 bits; norms bf16:
    # 6,738,149,376 × 36/64 + 266,240 × 2 = 3,790,209,024 + 532,480
    assert price_weights(LLAMA2_7B, "mlx-4bit").total_bytes == 6_738_149_376 * 36 // 64 + 532_480


def test_gptq_leaves_embeddings_and_head_fp16():
    p = price_weights(LLAMA2_7B, "gptq-4bit")
    dtypes = {t.name: t.dtype for t in p.tensors}
    assert dtypes["token_embd.weight"] == dtypes["output.weight"] == "float16"
    assert dtypes["blk.0.ffn_down.weight"] == "gptq4/g128"


def test_executorch_tied_head_stored_twice_and_fp32_embedding():
    p = price_weights(profile_shape("llama-3.2-1b"), "executorch-8da4w")
    embd = next(t for t in p.tensors if t.name == "token_embd.weight")
    head = next(t for t in p.tensors if t.name == "output.weight")
    assert embd.bytes == 128_256 * 2048 * 4  # fp32, embedding_quantize unset
    assert head.bytes == 128_256 * (2048 // 2 + 16 * 2)  # 1024 B of nibbles + 16 groups · 2 B per row


# --- ground truth from the real quantizer -----------------------------------------------------

def _ground_truth_cases():
    if not QUANT_DIR.is_dir():
        return []
    cases = []
    for path in sorted(p for p in QUANT_DIR.glob("*.json.gz") if not p.name.startswith("verify_")):  # verify_*: the dry-run check
        for ftype in sorted(json.loads(gzip.decompress(path.read_bytes()))["types"]):
            if ftype.lower() in FILE_TYPES:
                cases.append(pytest.param(path, ftype, id=f"{path.stem}-{ftype}"))
    return cases


CASES = _ground_truth_cases()


def test_ground_truth_files_exist():
    if not QUANT_DIR.is_dir():
        pytest.skip("tests/data/llamacpp/quant not generated yet")
    assert CASES, f"no comparable quantization in {QUANT_DIR}"


def _dims(shape) -> tuple[int, ...]:
    dims = list(shape)
    while len(dims) > 1 and dims[-1] == 1:  # ggml pads shapes to 4 dims with 1s
        dims.pop()
    return tuple(dims)


@pytest.mark.parametrize("path, ftype", CASES)
def test_matches_llama_quantize_exactly(path, ftype):
    data = json.loads(gzip.decompress(path.read_bytes()))
    truth = data["types"][ftype]
    shape = profile_shape(path.stem if (PROFILES / f"{path.stem}.yaml").exists() else data["model"])
    mine = {t.name: t for t in price_gguf(shape, ftype).tensors}
    theirs = {t["name"]: t for t in truth["tensors"]}
    assert sorted(mine) == sorted(theirs)
    wrong = [(n, tuple(theirs[n]["shape"]), theirs[n]["type"], mine[n].dtype) for n in theirs
             if theirs[n]["type"].lower() != mine[n].dtype.lower() or theirs[n]["bytes"] != mine[n].bytes
             or _dims(theirs[n]["shape"]) != mine[n].shape]
    assert not wrong
    assert sum(t.bytes for t in mine.values()) == truth["total_bytes"]
