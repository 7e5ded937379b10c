"""fit suggests the runtime's own options where one makes the configuration fit (Ollama's slots, KV cache type and
num_batch, llama.cpp's -ub, MLX-LM's --max-kv-size), each with a `kvplan check` command that reproduces it."""

from __future__ import annotations

import json

import pytest

OLLAMA_VARIABLES = ("OLLAMA_NUM_PARALLEL", "OLLAMA_KV_CACHE_TYPE", "OLLAMA_FLASH_ATTENTION", "OLLAMA_CONTEXT_LENGTH")


@pytest.fixture(autouse=True)
def _no_ollama_environment(monkeypatch):
    for name in OLLAMA_VARIABLES:
        monkeypatch.delenv(name, raising=False)


def _changes(run, *args):
    r = run("fit", *args, "--format", "json")
    assert r.exit_code in (0, 1), r.stdout + r.stderr
    return {c["change"]: c for c in json.loads(r.stdout)["changes_to_fit"]}


def _reproduces(run, change):
    """The suggested command gives the change's own figures (the same scenario, evaluated by check)."""
    r = run(*change["check_command"][1:], "--format", "json")
    assert r.exit_code == 0, r.stdout + r.stderr
    d = json.loads(r.stdout)
    assert (d["memory"]["total_bytes"], d["verdict"]) == (change["total_bytes"], change["verdict"])
    return d


def test_ollama_slots_and_kv_cache_type(run):
    # qwen3-4b on pixel8, num_ctx 8192 × 4 slots: -c 32768 → 32768 cells × 147,456 B = 4,831,838,208 B of KV: over
    changes = _changes(run, "--device", "pixel8", "--model", "qwen3-4b", "--ctx", "8k", "--runtime", "ollama",
                       "--num-parallel", "4")
    slots = changes["sequences"]
    assert slots["value"] == 3 and "--num-parallel" not in slots["check_command"]  # --sequences 3 says it
    assert _reproduces(run, slots)["memory"]["kv_bytes"] == 3 * 8192 * 147_456
    q8 = changes["runtime.kv_cache_type"]
    assert q8["value"] == "q8_0" and q8["check_command"][-2:] == ["--kv-cache-type", "q8_0"]
    # q8_0: 36 layers · 2 · 8 heads · 136 B (128 values in 4 blocks of 34 B) = 78,336 B per cell × 32,768 cells
    assert _reproduces(run, q8)["memory"]["kv_bytes"] == 78_336 * 32_768
    assert "kv_bits" not in changes  # under Ollama the cache type is its own option, not kvplan's --kv-bits


def test_ollama_num_batch_shrinks_the_compute_buffer(run):
    # 26,112 tokens: 256 cells past the largest num_ctx that fits at -b/-ub 512 (25,856); a 256-token micro-batch's
    # smaller compute buffer makes room for them
    changes = _changes(run, "--device", "pixel8", "--model", "qwen3-4b", "--ctx", "26112", "--runtime", "ollama")
    batch = changes["runtime.num_batch"]
    assert batch["value"] == 256 and batch["check_command"][-2:] == ["--num-batch", "256"]
    d = _reproduces(run, batch)
    assert "-b 256 -ub 256" in d["runtime"]["command"]


def test_mlx_max_kv_size_with_its_caveat(run):
    changes = _changes(run, "--device", "pixel8", "--model", "qwen3-4b", "--ctx", "64k", "--runtime", "mlx-lm")
    rotating = changes["runtime.max_kv_size"]
    assert rotating["value"] == 8192 and "window_not_trained" in rotating["caveats"]
    assert rotating["check_command"][-2:] == ["--max-kv-size", "8192"]
    _reproduces(run, rotating)


def test_executorch_half_or_int8_cache(run):
    # llama-3.2-3b at 32k under ExecuTorch's fp32 default: 28 layers · 2 · 8 heads · 128 · 4 B = 229,376 B a token
    # × 32,768 = 7,516,192,768 B: over pixel8's 6 GB budget; fp16 halves it, int8 (69 B per head of 64 … here
    # 128 values + fp32 scale + int8 zero point = 133 B per head) more
    changes = _changes(run, "--device", "pixel8", "--model", "llama-3.2-3b", "--ctx", "32k", "--runtime", "executorch")
    half = changes["runtime.dtype_override"]
    assert half["value"] == "fp16" and half["check_command"][-2:] == ["--et-dtype", "fp16"]
    assert _reproduces(run, half)["memory"]["kv_bytes"] == 28 * 2 * 8 * 128 * 2 * 32768
    int8 = changes["runtime.quantize_kv_cache"]
    assert int8["value"] is True and int8["check_command"][-1] == "--quantize-kv-cache"
    assert _reproduces(run, int8)["memory"]["kv_bytes"] == 28 * 2 * 8 * (128 + 4 + 1) * 32768


def test_onnxruntime_genai_shared_buffer(run):
    # without a shared buffer the last step holds past (L − 1 rows) and present (L): (2L − 1) · 114,688 B at 24k
    changes = _changes(run, "--device", "pixel8", "--model", "llama-3.2-3b", "--ctx", "24k", "--runtime",
                       "onnxruntime-genai")
    shared = changes["runtime.past_present_share_buffer"]
    assert shared["check_command"][-1] == "--past-present-share-buffer"
    d = _reproduces(run, shared)
    assert d["memory"]["kv_peak_bytes"] == d["memory"]["kv_bytes"] == 24576 * 114_688
