"""Weights of the hybrid (state-layer) models priced tensor by tensor: the state tensors' names, shapes and
storage as llama.cpp build 11434's converter writes them, and llama-quantize's choices for them.

Figures derived by hand carry their arithmetic; the per-tensor comparison with the real quantizer (19 types,
``tests/data/llamacpp/quant/<model>.json.gz``) is ``test_weight_formats.test_matches_llama_quantize_exactly``
and the scenario totals ``test_weight_type_plan``.
"""

from __future__ import annotations

import pytest

from kvplan import Catalog, Scenario, evaluate
from kvplan.engine.quantize import price_gguf
from kvplan.engine.tensors import n_params, tensor_inventory
from kvplan.plan.weights import model_shape

HYBRIDS = ("lfm2-1.2b", "qwen3.5-2b", "granite-4.0-h-1b", "nemotron-nano-9b-v2")


def _shape(name):
    return model_shape(Catalog().model(name).profile)


def _types(name, ftype):
    return {t.name: t for t in price_gguf(_shape(name), ftype).tensors}


@pytest.mark.parametrize("name", HYBRIDS + ("granite-4.0-h-tiny", "lfm2-8b-a1b"))
def test_params_equal_the_inventory(name):
    # every profile's params is derived from its config in sources.params; the inventory must sum to it
    model = Catalog().model(name).profile
    assert n_params(tensor_inventory(model_shape(model))) == model.params


def test_tensor_counts():
    # lfm2: token_embd + token_embd_norm, then per block attn_norm, ffn_norm, 3 MLP; 10 conv blocks × 3 mixer
    # tensors, 6 attention blocks × 6 (q, k, v, o, q/k norms): 2 + 16 × 5 + 30 + 36 = 148
    assert len(tensor_inventory(_shape("lfm2-1.2b"))) == 148
    # granite: token_embd, output_norm; per block attn_norm, ffn_norm, 3 MLP; 36 Mamba2 × 8, 4 attention × 4:
    # 2 + 40 × 5 + 288 + 16 = 506
    assert len(tensor_inventory(_shape("granite-4.0-h-1b"))) == 506
    # nemotron: token_embd, output_norm, output (untied); attn_norm on all 56; 27 Mamba2 × 8, 25 MLP × 2,
    # 4 attention × 4: 3 + 56 + 216 + 50 + 16 = 341
    assert len(tensor_inventory(_shape("nemotron-nano-9b-v2"))) == 341
    # qwen3.5: token_embd, output_norm; per block attn_norm, post_attention_norm, 3 MLP; 18 Gated DeltaNet × 9,
    # 6 attention × 6: 2 + 24 × 5 + 162 + 36 = 320
    assert len(tensor_inventory(_shape("qwen3.5-2b"))) == 320


def test_state_tensor_shapes():
    gdn = {t.name: t.shape for t in tensor_inventory(_shape("qwen3.5-2b"))}
    # conv channels 2 · 16 · 128 + 16 · 128 = 6,144; kernel 4; value dim 16 · 128 = 2,048
    assert gdn["blk.0.attn_qkv.weight"] == (2048, 6144)
    assert gdn["blk.0.attn_gate.weight"] == (2048, 2048)
    assert gdn["blk.0.ssm_conv1d.weight"] == (4, 6144)
    assert gdn["blk.0.ssm_a"] == (16,) and gdn["blk.0.ssm_beta.weight"] == (2048, 16)
    assert gdn["blk.3.attn_q.weight"] == (2048, 4096)  # 8 heads × 256 × 2: the query and its gate
    mamba = {t.name: t.shape for t in tensor_inventory(_shape("granite-4.0-h-1b"))}
    # d_inner 48 · 64 = 3,072; in_proj 2 · 3,072 + 2 · 1 · 128 + 48 = 6,448; conv 3,072 + 256 = 3,328
    assert mamba["blk.0.ssm_in.weight"] == (1536, 6448)
    assert mamba["blk.0.ssm_conv1d.weight"] == (4, 3328) and mamba["blk.0.ssm_conv1d.bias"] == (3328,)
    assert mamba["blk.0.ssm_a"] == (1, 48) and mamba["blk.0.ssm_d"] == (1, 48)
    assert mamba["blk.0.ssm_norm.weight"] == (3072,)  # [3072, 1]: one group, ggml's trailing 1 dropped
    nemo = {t.name: t.shape for t in tensor_inventory(_shape("nemotron-nano-9b-v2"))}
    assert nemo["blk.0.ssm_norm.weight"] == (1280, 8)  # 10,240 / 8 groups
    assert "blk.1.ffn_gate.weight" not in nemo and nemo["blk.1.ffn_up.weight"] == (4480, 15680)
    conv = {t.name: t.shape for t in tensor_inventory(_shape("lfm2-1.2b"))}
    assert conv["blk.0.shortconv.conv.weight"] == (3, 2048) and conv["blk.0.shortconv.in_proj.weight"] == (2048, 6144)
    assert "output_norm.weight" not in conv and conv["token_embd_norm.weight"] == (2048,)


def test_conv_kernels_and_ssm_vectors_stay_f32():
    # llama-quant.cpp tensor_allows_quantization skips ssm_conv1d and shortconv.conv.weight; ssm_a / ssm_d do not
    # end in "weight"; the converter wrote them F32 (conversion/base.py: SSM_CONV1D, SHORTCONV_CONV)
    g = _types("granite-4.0-h-1b", "q4_k_m")
    assert g["blk.0.ssm_conv1d.weight"].dtype == "f32" and g["blk.0.ssm_conv1d.weight"].bytes == 4 * 3328 * 4
    assert g["blk.0.ssm_a"].dtype == "f32" and g["blk.0.ssm_a"].bytes == 48 * 4
    assert g["blk.0.ssm_in.weight"].dtype == "q4_K"  # 6,448 rows × 1,536 / 256 × 144 B
    assert g["blk.0.ssm_in.weight"].bytes == 6448 * 6 * 144
    lfm = _types("lfm2-1.2b", "f16")
    assert lfm["blk.0.shortconv.conv.weight"].dtype == "f32" and lfm["blk.0.shortconv.conv.weight"].bytes == 3 * 2048 * 4


def test_lfm2_attn_v_counts_only_its_six_attention_layers():
    # i_attention_wv counts attn_v tensors (6, in blocks 2, 5, 8, 10, 12, 14), n_attention_wv = 6:
    # use_more_bits(i, 6) = i < 0 or i ≥ 5 or i % 3 == 2 → i = 2, 5 → blocks 8 and 14 get q6_K under q4_k_m
    t = _types("lfm2-1.2b", "q4_k_m")
    assert {b: t[f"blk.{b}.attn_v.weight"].dtype for b in (2, 5, 8, 10, 12, 14)} == {
        2: "q4_K", 5: "q4_K", 8: "q6_K", 10: "q4_K", 12: "q4_K", 14: "q6_K"}
    assert t["blk.8.attn_v.weight"].bytes == 512 * 8 * 210  # 512 rows × 2,048 / 256 blocks × 210 B


def test_nemotron_ffn_down_running_counter_over_all_layers():
    # 25 ffn_down (the MLP-only blocks), counted 0…24 in block order against n_ffn_down = n_layer_all = 56:
    # use_more_bits(i, 56) = i < 7 or i ≥ 49 or (i − 7) % 3 == 2 → i = 0…6, 9, 12, 15, 18, 21, 24 → blocks
    # 1, 3, 5, 8, 10, 12, 15, 22, 28, 35, 42, 49, 55 get q6_K, which falls back to q8_0 (rows of 15,680 are not
    # whole 256-blocks); the other 12 q4_K → q5_0
    t = _types("nemotron-nano-9b-v2", "q4_k_m")
    more = {1, 3, 5, 8, 10, 12, 15, 22, 28, 35, 42, 49, 55}
    mlp = Catalog().model("nemotron-nano-9b-v2").profile.state.feedforward_layers
    assert {b: t[f"blk.{b}.ffn_down.weight"].dtype for b in mlp} == {b: "q8_0" if b in more else "q5_0" for b in mlp}
    assert t["blk.1.ffn_down.weight"].bytes == 4480 * 490 * 34  # 4,480 rows × 15,680 / 32 blocks × 34 B
    assert t["blk.3.ffn_down.weight"].bytes == 4480 * 490 * 34
    assert t["blk.17.ffn_down.weight"].bytes == 4480 * 490 * 22


def test_gqa_of_layer_zero():
    # hparams.n_gqa() is of layer 0: LFM2's is a conv layer (head_count_kv 0 there) → 0, so q2_k's attn_v is
    # q3_K (n_gqa < 4); Qwen3.5 writes one head_count_kv (2): 8 / 2 = 4 → q4_K, for attn_qkv too
    assert _types("lfm2-1.2b", "q2_k")["blk.2.attn_v.weight"].dtype == "q3_K"
    q = _types("qwen3.5-2b", "q2_k")
    assert q["blk.3.attn_v.weight"].dtype == "q4_K" and q["blk.0.attn_qkv.weight"].dtype == "q4_K"


def test_group_formats_refuse_state_layers():
    from kvplan.errors import KvplanError

    cat = Catalog()
    with pytest.raises(KvplanError, match="priced as llama.cpp's GGUF only"):
        evaluate(Scenario(cat.device("pixel8").profile, cat.model("lfm2-1.2b").profile, 4096, weight_type="mlx-4bit"))


@pytest.mark.parametrize("name, ftypes", [("lfm2-1.2b", {"q4_k_m", "q2_k", "iq4_xs"}),
                                          ("granite-4.0-h-1b", {"q4_k_m", "q3_k_m"}),
                                          ("falcon-h1-0.5b", {"q4_k_m", "q2_k", "iq4_xs"}),
                                          ("gemma-4-e2b", {"q4_k_m"})])
def test_real_quantization_equals_the_dry_run_and_kvplan(name, ftypes):
    # quantize_all.py --verify: llama-quantize (build 11434) really quantized the weight-less GGUF; the file read
    # back with gguf-py has every tensor's type and bytes as the --dry-run said, and kvplan's total
    import gzip
    import json
    from pathlib import Path

    path = Path(__file__).parents[1] / "data" / "llamacpp" / "quant" / f"verify_{name}.json.gz"
    results = json.loads(gzip.decompress(path.read_bytes()))["results"]
    assert set(results) == ftypes
    for ftype, r in results.items():
        assert r["ok"] and not r["mismatches"]
        assert r["real_total_tensor_bytes"] == price_gguf(_shape(name), ftype).total_bytes


def test_granite_tiny_experts_by_tensor():
    # 40 blocks: attn_norm, ffn_norm, router, 3 expert stacks, 3 shared-MLP tensors = 9; 36 Mamba2 × 8 and
    # 4 attention × 4 mixer tensors; token_embd and output_norm (tied): 2 + 40 × 9 + 288 + 16 = 666
    tensors = {t.name: t for t in tensor_inventory(_shape("granite-4.0-h-tiny"))}
    assert len(tensors) == 666
    assert tensors["blk.5.ffn_up_exps.weight"].shape == (1536, 512, 64)  # [hidden, expert width, experts]
    assert tensors["blk.5.ffn_down_shexp.weight"].shape == (1024, 1536)  # the shared MLP: 2 × 512 wide
    assert tensors["blk.0.ffn_gate_inp.weight"].float32_in_gguf  # the router stays F32



def test_lfm2_moe_dense_layers_then_experts_by_tensor():
    # src/models/lfm2moe.cpp load_arch_tensors: layers 0-1 (num_dense_layers 2) hold the MLP (ffn_gate/up/down),
    # layers 2-23 the router, 3 expert stacks and exp_probs_b.bias; every block attn_norm and ffn_norm.
    # Per block: 2 norms + MLP 3 (2 blocks) or MoE 5 (22 blocks); 18 conv blocks × 3, 6 attention × 6 (q, k, v,
    # o, q/k norms); token_embd, token_embd_norm (tied): 2 + 24 × 2 + 2 × 3 + 22 × 5 + 54 + 36 = 256
    tensors = {t.name: t for t in tensor_inventory(_shape("lfm2-8b-a1b"))}
    assert len(tensors) == 256
    assert tensors["blk.1.ffn_up.weight"].shape == (2048, 7168) and "blk.1.ffn_gate_inp.weight" not in tensors
    assert "blk.2.ffn_up.weight" not in tensors
    assert tensors["blk.2.ffn_up_exps.weight"].shape == (2048, 1792, 32)  # [hidden, expert width, experts]
    assert tensors["blk.2.ffn_down_exps.weight"].shape == (1792, 2048, 32)
    bias = tensors["blk.23.exp_probs_b.bias"]
    assert bias.shape == (32,) and bias.float32_in_gguf  # feed_forward.expert_bias, one per expert
    assert tensors["blk.2.ffn_gate_inp.weight"].float32_in_gguf and tensors["blk.2.attn_q_norm.weight"].shape == (64,)
    assert tensors["blk.0.shortconv.conv.weight"].shape == (3, 2048) and "token_embd_norm.weight" in tensors


def test_lfm2_moe_params_total_and_active():
    # 18 conv × (3·2048² + 3·2048 + 2048²) + 6 attention × (2·2048² + 2·2048·512 + 2·64) + 2 dense × 3·2048·7168
    # + 22 × (2048·32 router + 32 × 3·2048·1792 experts + 32 bias) + 24 × 2·2048 norms + 65,536·2048 + 2048
    conv, attn = 3 * 2048**2 + 3 * 2048 + 2048**2, 2 * 2048**2 + 2 * 2048 * 512 + 2 * 64
    expert = 3 * 2048 * 1792
    total = (18 * conv + 6 * attn + 2 * 3 * 2048 * 7168 + 22 * (2048 * 32 + 32 * expert + 32) + 24 * 2 * 2048
             + 65_536 * 2048 + 2048)
    model = Catalog().model("lfm2-moe").profile
    assert model.params == total == 8_339_930_560
    assert model.params_active == total - 22 * 28 * expert == 1_557_740_992  # 4 of 32 experts run
