"""Gemma 4 E2B (gemma-4-e2b): per-layer head widths (global_head_dim), shared-KV layers, the double-wide MLP and
per-layer embeddings, each figure derived by hand from the config (tests/data/hf_configs/gemma-4-e2b.json)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvplan.caches.ideal import cache_layout
from kvplan.caches.llamacpp import llamacpp_cache
from kvplan.caches.transformers import transformers_cache
from kvplan.engine.formats import format_from_name
from kvplan.engine.schedule import Attention, SharedKV
from kvplan.errors import ProfileError
from kvplan.importers.hf import profile_from_hf_config
from kvplan.plan.basis import weights_of
from kvplan.profiles.catalog import Catalog
from kvplan.profiles.runtime import LlamaCppSpec, TransformersSpec
from kvplan.profiles.spec import Model

CONFIGS = Path(__file__).resolve().parents[1] / "data" / "hf_configs"
F16 = format_from_name("f16")


def model(name="gemma-4-e2b"):
    return Catalog().model(name).profile


def config():
    return json.loads((CONFIGS / "gemma-4-e2b.json").read_text())


@pytest.mark.parametrize("alias", ["gemma-4-e2b", "gemma4-e2b", "gemma-4", "gemma4"])
def test_aliases(alias):
    assert model(alias).name == "gemma-4-e2b"


def test_schedule_global_layers_have_512_wide_heads_and_the_tail_shares():
    # layer_types: full_attention at i % 5 == 4 (head 512), sliding elsewhere (head 256, window 512); 20 shared:
    # layers 15–34, the sliding ones read layer 13 and the full ones layer 14 (llama.cpp: n_layer_kv_from_start 15
    # − (is_swa ? 2 : 1))
    s = model().schedule
    assert s.layers == 35
    for i in range(15):
        assert s.layer(i) == (Attention(1, 512, 512, None) if i % 5 == 4 else Attention(1, 256, 256, 512))
    for i in range(15, 35):
        assert s.layer(i) == (SharedKV(14, None) if i % 5 == 4 else SharedKV(13, 512))


def test_ideal_kv_by_hand():
    # 3 full layers (4, 9, 14): 3 · 2 (K, V) · 1 head · 512 · 2 B = 6,144 B/token; 12 sliding layers: 12 · 2 · 256
    # · 2 = 12,288 B per token of the window (≤ 512). At 32,768 tokens: 201,326,592 + 6,291,456 = 207,618,048 B
    layout = cache_layout(model(), F16, F16)
    assert layout.kv_bytes(32768) == 32768 * 6144 + 512 * 12288 == 207_618_048
    assert (layout.global_layers, layout.windowed_layers) == (3, 12)
    # one head width for all (no global_head_dim): the full layers would hold half as much
    narrow = model().model_copy(update={"global_head_dim": None})
    assert cache_layout(narrow, F16, F16).kv_bytes(32768) == 32768 * 3072 + 512 * 12288


def test_llamacpp_kv_by_hand():
    # -c 32768 -np 1: the 3 full layers 32,768 cells × 6,144 B = 201,326,592 B; the 12 sliding layers
    # pad(512 + n_ubatch 512, 256) = 1,024 cells × 12,288 B = 12,582,912 B; 213,909,504 B in all
    cache = llamacpp_cache(LlamaCppSpec(), model(), F16, F16)
    assert cache.kv_bytes(32768) == 201_326_592 + 12_582_912 == 213_909_504
    assert [(p["cells"], p["layers"]) for p in cache.sub_caches(32768)] == [(32768, 3), (1024, 12)]
    facts = dict(next(r for r in cache.rules if r.kind == "shared_kv").values)
    # gemma4's loader: n_layer_kv_from_start = 35 − 20 = 15 (read from the GGUF, not fixed as for gemma3n)
    assert facts == {"layers": 20, "first": 15, "from_start": 15}


def test_transformers_prices_only_the_cached_layers():
    # DynamicCache over layer_types[:15]: 3 full (1,000 tokens) + 12 sliding (512 after a decode step); bf16 at
    # 1,000 tokens: 1,000 · 6,144 + 512 · 12,288 = 6,144,000 + 6,291,456 = 12,435,456 B
    bf16 = format_from_name("bf16")
    cache = transformers_cache(TransformersSpec(), model(), bf16, bf16)
    assert (cache.global_layers, cache.windowed_layers) == (3, 12)
    assert cache.kv_bytes(1000) == 6_144_000 + 6_291_456


def test_params_by_hand_and_the_import_agrees():
    # embed_tokens 262,144 · 1,536 = 402,653,184 (tied); embed_tokens_per_layer 262,144 · 35 · 256 = 2,348,810,240;
    # per_layer_model_projection 1,536 · 8,960 = 13,762,560; its norm 256; final norm 1,536.
    # Attention: q + o 2 · 1,536 · 8 · d + q_norm d, and k + v 2 · 1,536 · d + k_norm d on layers 0–14 only:
    # sliding own 2 · 1,536 · 2,048 + 256 + 2 · 1,536 · 256 + 256 = 7,078,400 (× 12), global own (d 512)
    # 14,156,800 (× 3), sliding shared 6,291,712 (× 16), global shared 12,583,424 (× 4).
    # MLP 3 · 1,536 · 6,144 = 28,311,552 (× 15), double wide 56,623,104 (× 20); per layer 4 norms 6,144, per-layer
    # input 2 · 1,536 · 256 + 1,536 = 787,968, layer_scalar 1
    glob = 402_653_184 + 2_348_810_240 + 13_762_560 + 256 + 1_536
    attn = 12 * 7_078_400 + 3 * 14_156_800 + 16 * 6_291_712 + 4 * 12_583_424
    mlp = 15 * 28_311_552 + 20 * 56_623_104
    total = glob + attn + mlp + 35 * (6_144 + 787_968 + 1)
    assert total == 4_628_569_379 == model().params
    imported = profile_from_hf_config(config(), name="gemma-4-e2b").model
    shipped = model()
    for field in ("params", "layers", "attention_heads", "kv_heads", "head_dim", "global_head_dim", "hidden_size",
                  "intermediate_size", "vocab_size", "tie_embeddings", "max_context", "sliding_window",
                  "sliding_window_pattern", "shared_kv_layers", "hidden_size_per_layer_input",
                  "vocab_size_per_layer_input", "architecture"):
        assert getattr(imported, field) == getattr(shipped, field), field
    assert imported.schedule == shipped.schedule
    assert imported.intermediate_size == [6144] * 15 + [12288] * 20


def test_import_reads_global_kv_heads_per_layer():
    # num_global_key_value_heads 2 with attention_k_eq_v on the full-attention layers: kv_heads becomes a per-layer
    # list (transformers reads num_global_key_value_heads only with attention_k_eq_v)
    c = config()
    c["text_config"]["num_global_key_value_heads"] = 2
    assert profile_from_hf_config(c, name="g").model.kv_heads == 1
    c["text_config"]["attention_k_eq_v"] = True
    imported = profile_from_hf_config(c, name="g").model
    assert imported.kv_heads == [2 if i % 5 == 4 else 1 for i in range(35)]
    # full layers own 2 · 2 · 512 · 2 B = 4,096 B/token each: 3 · 4,096 = 12,288 B/token at full attention
    assert cache_layout(imported, F16, F16).kv_bytes(4096) == 4096 * 12288 + 512 * 12288
    # the 3 own full layers: k_proj only (V is K), 1,536 · 2 heads · 512 = 1,572,864 each — the same count as the
    # k + v of one head, 2 · 1,536 · 512, so the total stays 4,628,569,379; without k_eq_v it would grow by
    # 3 · 1,572,864 = 4,718,592
    assert 1536 * 2 * 512 == 2 * 1536 * 512 == 1_572_864
    assert imported.params == 4_628_569_379


def test_import_refuses_to_derive_a_mixture_of_experts():
    c = config()
    c["text_config"]["enable_moe_block"] = True
    with pytest.raises(ProfileError, match="Gemma 4 mixture of experts"):
        profile_from_hf_config(c, name="g")


def test_weights_read_per_step_leave_out_the_per_layer_table():
    # 4-bit: ceil(4,628,569,379 · 4 / 8) = 2,314,284,690 B; the per-layer table 2,348,810,240 · 0.5 B = 1,174,405,120
    # B is read one row a token, so a step streams 1,139,879,570 B
    weights, read, _ = weights_of(model(), None)
    assert (weights, read) == (2_314_284_690, 2_314_284_690 - 1_174_405_120)


def test_global_head_dim_and_mla_are_refused_together():
    with pytest.raises(Exception, match="global_head_dim and mla"):
        Model(name="m", params=10**9, layers=4, attention_heads=8, kv_heads=1, head_dim=256, global_head_dim=512,
              mla={"kv_lora_rank": 512, "qk_rope_head_dim": 64})


def test_import_gguf_reads_the_gemma4_head_widths(tmp_path):
    # the keys conversion/gemma.py Gemma4Model writes (a tiny file: 6 layers, full attention at layer 4, 1 shared):
    # key_length 128 is global_head_dim, key_length_swa 64 head_dim
    gguf = pytest.importorskip("gguf")
    np = pytest.importorskip("numpy")
    from kvplan.importers.gguf import profile_from_gguf_file

    path = tmp_path / "tiny-gemma4.gguf"
    w = gguf.GGUFWriter(str(path), "gemma4")
    w.add_name("tiny gemma4")
    w.add_block_count(6)
    w.add_head_count(4)
    w.add_head_count_kv(1)
    w.add_key_length(128)
    w.add_value_length(128)
    w.add_uint32("gemma4.attention.key_length_swa", 64)
    w.add_uint32("gemma4.attention.value_length_swa", 64)
    w.add_embedding_length(256)
    w.add_feed_forward_length([512, 512, 512, 512, 512, 1024])
    w.add_context_length(32768)
    w.add_sliding_window(512)
    w.add_sliding_window_pattern([True, True, True, True, False, True])
    w.add_uint32("gemma4.attention.shared_kv_layers", 1)
    w.add_uint32("gemma4.embedding_length_per_layer_input", 8)
    w.add_vocab_size(1000)
    for name, shape in [("token_embd.weight", (1000, 256)), ("per_layer_token_embd.weight", (1000, 6 * 8)),
                        *((f"blk.{i}.attn_output.weight", (256, 4 * (128 if i == 4 else 64))) for i in range(6))]:
        w.add_tensor(name, np.zeros(shape, dtype=np.float16))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    m = profile_from_gguf_file(path).model
    assert (m.head_dim, m.global_head_dim, m.v_head_dim) == (64, 128, None)
    assert (m.shared_kv_layers, m.hidden_size_per_layer_input, m.vocab_size_per_layer_input) == (1, 8, 1000)
    assert m.intermediate_size == [512, 512, 512, 512, 512, 1024]
    assert m.schedule.layer(4) == Attention(1, 128, 128, None) and m.schedule.layer(3) == Attention(1, 64, 64, 512)
    assert m.schedule.layer(5) == SharedKV(3, 512)
    # ideal KV: layer 4 2 · 128 · 2 B = 512 B/token; layers 0–3 4 · 2 · 64 · 2 = 1,024 B per window token
    assert cache_layout(m, F16, F16).kv_bytes(4096) == 4096 * 512 + 512 * 1024
