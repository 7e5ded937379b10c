"""kvplan's onnxruntime-genai figures against the tensors onnxruntime-genai 0.15.2 itself bound.

tests/harness/ortgenai_cache.py ran the real Generator (CPU) on tiny decoders — a float32 one whose attention is a
Concat (3 layers, 2 KV heads, head_size 16) and a float16 GroupQueryAttention one (2 layers, 2 KV heads, 16) with
and without past_present_share_buffer (max_length 256) — and recorded after every call each layer's past input and
present output (tests/data/runtimes/ortgenai/cache.json). With L the present's rows, unshared: right after the
prompt (no decode run yet) only the present exists; from the first decode run on the past (L − 1 rows) stays bound
beside the present (L rows). Shared: past and present are both max_length rows — one buffer (kv_cache.cpp 543-547:
the inputs are set to the presents; get_input/get_output copy, so that it is one buffer is not measured).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest

from kvplan.caches.ortgenai import ortgenai_cache
from kvplan.profiles.runtime import OrtGenAiSpec
from kvplan.profiles.spec import Model

DATA = json.loads((Path(__file__).resolve().parents[1] / "data" / "runtimes" / "ortgenai" / "cache.json")
                  .read_text(encoding="utf-8"))
BITS = {"float32": 32, "float16": 16}


@cache
def priced(layers: int, heads: int, head: int, dtype: str, share: bool, max_length: int):
    model = Model(name="ortg-tiny", params=10**6, layers=layers, attention_heads=heads, kv_heads=heads,
                  head_dim=head, kv_bits=BITS[dtype])
    spec = OrtGenAiSpec(max_length=max_length, past_present_share_buffer=share)
    return ortgenai_cache(spec, model)


def cache_of(row):
    return priced(row["layers"], row["kv_heads"], row["head_size"], row["dtype"], row["share_buffer"],
                  row["max_length"])


def test_data_is_from_the_priced_version_and_bytes_per_token():
    assert DATA["onnxruntime_genai"] == "0.15.2"
    concat = next(r for r in DATA["rows"] if r["attention"] == "concat")
    gqa = next(r for r in DATA["rows"] if r["attention"] == "gqa")
    # concat: 3 layers · 2 (key, value) · 2 heads · 16 · 4 B = 768 B per token; gqa: 2 · 2 · 2 · 16 · 2 B = 256
    assert cache_of(concat).bytes_per_token == 3 * 2 * 2 * 16 * 4 == 768
    assert cache_of(gqa).bytes_per_token == 2 * 2 * 2 * 16 * 2 == 256


@pytest.mark.parametrize("row", DATA["rows"], ids=lambda r: (f"{r['attention']}-{'shared' if r['share_buffer'] else 'unshared'}"
                                                             f"-b{r['batch']}-p{r['prompt']}-s{r['step']}"))
def test_present_and_held_bytes(row):
    c, batch = cache_of(row), row["batch"]
    rows = row["present_shape"][2]
    if row["share_buffer"]:  # one buffer of max_length rows, whatever the context: counted once
        assert rows == row["past_shape"][2] == row["max_length"]
        ctx = row["prompt"] + max(row["step"] - 1, 0)  # tokens the model has run over
        assert row["present_bytes"] == c.kv_bytes(ctx, batch) == c.kv_peak_bytes(ctx, batch)
        return
    assert row["present_bytes"] == c.kv_bytes(rows, batch)
    if row["past_shape"][2] == 0:  # the prompt's run: nothing beside the present
        assert row["past_bytes"] == 0
    else:  # a decode run: past L − 1 rows beside the present's L, what kvplan's peak counts
        assert row["past_shape"][2] == rows - 1
        assert row["past_bytes"] + row["present_bytes"] == c.kv_peak_bytes(rows, batch)
