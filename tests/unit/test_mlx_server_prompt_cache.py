"""mlx_lm.server's prompt cache (--prompt-cache-size), priced by kvplan.caches.mlx: hand-derived figures.

llama-3.2-3b: 28 layers, 8 KV heads, head_dim 128. One plain f16 slot: 28 · 2 (K, V) · 8 · 128 · 2 B = 114,688 B.
A 4-bit group-64 slot: per head and token K and V each 128 · 4 / 32 = 16 uint32 words (64 B) + 2 scales + 2 biases
(2 B each, 8 B) = 72 B → 28 · 2 · 8 · 72 B = 32,256 B.
"""

from __future__ import annotations

import numpy as np
import pytest

from kvplan.caches.mlx import mlx_cache
from kvplan.engine.formats import format_from_bits
from kvplan.engine.mlx_cache import prompt_cache_bytes
from kvplan.errors import FieldError
from kvplan.profiles.catalog import Catalog
from kvplan.profiles.runtime import MlxLmSpec, parse_runtime, runtime_spec

PLAIN_SLOT = 28 * 2 * 8 * 128 * 2  # 114,688 B
Q4_SLOT = 28 * 2 * 8 * (128 * 4 // 32 * 4 + 2 * 2 + 2 * 2)  # 32,256 B


def cache(bits=None, **spec):
    fmt = format_from_bits(bits, 64) if bits else None
    return mlx_cache(runtime_spec("mlx-lm", **spec), Catalog().model("llama-3.2-3b").profile, fmt, fmt)


def test_slot_sizes_are_the_ones_derived_by_hand():
    assert PLAIN_SLOT == 114_688 and Q4_SLOT == 32_256
    assert cache().bytes_per_token == PLAIN_SLOT and cache(4).bytes_per_token == Q4_SLOT


def test_the_engine_rule_is_count_times_one_cache():
    assert prompt_cache_bytes(10, 528_482_304) == 5_284_823_040  # 10 × 528,482,304
    assert prompt_cache_bytes(0, 528_482_304) == 0


def test_ten_stored_4bit_caches_at_16k_sit_beside_the_live_peak():
    c = cache(4, prompt_cache_size=10)
    # after the prompt: 16,384 slots × 32,256 B = 528,482,304 B (the live cache, what decode reads)
    assert c.kv_bytes(16_384) == 16_384 * Q4_SLOT == 528_482_304
    # ten stored caches of that size: 5,284,823,040 B
    assert c.prompt_cache_bytes(16_384) == 10 * 528_482_304 == 5_284_823_040
    # the live peak: the chunk that crosses 5,000 tokens holds 6,144 plain slots × 114,688 B = 704,643,072 B
    assert c.kv_peak_bytes(16_384) == 6_144 * PLAIN_SLOT + 5_284_823_040 == 5_989_466_112
    # mlx_lm.generate (no option) keeps none of them
    assert cache(4).kv_peak_bytes(16_384) == 704_643_072 and cache(4).prompt_cache_bytes(16_384) == 0


def test_stored_caches_do_not_scale_with_the_live_sequences():
    c = cache(prompt_cache_size=3)
    # 1,000 tokens plain: ceil(1000 / 256) · 256 = 1,024 slots → 1,024 × 114,688 = 117,440,512 B per sequence
    one = 1_024 * PLAIN_SLOT
    assert c.kv_bytes(1_000) == one == 117_440_512
    # two live sequences (batch rows) + three stored one-sequence caches
    assert c.kv_peak_bytes(1_000, 2) == 2 * one + 3 * one == 587_202_560
    assert c.prompt_cache_bytes(1_000, 2) == 3 * one


def test_arrays_give_the_figure_of_each_context():
    c = cache(prompt_cache_size=2)
    ctx = np.array([256, 257])
    # 256 tokens: 256 slots; 257: 512 slots → 2 × 256 × 114,688 and 2 × 512 × 114,688
    assert c.prompt_cache_bytes(ctx).tolist() == [2 * 256 * PLAIN_SLOT, 2 * 512 * PLAIN_SLOT]
    assert cache().prompt_cache_bytes(ctx).tolist() == [0, 0]


def test_max_ctx_leaves_room_for_the_stored_caches():
    # a plain f16 KVCache holds ceil(ctx / 256) · 256 slots after the prompt (chunks of 2048, multiples of 256),
    # and its peak is that. An allowance of 2,048 slots: 2,048 × 114,688 = 234,881,024 B
    allowance = 2_048 * PLAIN_SLOT
    assert cache().max_ctx(allowance) == 2_048
    # one stored cache beside the live one: 2 · ceil(ctx / 256) · 256 ≤ 2,048 → ctx ≤ 1,024 (1,025 needs 1,280)
    assert cache(prompt_cache_size=1).max_ctx(allowance) == 1_024
    # three: 4 · slots ≤ 2,048 → 512
    assert cache(prompt_cache_size=3).max_ctx(allowance) == 512
    # two live sequences and one stored: 3 · slots ≤ 2,048 → slots ≤ 682.67 → 512 slots → ctx 512
    assert cache(prompt_cache_size=1).max_ctx(allowance, 2) == 512
    # size 0: a server that keeps no earlier cache prices as mlx_lm.generate
    assert cache(prompt_cache_size=0).max_ctx(allowance) == 2_048


def test_the_option_is_checked_and_read_from_a_file():
    assert parse_runtime({"name": "mlx-lm", "prompt_cache_size": 4}) == MlxLmSpec(prompt_cache_size=4)
    with pytest.raises(FieldError, match="must be at least 0"):
        runtime_spec("mlx-lm", prompt_cache_size=-1)
    with pytest.raises(FieldError) as err:  # mlx_lm.server has no --max-kv-size
        runtime_spec("mlx-lm", prompt_cache_size=4, max_kv_size=4096)
    assert err.value.fields == ("runtime.max_kv_size", "runtime.prompt_cache_size")
    with pytest.raises(FieldError, match="mlx-lm options"):
        runtime_spec("llama.cpp", prompt_cache_size=4)


def test_describe_reports_the_option_the_bytes_and_the_rule():
    d = cache(4, prompt_cache_size=10).describe(16_384)
    assert d["options"]["prompt_cache_size"] == 10
    assert d["cells"]["prompt_cache_bytes"] == 5_284_823_040
    stored = [r for r in d["rules"] if r.kind == "mlx_prompt_cache"]
    assert len(stored) == 1 and stored[0].facts() == {"caches": 10, "cache_bytes": 528_482_304,
                                                        "held_bytes": 5_284_823_040}
    plain = cache(4).describe(16_384)
    assert plain["cells"]["prompt_cache_bytes"] is None and plain["options"]["prompt_cache_size"] is None
