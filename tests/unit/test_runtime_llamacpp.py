"""llama.cpp's exact KV allocation: every rule with hand-derived figures (arithmetic in comments)."""

from __future__ import annotations

import math

import pytest

from kvplan.profiles.catalog import Catalog
from kvplan.errors import UsageError
from kvplan.engine.formats import format_from_name
from kvplan.profiles.runtime import LlamaCppSpec, parse_runtime, resolve_sequences, runtime_spec
from kvplan.caches.llamacpp import llamacpp_cache, pad

MiB = 2**20


def model(name):
    return Catalog().model(name).profile


def cache(name, kv_type="f16", **spec):
    fmt = format_from_name(kv_type)
    return llamacpp_cache(LlamaCppSpec(**spec), model(name), fmt, fmt)


def test_pad_to_256():
    assert pad(100) == 256 and pad(256) == 256 and pad(257) == 512 and pad(5000) == 5120  # 20 × 256 = 5120


def test_full_attention_f16_matches_the_recorded_log():
    # qwen3-1.7b: 28 layers × 8 KV heads × 128 = 1024 values per row; f16 K + V = 2 × 2048 = 4096 B per cell, layer
    # 4096 cells × 28 × 4096 B = 469,762,048 B = 448.00 MiB (the log line in tests/data/runtime_logs)
    c = cache("qwen3-1.7b")
    assert c.kv_bytes(4096) == 469_762_048 == 448 * MiB


def test_context_is_padded_to_256_cells():
    # -c 5000 → 5120 cells: 5120 × 28 × 4096 B = 587,202,560 B
    c = cache("qwen3-1.7b")
    assert c.cells(5000).n_ctx_seq == 5120
    assert c.kv_bytes(5000) == 587_202_560
    # -c 100 → 256 cells: 256 × 28 × 4096 = 29,360,128
    assert c.kv_bytes(100) == 29_360_128


def test_parallel_sequences_split_the_context_per_stream():
    # -c 8192 -np 3: 8192 / 3 = 2730 → pad 2816 cells × 3 streams = 8448 cells; 8448 × 28 × 4096 = 968,884,224
    c = cache("qwen3-1.7b")
    cells = c.cells(8192, 3)
    assert (cells.n_ctx_seq, cells.streams, cells.n_ctx) == (2816, 3, 8448)
    assert c.kv_bytes(8192, 3) == 968_884_224


def test_unified_is_one_stream_of_n_ctx():
    # --kv-unified -c 8192 -np 3: one stream of 8192 cells: 8192 × 28 × 4096 = 939,524,096
    c = cache("qwen3-1.7b", kv_unified=True)
    assert c.cells(8192, 3).streams == 1
    assert c.kv_bytes(8192, 3) == 939_524_096


@pytest.mark.parametrize("kv_type, row_bytes", [
    ("f32", 4096),  # 1024 × 4
    ("f16", 2048),  # 1024 × 2
    ("bf16", 2048),
    ("q8_0", 1088),  # 1024 / 32 × 34
    ("q4_0", 576),  # 1024 / 32 × 18
    ("q4_1", 640),  # × 20
    ("q5_0", 704),  # × 22
    ("q5_1", 768),  # × 24
    ("iq4_nl", 576),  # × 18
])
def test_block_row_sizes(kv_type, row_bytes):
    # 4096 cells × 28 layers × (K row + V row)
    assert cache("qwen3-1.7b", kv_type).kv_bytes(4096) == 4096 * 28 * 2 * row_bytes


def test_k_and_v_types_may_differ():
    # K q8_0 1088 + V f16 2048 = 3136 B per cell per layer; 4096 × 28 × 3136 = 359,661,568
    c = llamacpp_cache(LlamaCppSpec(flash_attn="on"), model("qwen3-1.7b"), format_from_name("q8_0"),
                       format_from_name("f16"))
    assert c.kv_bytes(4096) == 359_661_568


def test_quantized_v_needs_flash_attention():
    q = format_from_name("q8_0")
    with pytest.raises(UsageError, match="flash attention"):
        llamacpp_cache(LlamaCppSpec(flash_attn="off"), model("qwen3-1.7b"), q, q)
    # a quantized K alone is allowed without flash attention
    llamacpp_cache(LlamaCppSpec(flash_attn="off"), model("qwen3-1.7b"), q, format_from_name("f16"))


def test_gemma3_windowed_layers():
    # gemma-3-1b: 26 layers, i % 6 < 5 windowed (22), 4 global; 1 KV head × 256; f16 K+V = 1024 B per cell per layer
    # -c 8192: global 8192 cells; windowed pad(min(8192, 512 + 512), 256) = 1024 cells
    # 4 × 1024 × 8192 + 22 × 1024 × 1024 = 33,554,432 + 23,068,672 = 56,623,104
    c = cache("gemma-3-1b")
    assert c.cells(8192).swa_cells == 1024
    assert c.kv_bytes(8192) == 56_623_104


def test_gemma3_ubatch_and_parallel_unified():
    # --ubatch 256: windowed pad(512 + 256) = 768 cells: 4 × 1024 × 8192 + 22 × 1024 × 768 = 33,554,432 + 17,301,504
    assert cache("gemma-3-1b", ubatch=256).kv_bytes(8192) == 50_855_936
    # unified, 3 sequences: windowed pad(min(8192, 512 × 3 + 512), 256) = 2048 cells
    # 4 × 1024 × 8192 + 22 × 1024 × 2048 = 33,554,432 + 46,137,344 = 79,691,776
    assert cache("gemma-3-1b", kv_unified=True).kv_bytes(8192, 3) == 79_691_776


def test_small_context_limits_the_ubatch():
    # -c 100: n_ubatch = min(512, 2048, 100) = 100; n_ctx = 256; windowed pad(min(256, 512 + 100)) = 256
    c = cache("gemma-3-1b").cells(100)
    assert (c.n_ubatch, c.n_ctx_seq, c.swa_cells) == (100, 256, 256)


def test_swa_full_gives_every_layer_the_context():
    # 26 × 1024 × 8192 = 218,103,808
    assert cache("gemma-3-1b", swa_full=True).kv_bytes(8192) == 218_103_808


def test_gemma2_even_layers_windowed():
    # gemma-2-2b: 26 layers, even ones windowed (13) with 4096; 4 KV heads × 256 = 1024 values, f16 K+V 4096 B
    # -c 8192: windowed pad(min(8192, 4096 + 512)) = 4608; 13 × 4096 × 8192 + 13 × 4096 × 4608 = 681,574,400
    assert cache("gemma-2-2b").kv_bytes(8192) == 681_574_400


@pytest.mark.parametrize("name", ["mistral-7b-v0.1", "phi-3-mini-4k"])
def test_mistral_and_phi3_windows_are_ignored(name):
    m = model(name)
    c = cache(name)
    per_cell = m.layers * 2 * m.kv_heads * m.head_dim * 2
    # mistral: 32 × 2 × 8 × 128 × 2 = 131,072 B per cell; phi-3: 32 × 2 × 32 × 96 × 2 = 393,216
    assert c.kv_bytes(8192) == 8192 * per_cell
    assert not c.windows
    ignored = next(r for r in c.rules if r.kind == "window_ignored")
    assert ignored["window"] == m.sliding_window


def test_mla_caches_one_k_row_and_no_v():
    # deepseek-v2-lite: 27 layers × (512 + 64) f16 = 1152 B per cell; 4096 × 27 × 1152 = 127,401,984
    assert cache("deepseek-v2-lite").kv_bytes(4096) == 127_401_984


def test_generic_bit_widths_become_llamacpp_types():
    # --kv-bits 8 under llama.cpp is q8_0: 4096 × 28 × 2 × 1088 = 249,561,088
    c = llamacpp_cache(LlamaCppSpec(), model("qwen3-1.7b"), format_from_name("8"), format_from_name("8"))
    assert c.k_format.name == "q8_0" and c.kv_bytes(4096) == 249_561_088


def test_unknown_type_is_a_usage_error():
    fp8 = format_from_name("fp8")
    with pytest.raises(UsageError, match="no cache type"):
        llamacpp_cache(LlamaCppSpec(), model("qwen3-1.7b"), fp8, fp8)


@pytest.mark.parametrize("name, sequences", [("qwen3-1.7b", 1), ("qwen3-1.7b", 3), ("gemma-3-1b", 2),
                                             ("deepseek-v2-lite", 4)])
@pytest.mark.parametrize("allowance", [0, 30_000_000, 123_456_789, 1_000_000_000, 7_777_777_777])
def test_max_ctx_is_exact_to_the_token(name, sequences, allowance):
    c = cache(name)
    best = c.max_ctx(allowance, sequences)
    if best == -1:
        assert c.kv_bytes(1, sequences) > allowance
    else:
        assert c.kv_bytes(best, sequences) <= allowance < c.kv_bytes(best + 1, sequences)


def test_max_ctx_step_function_example():
    # qwen3-1.7b, 1 sequence: 114,688 B per cell. 1,000,000,000 // 114,688 = 8719 cells → 8704 = 34 × 256 cells fit,
    # so every -c up to 8704 fits and 8705 (→ 8960 cells) does not.
    assert cache("qwen3-1.7b").max_ctx(1_000_000_000) == 8704


def test_max_ctx_array():
    np = pytest.importorskip("numpy")
    out = cache("qwen3-1.7b").max_ctx(np.array([1_000_000_000, 0]))
    assert list(out) == [8704, -1]


def test_logits_buffer():
    # qwen3-1.7b vocab 151,936 × 4 B = 607,744 B = 0.58 MiB (the log's "output buffer size = 0.58 MiB")
    assert cache("qwen3-1.7b").logits_bytes(1) == 607_744


def test_spec_parsing_and_sequences():
    assert runtime_spec("ideal") is None
    assert parse_runtime({"name": "llama.cpp", "parallel": 2}) == LlamaCppSpec(parallel=2)
    spec, n = resolve_sequences(runtime_spec("llama.cpp"), 3)
    assert spec.parallel == 3 and n == 3
    with pytest.raises(UsageError, match="disagree"):
        resolve_sequences(runtime_spec("llama.cpp", parallel=2), 3)
    with pytest.raises(UsageError, match="pinned"):
        resolve_sequences(runtime_spec("llama.cpp"), 1, 100)
    with pytest.raises(UsageError, match="llama.cpp options"):
        runtime_spec("transformers", kv_unified=True)
    with pytest.raises(UsageError, match="unknown runtime"):
        runtime_spec("vllm")
    with pytest.raises(UsageError):
        parse_runtime({"name": "llama.cpp", "paralel": 2})


def test_unbounded_when_every_layer_is_windowed():
    m = model("gemma-3-1b").model_copy(update={"sliding_window_pattern": "all"})
    c = llamacpp_cache(LlamaCppSpec(), m)
    assert c.unbounded and c.max_ctx(10**12) == math.inf and c.max_ctx(10**12, 1, 32768) == 32768
