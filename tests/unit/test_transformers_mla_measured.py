"""transformers' MLA cache priced by kvplan equals what a real DynamicCache / StaticCache held.

The figures come from tests/data/runtimes/transformers/*.json, written by the opt-in harness
tests/harness/transformers_cache.py (random-weight DeepseekV2/V3 models with deepseek-v2-lite's attention
shapes, a forward with use_cache=True, the bytes of every tensor of the returned cache). No torch here.
"""

from __future__ import annotations

import json
from collections import defaultdict

import pytest

from kvplan.caches.transformers import LATENT_SINCE, expanded_mla_bytes_per_token, transformers_cache
from kvplan.engine.formats import format_from_name
from kvplan.profiles.catalog import Catalog
from kvplan.profiles.runtime import TransformersSpec
from tests.conftest import DATA

FILES = sorted((DATA / "runtimes" / "transformers").glob("*.json"))
DOCS = {f.name: json.loads(f.read_text()) for f in FILES}
DTYPES = {"bfloat16": "bf16", "float16": "f16", "float32": "f32"}
LENGTHS = {512, 1024, 2048, 4096, 8192, 16384, 32768}


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(".")[:3])


LATENT = [name for name, doc in DOCS.items() if _version(doc["transformers"]) >= _version(LATENT_SINCE)]
EXPANDED = [name for name, doc in DOCS.items() if _version(doc["transformers"]) < _version(LATENT_SINCE)]
assert LATENT and EXPANDED, "measured data is missing: these tests would check nothing"


def _model(doc):
    """The library profile the harness took its attention shapes from, cut to the measured layer count."""
    profile = Catalog().model(doc["profile"]).profile
    cfg = doc["attention_config"]
    assert (profile.mla.kv_lora_rank, profile.mla.qk_rope_head_dim) == (cfg["kv_lora_rank"], cfg["qk_rope_head_dim"])
    assert (profile.attention_heads, profile.head_dim, profile.v_dim) == (
        cfg["num_attention_heads"], cfg["qk_nope_head_dim"] + cfg["qk_rope_head_dim"], cfg["v_head_dim"])
    return profile, profile.model_copy(update={"layers": doc["layers"]})


def _spec(run):
    return TransformersSpec() if run["cache"] == "dynamic" else TransformersSpec(cache="static",
                                                                                   max_cache_len=run["tokens"])


def _kv(layer):
    return layer["tensors"]["keys"]["bytes"] + layer["tensors"]["values"]["bytes"]


def _runs(names):
    return [(name, i) for name in names for i in range(len(DOCS[name]["runs"]))]


@pytest.mark.parametrize("name,index", _runs(LATENT))
def test_kvplan_prices_the_measured_latent(name, index):
    doc = DOCS[name]
    run = doc["runs"][index]
    profile, model = _model(doc)
    fmt = format_from_name(DTYPES[run["dtype"]])
    n = run["tokens"]
    assert run["seq_length"] == (n if run["cache"] == "dynamic" else 17)  # N − 1 prefill + 1 step, or 16 + 1
    # keys: one head of kv_lora_rank, values: one head of qk_rope_head_dim, N slots each
    for layer in run["layers"]:
        keys, values = layer["tensors"]["keys"], layer["tensors"]["values"]
        assert keys["shape"] == [1, 1, n, model.mla.kv_lora_rank]
        assert values["shape"] == [1, 1, n, model.mla.qk_rope_head_dim]
        assert keys["dtype"] == values["dtype"] == run["dtype"]
        assert keys["bytes"] == keys["storage_bytes"] == n * fmt.row_bytes(model.mla.kv_lora_rank)
        assert values["bytes"] == values["storage_bytes"] == n * fmt.row_bytes(model.mla.qk_rope_head_dim)
        others = {k: t for k, t in layer["tensors"].items() if k not in ("keys", "values")}
        assert all(t["shape"] == [] and t["dtype"] == "int64" and t["bytes"] == 8 for t in others.values())
    measured = sum(_kv(layer) for layer in run["layers"])
    assert transformers_cache(_spec(run), model, fmt, fmt).kv_bytes(n) == measured
    # every layer holds the same, so the whole 27-layer profile is 27 measured layers
    per_layer = {_kv(layer) for layer in run["layers"]}
    assert len(per_layer) == 1
    assert transformers_cache(_spec(run), profile, fmt, fmt).kv_bytes(n) == profile.layers * per_layer.pop()


@pytest.mark.parametrize("name,index", _runs(EXPANDED))
def test_older_releases_held_the_expanded_heads_named_in_the_rule(name, index):
    doc = DOCS[name]
    run = doc["runs"][index]
    _, model = _model(doc)
    fmt = format_from_name(DTYPES[run["dtype"]])
    n = run["tokens"]
    for layer in run["layers"]:
        assert layer["tensors"]["keys"]["shape"] == [1, model.attention_heads, n, model.head_dim]
        assert layer["tensors"]["values"]["shape"] == [1, model.attention_heads, n, model.v_dim]
    measured = sum(_kv(layer) for layer in run["layers"])
    assert n * expanded_mla_bytes_per_token(model, fmt) == measured
    assert transformers_cache(_spec(run), model, fmt, fmt).kv_bytes(n) < measured


def test_every_length_from_512_to_32k_was_measured_in_the_current_release():
    newest = max(LATENT, key=lambda name: _version(DOCS[name]["transformers"]))
    seen = defaultdict(set)
    for run in DOCS[newest]["runs"]:
        seen[(run["arch"], run["dtype"], run["cache"])].add(run["tokens"])
    assert set(seen) == {(a, d, c) for a in ("deepseek_v2", "deepseek_v3") for d in DTYPES
                         for c in ("dynamic", "static")}
    assert all(lengths >= LENGTHS for lengths in seen.values())


def test_the_attention_kernel_does_not_change_the_cache():
    # the harness's "skip" kernel (no attention math) against torch's sdpa: same tensors where both ran
    by_key = defaultdict(dict)
    for doc in DOCS.values():
        for run in doc["runs"]:
            key = (doc["transformers"], run["arch"], run["dtype"], run["cache"], run["tokens"])
            by_key[key][run["attention"]] = [layer["tensors"] for layer in run["layers"]]
    both = [kernels for kernels in by_key.values() if {"skip", "sdpa"} <= set(kernels)]
    assert both
    assert all(kernels["skip"] == kernels["sdpa"] for kernels in both)
