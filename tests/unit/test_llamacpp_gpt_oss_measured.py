"""gpt-oss-20b's KV cache against llama.cpp build 11434's own allocation (tests/data/llamacpp/swa/gpt-oss-20b.json,
written by tests/harness/state_buffers.py on a weight-less GGUF from tests/harness/make_gguf.py gpt-oss-20b: the
tensors and metadata llama_model_openai_moe loads). 36 runs: n_ctx 512…32,768 × f16/q8_0 × (1 sequence; 4; 4
unified), flash attention on, -b 2048 -ub 512, --swa-full off.

llama.cpp builds two caches (llama_kv_cache_iswa): the 12 odd (full-attention) layers get the whole context, the 12
even (sliding, load_swa_pattern(ml, 2)) layers get pad(min(n_ctx_seq, 128 · (unified ? np : 1) + n_ubatch), 256)
cells. A cell of either is 12 layers · 2 (K, V) · 8 KV heads · 64 values: 24,576 B in f16, 13,056 B in q8_0
(64 values = 2 blocks of 34 B = 68 B a row).
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

DATA = json.loads((Path(__file__).resolve().parents[1] / "data" / "llamacpp" / "swa" / "gpt-oss-20b.json")
                  .read_text())
RUNS = DATA["runs"]
SIZE_LINE = re.compile(r"llama_kv_cache: size = +(?P<mib>[0-9.]+) MiB \( *(?P<cells>\d+) cells, +(?P<layers>\d+) layers")
MIB = 2**20


def test_the_data_covers_the_grid():
    assert "11434" in json.dumps(DATA["llama_cpp"]) and len(RUNS) == 36
    assert all(r["returncode"] == 0 for r in RUNS)


@pytest.mark.parametrize("run", RUNS, ids=lambda r: "{n_ctx}-{type_k}-np{n_seq_max}-u{kv_unified:d}".format(**r["params"]))
def test_kv_bytes_and_cells_equal_llama_cpp(run):
    p = run["params"]
    fmt = format_from_name(p["type_k"])
    spec = LlamaCppSpec(kv_unified=p["kv_unified"], ubatch=p["n_ubatch"], batch=p["n_batch"], flash_attn="on")
    cache = llamacpp_cache(spec, Catalog().model("gpt-oss-20b").profile, fmt, fmt)
    n = p["n_seq_max"]
    assert cache.kv_bytes(p["n_ctx"], n) == run["breakdown_bytes"]["CPU"]["context"]
    logged = [(int(m["cells"]), int(m["layers"]), float(m["mib"])) for m in map(SIZE_LINE.search, run["log"]) if m]
    # each cache's cells of one stream, its layers and its K + V over every stream, as the size lines print them
    ours = [(part["cells"], part["layers"], round((part["k_bytes"] + part["v_bytes"]) / MIB, 2))
            for part in cache.sub_caches(p["n_ctx"], n)]
    assert ours == logged


def test_one_point_by_hand():
    # -c 4096 -np 1 f16: full layers 4,096 cells × 24,576 B = 100,663,296 B; sliding layers pad(min(4096, 128 + 512),
    # 256) = 768 cells × 24,576 B = 18,874,368 B; in all 119,537,664 B
    run = next(r for r in RUNS if r["params"]["n_ctx"] == 4096 and r["params"]["type_k"] == "f16"
               and r["params"]["n_seq_max"] == 1)
    assert run["breakdown_bytes"]["CPU"]["context"] == 4096 * 24_576 + 768 * 24_576 == 119_537_664
