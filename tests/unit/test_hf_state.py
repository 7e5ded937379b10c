"""`kvplan import hf` on the hybrid model types with state layers (lfm2, lfm2_moe, qwen3_5, granitemoehybrid, nemotron_h).

The configs in tests/data/hf_configs_other/synthetic-*.json are written for these tests (they are not copies of
published files): the key names and layouts of transformers 5.17.0's config classes, LFM2 with LFM2-1.2B's
published widths, the others with smaller widths. Each parameter count below is ``sum(p.numel())`` of the model
transformers 5.17.0 builds from the same config on the meta device (AutoModelForCausalLM.from_config), so the
importer's per-layer arithmetic (kvplan.importers.hf_state.hybrid_params) is checked against the real modules.
"""

from __future__ import annotations

import json

import pytest

from kvplan.engine.schedule import Attention, Feedforward, State
from kvplan.importers.hf import profile_from_hf_config
from tests.conftest import DATA

OTHER = DATA / "hf_configs_other"
META_DEVICE_PARAMS = {"lfm2": 1_170_340_608, "qwen3_5_text": 170_232_768, "granitemoehybrid": 333_142_032,
                      "nemotron_h": 57_378_176, "lfm2_moe": 2_458_327_296}


def _model(name):
    return profile_from_hf_config(json.loads((OTHER / f"synthetic-{name}.json").read_text()),
                                  name=name.replace("_", "-")).model


@pytest.mark.parametrize("name", sorted(META_DEVICE_PARAMS))
def test_params_equal_the_modules_transformers_builds(name):
    assert _model(name).params == META_DEVICE_PARAMS[name]


def test_lfm2_state_and_schedule():
    m = _model("lfm2")
    assert m.state.mixer == "short_conv" and m.state.layers == [0, 1, 3, 4, 6, 7, 9, 11, 13, 15]
    assert (m.state.conv_kernel_tokens, m.state.conv_channels) == (3, 2048)
    # LFM2-1.2B's published count (model card: 1,170,340,608), the same as the built-in profile's
    assert m.params == 1_170_340_608


def test_qwen3_5_gated_deltanet():
    m = _model("qwen3_5_text")
    s = m.state
    assert (s.mixer, s.layers, s.conv_kernel_tokens) == ("gated_deltanet", [0, 1, 2, 4, 5, 6], 4)
    layer = m.schedule.layer(0)
    # conv 2 · 16 · 128 + 16 · 128 = 6,144 channels; matrix memory 16 value heads · 128 · 128 = 262,144 values
    assert layer == State("gated_deltanet", 6144, 4, 262_144)
    assert m.schedule.layer(3) == Attention(2, 256, 256)


def test_granite_mamba2():
    m = _model("granitemoehybrid")
    # d_inner 48 · 64 = 3,072 = mamba_expand 2 × hidden 1,536; conv 3,072 + 2 · 1 · 128 = 3,328; SSM 3,072 · 128
    assert m.schedule.layer(0) == State("mamba2", 3328, 4, 393_216)
    assert m.schedule.layer(5) == Attention(4, 128, 128)  # head_dim 1,536 / 12


def test_nemotron_h_pattern_has_mlp_only_layers():
    m = _model("nemotron_h")
    # "M-M*-M-M": Mamba2, MLP, Mamba2, attention, MLP, Mamba2, MLP, Mamba2
    kinds = [type(layer) for layer in m.schedule.layer_kinds()]
    assert kinds == [State, Feedforward, State, Attention, Feedforward, State, Feedforward, State]
    # 32 heads · 64 = 2,048 d_inner; conv 2,048 + 2 · 8 groups · 128 = 4,096; SSM 2,048 · 128 = 262,144
    assert m.schedule.layer(0) == State("mamba2", 4096, 4, 262_144)


def test_a_multimodal_wrapper_prices_its_text_model_and_says_the_vision_tower_is_not_counted():
    text = json.loads((OTHER / "synthetic-qwen3_5_text.json").read_text())
    imported = profile_from_hf_config({"model_type": "qwen3_5", "text_config": text, "vision_config": {"depth": 2}},
                                      name="q")
    assert imported.model.params == META_DEVICE_PARAMS["qwen3_5_text"]
    assert imported.notes == ("vision_config: not counted; kvplan prices the text model (text_config)",)


def test_lfm2_mlp_width_is_the_auto_adjusted_one():
    # block_ff_dim 12,288, auto-adjusted: int(2 · 12,288 / 3) = 8,192, × 1.0, a multiple of 256 → 8,192
    assert _model("lfm2").intermediate_size == 8192


def test_lfm2_moe_dense_layers_then_experts():
    # synthetic-lfm2_moe: 8 layers (attention at 2 and 6), num_dense_layers 2 with a dense MLP of intermediate_size
    # 7,168, then 6 MoE blocks of 32 experts × 3 × 2,048 × 1,792 + a router 32 × 2,048 (expert_bias is a buffer)
    m = _model("lfm2_moe")
    assert (m.experts, m.experts_per_token, m.expert_intermediate_size, m.shared_experts, m.dense_layers) == \
        (32, 4, 1_792, 0, 2)
    expert, router = 3 * 2_048 * 1_792, 32 * 2_048
    # active: each MoE layer runs 4 of its 32 experts
    assert m.params_active == m.params - 6 * 28 * expert == 608_639_232
    assert m.state.layers == [0, 1, 3, 4, 5, 7] and m.schedule.layer(0) == State("short_conv", 2_048, 3, 0)
    assert router == 65_536
