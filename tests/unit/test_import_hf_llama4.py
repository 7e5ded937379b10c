"""`kvplan import hf` on Llama 4 configs: chunked attention and the MoE with its shared expert (hf_llama4)."""

from __future__ import annotations

import json

import pytest

from kvplan.errors import ProfileError
from kvplan.importers.hf import profile_from_hf_config
from tests.conftest import DATA

SCOUT = json.loads((DATA / "hf_configs" / "llama-4-scout-17b-16e.json").read_text())
TEXT = SCOUT["text_config"]


def _import(text, wrapper=True):
    config = {**SCOUT, "text_config": text} if wrapper else text
    return profile_from_hf_config(config, name="l4", where="c.json")


def test_scout_through_its_multimodal_wrapper():
    imported = _import(TEXT)
    m = imported.model
    # no_rope_layers [1,1,1,0] × 12: 36 chunked layers, layers 3, 7, …, 47 global
    assert (m.attention_chunk_size, m.sliding_window_pattern, m.schedule.chunked_layers) == (8192, "3:1", 36)
    assert (m.experts, m.experts_per_token, m.expert_intermediate_size, m.shared_experts) == (16, 1, 8192, 1)
    assert m.intermediate_size == 16384  # intermediate_size_mlp, the dense MLP width
    assert any("vision_config" in str(n) for n in imported.notes)  # the tower is not counted, and that is said


def test_layer_types_win_and_the_interval_is_the_fallback():
    # layer_types as Llama4TextConfig writes them: the same 36 chunked layers
    types = ["chunked_attention" if (i + 1) % 4 else "full_attention" for i in range(48)]
    text = {k: v for k, v in TEXT.items() if k != "no_rope_layers"}
    assert _import({**text, "layer_types": types}, wrapper=False).model.schedule.chunked_layers == 36
    # neither: no_rope_layer_interval 2 → every other layer chunked (24 of 48)
    assert _import({**text, "no_rope_layer_interval": 2}).model.schedule.chunked_layers == 24


def test_interleaved_moe_layers_are_refused():
    # Maverick's interleave_moe_layer_step 2 puts a dense MLP between MoE layers: not a layout the profile holds
    text = {**TEXT, "interleave_moe_layer_step": 2, "moe_layers": None}
    with pytest.raises(ProfileError, match="experts on layers 1, 3, 5"):
        _import(text)


def test_a_window_and_a_chunk_are_not_both_given():
    from kvplan.profiles.spec import Model

    with pytest.raises(ValueError, match="give sliding_window .* or attention_chunk_size"):
        Model(name="m", params=10**10, layers=4, attention_heads=8, kv_heads=2, head_dim=128, sliding_window=512,
              attention_chunk_size=8192)
