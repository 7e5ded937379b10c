"""kvplan's transformers cache of Llama 4's chunked attention against transformers 5.17.0 (torch 2.13.0).

Data: ``tests/data/runtimes/transformers/chunked/llama-4-scout-17b-16e.json``
(``tests/harness/transformers_chunked.py``, from ``tests/data/hf_configs/llama-4-scout-17b-16e.json``): ``model`` runs are Llama4ForCausalLM with random weights,
every figure that shapes the cache kept (48 layers, 8 KV heads × 128, chunks of 8,192, no_rope_layers) and the rest
shrunk (hidden 256, 2 experts, vocabulary 512), a prefill of N − 1 tokens then one decode step; ``driven`` runs are
``DynamicCache(config=Llama4TextConfig(the real text_config))`` fed the ``[1, 8, n, 128]`` bf16 K/V tensors each layer
hands it — the 107.8B model does not fit this machine, and a prefill past 8,192 tokens through even the shrunk one
was not run on its 2 cores.
"""

from __future__ import annotations

import json

import pytest

from kvplan.caches.transformers import transformers_cache
from kvplan.engine.formats import format_from_name
from kvplan.profiles.catalog import Catalog
from kvplan.profiles.runtime import TransformersSpec
from tests.conftest import DATA

DOC = json.loads((DATA / "runtimes" / "transformers" / "chunked" / "llama-4-scout-17b-16e.json").read_text())
TOKEN_BYTES = 2 * 8 * 128 * 2  # K and V of one token in one layer at bf16: 4,096 B


@pytest.fixture(scope="module")
def cache():
    bf16 = format_from_name("bf16")
    return transformers_cache(TransformersSpec(), Catalog().model("llama-4-scout-17b-16e").profile, bf16, bf16)


def test_the_data_is_transformers_5_17():
    assert DOC["transformers"] == "5.17.0" and len(DOC["runs"]) == 7
    assert {r["kind"] for r in DOC["runs"]} == {"model", "driven"}


@pytest.mark.parametrize("run", DOC["runs"], ids=lambda r: f"{r['kind']}-{r['tokens']}")
def test_the_cache_is_priced(cache, run):
    classes = [layer["class"] for layer in run["layers"]]
    # layer_types: chunked_attention on the RoPE layers (3 of every 4), full_attention on layers 3, 7, …, 47
    assert classes == (["DynamicSlidingWindowLayer"] * 3 + ["DynamicLayer"]) * 12
    assert cache.kv_bytes(run["tokens"], 1) == run["storage_bytes"]
    assert cache.kv_peak_bytes(run["tokens"] - 1, 1) == run["peak_after_prefill_storage_bytes"]


def test_past_one_chunk_by_hand():
    run = next(r for r in DOC["runs"] if r["kind"] == "driven" and r["tokens"] == 16385)
    # after the decode step: 12 full layers hold all 16,385 tokens; each of the 36 chunked layers keeps the last 8,191
    # (sliding_window − 1, enough for any chunk's earlier tokens) as a view of torch.cat's 8,192-token result
    assert run["total_bytes"] == (12 * 16385 + 36 * 8191) * TOKEN_BYTES
    assert run["storage_bytes"] == (12 * 16385 + 36 * 8192) * TOKEN_BYTES == 2_013_315_072
    # right after the 16,384-token prefill every layer still holds the whole prompt
    assert run["peak_after_prefill_storage_bytes"] == 48 * 16384 * TOKEN_BYTES
