"""kvplan's MLX-LM cache model against every row measured with MLX-LM itself (tests/data/mlx/cache.json).

Each row is one ``generate_step`` run (tests/harness/mlx_cache.py): the sum of the cache objects' ``nbytes``
right after the prompt and the largest sum after any model call of its prefill. The harness builds
``layers_used`` layers (the cache is per layer); kvplan prices the profile cut to that many layers, so the
comparison is exact, and its figure for the real depth is the same per-layer bytes over ``real_layers``
(checked below on the one model also measured at full depth).
"""

from __future__ import annotations

import json

import pytest

from tests.conftest import DATA

MEASURED = json.loads((DATA / "mlx" / "cache.json").read_text())
DTYPE_BITS = {"bfloat16": 16, "float16": 16, "float32": 32}


def _profile(name: str, layers: int, dtype: str):
    from kvplan.profiles.catalog import Catalog

    base = Catalog().model(name.split("@")[0]).profile
    return base.model_copy(update={"layers": layers, "kv_bits": DTYPE_BITS[dtype]})


def _cache(entry, row, name, layers=None):
    from kvplan.caches.mlx import mlx_cache
    from kvplan.engine.formats import format_from_bits, format_from_name
    from kvplan.profiles.runtime import runtime_spec

    model = _profile(name, layers or entry["layers_used"], entry["dtype"])
    spec = runtime_spec("mlx-lm", max_kv_size=row["max_kv_size"], prefill_step_size=row["prefill_step_size"],
                        quantized_kv_start=row["quantized_kv_start"])
    fmt = None
    if row["kv_bits"] is not None:
        fmt = format_from_bits(row["kv_bits"], row["kv_group_size"])
    elif entry["dtype"] == "bfloat16":
        fmt = format_from_name("bf16")
    return mlx_cache(spec, model, fmt, fmt)


ROWS = [(name, i) for name, entry in MEASURED["models"].items() for i, row in enumerate(entry["rows"])
        if row["decode_tokens"] == 0]


def test_data_carries_the_versions():
    assert MEASURED["mlx"] and MEASURED["mlx_lm"]
    from kvplan.caches.mlx import MLX_LM_VERSION, MLX_VERSION

    assert (MEASURED["mlx"], MEASURED["mlx_lm"]) == (MLX_VERSION, MLX_LM_VERSION)


def test_six_model_types_and_prompts_past_10k():
    types = {e["model_type"] for e in MEASURED["models"].values()}
    assert len(types) >= 6, types
    assert max(r["prompt_tokens"] for e in MEASURED["models"].values() for r in e["rows"]) > 10_000
    assert {r["kv_bits"] for e in MEASURED["models"].values() for r in e["rows"]} >= {None, 4, 8}


@pytest.mark.parametrize("name,i", ROWS, ids=[f"{n}-{i}" for n, i in ROWS])
def test_every_row_exact(name, i):
    entry = MEASURED["models"][name]
    row = entry["rows"][i]
    n = row["prompt_tokens"]
    if "error" in row:  # MLX-LM itself failed: kvplan refuses the same request, for the same reason
        from kvplan.errors import KvplanError

        why = {"NotImplementedError": "RotatingKVCache.to_quantized",  # a rotating cache reached the start
               "ValueError": "multiple of the group size",  # mx.quantize's group
               "TypeError": "does not read a QuantizedKVCache"}[row["error"].split(":")[0]]  # gemma2's attention
        with pytest.raises(KvplanError, match=why):
            _cache(entry, row, name).kv_bytes(n)
        return
    cache = _cache(entry, row, name)
    if not cache.quantized_attention and row["kv_bits"] and n >= row["quantized_kv_start"]:
        # gemma2: the prompt's last call quantized the cache and no call followed (max_tokens=0), so MLX-LM did
        # not fail yet — the first generated token would. kvplan refuses; the bytes are still its figure.
        from dataclasses import replace

        from kvplan.errors import KvplanError

        with pytest.raises(KvplanError, match="does not read a QuantizedKVCache"):
            cache.kv_bytes(n)
        cache = replace(cache, quantized_attention=True)
    assert cache.kv_bytes(n) == row["kv_bytes"], {k: v for k, v in row.items() if k != "layers"}
    assert cache.kv_peak_bytes(n) == row["peak_kv_bytes"], {k: v for k, v in row.items() if k != "layers"}


@pytest.mark.parametrize("name,i", ROWS, ids=[f"{n}-{i}" for n, i in ROWS])
def test_every_layer_capacity(name, i):
    """The slots of each cache object: KVCache capacity, RotatingKVCache length, their class."""
    from kvplan.engine.mlx_cache import kv_cache_capacities, rotating_cache_sizes

    entry = MEASURED["models"][name]
    row = entry["rows"][i]
    n, p = row["prompt_tokens"], row["prefill_step_size"]
    for layer in row.get("layers", ()):  # none for a row MLX-LM refused
        if layer["class"] in ("KVCache", "QuantizedKVCache"):
            assert kv_cache_capacities(n, p)[-1] == (layer["offset"], layer["capacity_tokens"])
        else:
            assert layer["class"] == "RotatingKVCache"
            assert rotating_cache_sizes(n, p, layer["max_size"])[-1] == (layer["offset"], layer["capacity_tokens"])
        assert layer["nbytes"] == layer["array_nbytes"]


DECODE_ROWS = [(name, i) for name, entry in MEASURED["models"].items() for i, row in enumerate(entry["rows"])
               if row["decode_tokens"]]


@pytest.mark.parametrize("name,i", DECODE_ROWS, ids=[f"{n}-{i}" for n, i in DECODE_ROWS])
def test_decode_growth(name, i):
    """Generated tokens fed back one at a time: the engine's slots after prompt + decode equal the objects'."""
    from kvplan.engine.mlx_cache import kv_cache_capacities, rotating_cache_sizes

    row = MEASURED["models"][name]["rows"][i]
    n, p, d = row["prompt_tokens"], row["prefill_step_size"], row["decode_tokens"]
    for layer in row["layers"]:
        if layer["class"] == "KVCache":
            assert kv_cache_capacities(n, p, d)[-1] == (layer["offset"], layer["capacity_tokens"])
        else:
            assert rotating_cache_sizes(n, p, layer["max_size"], d)[-1] == (layer["offset"],
                                                                              layer["capacity_tokens"])


def test_full_depth_is_the_per_layer_figure_scaled():
    """qwen2.5-0.5b at its real 24 layers: the measured bytes are 24 / layers_used × the cut model's."""
    full = MEASURED["models"].get("qwen2.5-0.5b@full")
    if full is None:
        pytest.skip("no full-depth run in the data")
    cut = MEASURED["models"]["qwen2.5-0.5b"]
    assert full["layers_used"] == full["real_layers"] == 24
    for row in full["rows"]:
        cache = _cache(full, row, "qwen2.5-0.5b")
        assert cache.kv_bytes(row["prompt_tokens"]) == row["kv_bytes"]
        assert cache.kv_peak_bytes(row["prompt_tokens"]) == row["peak_kv_bytes"]
        small = _cache(cut, row, "qwen2.5-0.5b")
        assert row["kv_bytes"] == small.kv_bytes(row["prompt_tokens"]) * 24 // cut["layers_used"]


UNIFORM = [(name, i) for name, i in ROWS if "@" not in name and "error" not in MEASURED["models"][name]["rows"][i]
           and len({(ly["class"], ly["capacity_tokens"]) for ly in MEASURED["models"][name]["rows"][i]["layers"]}) == 1]


@pytest.mark.parametrize("name,i", UNIFORM, ids=[f"{n}-{i}" for n, i in UNIFORM])
def test_real_depth_is_per_layer_bytes_times_layers(name, i):
    """Every layer alike (one cache class and capacity): kvplan's figure for the real model, all its layers, is
    the measured per-layer bytes × real_layers (llama-3.2-3b at 16k, 4-bit: 28 × 18,874,368 = 528,482,304)."""
    entry = MEASURED["models"][name]
    row = entry["rows"][i]
    full = _cache(entry, row, name, layers=entry["real_layers"])
    if not full.quantized_attention:  # gemma2's refusal is checked in test_every_row_exact; here the bytes
        from dataclasses import replace

        full = replace(full, quantized_attention=True)
    per_layer = row["kv_bytes"] // entry["layers_used"]
    assert row["kv_bytes"] == per_layer * entry["layers_used"]
    assert full.kv_bytes(row["prompt_tokens"]) == per_layer * entry["real_layers"]
    assert full.kv_peak_bytes(row["prompt_tokens"]) == row["peak_kv_bytes"] // entry["layers_used"] * entry["real_layers"]


def test_real_attention_leaves_the_cache_alone():
    """Rows measured with the real attention product hold the bytes of the same settings with it zeroed."""
    real = {n: e for n, e in MEASURED["models"].items() if n.endswith("@real-attention")}
    assert real, "no real-attention cross-check in the data"
    for name, entry in real.items():
        assert entry["attention"] == "real"
        zeroed = MEASURED["models"][name.split("@")[0]]
        assert zeroed["attention"] == "zeros" and zeroed["layers_used"] == entry["layers_used"]
        keys = ("prompt_tokens", "decode_tokens", "kv_bits", "kv_group_size", "quantized_kv_start", "max_kv_size",
                "prefill_step_size")
        by_settings = {tuple(r[k] for k in keys): r for r in zeroed["rows"]}
        for row in entry["rows"]:
            twin = by_settings.get(tuple(row[k] for k in keys))
            if twin is not None:
                assert (twin["kv_bytes"], twin["peak_kv_bytes"]) == (row["kv_bytes"], row["peak_kv_bytes"])
