"""The model profile's encoder mapping: each kind takes its own fields; imported from configs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from kvplan.importers.hf import profile_from_hf_config
from kvplan.profiles.spec import EncoderSpec

BASE = dict(kind="gemma3", hidden_size=1152, intermediate_size=4304, layers=27, heads=16, patch_size=14,
            image_size=896, projection_dim=2560, tokens_per_image=256)
CONFIGS = Path(__file__).resolve().parents[1] / "data" / "hf_configs_vision"


def test_a_kind_needs_its_fields_and_refuses_others():
    assert EncoderSpec(**BASE).weight_type == "f16"
    with pytest.raises(ValidationError, match="a gemma3 encoder needs tokens_per_image"):
        EncoderSpec(**{**BASE, "tokens_per_image": None})
    with pytest.raises(ValidationError, match="merge do not describe a gemma3 encoder"):
        EncoderSpec(**{**BASE, "merge": 2})
    with pytest.raises(ValidationError, match="heads .* must divide hidden_size"):
        EncoderSpec(**{**BASE, "heads": 7})
    with pytest.raises(ValidationError):
        EncoderSpec(**{**BASE, "kind": "llava"})


def test_import_hf_writes_the_encoder_of_a_multimodal_config():
    config = json.loads((CONFIGS / "qwen2.5-vl-3b.json").read_text())
    model = profile_from_hf_config(config, name="qwen2.5-vl-3b").model
    e = model.encoder
    assert (e.kind, e.layers, e.hidden_size, e.heads, e.window_pattern, e.merge) == ("qwen2.5vl", 32, 1280, 16, 8, 2)
    assert (e.projection_dim, e.min_pixels, e.max_pixels) == (2048, 3136, 12845056) and e.weight_type == "f16"


def test_a_text_model_has_no_encoder():
    config = json.loads((Path(__file__).resolve().parents[1] / "data" / "hf_configs" / "qwen2.5-3b.json").read_text())
    assert profile_from_hf_config(config, name="qwen2.5-3b").model.encoder is None
