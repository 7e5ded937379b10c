"""kvplan's ExecuTorch cache against the buffers of ExecuTorch 1.4.1's own Llama model, transformed by its export's
own source transforms and ``torch.export``-ed (tests/harness/executorch_cache.py, tests/data/runtimes/
executorch_cache.json). The rows use Llama-3.2-1B's heads (8 kv heads × 64) on 2 layers: the cache is per layer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvplan.caches.executorch import executorch_cache
from kvplan.engine.executorch_cache import layer_slot_bytes, ring_layer_bytes
from kvplan.errors import FieldError
from kvplan.profiles.catalog import Catalog
from kvplan.profiles.runtime import ExecuTorchSpec

DATA = json.loads((Path(__file__).parents[1] / "data" / "runtimes" / "executorch_cache.json").read_text("utf-8"))
ROWS = DATA["rows"]
DTYPE_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2}


def _id(row) -> str:
    return (f"{row['max_context_length']}-{row['dtype_override']}-{'q' if row['quantize_kv_cache'] else 'plain'}-"
            f"{row['local_global_attention']}")


def test_versions_recorded():
    assert DATA["versions"]["executorch"] == "1.4.1"
    assert len(ROWS) == 36  # 2 lengths × 3 dtypes × plain/quantized × 3 window patterns


@pytest.mark.parametrize("row", ROWS, ids=_id)
def test_engine_matches_every_buffer_sum(row):
    if row["quantize_kv_cache"] and row["dtype_override"] != "fp32":
        # the cause of the failed export: the final cast made the scales buffers fp16/bf16 (2 B, not float32)
        torch_dtype = {"fp16": "float16", "bf16": "bfloat16"}[row["dtype_override"]]
        scales = [b for b in row["buffers"] if b["name"].endswith("_scales")]
        assert scales and all(b["dtype"] == torch_dtype for b in scales)
        return
    slot = layer_slot_bytes(row["n_kv_heads"], row["head_dim"], DTYPE_BYTES[row["dtype_override"]],
                            row["quantize_kv_cache"])
    pattern = row["local_global_attention"] or [0]
    windows = pattern * (row["layers_used"] // len(pattern))
    expected = sum(ring_layer_bytes(w, slot) if w else row["max_context_length"] * slot for w in windows)
    assert row["cache_bytes"] == expected
    if "export_error" not in row:  # the exported program keeps exactly these buffers
        assert row["exported_cache_bytes"] == expected


@pytest.mark.parametrize("row", ROWS, ids=_id)
def test_quantized_exports_only_in_fp32(row):
    fails = row["quantize_kv_cache"] and row["dtype_override"] != "fp32"
    assert ("export_error" in row) == fails
    spec = ExecuTorchSpec(max_context_length=row["max_context_length"], dtype_override=row["dtype_override"],
                          quantize_kv_cache=row["quantize_kv_cache"])
    model = Catalog().model("llama-3.2-1b").profile
    if fails:
        with pytest.raises(FieldError):
            executorch_cache(spec, model)
        return
    # uniform rows: kvplan's figure for the 16-layer model is the measured per-layer bytes × 16
    if row["local_global_attention"] in (None, [40]):
        window = row["local_global_attention"][0] if row["local_global_attention"] else None
        c = executorch_cache(spec, model, sliding_window=window)
        assert c.kv_bytes(row["max_context_length"]) == row["exported_cache_bytes"] // row["layers_used"] * 16


def _pairs():
    """Rows that differ only in max_context_length (128 and 1,000) and were lowered to a program."""
    by = {}
    for row in ROWS:
        if "pte_planned_bytes" in row:
            key = (row["dtype_override"], row["quantize_kv_cache"], str(row["local_global_attention"]))
            by.setdefault(key, {})[row["max_context_length"]] = row
    return [(v[128], v[1000]) for v in by.values() if len(v) == 2]


@pytest.mark.parametrize("short, long", _pairs(), ids=lambda r: _id(r))
def test_program_plans_the_whole_cache_at_load(short, long):
    # the lowered program's planned memory grows by exactly the cache's growth from 128 to 1,000 slots
    # (fp32, no window: 2 layers · 2 · 8 · 64 · 4 B · 872 slots = 7,143,424 B; a [40] ring: 0)
    assert long["pte_planned_bytes"] - short["pte_planned_bytes"] == long["cache_bytes"] - short["cache_bytes"]


def test_plain_rows_were_lowered():
    assert len(_pairs()) == 9  # 3 dtypes × 3 window patterns, plain cache
