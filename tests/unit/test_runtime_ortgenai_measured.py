"""kvplan's onnxruntime-genai figures against the tensors onnxruntime-genai 0.15.2 itself held.

tests/harness/ortgenai_cache.py ran the real Generator (CPU, no shared buffer) on a tiny float32 decoder (3 layers,
2 KV heads, head_size 16) and recorded, after every call, each layer's past input and present output
(tests/data/runtimes/ortgenai/cache.json). With L the present's rows: right after the prompt (no decode run yet)
only the present exists; from the first decode run on the past (L − 1 rows) stays alive beside the present (L rows).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvplan.caches.ortgenai import ortgenai_cache
from kvplan.profiles.runtime import OrtGenAiSpec
from kvplan.profiles.spec import Model

DATA = json.loads((Path(__file__).resolve().parents[1] / "data" / "runtimes" / "ortgenai" / "cache.json")
                  .read_text(encoding="utf-8"))
TINY = Model(name="ortg-tiny", params=10**6, layers=DATA["layers"], attention_heads=DATA["kv_heads"],
             kv_heads=DATA["kv_heads"], head_dim=DATA["head_size"], kv_bits=32)
CACHE = ortgenai_cache(OrtGenAiSpec(), TINY)


def test_data_is_from_the_priced_version():
    assert DATA["onnxruntime_genai"] == "0.15.2" and DATA["dtype"] == "float32"
    # 3 layers · 2 (key, value) · 2 heads · 16 · 4 B = 768 B per token
    assert CACHE.bytes_per_token == 3 * 2 * 2 * 16 * 4 == 768


@pytest.mark.parametrize("row", DATA["rows"], ids=lambda r: f"b{r['batch']}-p{r['prompt']}-s{r['step']}")
def test_present_and_held_bytes(row):
    rows, batch = row["present_shape"][2], row["batch"]
    assert row["present_bytes"] == CACHE.kv_bytes(rows, batch)
    if row["past_shape"][2] == 0:  # the prompt's run: nothing beside the present
        assert row["past_bytes"] == 0
    else:  # a decode run: past L − 1 rows beside the present's L, what kvplan's peak counts
        assert row["past_shape"][2] == rows - 1
        assert row["past_bytes"] + row["present_bytes"] == CACHE.kv_peak_bytes(rows, batch)
