"""`kvplan import hf`: each family's config.json gives the cache of its shipped profile."""

from __future__ import annotations

import json

import pytest

from kvplan.profiles.catalog import Catalog
from kvplan.errors import ProfileError
from kvplan.importers.common import window_pattern
from kvplan.importers.hf import profile_from_hf_config, profile_from_hf_file
from kvplan.caches.ideal import cache_layout
from tests.conftest import DATA

CONFIGS = sorted((DATA / "hf_configs").glob("*.json"))
assert len(CONFIGS) >= 20, "the config.json fixtures are missing: these tests would check nothing"
CTXS = (1, 512, 4096, 8192, 32768)


def _config(name: str) -> dict:
    return json.loads((DATA / "hf_configs" / f"{name}.json").read_text())


@pytest.mark.parametrize("path", CONFIGS, ids=[p.stem for p in CONFIGS])
def test_imported_cache_equals_the_shipped_profile(path):
    imported = profile_from_hf_file(path).model
    shipped = Catalog().model(path.stem).profile
    a, b = cache_layout(imported), cache_layout(shipped)
    assert a.bytes_per_token == b.bytes_per_token
    assert [a.kv_bytes(ctx) for ctx in CTXS] == [b.kv_bytes(ctx) for ctx in CTXS]


@pytest.mark.parametrize("path", CONFIGS, ids=[p.stem for p in CONFIGS])
def test_imported_shape_equals_the_shipped_profile(path):
    imported = profile_from_hf_file(path).model
    shipped = Catalog().model(path.stem).profile
    fields = ("layers", "attention_heads", "kv_heads", "head_dim", "v_dim", "hidden_size", "intermediate_size",
              "vocab_size", "tie_embeddings", "max_context", "sliding_window", "sliding_window_pattern", "mla")
    assert {f: getattr(imported, f) for f in fields} == {f: getattr(shipped, f) for f in fields}


def test_derived_params_of_llama_2_7b():
    model = profile_from_hf_config(_config("llama-2-7b"), name="x").model
    # embeddings and untied lm_head 2 × 32,000 × 4,096 = 262,144,000; per layer 4 × 4,096² = 67,108,864 (q k v o)
    # + MLP 3 × 4,096 × 11,008 = 135,266,304 + norms 2 × 4,096 → 202,383,360 × 32 = 6,476,267,520;
    # final norm 4,096
    assert model.params == 262_144_000 + 32 * (67_108_864 + 135_266_304 + 8_192) + 4_096 == 6_738_415_616


def test_derived_params_of_qwen2_has_qkv_bias_and_tied_embeddings():
    model = profile_from_hf_config(_config("qwen2.5-0.5b"), name="x").model
    # embedding 151,936 × 896 = 136,134,656 (tied); per layer q/o 896² each, k/v 896 × 128 each = 1,835,008,
    # q/k/v bias 896 + 128 + 128 = 1,152, MLP 3 × 896 × 4,864 = 13,074,432, norms 1,792 → 14,912,384 × 24
    assert model.params == 136_134_656 + 24 * 14_912_384 + 896 == 494_032_768


def test_derived_params_of_deepseek_v2_lite_counts_every_expert():
    model = profile_from_hf_config(_config("deepseek-v2-lite"), name="x").model
    # 2 × 209,715,200 (untied) + 27 × (13,763,072 MLA + 4,096 norms) + 67,239,936 (dense layer 0)
    # + 26 × ((64 + 2) × 3 × 2,048 × 1,408 + 64 × 2,048) + 2,048
    assert model.params == 2 * 209_715_200 + 27 * 13_767_168 + 67_239_936 + 26 * 571_080_704 + 2_048
    assert model.params == 15_706_484_224


def test_params_option_wins():
    assert profile_from_hf_config(_config("llama-2-7b"), name="x", params=6_740_000_000).model.params == 6_740_000_000


def test_qwen2_window_switched_off_does_not_cap_the_cache():
    config = _config("qwen2.5-0.5b")
    assert config["use_sliding_window"] is False and config["sliding_window"] == 32768
    model = profile_from_hf_config(config, name="x").model
    assert model.sliding_window is None
    # switched on: the layers from max_window_layers (20) up to the last (23) use it
    on = profile_from_hf_config({**config, "use_sliding_window": True, "sliding_window": 4096,
                                 "max_window_layers": 20}, name="x").model
    assert (on.sliding_window, on.sliding_window_pattern) == (4096, [20, 21, 22, 23])


def test_head_dim_from_config_else_hidden_over_heads():
    assert profile_from_hf_config(_config("qwen3-0.6b"), name="x").model.head_dim == 128  # ≠ 1024 / 16 = 64
    assert profile_from_hf_config(_config("llama-2-7b"), name="x").model.head_dim == 4096 // 32 == 128


def test_gemma2_alternates_and_gemma3_is_5_to_1():
    assert profile_from_hf_config(_config("gemma-2-2b"), name="x").model.sliding_window_pattern == "alternating"
    gemma3 = profile_from_hf_config(_config("gemma-3-1b"), name="x").model
    assert (gemma3.sliding_window, gemma3.sliding_window_pattern) == (512, "5:1")


def test_gemma3_nested_text_config_takes_the_class_defaults():
    model = profile_from_hf_config(_config("gemma-3-4b"), name="x").model
    # the 4B text_config names layers, widths and window; heads, head_dim, vocab come from Gemma3TextConfig
    assert (model.layers, model.attention_heads, model.kv_heads, model.head_dim) == (34, 8, 4, 256)
    assert (model.vocab_size, model.max_context, model.sliding_window) == (262_208, 131_072, 1024)


def test_layer_types_give_the_pattern():
    config = {**_config("gemma-3-1b"), "sliding_window_pattern": None,
              "layer_types": ["full_attention" if i in (0, 13) else "sliding_attention" for i in range(26)]}
    model = profile_from_hf_config(config, name="x").model
    assert model.sliding_window_pattern == [i for i in range(26) if i not in (0, 13)]


def test_window_at_least_the_trained_context_is_left_out():
    model = profile_from_hf_config(_config("phi-3.5-mini"), name="x").model  # 262,144-token window, 131,072 context
    assert model.sliding_window is None


def test_window_pattern_compression():
    assert window_pattern([], 6) is None
    assert window_pattern(range(6), 6) == "all"
    assert window_pattern([0, 2, 4], 6) == "alternating"
    assert window_pattern([0, 1, 2, 3, 4, 6], 7) == "5:1"
    assert window_pattern([1, 3], 6) == [1, 3]


def test_bad_config_is_a_profile_error(tmp_path):
    bad = tmp_path / "config.json"
    bad.write_text("{not json")
    with pytest.raises(ProfileError, match="not valid JSON"):
        profile_from_hf_file(bad)
    with pytest.raises(ProfileError, match="missing num_hidden_layers, num_attention_heads, hidden_size"):
        profile_from_hf_config({"model_type": "llama"}, name="x")


def test_name_from_name_or_path_or_folder(tmp_path):
    folder = tmp_path / "My-Model_7B"
    folder.mkdir()
    (folder / "tokenizer_config.json").write_text("{}")  # a model's folder, not a lone config (hf.profile_name)
    (folder / "config.json").write_text(json.dumps({k: v for k, v in _config("tinyllama-1.1b").items()
                                                    if k != "_name_or_path"}))
    assert profile_from_hf_file(folder / "config.json").name == "my-model_7b"
    (folder / "config.json").write_text(json.dumps({**_config("tinyllama-1.1b"), "_name_or_path": "Org/Tiny.Llama"}))
    assert profile_from_hf_file(folder / "config.json").name == "tiny.llama"
