"""kvplan's transformers cache against the DynamicCache transformers 5.17.0 really returns for gpt-oss-20b,
qwen3-30b-a3b, smollm3-3b, phi-4-mini, gemma-3n-e2b and gemma-3n-e4b (tests/data/runtimes/transformers/models2026/, written by
tests/harness/transformers_models2026.py from the real config.json copies: random weights, the widths that never reach
the cache shrunk, a prefill of N − 1 tokens then one decode step). Every run: the cache after the decode step and right
after the prefill (the peak: gpt-oss's sliding layers still hold the whole prompt there), to the byte."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvplan.caches.transformers import transformers_cache
from kvplan.engine.formats import format_from_name
from kvplan.profiles.catalog import Catalog
from kvplan.profiles.runtime import TransformersSpec

DATA = Path(__file__).resolve().parents[1] / "data" / "runtimes" / "transformers" / "models2026"
FILES = sorted(DATA.glob("*_transformers-5.17.0.json"))
DTYPES = {"bfloat16": "bf16", "float16": "f16", "float32": "f32"}
CASES = [(f.name.split("_transformers")[0], run) for f in FILES for run in json.loads(f.read_text())["runs"]]


def test_six_models_three_lengths_two_dtypes():
    assert {name for name, _ in CASES} == {"gpt-oss-20b", "qwen3-30b-a3b", "smollm3-3b", "phi-4-mini", "gemma-3n-e2b",
                                          "gemma-3n-e4b"}
    assert len(CASES) == 6 * 3 * 2


@pytest.mark.parametrize("name, run", CASES, ids=lambda x: x if isinstance(x, str) else f"{x['dtype']}-{x['tokens']}")
def test_the_returned_cache_is_priced(name, run):
    fmt = format_from_name(DTYPES[run["dtype"]])
    cache = transformers_cache(TransformersSpec(), Catalog().model(name).profile, fmt, fmt)
    assert run["cache_class"] == "DynamicCache"
    # what the tensors' storage holds: a sliding layer's tensors are views of torch.cat's result, which they keep alive
    assert cache.kv_bytes(run["tokens"], 1) == run["storage_bytes"]
    assert cache.kv_peak_bytes(run["tokens"] - 1, 1) == run["peak_after_prefill_storage_bytes"]


def test_gpt_oss_by_hand():
    # f32, 1,000 tokens, a token of one layer 2 · 8 · 64 · 4 B = 4,096 B: 12 full layers × 1,000 tokens = 49,152,000 B;
    # 12 sliding layers reach 127 tokens (window − 1) in views of 128 slots: 12 × 128 × 4,096 = 6,291,456 B allocated;
    # right after the 999-token prefill the views still keep torch.cat's 999-token results: 24 × 999 × 4,096
    run = next(r for n, r in CASES if n == "gpt-oss-20b" and r["tokens"] == 1000 and r["dtype"] == "float32")
    full = [ly for ly in run["layers"] if ly["class"] == "DynamicLayer"]
    assert len(full) == 12 and sum(t["bytes"] for ly in full for t in ly["tensors"]) == 49_152_000
    assert run["total_bytes"] == 49_152_000 + 12 * 127 * 4096
    assert run["storage_bytes"] == 49_152_000 + 12 * 128 * 4096
    assert run["peak_after_prefill_storage_bytes"] == 24 * 999 * 4096


@pytest.mark.parametrize("name", ["gemma-3n-e2b", "gemma-3n-e4b"])
def test_gemma3n_shared_layers_get_no_cache_layer(name):
    # DynamicCache builds layers for layer_types[: -num_kv_shared_layers]: 20 of E2B's 30 (E4B's 35) layers, 4
    # DynamicLayer (full) and 16 DynamicSlidingWindowLayer. bf16, 1,000 tokens, a token of one layer 2 · 2 · 256 · 2 B
    # = 2,048 B: 4 × 1,000 × 2,048 = 8,192,000 B plus 16 sliding layers in views of 512 slots: 16 × 512 × 2,048 =
    # 16,777,216 B allocated (511 tokens reachable); right after the 999-token prefill 20 × 999 × 2,048
    run = next(r for n, r in CASES if n == name and r["tokens"] == 1000 and r["dtype"] == "bfloat16")
    classes = [ly["class"] for ly in run["layers"]]
    assert len(classes) == 20 and classes.count("DynamicLayer") == 4
    assert classes.count("DynamicSlidingWindowLayer") == 16
    assert run["storage_bytes"] == 8_192_000 + 16_777_216
    assert run["total_bytes"] == 8_192_000 + 16 * 511 * 2048
    assert run["peak_after_prefill_storage_bytes"] == 20 * 999 * 2048
