"""Gemma 3n (gemma-3n-e2b, gemma-3n-e4b): shared-KV layers, per-layer MLP widths and per-layer embeddings, each
figure derived by hand from the config (tests/data/hf_configs/gemma-3n-e{2,4}b.json)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvplan.caches.ideal import cache_layout
from kvplan.caches.llamacpp import llamacpp_cache
from kvplan.caches.transformers import transformers_cache
from kvplan.engine.formats import format_from_name
from kvplan.engine.schedule import Attention, SharedKV
from kvplan.engine.tensors import n_params, tensor_inventory
from kvplan.errors import FieldError, ProfileError
from kvplan.importers.hf import profile_from_hf_config
from kvplan.plan.basis import weights_of
from kvplan.plan.weights import model_shape
from kvplan.profiles.catalog import Catalog
from kvplan.profiles.runtime import LlamaCppSpec, TransformersSpec
from kvplan.profiles.spec import Model

CONFIGS = Path(__file__).resolve().parents[1] / "data" / "hf_configs"
F16 = format_from_name("f16")
Q8 = format_from_name("q8_0")


def model(name):
    return Catalog().model(name).profile


def config(name):
    return json.loads((CONFIGS / f"{name}.json").read_text())


@pytest.mark.parametrize("name, layers", [("gemma-3n-e2b", 30), ("gemma-3n-e4b", 35)])
def test_schedule_shared_kv_layers_read_the_last_earlier_layer_of_their_type(name, layers):
    # layer_types: full_attention at i % 5 == 4; the last (layers − 20) layers share: sliding ones read layer 18 (the
    # last sliding layer before 20), full ones layer 19 — transformers' kv_shared_layer_index and llama.cpp's
    # n_layer_kv_from_start − (is_swa ? 2 : 1) with n_layer_kv_from_start 20
    s = model(name).schedule
    assert s.layers == layers
    for i in range(20):
        assert s.layer(i) == Attention(2, 256, 256, None if i % 5 == 4 else 512)
    for i in range(20, layers):
        assert s.layer(i) == (SharedKV(19, None) if i % 5 == 4 else SharedKV(18, 512))


def test_ideal_kv_by_hand_and_shared_layers_add_nothing():
    # 20 layers own a cache: 4 full ones, 4 · 2 (K, V) · 2 heads · 256 · 2 B = 8,192 B/token, and 16 sliding ones,
    # 16 · 2,048 = 32,768 B per token of the window (≤ 512). At 32,768 tokens: 268,435,456 + 512 · 32,768 =
    # 285,212,672 B, for E2B and E4B alike (both keep layers 0–19)
    for name in ("gemma-3n-e2b", "gemma-3n-e4b"):
        layout = cache_layout(model(name), F16, F16)
        assert layout.kv_bytes(32768) == 32768 * 8192 + 512 * 32768 == 285_212_672
        assert (layout.global_layers, layout.windowed_layers) == (4, 16)
    # the same 20 layers without the shared tail: the same bytes
    e2b = model("gemma-3n-e2b")
    twenty = e2b.model_copy(update={"layers": 20, "shared_kv_layers": 0, "intermediate_size": 8192})
    assert cache_layout(twenty, F16, F16).kv_bytes(32768) == cache_layout(e2b, F16, F16).kv_bytes(32768)


def test_llamacpp_kv_by_hand():
    # -c 32768 -np 1: the 4 full layers 32,768 cells × 8,192 B = 268,435,456 B; the 16 sliding layers
    # pad(min(32,768, 512 + n_ubatch 512), 256) = 1,024 cells × 32,768 B = 33,554,432 B; 301,989,888 B in all
    cache = llamacpp_cache(LlamaCppSpec(), model("gemma-3n-e2b"), F16, F16)
    assert cache.kv_bytes(32768) == 268_435_456 + 33_554_432 == 301_989_888
    assert [(p["cells"], p["layers"]) for p in cache.sub_caches(32768)] == [(32768, 4), (1024, 16)]
    kinds = [r.kind for r in cache.rules]
    assert "shared_kv" in kinds
    facts = dict(next(r for r in cache.rules if r.kind == "shared_kv").values)
    assert facts == {"layers": 10, "first": 20, "from_start": 20}


def test_llamacpp_refuses_shared_kv_it_would_not_build():
    e2b = model("gemma-3n-e2b")
    # another architecture: llama.cpp reuses caches only for gemma3n (create_memory's reuse callback)
    with pytest.raises(FieldError, match="reuses a layer's cache only for gemma3n"):
        llamacpp_cache(LlamaCppSpec(), e2b.model_copy(update={"architecture": "gemma3"}), F16, F16)
    # a shared tail that does not start at 20: llama.cpp's gemma3n loader fixes n_layer_kv_from_start at 20
    with pytest.raises(FieldError, match="start at layer 25"):
        llamacpp_cache(LlamaCppSpec(), e2b.model_copy(update={"shared_kv_layers": 5}), F16, F16)


def test_transformers_prices_only_the_cached_layers():
    # DynamicCache: 4 DynamicLayer (N tokens) + 16 DynamicSlidingWindowLayer (min(N, 512) after a decode step);
    # bf16 at 1,000 tokens: 4 · 2,048 · 1,000 + 16 · 2,048 · 512 = 8,192,000 + 16,777,216 = 24,969,216 B
    bf16 = format_from_name("bf16")
    cache = transformers_cache(TransformersSpec(), model("gemma-3n-e2b"), bf16, bf16)
    assert (cache.global_layers, cache.windowed_layers) == (4, 16)
    assert cache.kv_bytes(1000) == 8_192_000 + 16_777_216


def test_params_by_hand_and_the_import_agrees():
    # E2B, Gemma3nTextModel: embed_tokens 262,400 · 2,048 = 537,395,200; embed_tokens_per_layer 262,144 · 30 · 256
    # = 2,013,265,920; per_layer_model_projection 2,048 · 7,680 = 15,728,640; its norm 256; AltUp projections
    # 2 · 3 · 2,048² = 25,165,824; final norm 2,048. Per layer: attention 2 · 2,048² + 2 · 2,048 · 512 + 512 =
    # 10,486,272; MLP 3 · 2,048 · 8,192 = 50,331,648; norms 8,192; AltUp 2,048 + 16 + 64 + 8,192 + 2,048 = 12,368;
    # LAuReL 2 · 2,048 · 64 + 2,048 = 264,192; per-layer input 2 · 2,048 · 256 + 2,048 = 1,050,624 → 62,153,296
    glob = 537_395_200 + 2_013_265_920 + 15_728_640 + 256 + 25_165_824 + 2_048
    per_layer = 10_486_272 + 50_331_648 + 8_192 + 12_368 + 264_192 + 1_050_624
    assert per_layer == 62_153_296
    assert glob + 30 * per_layer == 4_456_156_768 == model("gemma-3n-e2b").params
    # E4B: per-layer embeddings 262,144 · 35 · 256 = 2,348,810,240, projection 2,048 · 8,960 = 18,350,080; per layer
    # the MLP is 3 · 2,048 · 16,384 = 100,663,296 → 112,484,944
    glob4 = 537_395_200 + 2_348_810_240 + 18_350_080 + 256 + 25_165_824 + 2_048
    assert glob4 + 35 * (per_layer - 50_331_648 + 100_663_296) == 6_866_696_688 == model("gemma-3n-e4b").params
    for name in ("gemma-3n-e2b", "gemma-3n-e4b"):
        imported = profile_from_hf_config(config(name), name=name).model
        shipped = model(name)
        for field in ("params", "layers", "kv_heads", "head_dim", "hidden_size", "intermediate_size", "vocab_size",
                      "tie_embeddings", "max_context", "sliding_window", "sliding_window_pattern", "shared_kv_layers",
                      "hidden_size_per_layer_input", "vocab_size_per_layer_input", "architecture"):
            assert getattr(imported, field) == getattr(shipped, field), (name, field)
        assert imported.schedule == shipped.schedule


def test_import_names_the_towers_it_does_not_count():
    notes = [str(n) for n in profile_from_hf_config(config("gemma-3n-e2b"), name="g").notes]
    assert any("vision_config, audio_config: not counted" in n for n in notes)


def test_import_refuses_a_per_layer_width_list_of_the_wrong_length():
    c = config("gemma-3n-e2b")
    c["text_config"]["intermediate_size"] = [8192] * 29
    with pytest.raises(ProfileError, match="intermediate_size lists 29 widths for 30 layers"):
        profile_from_hf_config(c, name="g")


def test_weights_read_per_step_leave_out_the_per_layer_table():
    # 4-bit: weights ceil(4,456,156,768 · 4 / 8) = 2,228,078,384 B; the per-layer table 262,144 · 7,680 · 0.5 B =
    # 1,006,632,960 B is read one row a token, so a step streams 1,221,445,424 B (embeddings tied: read as the output)
    weights, read, _ = weights_of(model("gemma-3n-e2b"), None)
    assert (weights, read) == (2_228_078_384, 2_228_078_384 - 1_006_632_960)


def test_tensor_inventory_matches_the_checkpoint_and_the_converter():
    shape = model_shape(model("gemma-3n-e2b"))
    # the checkpoint's tensors: exactly the params
    assert n_params(tensor_inventory(shape, "hf")) == 4_456_156_768
    # the GGUF: the converter pads per_layer_token_embd from 262,144 to 262,400 rows (+ 256 · 7,680 = 1,966,080)
    gguf = tensor_inventory(shape, "gguf")
    assert n_params(gguf) == 4_456_156_768 + 1_966_080 == 4_458_122_848
    names = {t.name for t in gguf}
    assert {"per_layer_token_embd.weight", "altup_proj.weight", "blk.29.laurel_r.weight", "blk.0.inp_gate.weight",
            "blk.0.altup_predict_coef.weight"} <= names and "output.weight" not in names


def _profile(**changes):
    # 11 layers, "4:1": full attention at layers 4 and 9, sliding elsewhere
    base = dict(name="m", params=5 * 10**9, layers=11, attention_heads=8, kv_heads=2, head_dim=256, hidden_size=2048,
                sliding_window=512, sliding_window_pattern="4:1", shared_kv_layers=2)
    return Model(**{**base, **changes})


def test_a_small_shared_tail_reads_the_last_layer_of_each_type():
    # 2 shared: layer 9 (full) reads layer 4, the last full layer before 9; layer 10 (sliding) reads layer 8
    s = _profile().schedule
    assert (s.layer(9), s.layer(10)) == (SharedKV(4, None), SharedKV(8, 512))


def test_profile_refuses_a_shared_layer_without_a_source_of_its_type():
    # 7 shared: layers 4–10; layer 4 is full and none of layers 0–3 is
    with pytest.raises(Exception, match="layer 4 shares the KV of an earlier full-attention layer, but none of "
                       "layers 0–3 is one"):
        _profile(shared_kv_layers=7)
    with pytest.raises(Exception, match="leave no layer"):
        _profile(shared_kv_layers=11)


def test_profile_refuses_half_of_the_per_layer_embedding_fields():
    with pytest.raises(Exception, match="vocab_size_per_layer_input is missing"):
        _profile(hidden_size_per_layer_input=256)


def test_a_per_layer_width_list_needs_one_entry_per_layer():
    with pytest.raises(Exception, match="needs 11 entries"):
        _profile(intermediate_size=[8192] * 10)


def test_import_gguf_reads_the_gemma3n_keys(tmp_path):
    # the keys conversion/gemma.py Gemma3NModel writes (a tiny file: 6 layers, "4:1" as a per-layer pattern, 2 shared)
    gguf = pytest.importorskip("gguf")
    np = pytest.importorskip("numpy")
    from kvplan.importers.gguf import profile_from_gguf_file

    path = tmp_path / "tiny-gemma3n.gguf"
    w = gguf.GGUFWriter(str(path), "gemma3n")
    w.add_name("tiny gemma3n")
    w.add_block_count(6)
    w.add_head_count(4)
    w.add_head_count_kv(2)
    w.add_key_length(64)
    w.add_value_length(64)
    w.add_embedding_length(256)
    w.add_feed_forward_length([512, 512, 1024, 1024, 512, 512])
    w.add_context_length(32768)
    w.add_sliding_window(512)
    w.add_sliding_window_pattern([True, True, True, True, False, True])
    w.add_uint32("gemma3n.attention.shared_kv_layers", 1)
    w.add_uint32("gemma3n.embedding_length_per_layer_input", 8)
    w.add_vocab_size(1000)
    for name, shape in [("token_embd.weight", (1000, 256)), ("per_layer_token_embd.weight", (1000, 6 * 8)),
                        ("blk.0.attn_output.weight", (6 * 4 * 64, 256))]:  # numpy order: rows first
        w.add_tensor(name, np.zeros(shape, dtype=np.float16))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    m = profile_from_gguf_file(path).model
    assert (m.shared_kv_layers, m.hidden_size_per_layer_input, m.vocab_size_per_layer_input) == (1, 8, 1000)
    assert m.intermediate_size == [512, 512, 1024, 1024, 512, 512]  # the MatFormer widths, kept per layer
    assert (m.sliding_window, m.sliding_window_pattern) == (512, "4:1")
    # layer 5 (sliding) shares layer 3's cache (the last sliding layer before it)
    assert m.schedule.layer(5) == SharedKV(3, 512)


def test_llama_quantize_keeps_altup_laurel_and_the_per_layer_projection():
    # llama-quantize --dry-run (build 11434, tests/data/llamacpp/quant/gemma-3n-e2b.json.gz): tensor_allows_quantization
    # skips names with "altup", "laurel" and "per_layer_model_proj" (they stay F16, norms F32); per_layer_token_embd
    # is a token embedding of a tied model, so it is typed as the output: q6_K under q4_0
    import gzip

    doc = json.loads(gzip.decompress((CONFIGS.parent / "llamacpp" / "quant" / "gemma-3n-e2b.json.gz").read_bytes()))
    types = {t["name"]: t["type"].lower() for t in doc["types"]["q4_0"]["tensors"]}
    assert types["per_layer_token_embd.weight"] == "q6_k" and types["token_embd.weight"] == "q6_k"
    assert {types[n] for n in ("altup_proj.weight", "blk.3.laurel_l.weight", "blk.3.altup_router.weight",
                               "per_layer_model_proj.weight")} == {"f16"}
    assert types["blk.3.inp_gate.weight"] == types["blk.3.proj.weight"] == "q4_0"
    from kvplan.engine.quantize import price_gguf

    mine = {t.name: t.dtype.lower() for t in price_gguf(model_shape(model("gemma-3n-e2b")), "q4_0").tensors}
    assert mine == types
