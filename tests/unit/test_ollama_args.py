"""Ollama v0.32.15's llama-server arguments, each setting with the rule it follows (kvplan/engine/ollama_args.py),
and bytes equal to llama.cpp's cache model for those arguments (the translation is what is tested here)."""

from __future__ import annotations

import pytest

from kvplan.caches.llamacpp import llamacpp_cache
from kvplan.caches.ollama import llamacpp_plan, ollama_cache
from kvplan.engine.formats import format_from_name
from kvplan.engine.ollama_args import ollama_launch
from kvplan.profiles.catalog import Catalog
from kvplan.profiles.runtime import LlamaCppSpec
from kvplan.render.ollama_command import llama_server_args

GiB = 2**30
BATCH = ("-b", "512", "-ub", "512")  # api/types.go DefaultOptions: NumBatch 512 → appendBatchArgs -b/-ub


@pytest.mark.parametrize("kw, args", [
    # 1. 16 GiB < 23 GiB → default num_ctx 4096 (server/routes.go 2055-2056); -c 4096 × 1; FA auto (supported GPU)
    (dict(gpu_memory_bytes=16 * GiB), ("-c", "4096", "-np", "1", "--flash-attn", "auto") + BATCH),
    # 2. 23 GiB tier → 32768 (routes.go 2053-2054)
    (dict(gpu_memory_bytes=23 * GiB), ("-c", "32768", "-np", "1", "--flash-attn", "auto") + BATCH),
    # 3. just under 23 GiB → 4096
    (dict(gpu_memory_bytes=23 * GiB - 1), ("-c", "4096", "-np", "1", "--flash-attn", "auto") + BATCH),
    # 4. 47 GiB tier → 262144 (routes.go 2051-2052)
    (dict(gpu_memory_bytes=47 * GiB), ("-c", "262144", "-np", "1", "--flash-attn", "auto") + BATCH),
    # 5. explicit num_ctx wins over the tier
    (dict(gpu_memory_bytes=64 * GiB, num_ctx_tokens=8192), ("-c", "8192", "-np", "1", "--flash-attn", "auto") + BATCH),
    # 6. OLLAMA_CONTEXT_LENGTH replaces the tier default (api/types.go 1115)
    (dict(gpu_memory_bytes=8 * GiB, context_length_env=16384),
     ("-c", "16384", "-np", "1", "--flash-attn", "auto") + BATCH),
    # 7. parallel 4: -c = 8192 × 4 = 32768 (llm/llama_server.go 375-376)
    (dict(gpu_memory_bytes=8 * GiB, num_ctx_tokens=8192, num_parallel=4),
     ("-c", "32768", "-np", "4", "--flash-attn", "auto") + BATCH),
    # 8. forced single slot (server/sched.go 505-510): qwen3next with OLLAMA_NUM_PARALLEL=4 → -np 1
    (dict(gpu_memory_bytes=8 * GiB, num_parallel=4, architecture="qwen3next"),
     ("-c", "4096", "-np", "1", "--flash-attn", "auto") + BATCH),
    # 9. OLLAMA_KV_CACHE_TYPE=Q8_0 lowercased (llm/server.go 118) → both cache types (llama_server.go 393-396)
    (dict(gpu_memory_bytes=8 * GiB, kv_cache_type="Q8_0"),
     ("-c", "4096", "-np", "1", "--cache-type-k", "q8_0", "--cache-type-v", "q8_0", "--flash-attn", "auto") + BATCH),
    # 10. OLLAMA_FLASH_ATTENTION=0 → off; 11. =1 → on (llama_server.go 597-621)
    (dict(gpu_memory_bytes=8 * GiB, flash_attention=False), ("-c", "4096", "-np", "1", "--flash-attn", "off") + BATCH),
    (dict(gpu_memory_bytes=8 * GiB, flash_attention=True), ("-c", "4096", "-np", "1", "--flash-attn", "on") + BATCH),
    # 12. unset on a GPU without flash attention (ml.FlashAttentionSupported false) → off
    (dict(gpu_memory_bytes=8 * GiB, flash_supported=False), ("-c", "4096", "-np", "1", "--flash-attn", "off") + BATCH),
    # 13. num_ctx above the training context is lowered to it (llm/server.go 112-116)
    (dict(gpu_memory_bytes=64 * GiB, n_ctx_train_tokens=40960),
     ("-c", "40960", "-np", "1", "--flash-attn", "auto") + BATCH),
    # 14. use_mmap false → --load-mode none (llama_server.go 627-637); num_batch 1024
    (dict(gpu_memory_bytes=8 * GiB, use_mmap=False, num_batch_tokens=1024),
     ("-c", "4096", "-np", "1", "--load-mode", "none", "--flash-attn", "auto", "-b", "1024", "-ub", "1024")),
    # 15. embedding: parallel 1 (sched.go 500-503), batch min(512, 256 × 1) = 256 (llama_server.go 561-588)
    (dict(gpu_memory_bytes=8 * GiB, num_ctx_tokens=256, num_parallel=3, embedding=True),
     ("-c", "256", "-np", "1", "--flash-attn", "auto", "--embedding", "-b", "256", "-ub", "256")),
])
def test_llama_server_args(kw, args):
    assert llama_server_args(ollama_launch(**kw)) == args


def test_ctx_is_per_sequence_and_the_spec_follows_the_args():
    launch = ollama_launch(gpu_memory_bytes=8 * GiB, num_ctx_tokens=2048, num_parallel=3, flash_attention=True)
    plan = llamacpp_plan(launch)
    # -c 2048 × 3 = 6144, -np 3, -b/-ub 512 (Ollama's), flash on, unified off (not passed)
    assert (plan.ctx, plan.sequences) == (6144, 3)
    s = plan.spec
    assert (s.parallel, s.batch, s.ubatch, s.flash_attn, s.kv_unified, s.swa_full) == (3, 512, 512, "on", False, False)


@pytest.mark.parametrize("kv_type", ["f16", "q8_0"])
def test_bytes_equal_llamacpp_for_the_same_args(kv_type):
    model = Catalog().model("qwen3-1.7b").profile
    launch = ollama_launch(gpu_memory_bytes=8 * GiB, num_ctx_tokens=4096, num_parallel=2, kv_cache_type=kv_type,
                           flash_attention=True)
    plan = llamacpp_plan(launch)
    fmt = format_from_name(kv_type)
    direct = llamacpp_cache(LlamaCppSpec(parallel=2, ubatch=512, batch=512, flash_attn="on"),
                            model, fmt, fmt)
    assert ollama_cache(plan, model).kv_bytes(plan.ctx, plan.sequences) == direct.kv_bytes(8192, 2)
    if kv_type == "f16":
        # qwen3-1.7b: 28 layers × 8 KV heads × 128 × 2 B × (K+V) = 114,688 B per cell;
        # -c 8192 -np 2 → 2 streams × pad(4096) = 8192 cells → 8192 × 114,688 = 939,524,096 B
        assert direct.kv_bytes(8192, 2) == 939_524_096


def test_monotone_in_num_ctx_and_linear_in_parallel_cells():
    for ctx in (256, 512, 4096, 8192):
        a, b = (ollama_launch(gpu_memory_bytes=0, num_ctx_tokens=ctx, num_parallel=n) for n in (1, 4))
        assert b.n_ctx_tokens == 4 * a.n_ctx_tokens == 4 * ctx


def test_the_ollama_cache_over_arrays_equals_it_point_by_point():
    """A sweep's arrays (num_ctx × slots) price as each point does: llama.cpp at -c min(num_ctx, 40960) × slots."""
    import numpy as np

    from kvplan.caches.ollama import ollama_cache
    from kvplan.profiles.runtime import OllamaSpec

    model = Catalog().model("qwen3-4b").profile  # trained to 40,960
    cache = ollama_cache(OllamaSpec(), model)
    direct = llamacpp_cache(OllamaSpec().llamacpp, model)
    ctx = np.array([1, 255, 256, 4097, 40960, 65536])
    for n in (1, 2, 4):
        grid = cache.kv_bytes(ctx, np.full(ctx.shape, n))
        assert list(grid) == [cache.kv_bytes(int(c), n) for c in ctx]
        assert list(grid) == [direct.kv_bytes(min(int(c), 40960) * n, n) for c in ctx]
    # num_ctx 256 with 4 slots: -c 1024 → 4 streams × pad(256) cells × 147,456 B = 150,994,944 B
    assert cache.kv_bytes(256, 4) == 4 * 256 * 147_456 == 150_994_944


def test_the_largest_num_ctx_is_the_largest_fitting_and_stops_at_training():
    from kvplan.caches.ollama import ollama_cache
    from kvplan.profiles.runtime import OllamaSpec

    model = Catalog().model("qwen3-4b").profile
    cache = ollama_cache(OllamaSpec(), model)
    allowance = 1_000_000_000  # 1 GB: pad(c·2, 256) / 2 … cells of 147,456 B
    for n in (1, 2):
        best = cache.max_ctx(allowance, n)
        assert cache.kv_bytes(best, n) <= allowance < cache.kv_bytes(best + 1, n)
    assert cache.max_ctx(10**15, 1) == 40960  # lowered past the training context: the search stops there
