"""MLX-LM's cache (kvplan.caches.mlx, kvplan.engine.mlx_cache): hand-derived figures, arithmetic in comments.

The figures measured with MLX-LM itself are checked in test_runtime_mlx_measured.py.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvplan.caches.mlx import mlx_cache
from kvplan.engine.formats import format_from_bits
from kvplan.engine.mlx_cache import kv_cache_capacities, rotating_cache_sizes, update_sizes
from kvplan.errors import FieldError, UsageError
from kvplan.profiles.catalog import Catalog
from kvplan.profiles.runtime import MlxLmSpec, parse_runtime, runtime_spec


def cache(name, bits=None, group=0, **spec):
    fmt = format_from_bits(bits, group) if bits else None
    return mlx_cache(runtime_spec("mlx-lm", **spec), Catalog().model(name).profile, fmt, fmt)


def test_update_sizes_chunk_the_prompt_then_one_token():
    # 5000 tokens: 4999 in chunks of 2048 → 2048, 2048, 903, then the last token alone
    assert update_sizes(5000, 2048) == (2048, 2048, 903, 1)
    assert update_sizes(1, 2048) == (1,)
    assert update_sizes(3, 2048, decode_tokens=2) == (2, 1, 1, 1)


def test_kv_cache_grows_in_steps_of_256():
    # 300 tokens: a chunk of 299 → ceil(299/256)·256 = 512 slots; the last token fits
    assert kv_cache_capacities(300, 2048)[-1] == (300, 512)
    # 2049: one chunk of 2048 → 2048 slots, full; the last token: 2048 % 256 == 0, + 256 → 2304
    assert kv_cache_capacities(2049, 2048)[-1] == (2049, 2304)


def test_kv_cache_trims_before_growing():
    # 3000 tokens in chunks of 1000: 1000 → 1024 slots; 1000 more: 2000 > 1024 and 1000 % 256 = 232, so trim to
    # 1000 and add ceil(1000/256)·256 = 1024 → 2024; 999 more: 2999 > 2024, 2000 % 256 = 208 → 2000 + 1024 = 3024
    assert kv_cache_capacities(3000, 1000) == ((1000, 1024), (2000, 2024), (2999, 3024), (3000, 3024))


def test_rotating_cache_overhang_then_trim():
    # max_size 512, 2049 tokens: one chunk of 2048 (kept whole), then the last token trims to 512
    assert rotating_cache_sizes(2049, 2048, 512) == ((2048, 2048), (2049, 512))
    # 5000 tokens: 2048; min(2048, 511) + 2048 = 2559; 511 + 903 = 1414; then 512
    assert rotating_cache_sizes(5000, 2048, 512) == ((2048, 2048), (4096, 2559), (4999, 1414), (5000, 512))
    # below max_size: 300 tokens → 299, then a one-token step grows by min(256, 1024 − 299) = 256 → 555
    assert rotating_cache_sizes(300, 2048, 1024)[-1] == (300, 555)


def test_llama_full_cache():
    # llama-3.2-3b: 28 layers × 8 KV heads × 128 × 2 (K, V) × 2 B = 114,688 B per slot
    c = cache("llama-3.2-3b")
    assert c.kv_bytes(300) == c.kv_peak_bytes(300) == 512 * 114_688 == 58_720_256
    assert c.kv_bytes(16_384) == 16_384 * 114_688 == 1_879_048_192


def test_llama_ignores_max_kv_size():
    # llama.py has make_cache: make_prompt_cache never builds the RotatingKVCache
    assert cache("llama-3.2-3b", max_kv_size=1024).kv_bytes(4096) == cache("llama-3.2-3b").kv_bytes(4096)
    kinds = [r.kind for r in cache("llama-3.2-3b", max_kv_size=1024).rules]
    assert "mlx_own_cache" in kinds and "mlx_max_kv_size" not in kinds


def test_qwen3_max_kv_size_rotates_every_layer():
    # qwen3-4b: 36 × 8 × 128 × 2 × 2 = 147,456 B per slot; --max-kv-size 4096, 10,240 tokens:
    # chunks 2048, 4096 (2048 + 2048), 6143 (4095 + 2048), 6143, 6142 (4095 + 2047), then trimmed to 4096
    c = cache("qwen3-4b", max_kv_size=4096)
    assert c.kv_bytes(10_240) == 4096 * 147_456 == 603_979_776
    assert c.kv_peak_bytes(10_240) == 6143 * 147_456 == 905_822_208


def test_quantized_cache_after_the_start():
    # 4-bit, group 64, head_dim 128: K per head 128·4/8 = 64 B + 2 groups × (2 B scale + 2 B bias) = 72 B; K+V 144
    # × 8 heads × 28 layers = 32,256 B per slot. 16,384 tokens ≥ 5000: quantized, 16,384 slots → 528,482,304.
    # Peak: the chunk ending at 6,144 (first offset ≥ 5000) holds 6,144 plain slots before the conversion:
    # 6,144 × 114,688 = 704,643,072
    c = cache("llama-3.2-3b", bits=4)
    assert c.bytes_per_token == 32_256
    assert c.kv_bytes(16_384) == 528_482_304
    assert c.kv_peak_bytes(16_384) == 704_643_072
    # below the start the cache stays plain: 4,096 × 114,688
    assert c.kv_bytes(4096) == c.kv_peak_bytes(4096) == 469_762_048


def test_quantized_8bit_group_128():
    # 8-bit, group 128: 128 B + 1 × 4 B = 132 B per head for K, 264 K+V × 8 × 28 = 59,136 B per slot
    c = cache("llama-3.2-3b", bits=8, group=128, quantized_kv_start=0)
    assert c.bytes_per_token == 59_136
    # start 0: quantized after the first chunk (300 tokens: 512 slots); the first observation is already ≥ 0,
    # but the bytes before the conversion are the plain 512 slots: the peak
    assert c.kv_bytes(300) == 512 * 59_136
    assert c.kv_peak_bytes(300) == 512 * 114_688


def test_gemma3_rotating_and_full_layers():
    # gemma-3-1b: 22 sliding (512) + 4 full layers, 1 KV head × 256 × 2 × 2 B = 1,024 B per slot per layer
    # 10,240 tokens: full 4 × 10,240 × 1,024 = 41,943,040; rotating 22 × 512 × 1,024 = 11,534,336
    c = cache("gemma-3-1b")
    assert c.kv_bytes(10_240) == 53_477_376
    # peak after the chunk of 2,047 (offset 10,239): full capacity 8,192 + 2,048 = 10,240, rotating 511 + 2,047
    # = 2,558: 41,943,040 + 22 × 2,558 × 1,024 (57,626,624) = 99,569,664
    assert c.kv_peak_bytes(10_240) == 99_569_664


def test_windows_only_masked_elsewhere():
    # mistral (llama.py, no layer_types), phi3 and gemma2 (no make_cache) cache the whole context
    for name in ("mistral-7b-v0.1", "phi-3-mini-4k", "gemma-2-2b"):
        c = cache(name)
        assert c.rotating == () and "mlx_window_mask_only" in [r.kind for r in c.rules]


def test_refusals():
    with pytest.raises(UsageError, match="RotatingKVCache.to_quantized"):
        cache("gemma-3-1b", bits=4).kv_bytes(5000)
    assert cache("gemma-3-1b", bits=4).kv_bytes(4999) > 0  # below the start it never quantizes
    with pytest.raises(UsageError, match="mx.quantize takes"):
        cache("llama-3.2-3b", bits=7)
    with pytest.raises(UsageError, match="group of 32, 64, 128"):
        cache("llama-3.2-3b", bits=4, group=16)
    with pytest.raises(FieldError, match="max_kv_size: must be at least 1"):
        runtime_spec("mlx-lm", max_kv_size=0)
    with pytest.raises(FieldError, match="mlx-lm options"):
        runtime_spec("llama.cpp", max_kv_size=4096)


def test_max_ctx_is_exact_on_the_peak():
    # the largest prompt whose peak fits 100 × 2^20 B, one sequence
    c = cache("llama-3.2-3b")
    allowance = 100 * 2**20
    best = c.max_ctx(allowance)
    assert c.kv_peak_bytes(best) <= allowance < c.kv_peak_bytes(best + 1)
    # ceil(n/256)·256 × 114,688 ≤ 104,857,600 → 914 slots at most → 768 slots → 768 tokens
    assert best == 768
    # a quantized model with rotating layers stops below quantized_kv_start
    assert cache("gemma-3-1b", bits=4).max_ctx(10**12) == 4999


def test_arrays_equal_scalars():
    c = cache("gemma-3-1b")
    ctx = np.array([0, 1, 255, 256, 257, 2049, 5000, 10_500])
    assert c.kv_bytes(ctx).tolist() == [c.kv_bytes(int(n)) for n in ctx]
    assert c.kv_peak_bytes(ctx, 2).tolist() == [2 * c.kv_peak_bytes(int(n)) for n in ctx]
    assert c.max_ctx(np.array([10**6, 10**8])).tolist() == [c.max_ctx(10**6), c.max_ctx(10**8)]


def test_file_runtime_mapping():
    spec = parse_runtime({"name": "mlx-lm", "max_kv_size": "8k", "prefill_step_size": 512})
    assert spec == MlxLmSpec(max_kv_size=8192, prefill_step_size=512)
    assert parse_runtime("mlx") == MlxLmSpec()


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 40_000), st.sampled_from([256, 512, 1000, 2048, 4096]))
def test_capacity_covers_the_offset(n, step):
    """A KVCache always holds its offset, and with a chunk that is a multiple of 256 exactly ceil(n/256)·256."""
    offset, capacity = kv_cache_capacities(n, step)[-1]
    assert offset == n and capacity >= n
    if step % 256 == 0:
        assert capacity == -(-n // 256) * 256


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 20_000), st.sampled_from([512, 1000, 2048]), st.integers(2, 9000))
def test_rotating_bounds(n, step, m):
    """After the prompt a RotatingKVCache holds at most max_size slots; during it at most max_size + chunk − 1."""
    sizes = rotating_cache_sizes(n, step, m)
    assert sizes[-1][1] <= m and max(s for _, s in sizes) <= max(m + step - 1, m)


def _reference(c, n):
    """(after the prompt, peak) by following every model call (kv_cache_capacities / rotating_cache_sizes)."""
    p, start = c.spec.prefill_step_size, c.spec.quantized_kv_start
    full = kv_cache_capacities(n, p)
    rot = [(b, rotating_cache_sizes(n, p, m)) for m, b in c.rotating]
    q = c.quantized_bytes_per_slot
    seen, was = [], False
    for i, (offset, capacity) in enumerate(full):
        r = sum(b * sizes[i][1] for b, sizes in rot)
        now = q is not None and offset >= start
        seen += [capacity * (q if was else c.kv_bytes_per_slot) + r, capacity * (q if now else c.kv_bytes_per_slot) + r]
        was = now
    return seen[-1], max(seen)


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 30_000), st.sampled_from([256, 300, 512, 1000, 2048]), st.sampled_from([None, 700, 4096]),
       st.sampled_from([None, 4, 8]), st.sampled_from([0, 1000, 5000]))
def test_fast_path_equals_every_call(n, step, max_kv, bits, start):
    """The cache model's candidate observations (O(1) in the context) give what following every call gives."""
    c = cache("qwen3-4b", bits=bits, prefill_step_size=step, max_kv_size=max_kv, quantized_kv_start=start)
    if c.quantize_fails and n >= start:
        return
    assert (c.kv_bytes(n), c.kv_peak_bytes(n)) == _reference(c, n)


def test_huge_context_is_cheap():
    # 2^40 tokens (the core's search bound): O(1) work, ceil(2^40 / 256) · 256 = 2^40 slots × 114,688 B
    c = cache("llama-3.2-3b", prefill_step_size=1000)
    assert c.kv_bytes(2**40) >= 2**40 * 114_688
    assert cache("llama-3.2-3b").kv_bytes(2**40) == 2**40 * 114_688
