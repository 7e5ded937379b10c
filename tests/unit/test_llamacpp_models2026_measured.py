"""The KV cache of the 2026 profiles against llama.cpp build 11434's own allocation (tests/data/llamacpp/models2026/,
written by tests/harness/state_buffers.py on weight-less GGUFs from tests/harness/make_gguf.py: the tensors and
metadata each architecture's llama.cpp loader reads). 36 runs a model: n_ctx 512…32,768 × f16/q8_0 × (1 sequence;
4; 4 unified), flash attention on, -b 2048 -ub 512, --swa-full off.

gpt-oss-20b:
llama.cpp builds two caches (llama_kv_cache_iswa): the 12 odd (full-attention) layers get the whole context, the 12
even (sliding, load_swa_pattern(ml, 2)) layers get pad(min(n_ctx_seq, 128 · (unified ? np : 1) + n_ubatch), 256)
cells. A cell of either is 12 layers · 2 (K, V) · 8 KV heads · 64 values: 24,576 B in f16, 13,056 B in q8_0
(64 values = 2 blocks of 34 B = 68 B a row).

gemma-3n-e2b and gemma-3n-e4b (make_gguf.py's gemma3n builder: the tensors llama_model_gemma3n::load_arch_tensors
loads): layers from n_layer_kv_from_start 20 on reuse layer 18 (sliding) or 19 (full) and have no
tensor; of layers 0–19 the 4 full ones get the whole context, the 16 sliding ones pad(min(n_ctx_seq, 512 · (unified ?
np : 1) + n_ubatch), 256) cells. A cell of the full cache is 4 · 2 · 2 · 256 · 2 B = 8,192 B in f16, of the sliding
cache 16 · 2,048 = 32,768 B; in q8_0 a 512-value row is 16 blocks of 34 B = 544 B.

gemma-4-e2b (make_gguf.py's gemma4 builder: the tensors llama_model_gemma4::load_arch_tensors loads, no attn_k /
attn_v on the shared layers): n_layer_kv_from_start = 35 − 20 = 15, layers 15–34 reuse layer 13 (sliding) or 14
(full); of layers 0–14 the 3 full ones (key_length 512) get the whole context, the 12 sliding ones (key_length_swa
256) the window's cells. A full cell is 3 · 2 · 1 · 512 · 2 B = 6,144 B in f16, a sliding one 12 · 2 · 256 · 2 =
12,288 B; in q8_0 a 512-value row is 544 B and a 256-value row 272 B.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from kvplan.caches.llamacpp import llamacpp_cache
from kvplan.engine.formats import format_from_name
from kvplan.profiles.catalog import Catalog
from kvplan.profiles.runtime import LlamaCppSpec

HERE = Path(__file__).resolve().parents[1] / "data" / "llamacpp" / "models2026"
# f16 bytes of one cell, by hand (q8_0: 34 B per 32 values instead of 64 B)
# qwen3-30b-a3b: 48 layers · 2 · 4 KV heads · 128 · 2 B = 98,304 B; smollm3-3b: 36 · 2 · 4 · 128 · 2 = 73,728 B (its
# NoPE layers cache K and V as the others); phi-4-mini: 32 · 2 · 8 · 128 · 2 = 131,072 B (llama.cpp keeps no window
# for phi3); gpt-oss-20b: below
CELL_F16 = {"qwen3-30b-a3b": 98_304, "smollm3-3b": 73_728, "phi-4-mini": 131_072}
# gemma-3n-e2b / e4b: the shared-KV layers (20–29 / 20–34) have no tensor; below
GEMMA3N = ("gemma-3n-e2b", "gemma-3n-e4b")
MODELS = ("gpt-oss-20b", *CELL_F16, *GEMMA3N, "gemma-4-e2b")
DOCS = {m: json.loads((HERE / f"{m}.json").read_text()) for m in MODELS}
DATA = DOCS["gpt-oss-20b"]
RUNS = [(m, r) for m in MODELS for r in DOCS[m]["runs"]]
SIZE_LINE = re.compile(r"llama_kv_cache: size = +(?P<mib>[0-9.]+) MiB \( *(?P<cells>\d+) cells, +(?P<layers>\d+) layers")
MIB = 2**20


def test_the_data_covers_the_grid():
    for doc in DOCS.values():
        assert "11434" in json.dumps(doc["llama_cpp"]) and len(doc["runs"]) == 36
        assert all(r["returncode"] == 0 for r in doc["runs"])


@pytest.mark.parametrize("model, run", RUNS, ids=lambda x: x if isinstance(x, str) else
                         "{n_ctx}-{type_k}-np{n_seq_max}-u{kv_unified:d}".format(**x["params"]))
def test_kv_bytes_and_cells_equal_llama_cpp(model, run):
    p = run["params"]
    fmt = format_from_name(p["type_k"])
    spec = LlamaCppSpec(kv_unified=p["kv_unified"], ubatch=p["n_ubatch"], batch=p["n_batch"], flash_attn="on")
    cache = llamacpp_cache(spec, Catalog().model(model).profile, fmt, fmt)
    n = p["n_seq_max"]
    assert cache.kv_bytes(p["n_ctx"], n) == run["breakdown_bytes"]["CPU"]["context"]
    logged = [(int(m["cells"]), int(m["layers"]), float(m["mib"])) for m in map(SIZE_LINE.search, run["log"]) if m]
    # each cache's cells of one stream, its layers and its K + V over every stream, as the size lines print them
    ours = [(part["cells"], part["layers"], round((part["k_bytes"] + part["v_bytes"]) / MIB, 2))
            for part in cache.sub_caches(p["n_ctx"], n)]
    assert ours == logged


@pytest.mark.parametrize("model", CELL_F16)
def test_one_full_context_cell_by_hand(model):
    run = next(r for m, r in RUNS if m == model and r["params"]["n_ctx"] == 4096 and r["params"]["type_k"] == "f16"
               and r["params"]["n_seq_max"] == 1)
    assert run["breakdown_bytes"]["CPU"]["context"] == 4096 * CELL_F16[model]


def test_one_point_by_hand():
    # -c 4096 -np 1 f16: full layers 4,096 cells × 24,576 B = 100,663,296 B; sliding layers pad(min(4096, 128 + 512),
    # 256) = 768 cells × 24,576 B = 18,874,368 B; in all 119,537,664 B
    run = next(r for m, r in RUNS if m == "gpt-oss-20b" and r["params"]["n_ctx"] == 4096 and r["params"]["type_k"] == "f16"
               and r["params"]["n_seq_max"] == 1)
    assert run["breakdown_bytes"]["CPU"]["context"] == 4096 * 24_576 + 768 * 24_576 == 119_537_664


@pytest.mark.parametrize("model", GEMMA3N)
def test_gemma3n_by_hand_and_the_reused_layers(model):
    # -c 32768 -np 1 f16: 32,768 cells × 8,192 B + pad(min(32,768, 512 + 512), 256) = 1,024 cells × 32,768 B =
    # 268,435,456 + 33,554,432 = 301,989,888 B, for E2B and E4B alike (both keep layers 0–19)
    run = next(r for m, r in RUNS if m == model and r["params"]["n_ctx"] == 32768 and r["params"]["type_k"] == "f16"
               and r["params"]["n_seq_max"] == 1)
    assert run["breakdown_bytes"]["CPU"]["context"] == 32768 * 8192 + 1024 * 32768 == 301_989_888
    # q8_0: a row of 512 values is 544 B, a layer's cell 1,088 B: 32,768 · 4 · 1,088 + 1,024 · 16 · 1,088
    run = next(r for m, r in RUNS if m == model and r["params"]["n_ctx"] == 32768 and r["params"]["type_k"] == "q8_0"
               and r["params"]["n_seq_max"] == 1)
    assert run["breakdown_bytes"]["CPU"]["context"] == 32768 * 4 * 1088 + 1024 * 16 * 1088
    # llama.cpp's own log: which layer each shared layer reuses, against the profile's schedule
    reuse = dict((int(a), int(b)) for a, b in (re.search(r"layer +(\d+): reuse layer (\d+)", ln).groups()
                                                  for ln in run["log"] if "reuse layer" in ln))
    schedule = Catalog().model(model).profile.schedule
    shared = {i: schedule.layer(i).source_layer for i in range(20, schedule.layers)}
    assert reuse == shared and set(shared.values()) == {18, 19}
    assert sum("does not have KV cache" in ln for ln in run["log"]) == 2 * (schedule.layers - 20)  # both caches


def test_gemma4_by_hand_and_the_reused_layers():
    # -c 32768 -np 1 f16: 32,768 cells × 6,144 B + pad(min(32,768, 512 + 512), 256) = 1,024 cells × 12,288 B =
    # 201,326,592 + 12,582,912 = 213,909,504 B
    runs = [r for m, r in RUNS
            if m == "gemma-4-e2b" and r["params"]["n_ctx"] == 32768 and r["params"]["n_seq_max"] == 1]
    f16 = next(r for r in runs if r["params"]["type_k"] == "f16")
    assert f16["breakdown_bytes"]["CPU"]["context"] == 32768 * 6144 + 1024 * 12288 == 213_909_504
    # q8_0: a full layer's cell 2 · 544 = 1,088 B, a sliding one's 2 · 272 = 544 B: 32,768 · 3 · 1,088 + 1,024 · 12
    # · 544 = 106,954,752 + 6,684,672 = 113,639,424 B
    q8 = next(r for r in runs if r["params"]["type_k"] == "q8_0")
    assert q8["breakdown_bytes"]["CPU"]["context"] == 32768 * 3 * 1088 + 1024 * 12 * 544 == 113_639_424
    # llama.cpp's own log: which layer each shared layer reuses, against the profile's schedule
    reuse = dict((int(a), int(b)) for a, b in (re.search(r"layer +(\d+): reuse layer (\d+)", ln).groups()
                                                  for ln in q8["log"] if "reuse layer" in ln))
    schedule = Catalog().model("gemma-4-e2b").profile.schedule
    shared = {i: schedule.layer(i).source_layer for i in range(15, 35)}
    assert reuse == shared and set(shared.values()) == {13, 14}
