"""The model profiles added for current on-device models (kvplan issue #23 point 5): their cache, by hand.

Each figure below is derived from the model's config.json (tests/data/hf_configs/<name>.json) with the
arithmetic written beside it, then read back through `kvplan check -f json` (the ideal cache model: K/V at
f16, a state layer's conv and recurrent state at 2 B) and, for the hybrids, through llama.cpp's cache model
(its recurrent cell is f32 whatever the cache type: docs/concepts.md#state-layers).
"""

from __future__ import annotations

import pytest

from kvplan.caches.llamacpp import llamacpp_cache
from kvplan.engine.formats import format_from_name
from kvplan.errors import ProfileError
from kvplan.importers.hf import profile_from_hf_file
from kvplan.profiles.catalog import Catalog
from kvplan.profiles.runtime import LlamaCppSpec
from tests.conftest import DATA

CTX = 8192

# name → K/V bytes per token at f16 (attention layers only)
KV_BYTES_PER_TOKEN = {
    # 48 layers · 2 (K,V) · 4 KV heads · 128 · 2 B = 98,304 B/token
    "qwen3-30b-a3b": 48 * 2 * 4 * 128 * 2,
    # 36 layers · 2 · 4 KV heads · 128 · 2 B = 73,728 B/token (the 9 NoPE layers cache K and V like the others)
    "smollm3-3b": 36 * 2 * 4 * 128 * 2,
    # 32 layers · 2 · 8 KV heads · 128 · 2 B = 131,072 B/token (the 262,144 window exceeds the context: none)
    "phi-4-mini": 32 * 2 * 8 * 128 * 2,
    # 6 attention layers (3, 7, …, 23) · 2 · 2 KV heads · 256 · 2 B = 12,288 B/token
    "qwen3.5-2b": 6 * 2 * 2 * 256 * 2,
    # 4 attention layers (14, 21, 30, 39) · 2 · 8 KV heads · 128 · 2 B = 16,384 B/token
    "nemotron-nano-9b-v2": 4 * 2 * 8 * 128 * 2,
    # 4 attention layers (5, 15, 25, 35) · 2 · 4 KV heads · 128 · 2 B = 8,192 B/token
    "granite-4.0-h-1b": 4 * 2 * 4 * 128 * 2,
}
assert KV_BYTES_PER_TOKEN["qwen3-30b-a3b"] == 98_304 and KV_BYTES_PER_TOKEN["smollm3-3b"] == 73_728
assert KV_BYTES_PER_TOKEN["phi-4-mini"] == 131_072 and KV_BYTES_PER_TOKEN["qwen3.5-2b"] == 12_288
assert KV_BYTES_PER_TOKEN["nemotron-nano-9b-v2"] == 16_384 and KV_BYTES_PER_TOKEN["granite-4.0-h-1b"] == 8_192

# name → (state layers, conv channels, conv columns = kernel − 1, recurrent values) of one sequence
STATE_SHAPE = {
    # Gated DeltaNet: conv channels 2 · 16 key heads · 128 + 16 value heads · 128 = 6,144; kernel 4 → 3 columns;
    # recurrent 16 value heads · 128 · 128 = 262,144 values; 18 linear_attention layers
    "qwen3.5-2b": (18, 2 * 16 * 128 + 16 * 128, 4 - 1, 16 * 128 * 128),
    # Mamba2: conv channels 128 heads · 80 + 2 · 8 groups · 128 = 12,288; kernel 4 → 3 columns;
    # recurrent 128 · 80 · 128 = 1,310,720 values; 27 M layers (the 25 MLP-only layers keep nothing)
    "nemotron-nano-9b-v2": (27, 128 * 80 + 2 * 8 * 128, 4 - 1, 128 * 80 * 128),
    # Mamba2: conv channels 48 · 64 + 2 · 1 · 128 = 3,328; 3 columns; recurrent 48 · 64 · 128 = 393,216; 36 layers
    "granite-4.0-h-1b": (36, 48 * 64 + 2 * 1 * 128, 4 - 1, 48 * 64 * 128),
}


def _state_bytes(name: str, element_bytes: int) -> int:
    layers, channels, columns, recurrent = STATE_SHAPE[name]
    return layers * (channels * columns + recurrent) * element_bytes


def test_the_state_figures_by_hand():
    # qwen3.5-2b at llama.cpp's f32: 18 × (6,144 × 3 × 4 = 73,728 + 262,144 × 4 = 1,048,576) = 20,201,472 B
    assert _state_bytes("qwen3.5-2b", 4) == 18 * (73_728 + 1_048_576) == 20_201_472
    # nemotron at f32: 27 × (12,288 × 3 × 4 = 147,456 + 1,310,720 × 4 = 5,242,880) = 145,539,072 B
    assert _state_bytes("nemotron-nano-9b-v2", 4) == 27 * (147_456 + 5_242_880) == 145_539_072
    # granite at f32: 36 × (3,328 × 3 × 4 = 39,936 + 393,216 × 4 = 1,572,864) = 58,060,800 B
    assert _state_bytes("granite-4.0-h-1b", 4) == 36 * (39_936 + 1_572_864) == 58_060_800


@pytest.mark.parametrize("name", sorted(KV_BYTES_PER_TOKEN))
def test_check_prices_the_hand_derived_cache(run_json, name):
    code, out = run_json("check", "--model", name, "--device", "pixel8", "--ctx", str(CTX))
    assert code in (0, 1)  # fits or not: the cache is the same
    assert out["kv_bytes_per_token"] == KV_BYTES_PER_TOKEN[name]
    if name in STATE_SHAPE:
        state = _state_bytes(name, 2)  # the ideal cache keeps the state at 2 B
        assert out["memory"]["state_bytes"] == state
    else:
        state = 0
        assert "state_bytes" not in out["memory"]  # a model without state layers reports none
    assert out["memory"]["kv_bytes"] == KV_BYTES_PER_TOKEN[name] * CTX + state


@pytest.mark.parametrize("name", sorted(STATE_SHAPE))
@pytest.mark.parametrize("sequences", [1, 4])
def test_llama_cpp_keeps_one_f32_cell_per_sequence(name, sequences):
    f16 = format_from_name("f16")
    cache = llamacpp_cache(LlamaCppSpec(), Catalog().model(name).profile, f16, f16)
    assert cache.state_bytes(CTX, sequences) == _state_bytes(name, 4) * sequences


@pytest.mark.parametrize("name, active", [
    # every MoE layer runs 8 of its 128 experts: 48 × (attention 18,874,624 + norms 4,096 + 8 × 3 × 2,048 × 768
    # + router 128 × 2,048) + embeddings 2 × 151,936 × 2,048 + final norm 2,048 = 3,353,032,704
    ("qwen3-30b-a3b", 48 * (18_874_624 + 4_096 + 8 * 3 * 2048 * 768 + 128 * 2048) + 2 * 151_936 * 2048 + 2048),
])
def test_params_active_of_the_mixture_of_experts(name, active):
    assert Catalog().model(name).profile.params_active == active == 3_353_032_704


def test_granite_4_h_tiny_imports_its_experts():
    # Granite-4.0-H-Tiny routes 6 of 64 experts (intermediate_size 512) beside a 1,024-wide shared MLP on every
    # layer (GraniteMoeHybridMoE + GraniteMoeHybridSharedMLP): the shared MLP is 2 experts of that width
    m = profile_from_hf_file(DATA / "hf_configs_other" / "granite-4.0-h-tiny.json").model
    assert (m.experts, m.experts_per_token, m.expert_intermediate_size, m.shared_experts, m.dense_layers) == \
        (64, 6, 512, 2, 0)
    h, expert = 1536, 3 * 1536 * 512  # one expert: gate, up, down 3 × 1,536 × 512 = 2,359,296
    mamba = 1536 * (3072 + 3328 + 48) + 3328 * 4 + 3328 + 3 * 48 + 3072 + 3072 * 1536  # 14,642,576
    attention = 1536 * 1536 + 2 * 1536 * 512 + 1536 * 1536  # 6,291,456
    mlp = 66 * expert + 64 * h  # 64 routed + 2 shared-width experts + router = 155,811,840
    total = 100_352 * h + h + 36 * (mamba + mlp + 2 * h) + 4 * (attention + mlp + 2 * h)
    assert m.params == total == 6_939_037_248
    # a token runs 6 routed experts + the shared MLP: 40 layers × (66 − 8) experts fewer
    assert m.params_active == total - 40 * 58 * expert == 1_465_470_528
    built_in = Catalog().model("granite-4.0-h").profile  # the alias people type
    assert (built_in.params, built_in.params_active, built_in.schedule) == (m.params, m.params_active, m.schedule)


def test_lfm2_8b_a1b_imports_its_experts_after_two_dense_layers():
    # Lfm2MoeDecoderLayer: a dense Lfm2MoeMLP (intermediate_size 7168) below num_dense_layers 2, then 32 experts of
    # moe_intermediate_size 1792 (4 per token), no shared expert; the conv layers are every layer but 2, 6, 10, 14,
    # 18, 21 (layer_types)
    m = profile_from_hf_file(DATA / "hf_configs_other" / "lfm2-8b-a1b.json").model
    assert (m.experts, m.experts_per_token, m.expert_intermediate_size, m.shared_experts, m.dense_layers) == \
        (32, 4, 1792, 0, 2)
    built_in = Catalog().model("lfm2-moe").profile  # the alias
    assert m.state.layers == built_in.state.layers and len(built_in.state.layers) == 18
    # transformers' parameters leave out the expert bias (a registered buffer): 22 MoE layers × 32 values fewer
    # than the GGUF tensor inventory the built-in profile counts
    assert built_in.params - m.params == 22 * 32 == 704
    assert built_in.params_active - m.params_active == 704
