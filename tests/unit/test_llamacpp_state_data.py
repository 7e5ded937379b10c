"""kvplan's llama.cpp cache against llama.cpp's own hybrid-memory allocation for LFM2-1.2B, measured at build 11434
(tests/data/llamacpp/state/lfm2-1.2b.json, written by tests/harness/state_buffers.py on a weight-less GGUF of the
profile from tests/harness/make_hybrid_gguf.py): every row, exact to the byte."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvplan.caches.llamacpp import llamacpp_cache
from kvplan.engine.formats import format_from_name
from kvplan.profiles.catalog import Catalog
from kvplan.profiles.runtime import LlamaCppSpec

DATA = Path(__file__).resolve().parents[1] / "data" / "llamacpp" / "state"
RUNS = json.loads((DATA / "lfm2-1.2b.json").read_text())["runs"]
MIB = 2**20


def _logged(run, kind):
    return run["logged_mib"][kind]["CPU"]


def _cache(p):
    fmt = format_from_name(p["type_k"])
    spec = LlamaCppSpec(kv_unified=p["kv_unified"], ubatch=p["n_ubatch"], batch=p["n_batch"],
                        flash_attn="on" if p["flash_attn"] else "off")
    return llamacpp_cache(spec, Catalog().model("lfm2-1.2b").profile, fmt, fmt)


def test_the_data_covers_the_grid():
    grid = {(r["params"]["n_ctx"], r["params"]["type_k"], r["params"]["n_seq_max"], r["params"]["kv_unified"])
            for r in RUNS}
    assert len(RUNS) == len(grid) == 36 and all(r["returncode"] == 0 for r in RUNS)


@pytest.mark.parametrize("run", RUNS, ids=lambda r: "{n_ctx}-{type_k}-np{n_seq_max}-u{kv_unified:d}".format(**r["params"]))
def test_kv_and_recurrent_state_equal_llama_cpp(run):
    p = run["params"]
    c = _cache(p)
    n = p["n_seq_max"]
    state = c.state_bytes(p["n_ctx"], n)
    # LFM2-1.2B: 10 conv layers × 2,048 channels × (L_cache 3 − 1) × 4 B (f32) = 163,840 B per cell, one cell
    # per sequence whatever the cache type and unified KV: llama.cpp logs 0.16 MiB × n_seq_max (0.62 MiB at 4)
    assert state == 163_840 * n
    assert round(state / MIB, 2) == run["logged_mib"].get("RS_mib", {}).get("CPU", round(state / MIB, 2))
    kv = c.kv_bytes(p["n_ctx"], n) - state
    assert round(kv / MIB, 2) == _logged(run, "KV_mib")
    # the context buffer type holds exactly the KV cache and the recurrent state (llama_get_memory_breakdown)
    assert c.kv_bytes(p["n_ctx"], n) == run["breakdown_bytes"]["CPU"]["context"]


def test_the_recurrent_buffer_line_is_in_every_log():
    for run in RUNS:
        n = run["params"]["n_seq_max"]
        line = next(ln for ln in run["log"] if "RS buffer size" in ln)
        assert line.rstrip().endswith(f"{round(163_840 * n / MIB, 2):.2f} MiB"), line
