"""`--runtime ollama` against the real llama-server: for 15 Ollama settings, the arguments kvplan derives from
Ollama v0.32.15's rules were passed to llama-server build 11434 (tests/harness/ollama_llamaserver.py, CPU, weight-less
GGUFs with the real shapes), and llama.cpp's own log lines recorded (tests/data/runtimes/ollama_llamaserver.json).
kvplan's KV cache, recurrent state, output buffer and compute buffer (replayed with ggml's allocator over kvplan's
copy of build 11434's reserve graph, LFM2's short-convolution graph included, docs/runtimes.md) equal them to the
0.01 MiB llama.cpp prints, on every row."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvplan.engine.ollama_args import ollama_launch
from kvplan.plan import Scenario, evaluate
from kvplan.profiles.catalog import Catalog
from kvplan.profiles.runtime import OllamaSpec
from kvplan.render.ollama_command import llama_server_args

DATA = json.loads((Path(__file__).parents[1] / "data" / "runtimes" / "ollama_llamaserver.json").read_text())
ROWS = DATA["rows"]
MiB = 2**20
TRAIN = {"qwen3-4b": 40960, "lfm2-1.2b": 128000}


def _mib(n_bytes: int) -> float:
    return round(n_bytes / MiB, 2)


def test_the_data_is_what_it_says():
    assert DATA["ollama"] == "v0.32.15" and "build 11434" in DATA["llama_server"]
    assert len(ROWS) >= 12


@pytest.mark.parametrize("row", ROWS, ids=[r["id"] for r in ROWS])
def test_arguments_and_bytes_equal_llama_servers(row):
    settings = row["ollama"]
    launch = ollama_launch(n_ctx_train_tokens=TRAIN[row["model"]], **settings)
    # the translation has not drifted from what was run
    assert list(llama_server_args(launch)) == row["llama_server_args"]
    spec = OllamaSpec(num_parallel=settings.get("num_parallel"),
                      kv_cache_type=(settings.get("kv_cache_type") or "").lower() or None,
                      flash_attention=settings.get("flash_attention"),
                      num_batch=settings.get("num_batch_tokens", 512), use_mmap=settings.get("use_mmap", True))
    catalog = Catalog()
    s = Scenario(catalog.device("pixel8").profile, catalog.model(row["model"]).profile, launch.num_ctx_tokens,
                 runtime=spec)
    ev = evaluate(s)
    cache = ev.cache
    state = int(cache.state_bytes(s.ctx, s.sequences))
    assert [_mib(ev.kv_bytes - state)] == row["kv_cache_mib"]
    if row["recurrent_mib"]:
        assert [_mib(state)] == row["recurrent_mib"]
    logged = row["buffers_mib"]
    compute = logged["sched_reserve CPU compute"]
    assert abs(ev.compute_buffer_bytes / MiB - compute) <= 0.005 + 1e-9  # the log's 0.01 MiB rounding
    assert _mib(ev.output_buffer_bytes) == logged["llama_context CPU  output"]
