"""kvplan's llama.cpp cache against llama.cpp's own hybrid-memory allocation, measured at build 11434
(tests/data/llamacpp/state/*.json, written by tests/harness/state_buffers.py on weight-less GGUFs from
tests/harness/make_hybrid_gguf.py): every row, exact to the byte.

* lfm2-1.2b: the built-in profile (short convolution, 10 conv + 6 attention layers);
* synthetic-granitemoehybrid: the profile kvplan imports from tests/data/hf_configs_other/synthetic-granitemoehybrid.json
  (a dense Granite-4.0-H-style Mamba2 hybrid: 9 Mamba2 layers of 48 heads × 64, d_state 128, 1 attention layer);
* synthetic-qwen3_5_text: imported from tests/data/hf_configs_other/synthetic-qwen3_5_text.json (a Qwen3.5-style
  Gated DeltaNet hybrid: 6 linear-attention layers of 16 key and 16 value heads × 128, kernel 4, 2 attention layers);
* synthetic-nemotron_h: imported from tests/data/hf_configs_other/synthetic-nemotron_h.json (pattern "M-M*-M-M":
  4 Mamba2 layers of 32 heads × 64, 8 groups, d_state 128, 3 MLP-only layers, 1 attention layer);
* qwen3.5-2b, granite-4.0-h-1b, nemotron-nano-9b-v2: the built-in profiles of the real models (measured in
  session 7 on the same build);
* falcon-h1-0.5b (a parallel hybrid: every one of its 36 layers in llama_kv_cache *and* llama_memory_recurrent) and
  qwen3.5-35b-a3b (qwen35moe: the Gated DeltaNet hybrid with a MoE block on every layer; its weight-less GGUF holds
  the 34,660,610,688 parameters): the built-in profiles;
* lfm2-8b-a1b (lfm2moe, session 10: LFM2's short convolution with 32 experts after 2 dense layers; its weight-less
  GGUF holds the 8,339,930,560 values of the profile's params): the built-in profile.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvplan.caches.llamacpp import llamacpp_cache
from kvplan.engine.formats import format_from_name
from kvplan.importers.hf import profile_from_hf_file
from kvplan.profiles.catalog import Catalog
from kvplan.profiles.runtime import LlamaCppSpec

DATA = Path(__file__).resolve().parents[1] / "data"
MIB = 2**20
# state bytes of one recurrent cell (one sequence), by hand:
# lfm2-1.2b: 10 conv layers × 2,048 channels × (L_cache 3 − 1) × 4 B (f32) = 163,840 B
# synthetic granite: 9 Mamba2 layers × (r: 3 × (3,072 + 2 · 128) × 4 = 39,936 B + s: 128 × 3,072 × 4 = 1,572,864 B)
#   = 9 × 1,612,800 = 14,515,200 B
# synthetic qwen3.5: 6 Gated DeltaNet layers × (r: 3 × (2 · 16 · 128 + 16 · 128) × 4 = 73,728 B
#   + s: 128 × (16 · 128) × 4 = 1,048,576 B) = 6 × 1,122,304 = 6,733,824 B
# synthetic nemotron_h: 4 Mamba2 layers × (r: 3 × (2,048 + 2 · 8 · 128) × 4 = 49,152 B + s: 128 × 2,048 × 4
#   = 1,048,576 B) = 4 × 1,097,728 = 4,390,912 B (the MLP-only layers keep nothing)
# qwen3.5-2b (built-in, session 7): 18 Gated DeltaNet layers × (r: 3 × (2 · 16 · 128 + 16 · 128) × 4 = 73,728 B
#   + s: 128 × 2,048 × 4 = 1,048,576 B) = 18 × 1,122,304 = 20,201,472 B
# granite-4.0-h-1b: 36 Mamba2 layers × (r: 3 × (3,072 + 2 · 1 · 128) × 4 = 39,936 B + s: 128 × 3,072 × 4
#   = 1,572,864 B) = 36 × 1,612,800 = 58,060,800 B
# nemotron-nano-9b-v2: 27 Mamba2 layers of 128 heads × 80 = 10,240 × (r: 3 × (10,240 + 2 · 8 · 128) × 4 = 147,456 B
#   + s: 128 × 10,240 × 4 = 5,242,880 B) = 27 × 5,390,336 = 145,539,072 B
# falcon-h1-0.5b: 36 Mamba2 layers of 24 heads × 64 = 1,536 × (r: 3 × (1,536 + 2 · 1 · 128) × 4 = 21,504 B
#   + s: 128 × 1,536 × 4 = 786,432 B) = 36 × 807,936 = 29,085,696 B — and every one of them holds KV too
# qwen3.5-35b-a3b: 30 Gated DeltaNet layers × (r: 3 × (2 · 16 · 128 + 32 · 128) × 4 = 98,304 B
#   + s: 128 × (32 · 128) × 4 = 2,097,152 B) = 30 × 2,195,456 = 65,863,680 B
# lfm2-8b-a1b (lfm2moe, session 10): 18 conv layers × 2,048 channels × (3 − 1) × 4 B = 294,912 B (no s rows)
STATE_PER_CELL = {"lfm2-1.2b": 163_840, "synthetic-granitemoehybrid": 14_515_200, "synthetic-qwen3_5_text": 6_733_824,
                  "synthetic-nemotron_h": 4_390_912, "qwen3.5-2b": 20_201_472, "granite-4.0-h-1b": 58_060_800,
                  "granite-4.0-h-tiny": 58_060_800,
                  "nemotron-nano-9b-v2": 145_539_072, "falcon-h1-0.5b": 29_085_696, "qwen3.5-35b-a3b": 65_863_680,
                  "lfm2-8b-a1b": 294_912}
BUILT_IN = ("lfm2-1.2b", "qwen3.5-2b", "granite-4.0-h-1b", "nemotron-nano-9b-v2", "falcon-h1-0.5b", "qwen3.5-35b-a3b",
            "granite-4.0-h-tiny", "lfm2-8b-a1b")
# KV bytes per cell by hand at f16: falcon-h1-0.5b 36 layers × 2 × 2 heads × 64 × 2 B = 18,432;
# qwen3.5-35b-a3b 10 layers × 2 × 2 heads × 256 × 2 B = 20,480 (q8_0: 34 B per 32 values, × 34/64);
# lfm2-8b-a1b 6 layers × 2 × 8 heads × 64 × 2 B = 12,288
KV_PER_CELL_F16 = {"falcon-h1-0.5b": 18_432, "qwen3.5-35b-a3b": 20_480, "lfm2-8b-a1b": 12_288}


def _profile(name):
    if name in BUILT_IN:
        return Catalog().model(name).profile
    return profile_from_hf_file(DATA / "hf_configs_other" / f"{name}.json").model


RUNS = [(name, run) for name in STATE_PER_CELL
        for run in json.loads((DATA / "llamacpp" / "state" / f"{name}.json").read_text())["runs"]]


def _cache(name, p):
    fmt = format_from_name(p["type_k"])
    spec = LlamaCppSpec(kv_unified=p["kv_unified"], ubatch=p["n_ubatch"], batch=p["n_batch"],
                        flash_attn="on" if p["flash_attn"] else "off")
    return llamacpp_cache(spec, _profile(name), fmt, fmt)


def test_the_data_covers_the_grid():
    for name in STATE_PER_CELL:
        runs = [r for n, r in RUNS if n == name]
        grid = {(r["params"]["n_ctx"], r["params"]["type_k"], r["params"]["n_seq_max"], r["params"]["kv_unified"])
                for r in runs}
        assert len(runs) == len(grid) == 36 and all(r["returncode"] == 0 for r in runs)


@pytest.mark.parametrize("name, run", RUNS, ids=lambda x: x if isinstance(x, str) else
                         "{n_ctx}-{type_k}-np{n_seq_max}-u{kv_unified:d}".format(**x["params"]))
def test_kv_and_recurrent_state_equal_llama_cpp(name, run):
    p = run["params"]
    c = _cache(name, p)
    n = p["n_seq_max"]
    state = c.state_bytes(p["n_ctx"], n)
    # one f32 cell per sequence whatever the cache type and unified KV
    assert state == STATE_PER_CELL[name] * n
    rs_line = next(ln for ln in run["log"] if "RS buffer size" in ln)
    assert rs_line.rstrip().endswith(f"{state / MIB:.2f} MiB"), rs_line
    kv = c.kv_bytes(p["n_ctx"], n) - state
    assert round(kv / MIB, 2) == run["logged_mib"]["KV_mib"]["CPU"]
    # the context buffer type holds exactly the KV cache and the recurrent state (llama_get_memory_breakdown)
    assert c.kv_bytes(p["n_ctx"], n) == run["breakdown_bytes"]["CPU"]["context"]


@pytest.mark.parametrize("name", sorted(KV_PER_CELL_F16))
def test_the_new_hybrids_kv_by_hand(name):
    runs = [r for n, r in RUNS if n == name and r["params"]["n_seq_max"] == 1]
    for run in runs:
        p = run["params"]
        per_cell = KV_PER_CELL_F16[name] * (34 if p["type_k"] == "q8_0" else 64) // 64
        kv = run["breakdown_bytes"]["CPU"]["context"] - STATE_PER_CELL[name]
        assert kv == p["n_ctx"] * per_cell  # -c is a multiple of 256: no padding
