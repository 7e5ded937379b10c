"""Mixtral's GGUF priced tensor by tensor: llama.cpp build 11434 writes it as arch ``llama`` with a router and
3-D expert stacks on every layer (conversion/llama.py ``LlamaModel.modify_tensors``; src/models/llama.cpp
``load_arch_tensors``, the ``n_expert > 0`` branch).

The per-tensor comparison with the real quantizer (19 types, ``tests/data/llamacpp/quant/mixtral-8x7b.json.gz``)
is ``test_weight_formats.test_matches_llama_quantize_exactly``.
"""

from __future__ import annotations

from kvplan.engine.tensors import n_params, tensor_inventory
from kvplan.importers.hf import profile_from_hf_file
from kvplan.plan.weights import model_shape
from tests.conftest import DATA

FIXTURE = DATA / "hf_configs_other" / "mixtral-8x7b.json"


def _model():
    return profile_from_hf_file(FIXTURE).model


def test_inventory_sums_to_the_params_derived_from_the_config():
    model = _model()
    tensors = tensor_inventory(model_shape(model))
    # token_embd + output 2·32,000·4,096 = 262,144,000, output_norm 4,096; per layer attn_q/attn_output
    # 2·4,096·4,096 = 33,554,432 + attn_k/attn_v 2·4,096·1,024 = 8,388,608, attn_norm + ffn_norm 2·4,096 = 8,192,
    # ffn_gate_inp 4,096·8 = 32,768, ffn_{gate,up,down}_exps 3·4,096·14,336·8 = 1,409,286,144 → 1,451,270,144;
    # ·32 = 46,440,644,608
    assert n_params(tensors) == 262_144_000 + 4_096 + 32 * 1_451_270_144 == 46_702_792_704 == model.params


def test_active_params_are_the_inventory_less_the_unused_experts():
    model = _model()
    tensors = tensor_inventory(model_shape(model))
    experts = sum(t.n_values for t in tensors if t.kind == "experts")
    assert experts == 32 * 3 * 4096 * 14336 * 8 == 45_097_156_608
    # a token runs 2 of the 8 experts: total − 6/8 of the stacks = 46,702,792,704 − 33,822,867,456
    assert n_params(tensors) - experts * 6 // 8 == 12_879_925_248 == model.params_active


def test_layer_tensors_are_llamas_with_the_moe_branch():
    layer = {t.name: t.shape for t in tensor_inventory(model_shape(_model())) if t.layer == 0}
    assert layer == {
        "blk.0.attn_norm.weight": (4096,), "blk.0.attn_q.weight": (4096, 4096),
        "blk.0.attn_k.weight": (4096, 1024), "blk.0.attn_v.weight": (4096, 1024),
        "blk.0.attn_output.weight": (4096, 4096), "blk.0.ffn_norm.weight": (4096,),
        "blk.0.ffn_gate_inp.weight": (4096, 8),
        "blk.0.ffn_gate_exps.weight": (4096, 14336, 8), "blk.0.ffn_up_exps.weight": (4096, 14336, 8),
        "blk.0.ffn_down_exps.weight": (14336, 4096, 8)}
    # 3 global (token_embd, output_norm, output; no rope_freqs: no llama3 rope scaling) + 32 · 10
    assert len(tensor_inventory(model_shape(_model()))) == 3 + 32 * 10 == 323
