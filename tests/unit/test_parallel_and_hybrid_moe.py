"""Falcon-H1 (a parallel hybrid: attention and Mamba2 side by side in every layer) and Qwen3.5-MoE (a Gated
DeltaNet hybrid whose every layer has a MoE block with a shared expert), imported from their configs
(tests/data/hf_configs/falcon-h1-0.5b.json, qwen3.5-35b-a3b.json): the profile's figures by hand. The totals
are also ``sum(p.numel())`` of the models transformers 5.17.0 builds from these configs on the meta device
(FalconH1ForCausalLM 521,411,104; Qwen3_5MoeForCausalLM, the text model, 34,660,610,688)."""

from __future__ import annotations

import json

import pytest

from kvplan.engine.schedule import Attention, Parallel, State
from kvplan.errors import ProfileError
from kvplan.importers.hf import profile_from_hf_config, profile_from_hf_file
from kvplan.profiles.catalog import Catalog
from tests.conftest import DATA

CONFIGS = DATA / "hf_configs"


def _imported(name):
    return profile_from_hf_file(CONFIGS / f"{name}.json").model


def test_falcon_h1_params_by_hand():
    m = _imported("falcon-h1-0.5b")
    # Mamba2 mixer: in_proj 1,024 × (1,536 + 1,792 + 24) = 3,432,448; conv 1,792 × 4 + bias 1,792 = 8,960;
    # dt_bias, A_log, D 3 × 24 = 72; no gated norm (mamba_rms_norm false); out_proj 1,536 × 1,024 = 1,572,864
    mamba = 3_432_448 + 8_960 + 72 + 1_572_864
    # attention: q 1,024 × 512, k and v 1,024 × 128, o 512 × 1,024
    attention = 524_288 + 2 * 131_072 + 524_288
    mlp, norms = 3 * 1_024 * 2_048, 2 * 1_024
    # untied embeddings 2 × 32,784 × 1,024, final norm 1,024
    assert m.params == 2 * 33_570_816 + 36 * (mamba + attention + mlp + norms) + 1_024 == 521_411_104
    assert m.state.parallel_attention and m.state.layers == list(range(36))


def test_falcon_h1_head_dim_auto_and_a_missing_width():
    config = json.loads((CONFIGS / "falcon-h1-0.5b.json").read_text())
    # "auto": mamba_d_ssm / mamba_n_heads = 1,536 / 24 = 64, as FalconH1Config.__post_init__ derives it
    auto = profile_from_hf_config({**config, "mamba_d_head": "auto"}, name="x").model
    assert auto.schedule.runs == _imported("falcon-h1-0.5b").schedule.runs
    with pytest.raises(ProfileError, match="missing or not a positive whole number: mamba_d_conv"):
        profile_from_hf_config({**config, "mamba_d_conv": 0}, name="x")


def test_falcon_h1_schedule_is_one_run_of_parallel_layers():
    m = _imported("falcon-h1-0.5b")
    assert m.schedule.runs == ((36, Parallel(Attention(2, 64, 64), State("mamba2", 1_792, 4, 196_608))),)


def test_qwen3_5_moe_params_and_active_by_hand():
    m = _imported("qwen3.5-35b-a3b")
    expert = 3 * 2_048 * 512  # 3,145,728
    moe = 257 * expert + 256 * 2_048 + 2_048  # routed + shared experts, router, shared-expert gate: 808,978,432
    active_moe = 9 * expert + 256 * 2_048 + 2_048  # 8 routed + the shared expert: 28,837,888
    gdn = 2_048 * 8_192 + 2_048 * 4_096 + 2 * 2_048 * 32 + 8_192 * 4 + 2 * 32 + 128 + 4_096 * 2_048  # 33,718,464
    gated_attention = 2_048 * 16 * 256 * 2 + 2 * 2_048 * 2 * 256 + 16 * 256 * 2_048 + 2 * 256  # 27,263,488
    rest = 2 * 248_320 * 2_048 + 2_048  # untied embeddings, final norm
    norms = 2 * 2_048
    assert m.params == rest + 30 * (gdn + moe + norms) + 10 * (gated_attention + moe + norms) == 34_660_610_688
    assert m.params_active == m.params - 40 * (moe - active_moe) == 3_454_988_928
    assert (m.experts, m.experts_per_token, m.expert_intermediate_size, m.shared_experts, m.dense_layers) == \
        (256, 8, 512, 1, 0)
    assert m.state.layers == [i for i in range(40) if i % 4 != 3]


@pytest.mark.parametrize("name", ["falcon-h1-0.5b", "qwen3.5-35b-a3b"])
def test_the_shipped_profile_has_the_imported_figures(name):
    imported, shipped = _imported(name), Catalog().model(name).profile
    fields = ("params", "params_active", "layers", "attention_heads", "kv_heads", "head_dim", "hidden_size",
              "vocab_size", "tie_embeddings", "max_context", "experts", "experts_per_token",
              "expert_intermediate_size", "shared_experts", "dense_layers")
    assert {f: getattr(imported, f) for f in fields} == {f: getattr(shipped, f) for f in fields}
    assert imported.state == shipped.state and imported.schedule == shipped.schedule


def test_falcon_h1_prefill_pays_attention_and_the_scan_on_every_layer():
    from kvplan.engine.prefill import schedule_state_flops_per_token

    s = Catalog().model("falcon-h1-0.5b").profile.schedule
    # every layer attends (the T² term counts 36 layers) and scans: 36 × (2 × 1,792 × 4 conv + 4 × 196,608 SSM)
    # = 36 × 800,768 = 28,827,648 FLOP per token
    assert s.attending_layers == 36
    assert schedule_state_flops_per_token(s) == 36 * (2 * 1_792 * 4 + 4 * 196_608) == 28_827_648
