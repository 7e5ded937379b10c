"""`kvplan import gguf`: small GGUF files written here with gguf's own writer (metadata and a tiny tensor)."""

from __future__ import annotations

import sys

import pytest

from kvplan.errors import ProfileError
from kvplan.caches.ideal import cache_layout

gguf = pytest.importorskip("gguf")
np = pytest.importorskip("numpy")

from kvplan.importers.gguf import profile_from_gguf_file  # noqa: E402


HIDDEN = 512  # embedding_length of every file written here


def attn_output_elements(layers=4, heads=8, key_length=64, value_length=None) -> int:
    """The elements of the output projections a shape holds at least: layers × heads × value length × hidden
    (kvplan refuses a parameter count below them, kvplan.profiles.plausible); 4 × 8 × 64 × 512 = 1,048,576."""
    return layers * heads * (value_length or key_length or HIDDEN // heads) * HIDDEN


def write_gguf(path, arch: str, *, layers=4, heads=8, kv_heads=2, key_length=64, value_length=None, window=None,
               pattern=None, tensors=None, extra=None, name="Tiny Test"):
    """A GGUF whose tensors are ``tensors`` plus one F16 attention output tensor of
    :func:`attn_output_elements` (the fewest parameters the shape can have)."""
    w = gguf.GGUFWriter(str(path), arch)
    w.add_name(name)
    w.add_block_count(layers)
    w.add_head_count(heads)
    w.add_head_count_kv(kv_heads)
    if key_length:
        w.add_key_length(key_length)
    if value_length:
        w.add_value_length(value_length)
    w.add_embedding_length(512)
    w.add_feed_forward_length(1024)
    w.add_context_length(8192)
    w.add_vocab_size(1000)
    if window:
        w.add_sliding_window(window)
    if pattern is not None:
        w.add_sliding_window_pattern(pattern)
    for key, value in (extra or {}).items():
        w.add_uint32(key.format(arch=arch), value)
    padding = attn_output_elements(layers, heads, key_length, value_length) // HIDDEN
    for tname, shape, dtype in [*(tensors or [("token_embd.weight", (16, 8), np.float16)]),
                                ("blk.0.attn_output.weight", (padding, HIDDEN), np.float16)]:
        w.add_tensor(tname, np.zeros(shape, dtype=dtype))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def test_plain_model(tmp_path):
    model = profile_from_gguf_file(write_gguf(tmp_path / "m.gguf", "llama")).model
    assert model.name == "tiny-test" and model.architecture == "llama"
    assert (model.layers, model.attention_heads, model.kv_heads, model.head_dim) == (4, 8, 2, 64)
    assert (model.hidden_size, model.intermediate_size, model.vocab_size, model.max_context) == (512, 1024, 1000, 8192)
    assert model.sliding_window is None
    # 4 layers × 2 (K, V) × 2 KV heads × 64 × 2 bytes = 2,048 bytes per token
    assert cache_layout(model).bytes_per_token == 4 * 2 * 2 * 64 * 2 == 2048


def test_params_and_weights_come_from_the_tensor_shapes(tmp_path):
    tensors = [("token_embd.weight", (16, 8), np.float16), ("output.weight", (16, 8), np.float32)]
    model = profile_from_gguf_file(write_gguf(tmp_path / "m.gguf", "llama", tensors=tensors)).model
    pad = attn_output_elements()  # 1,048,576 F16 elements of blk.0.attn_output.weight
    assert model.params == 128 + 128 + pad == 1_048_832  # 16 × 8 elements each, and the output projection
    assert model.weights == 128 * 2 + 128 * 4 + pad * 2 == 2_097_920  # f16 + f32 + f16 bytes
    assert model.weight_bits == round(2_097_920 * 8 / 1_048_832, 3) == 16.002
    assert model.tie_embeddings is False  # an output.weight tensor exists


def test_no_output_tensor_means_tied(tmp_path):
    assert profile_from_gguf_file(write_gguf(tmp_path / "m.gguf", "llama")).model.tie_embeddings is True


def test_per_layer_kv_head_counts(tmp_path):
    model = profile_from_gguf_file(write_gguf(tmp_path / "m.gguf", "llama", kv_heads=[2, 4, 2, 8])).model
    assert model.kv_heads == [2, 4, 2, 8]
    # Σ layers 2 × n_kv × 64 × 2 bytes = 256 × (2 + 4 + 2 + 8) = 4,096
    assert cache_layout(model).bytes_per_token == 256 * (2 + 4 + 2 + 8) == 4096


def test_equal_per_layer_counts_collapse_to_one_number(tmp_path):
    assert profile_from_gguf_file(write_gguf(tmp_path / "m.gguf", "llama", kv_heads=[2] * 4)).model.kv_heads == 2


def test_window_pattern_period_from_the_file(tmp_path):
    path = write_gguf(tmp_path / "m.gguf", "gemma3", layers=12, window=512, pattern=6)
    model = profile_from_gguf_file(path).model
    assert (model.sliding_window, model.sliding_window_pattern) == (512, "5:1")
    # global layers 5 and 11; 10 local layers keep 512 tokens; 2 × 2 × 64 × 2 = 512 bytes per token per layer
    assert cache_layout(model).kv_bytes(4096) == 2 * 512 * 4096 + 10 * 512 * 512


def test_window_pattern_per_layer_booleans(tmp_path):
    path = write_gguf(tmp_path / "m.gguf", "llama", layers=4, window=256, pattern=[True, False, True, True])
    model = profile_from_gguf_file(path).model
    assert (model.sliding_window, model.sliding_window_pattern) == (256, [0, 2, 3])


def test_window_without_pattern_uses_the_architecture_rule(tmp_path):
    gemma2 = profile_from_gguf_file(write_gguf(tmp_path / "g2.gguf", "gemma2", window=4096)).model
    assert gemma2.sliding_window_pattern == "alternating"
    gemma3 = profile_from_gguf_file(write_gguf(tmp_path / "g3.gguf", "gemma3", layers=12, window=1024)).model
    assert gemma3.sliding_window_pattern == "5:1"
    mistral = profile_from_gguf_file(write_gguf(tmp_path / "m.gguf", "llama", window=4096)).model
    assert mistral.sliding_window_pattern == "all"
    # gpt-oss's GGUF names no pattern: llama.cpp's loader sets set_swa_pattern(2), the even layers
    gpt_oss = profile_from_gguf_file(write_gguf(tmp_path / "o.gguf", "gpt-oss", window=128)).model
    assert (gpt_oss.architecture, gpt_oss.sliding_window, gpt_oss.sliding_window_pattern) == \
        ("gpt-oss", 128, "alternating")


def test_mla(tmp_path):
    extra = {"{arch}.attention.kv_lora_rank": 512, "{arch}.rope.dimension_count": 64,
             "{arch}.attention.key_length_mla": 192, "{arch}.attention.value_length_mla": 128}
    path = write_gguf(tmp_path / "m.gguf", "deepseek2", heads=16, kv_heads=16, key_length=576, value_length=512,
                      extra=extra)
    model = profile_from_gguf_file(path).model
    assert (model.mla.kv_lora_rank, model.mla.qk_rope_head_dim) == (512, 64)
    assert (model.head_dim, model.v_dim) == (192, 128)
    # MLA caches one latent row: 4 layers × (512 + 64) × 2 bytes = 4,608 bytes per token
    assert cache_layout(model).bytes_per_token == 4 * (512 + 64) * 2 == 4608


def test_head_dim_falls_back_to_width_over_heads(tmp_path):
    model = profile_from_gguf_file(write_gguf(tmp_path / "m.gguf", "llama", key_length=None)).model
    assert model.head_dim == 512 // 8 == 64


def test_not_a_gguf_file(tmp_path):
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"NOTGGUF" * 10)
    with pytest.raises(ProfileError, match="not a readable GGUF file"):
        profile_from_gguf_file(bad)
    with pytest.raises(ProfileError, match="no such file"):
        profile_from_gguf_file(tmp_path / "missing.gguf")


def test_import_needs_no_gguf_package(tmp_path, monkeypatch):
    # kvplan's own header parser reads the file (as --model x.gguf does): the optional package is not needed
    path = write_gguf(tmp_path / "m.gguf", "llama")
    monkeypatch.setitem(sys.modules, "gguf", None)  # `import gguf` now raises ImportError
    assert profile_from_gguf_file(path).model.layers == 4


def _moe_tensors(experts=8, hidden=8, ff=4, layers=2):
    """Per layer: gate/up/down routed-expert tensors (experts outermost), a router and a shared expert."""
    tensors = [("token_embd.weight", (16, hidden), np.float16)]
    for i in range(layers):
        tensors += [(f"blk.{i}.ffn_gate_exps.weight", (experts, ff, hidden), np.float16),
                    (f"blk.{i}.ffn_up_exps.weight", (experts, ff, hidden), np.float16),
                    (f"blk.{i}.ffn_down_exps.weight", (experts, hidden, ff), np.float16),
                    (f"blk.{i}.ffn_gate_inp.weight", (experts, hidden), np.float32),
                    (f"blk.{i}.ffn_gate_shexp.weight", (ff, hidden), np.float16)]
    return tensors


MOE_KEYS = {"{arch}.expert_count": 8, "{arch}.expert_used_count": 2}


def test_moe_params_active_from_the_expert_tensors(tmp_path):
    path = write_gguf(tmp_path / "m.gguf", "qwen2moe", tensors=_moe_tensors(), extra=MOE_KEYS)
    model = profile_from_gguf_file(path).model
    # per layer: 3 routed tensors × 8 × 4 × 8 = 768, router 8 × 8 = 64, shared expert 4 × 8 = 32 → 864;
    # params = embedding 16 × 8 = 128 + 2 layers × 864 = 1,856, + the output projection 4 × 8 × 64 × 512 = 1,048,576
    pad = attn_output_elements()
    assert model.params == 128 + 2 * (768 + 64 + 32) + pad == 1_050_432
    # one routed expert: 768 / 8 = 96 per layer, 192 over 2 layers; 8 − 2 = 6 idle experts:
    # active = 1,050,432 − 6 × 192 = 1,049,280 (= 128 + 2 × (2 × 96 + 64 + 32) + pad)
    assert model.params_active == 1_050_432 - 6 * 192 == 128 + 2 * (2 * 96 + 64 + 32) + pad == 1_049_280
    assert "expert_used_count 2 of qwen2moe.expert_count 8" in model.sources["params"]
    assert "1,050,432 − 1,152 = 1,049,280" in model.sources["params"]


def test_dense_file_has_no_params_active(tmp_path):
    assert profile_from_gguf_file(write_gguf(tmp_path / "m.gguf", "llama")).model.params_active is None
    # expert tensors without expert_count: the file does not say it is a MoE
    path = write_gguf(tmp_path / "e.gguf", "llama", tensors=_moe_tensors())
    assert profile_from_gguf_file(path).model.params_active is None


@pytest.mark.parametrize("extra, tensors, note", [
    ({"{arch}.expert_count": 8}, _moe_tensors(), "expert_used_count is None: params_active not derived"),
    (MOE_KEYS, _moe_tensors(experts=4), "has no outermost dimension of 8 experts"),
    (MOE_KEYS, [("token_embd.weight", (16, 8), np.float16)], "no routed-expert tensors"),
])
def test_moe_without_usable_expert_figures_says_so(tmp_path, extra, tensors, note):
    imported = profile_from_gguf_file(write_gguf(tmp_path / "m.gguf", "qwen2moe", tensors=tensors, extra=extra))
    assert imported.model.params_active is None
    assert any(note in n for n in imported.notes), imported.notes


def test_moe_with_params_given_leaves_active_to_the_user(tmp_path):
    path = write_gguf(tmp_path / "m.gguf", "qwen2moe", tensors=_moe_tensors(), extra=MOE_KEYS)
    imported = profile_from_gguf_file(path, params=10_000_000)
    assert imported.model.params == 10_000_000 and imported.model.params_active is None
    assert any("derived only when params is" in n for n in imported.notes)
