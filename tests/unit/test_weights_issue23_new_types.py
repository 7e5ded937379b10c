"""Weights of Falcon-H1, Qwen3.5-35B-A3B and Gemma 4 E2B priced tensor by tensor (llama.cpp build 11434).

Figures derived by hand carry their arithmetic; the per-tensor comparison with the real quantizer on all 19 types
(``tests/data/llamacpp/quant/<model>.json.gz``, tests/harness/quantize_all.py) is
``test_weight_formats.test_matches_llama_quantize_exactly``.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from kvplan import Catalog
from kvplan.engine.quantize import price_gguf
from kvplan.engine.tensors import n_params, tensor_inventory
from kvplan.plan.weights import model_shape

QUANT = Path(__file__).parents[1] / "data" / "llamacpp" / "quant"


def _shape(name):
    return model_shape(Catalog().model(name).profile)


def _tensors(name):
    return {t.name: t for t in tensor_inventory(_shape(name))}


def _types(name, ftype):
    return {t.name: t for t in price_gguf(_shape(name), ftype).tensors}


@pytest.mark.parametrize("name", ["falcon-h1-0.5b", "qwen3.5-35b-a3b"])
def test_params_equal_the_inventory(name):
    # both profiles derive params from the config (sources.params) with exactly the tensors the GGUF holds
    model = Catalog().model(name).profile
    assert n_params(tensor_inventory(model_shape(model))) == model.params


def test_gemma4_inventory_holds_the_checkpoint_kv_of_the_shared_layers():
    # the profile's params (4,628,569,379) counts what transformers builds: no k/v/k_norm on the 20 shared-KV
    # layers (15–34). The GGUF holds them (the checkpoint does): 16 sliding shared layers × (2 × 1,536 × 256 + 256)
    # + 4 full ones (19, 24, 29, 34) × (2 × 1,536 × 512 + 512) = 16 × 786,688 + 4 × 1,573,376 = 18,880,512, plus the
    # converter's rope_freqs [512 / 2 = 256]
    model = Catalog().model("gemma-4-e2b").profile
    assert n_params(tensor_inventory(model_shape(model))) == model.params + 16 * 786_688 + 4 * 1_573_376 + 256
    t = _tensors("gemma-4-e2b")
    assert t["blk.15.attn_k.weight"].shape == (1536, 256) and t["blk.34.attn_v.weight"].shape == (1536, 512)
    assert t["blk.34.attn_k_norm.weight"].shape == (512,) and t["rope_freqs.weight"].shape == (256,)


def test_tensor_counts():
    # falcon-h1: token_embd, output_norm, output (untied); every block attn_norm, ffn_norm, 3 MLP, 4 attention and
    # 7 Mamba2 (ssm_in, conv1d weight + bias, dt bias, A, D, out; no gated norm): 3 + 36 × 16 = 579
    assert len(_tensors("falcon-h1-0.5b")) == 579
    # qwen3.5-35b-a3b: 3 globals; every block attn_norm, post_attention_norm and 8 MoE tensors (router, 3 expert
    # stacks, shared gate + 3 shared-expert matrices); 30 Gated DeltaNet × 9, 10 attention × 6: 3 + 30 × 19 + 10 × 16
    assert len(_tensors("qwen3.5-35b-a3b")) == 3 + 570 + 160
    # gemma-4-e2b: token_embd, output_norm, per_layer_token_embd, per_layer_model_proj, per_layer_proj_norm,
    # rope_freqs; per block 4 attention matrices + q/k norms, 4 norms + layer_output_scale, 3 MLP, inp_gate, proj,
    # post_norm = 17: 6 + 35 × 17 = 601
    assert len(_tensors("gemma-4-e2b")) == 601


def test_shapes():
    f = _tensors("falcon-h1-0.5b")
    # d_inner 24 × 64 = 1,536; conv channels 1,536 + 2 · 1 · 128 = 1,792; in_proj 1,536 + 1,792 + 24 = 3,352
    assert f["blk.0.ssm_in.weight"].shape == (1024, 3352) and f["blk.0.ssm_conv1d.weight"].shape == (4, 1792)
    assert f["blk.0.ssm_out.weight"].shape == (1536, 1024) and "blk.0.ssm_norm.weight" not in f
    assert f["blk.0.ffn_norm"].shape == (1024,)  # no ".weight": gguf-py maps pre_ff_layernorm.weight whole
    assert f["blk.0.attn_k.weight"].shape == (1024, 128)  # 2 KV heads × 64
    q = _tensors("qwen3.5-35b-a3b")
    assert q["blk.0.ffn_gate_exps.weight"].shape == (2048, 512, 256)
    assert q["blk.0.ffn_down_exps.weight"].shape == (512, 2048, 256)
    assert q["blk.0.ffn_gate_inp.weight"].shape == (2048, 256) and q["blk.0.ffn_gate_inp_shexp.weight"].shape == (2048,)
    assert q["blk.3.attn_q.weight"].shape == (2048, 8192)  # 16 heads × 256 × 2: the query and its gate
    assert q["blk.0.attn_qkv.weight"].shape == (2048, 8192)  # 2 · 16 · 128 + 32 · 128
    g = _tensors("gemma-4-e2b")
    assert g["blk.4.attn_q.weight"].shape == (1536, 4096) and g["blk.3.attn_q.weight"].shape == (1536, 2048)
    assert g["blk.14.ffn_up.weight"].shape == (1536, 6144) and g["blk.15.ffn_up.weight"].shape == (1536, 12288)
    assert g["per_layer_token_embd.weight"].shape == (35 * 256, 262144)


def test_falcon_rules():
    t = _types("falcon-h1-0.5b", "q2_k")
    # falcon-h1 is not LLM_ARCH_FALCON: no Falcon rules. head_count_kv is one number: n_gqa = 8 / 2 = 4 → q2_k's
    # attn_v q4_K; ffn_down q3_K; the conv kernel stays F32 (4 × 1,792 × 4 B), as the converter wrote it
    assert t["blk.0.attn_v.weight"].dtype == "q4_K" and t["blk.0.ffn_down.weight"].dtype == "q3_K"
    assert t["blk.0.ssm_conv1d.weight"].dtype == "f32" and t["blk.0.ssm_conv1d.weight"].bytes == 4 * 1792 * 4
    assert t["blk.0.ssm_in.weight"].dtype == "q2_K" and t["blk.0.ssm_in.weight"].bytes == 3352 * 4 * 84
    assert t["output.weight"].dtype == "q6_K" and t["output.weight"].bytes == 32784 * 4 * 210


def test_qwen35moe_experts_take_the_block_number():
    # 256 experts: llama-quantize's layer_info parses the block from the name, so ffn_down_exps and ffn_down_shexp of
    # block i share use_more_bits(i, 40) = i < 5 or i ≥ 35 or (i − 5) % 3 == 2 → q6_K under q4_k_m
    t = _types("qwen3.5-35b-a3b", "q4_k_m")
    more = set(range(5)) | set(range(35, 40)) | {i for i in range(5, 35) if (i - 5) % 3 == 2}
    assert {i for i in range(40) if t[f"blk.{i}.ffn_down_exps.weight"].dtype == "q6_K"} == more
    assert {i for i in range(40) if t[f"blk.{i}.ffn_down_shexp.weight"].dtype == "q6_K"} == more
    # 2,048 × 256 rows of 512 values: 2 blocks × 210 B
    assert t["blk.0.ffn_down_exps.weight"].bytes == 2048 * 256 * 2 * 210
    assert t["blk.5.ffn_down_exps.weight"].bytes == 2048 * 256 * 2 * 144  # q4_K
    assert t["blk.0.ffn_gate_inp.weight"].dtype == "f32" and t["blk.0.ffn_gate_inp_shexp.weight"].bytes == 2048 * 4


def test_gemma4_rules():
    t = _types("gemma-4-e2b", "q4_k_m")
    # tied: token_embd and per_layer_token_embd are both in the token-embedding category → the output's q6_K;
    # per_layer_token_embd 262,144 rows × 8,960 / 256 × 210 B
    assert t["per_layer_token_embd.weight"].dtype == "q6_K"
    assert t["per_layer_token_embd.weight"].bytes == 262144 * 35 * 210
    assert t["per_layer_model_proj.weight"].dtype == "f16" and t["per_layer_model_proj.weight"].bytes == 1536 * 8960 * 2
    # 35 attn_v, one per block: use_more_bits(15, 35) = (15 − 4) % 3 == 2 → a shared layer's attn_v is q6_K
    assert t["blk.15.attn_v.weight"].dtype == "q6_K" and t["blk.15.attn_v.weight"].bytes == 256 * 6 * 210
    assert t["blk.16.attn_v.weight"].dtype == "q4_K"


def test_the_measured_data_is_build_11434():
    for name in ("falcon-h1-0.5b", "qwen3.5-35b-a3b", "gemma-4-e2b"):
        doc = json.loads(gzip.decompress((QUANT / f"{name}.json.gz").read_bytes()))
        assert doc["llama_cpp"].startswith("llama.cpp build 11434") and len(doc["types"]) == 19
