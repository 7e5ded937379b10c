"""Llama 4's chunked attention in MLX-LM's cache (``ChunkedKVCache``), against mlx-lm 0.32.2 itself.

Data: ``tests/data/mlx/llama4_chunked.json`` (``tests/harness/mlx_cache.py --models llama-4-scout-17b-16e``): the
real Scout text_config cut to 4 layers (one ``(i + 1) % 4`` pattern of ``llama4.py`` ``Model.make_cache``: three
``ChunkedKVCache(8192)`` layers, then a ``KVCache``), random bfloat16 weights, prompts around the 8,192 chunk,
prefill steps 2048 / 512 / 1000, decode steps and ``--kv-bits``. kvplan prices the Scout profile cut to the same 4
layers, so every figure is compared exactly; each layer owns its cache, so the 48-layer figure is the 4-layer one
× 12. One token slot of one layer: K and V of 8 KV heads × 128 values × 2 B = 4,096 B.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvplan.caches.mlx import MLX_LM_VERSION, MLX_VERSION, mlx_cache
from kvplan.engine.formats import format_from_bits, format_from_name
from kvplan.engine.mlx_cache import (
    chunked_after_chunks,
    chunked_cache_sizes,
    chunked_kv_grow,
    kv_cache_capacities,
    update_sizes,
)
from kvplan.profiles.catalog import Catalog
from kvplan.profiles.runtime import runtime_spec
from tests.conftest import DATA

DOC = json.loads((DATA / "mlx" / "llama4_chunked.json").read_text())
ENTRY = DOC["models"]["llama-4-scout-17b-16e"]
ROWS = ENTRY["rows"]
SLOT = 2 * 8 * 128 * 2  # 4,096 B per token slot per layer


def _scout(layers):
    base = Catalog().model("llama-4-scout-17b-16e").profile
    return base.model_copy(update={"layers": layers, "kv_bits": 16})


def _cache(row, layers=4):
    spec = runtime_spec("mlx-lm", max_kv_size=row["max_kv_size"], prefill_step_size=row["prefill_step_size"],
                        quantized_kv_start=row["quantized_kv_start"])
    fmt = format_from_bits(row["kv_bits"], row["kv_group_size"]) if row["kv_bits"] else format_from_name("bf16")
    return mlx_cache(spec, _scout(layers), fmt, fmt)


def test_the_data_is_the_priced_versions_and_layout():
    assert (DOC["mlx"], DOC["mlx_lm"]) == (MLX_VERSION, MLX_LM_VERSION)
    assert (ENTRY["mlx_lm_module"], ENTRY["layers_used"], ENTRY["real_layers"], ENTRY["dtype"]) == \
        ("llama4", 4, 48, "bfloat16")
    for row in ROWS:
        classes = [layer["class"] for layer in row["layers"]]
        assert classes[:3] == ["ChunkedKVCache"] * 3 and classes[3] in ("KVCache", "QuantizedKVCache")
    prompts = {(r["prompt_tokens"], r["prefill_step_size"]) for r in ROWS}
    assert {(n, p) for n in (100, 8191, 8192, 8193, 10000, 20000, 33000) for p in (2048, 512)} <= prompts


PROMPT_ROWS = [i for i, r in enumerate(ROWS) if r["decode_tokens"] == 0]


@pytest.mark.parametrize("i", PROMPT_ROWS, ids=[f"{ROWS[i]['prompt_tokens']}-p{ROWS[i]['prefill_step_size']}"
                                                 f"-b{ROWS[i]['kv_bits']}" for i in PROMPT_ROWS])
def test_bytes_and_peak_exact(i):
    row = ROWS[i]
    c = _cache(row)
    n = row["prompt_tokens"]
    assert (c.kv_bytes(n), c.kv_peak_bytes(n)) == (row["kv_bytes"], row["peak_kv_bytes"])


@pytest.mark.parametrize("i", range(len(ROWS)))
def test_every_layer_offset_start_and_capacity(i):
    """Each cache object after the prompt (and its decode steps): ChunkedKVCache's offset, start_position and
    slots from chunked_cache_sizes, the KVCache's from kv_cache_capacities; nbytes is its arrays' bytes."""
    row = ROWS[i]
    n, p, d = row["prompt_tokens"], row["prefill_step_size"], row["decode_tokens"]
    for layer in row["layers"]:
        if layer["class"] == "ChunkedKVCache":
            assert layer["chunk_size"] == 8192
            assert chunked_cache_sizes(n, p, 8192, d)[-1] == (layer["offset"], layer["start_position"],
                                                              layer["capacity_tokens"])
            assert layer["nbytes"] == layer["capacity_tokens"] * SLOT
        else:
            assert kv_cache_capacities(n, p, d)[-1] == (layer["offset"], layer["capacity_tokens"])
        assert layer["nbytes"] == layer["array_nbytes"]


def test_10000_tokens_by_hand():
    # 9,999 tokens in chunks of 2048: 2048 × 4 (8,192), 1,807, then the last token.
    # ChunkedKVCache: 8,192 held in 8,192 slots after 4 chunks; the 1,807 chunk starts at 8,192 (not > 8,192: no
    # trim) and does not fit → 8,192 + ceil(1807/256)·256 = 10,240 slots; the last token: 9,999 held > 8,192 → trim
    # to 8,192 (start_position 1,807), full → + 256 = 8,448. KVCache: 10,240 (fits the last token).
    assert chunked_cache_sizes(10_000, 2048, 8192)[-2:] == ((9_999, 0, 10_240), (10_000, 1_807, 8_448))
    row = next(r for r in ROWS if (r["prompt_tokens"], r["prefill_step_size"], r["kv_bits"], r["decode_tokens"])
               == (10_000, 2048, None, 0))
    assert row["kv_bytes"] == (3 * 8_448 + 10_240) * SLOT == 145_752_064
    assert row["peak_kv_bytes"] == (3 * 10_240 + 10_240) * SLOT == 167_772_160  # after the 1,807 chunk


def test_decode_keeps_chunk_plus_one_step():
    # every decode step trims to 8,192 held tokens in 8,192 slots, then the token does not fit: 8,192 + 256
    assert chunked_kv_grow(8_193, 8_448, 1, 8192) == (8_193, 8_448)
    assert {s for _, _, s in chunked_cache_sizes(10_000, 2048, 8192, 300)[-300:]} == {8_448}


def test_kv_bits_quantizes_only_the_kvcache_layer():
    """ChunkedKVCache has no to_quantized: maybe_quantize_kv_cache leaves it in bfloat16."""
    row = next(r for r in ROWS if r["kv_bits"] == 4)
    assert [layer["class"] for layer in row["layers"]] == ["ChunkedKVCache"] * 3 + ["QuantizedKVCache"]
    # 4-bit, group 64, head_dim 128: per head 128·4/32 = 16 uint32 words + 2 bf16 scales + 2 biases = 72 B,
    # K and V of 8 heads: 1,152 B a slot; 10,240 slots
    assert row["layers"][3]["nbytes"] == 10_240 * 2 * 8 * (16 * 4 + 2 * 2 + 2 * 2) == 11_796_480


def test_48_layers_are_twelve_patterns():
    """Scout's 48 layers: 12 × the 4-layer figure (each layer its own cache)."""
    row = next(r for r in ROWS if (r["prompt_tokens"], r["prefill_step_size"], r["kv_bits"], r["decode_tokens"])
               == (33_000, 2048, None, 0))
    full = _cache(row, layers=48)
    assert full.kv_bytes(33_000) == 12 * row["kv_bytes"]
    assert full.kv_peak_bytes(33_000) == 12 * row["peak_kv_bytes"]
    # 32k, the check command's: 12 KVCache layers × 32,768 slots + 36 ChunkedKVCache × 8,448, 4,096 B each; the
    # peak after the 2,047-token last chunk, the chunked layers at 8,192 + 2,048 = 10,240 slots
    k32 = next(r for r in ROWS if (r["prompt_tokens"], r["prefill_step_size"], r["kv_bits"], r["decode_tokens"])
               == (32_768, 2048, None, 0))
    assert full.kv_bytes(32_768) == 12 * k32["kv_bytes"] == (12 * 32_768 + 36 * 8_448) * SLOT == 2_856_321_024
    assert full.kv_peak_bytes(32_768) == 12 * k32["peak_kv_bytes"] == (12 * 32_768 + 36 * 10_240) * SLOT \
        == 3_120_562_176


def test_a_misplaced_chunked_layer_is_refused():
    from kvplan.errors import FieldError

    moved = _scout(48).model_copy(update={"sliding_window_pattern": "1:3"})
    with pytest.raises(FieldError, match=r"\(i \+ 1\) % 4"):
        mlx_cache(runtime_spec("mlx-lm"), moved)


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 40), st.sampled_from([256, 300, 512, 1000, 2048, 4096]), st.sampled_from([1000, 2048, 8192]))
def test_after_chunks_is_following_every_chunk(chunks, step, chunk):
    held = capacity = 0
    for _ in range(chunks):
        held, capacity = chunked_kv_grow(held, capacity, step, chunk)
    assert chunked_after_chunks(chunks, step, chunk) == (held, capacity)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 40_000), st.sampled_from([256, 300, 512, 1000, 2048]), st.sampled_from([None, 4]),
       st.sampled_from([0, 5000, 20_000]))
def test_candidate_points_equal_every_call(n, step, bits, start):
    """kv_bytes / kv_peak_bytes (a few candidate calls) equal following every call of generate_step."""
    row = {"max_kv_size": None, "prefill_step_size": step, "quantized_kv_start": start, "kv_bits": bits,
           "kv_group_size": 64}
    c = _cache(row)
    q = c.quantized_bytes_per_slot
    totals = []
    chunked = chunked_cache_sizes(n, step, 8192)
    plain = kv_cache_capacities(n, step)
    offset_before = 0
    for (offset, capacity), (_, _, slots), s in zip(plain, chunked, update_sizes(n, step)):
        was = bits is not None and offset_before >= start and offset_before > 0
        now = bits is not None and offset >= start
        for quantized in (was, now):  # before and after maybe_quantize_kv_cache
            totals.append(capacity * (q if quantized else SLOT) + 3 * slots * SLOT)
        offset_before = offset
    assert c.kv_bytes(n) == totals[-1]
    assert c.kv_peak_bytes(n) == max(totals)


def test_several_sequences_of_llama4_under_mlx_lm_warn_that_it_cannot_batch_them():
    from kvplan.plan import Knobs, build_scenario, evaluate
    from kvplan.profiles.catalog import Catalog
    from kvplan.profiles.runtime import runtime_spec

    catalog = Catalog()
    device, model = catalog.device("macbook-pro-m4-pro-24gb").profile, catalog.model("llama-4-scout").profile
    codes = {n: [w.kind for w in evaluate(build_scenario(device, model, 8192, Knobs(
        runtime=runtime_spec("mlx-lm"), sequences=n))).warnings] for n in (1, 2)}
    assert "mlx_chunked_batch" not in codes[1] and "mlx_chunked_batch" in codes[2]
