"""kvplan's transformers cache against the cache transformers 5.17.0 really returns for models with state layers
(tests/data/runtimes/transformers/state/*_state_transformers-5.17.0.json, written by tests/harness/transformers_state.py:
random-weight models, a prefill of N − 1 tokens and one decode step): every run, every layer, to the byte."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvplan.caches.transformers import layer_bytes_per_token, transformers_cache, transformers_state_bytes
from kvplan.engine.formats import format_from_name
from kvplan.engine.schedule import Parallel, State
from kvplan.importers.hf import profile_from_hf_config
from kvplan.profiles.runtime import TransformersSpec

DATA = Path(__file__).resolve().parents[1] / "data" / "runtimes" / "transformers" / "state"
FILES = sorted(DATA.glob("*_state_transformers-5.17.0.json"))
DTYPES = {"bfloat16": "bf16", "float16": "f16", "float32": "f32"}
CASES = [(f.name, run) for f in FILES for run in json.loads(f.read_text())["runs"]]


def _model(name):
    doc = json.loads((DATA / name).read_text())
    return profile_from_hf_config(doc["config"], name="measured").model


def test_five_models_two_lengths_several_dtypes():
    # the real qwen3.5-2b (Gated DeltaNet) and granite-4.0-h-1b (Mamba2) profiles beside LFM2 and two synthetic ones
    # and falcon-h1-0.5b, whose every layer attends and keeps a Mamba2 state side by side, and qwen3.5-35b-a3b (its
    # experts shrunk to 4 × 64: they never reach the cache)
    assert {f.name.split("_state")[0] for f in FILES} == {"lfm2-1.2b", "synthetic-gdn", "synthetic-mamba2",
                                                          "qwen3.5-2b", "granite-4.0-h-1b", "falcon-h1-0.5b",
                                                          "qwen3.5-35b-a3b"}
    assert len(CASES) >= 20


@pytest.mark.parametrize("name, run", CASES, ids=lambda x: x if isinstance(x, str) else f"{x['dtype']}-{x['tokens']}")
def test_every_returned_tensor_is_priced(name, run):
    m = _model(name)
    fmt = format_from_name(DTYPES[run["dtype"]])
    cache = transformers_cache(TransformersSpec(), m, fmt, fmt)
    assert run["cache_class"] == "DynamicCache"
    assert cache.kv_bytes(run["tokens"], 1) == run["total_bytes"]
    for layer, measured in zip(m.schedule.layer_kinds(), run["layers"]):
        got = sum(t["bytes"] for t in measured["tensors"])
        if isinstance(layer, Parallel):  # layer type "hybrid": K/V of every token and the Mamba2 states
            assert measured["class"] == "LinearAttentionAndFullAttentionLayer"
            assert got == run["tokens"] * layer_bytes_per_token(layer.attention, fmt, fmt) + \
                transformers_state_bytes(layer.state, fmt)
            conv = next(t for t in measured["tensors"] if t["name"].startswith("conv_states"))
            assert conv["shape"] == [1, layer.state.conv_channels, layer.state.conv_kernel_tokens]
            assert all(t["dtype"] == "float32" for t in measured["tensors"] if t["name"].startswith("recurrent"))
        elif isinstance(layer, State):
            assert measured["class"] == "LinearAttentionLayer"
            assert got == transformers_state_bytes(layer, fmt)
            conv = next(t for t in measured["tensors"] if t["name"].startswith("conv_states"))
            assert conv["shape"] == [1, layer.conv_channels, layer.conv_kernel_tokens]  # the whole kernel
            assert conv["dtype"] == run["dtype"]
            assert all(t["dtype"] == "float32" for t in measured["tensors"] if t["name"].startswith("recurrent"))
        else:
            assert measured["class"] == "DynamicLayer" and got == run["tokens"] * layer_bytes_per_token(layer, fmt, fmt)
