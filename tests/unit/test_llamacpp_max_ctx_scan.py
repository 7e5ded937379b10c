"""Under llama.cpp, max context is the largest -c that fits even where the compute buffer shrinks as -c grows
(Gemma 3: the allocator lands tensors in other holes), not the first crossing a bisection finds."""

from __future__ import annotations

import pytest

from kvplan.caches.buffers import llamacpp_buffers
from kvplan.engine import ggml_alloc, llamacpp_graph
from kvplan.plan import Scenario, evaluate
from kvplan.profiles.catalog import Catalog
from kvplan.profiles.runtime import runtime_spec

# The shrinking buffer below was found on build 0c1e57098's graph (a whole micro-batch of logits). The process's
# baseline now counts in the total too, so each reserve is lowered by it: the budget left for the cache and the
# buffers is the one the figures were found at.
LLAMA = runtime_spec("llama.cpp", build="0c1e57098")


def _process_bytes(model):
    from kvplan.engine import llamacpp_process as lp

    return lp.process_parts(0, 0, mmap=True, repack=True, n_vocab=Catalog().model(model).profile.vocab_size).extra_bytes


@pytest.fixture(scope="module")
def pixel8():
    return Catalog().device("pixel8").profile


def _ev(device, model, ctx, os_reserve):
    return evaluate(Scenario(device, Catalog().model(model).profile, ctx, runtime=LLAMA,
                             os_reserve_bytes=os_reserve - _process_bytes(model)))


def test_gemma3_fits_again_after_its_compute_buffer_shrinks(pixel8):
    # budget 8e9 − 6,639,829,440 = 1,360,170,560 B. Measured with kvplan's replay: -c 61,440 fits (buffers
    # 544,999,424 B); -c 61,441 takes a new 256-cell block and its buffers grow to 587,466,752 B: over; at
    # -c 71,680 the buffers are back to 542,640,128 B and the total 1,359,253,056 B fits with 917,504 B to spare
    reserve = 6_639_829_440
    assert _ev(pixel8, "gemma-3-1b", 61_441, reserve).verdict.value == "over"
    at = _ev(pixel8, "gemma-3-1b", 71_680, reserve)
    assert at.headroom_bytes == 917_504
    assert at.max_ctx == 71_680
    assert _ev(pixel8, "gemma-3-1b", 71_681, reserve).headroom_bytes < 0


@pytest.mark.parametrize("model, reserve", [("gemma-3-1b", 6_639_829_440), ("gemma-3-4b", 3_365_419_008),
                                            ("llama-3.2-1b", 6_000_000_000)])
def test_max_ctx_fits_and_no_later_block_does(pixel8, model, reserve):
    ev = _ev(pixel8, model, 1024, reserve)
    assert _ev(pixel8, model, ev.max_ctx, reserve).headroom_bytes >= 0
    # every later block end up to 64 blocks on: over (the search's own bound is the cache plus the buffers' floor)
    start = ev.max_ctx // 256 * 256 + 256
    assert all(_ev(pixel8, model, c, reserve).headroom_bytes < 0 for c in range(start, start + 64 * 256, 256))


@pytest.mark.parametrize("ctx", [4096, 61_440, 61_441, 71_680])
def test_the_buffers_floor_is_below_the_buffers_at_that_and_later_contexts(ctx):
    model = Catalog().model("gemma-3-1b").profile
    floor = llamacpp_buffers(LLAMA, model, ctx, 1, floor=True).total_bytes
    later = [llamacpp_buffers(LLAMA, model, c, 1).total_bytes for c in (ctx, ctx + 256, ctx + 10_240)]
    assert floor <= min(later)
    assert floor > 0


def test_largest_tensor_is_a_lower_bound_on_the_peak():
    shape = {"graph": "llama", "T": 512, "E": 2048, "F": 8192, "V": 128_256, "layers": 2, "H": 32, "Hk": 8, "Dk": 64,
             "Dv": 64, "caches": (4096,), "cache_of_layer": lambda il: 0, "n_stream": 1, "qkv_order": "QVK",
             "k_rot": 0, "v_rot": 0, "kv_lora_rank": 0, "rope_dim": 0, "n_expert": 0, "n_expert_used": 0,
             "F_expert": 0, "F_shared": 0, "dense_layers": 2}
    graph = llamacpp_graph.reserve_graph(shape, True)
    # the logits, 128,256 × 512 f32 = 262,668,288 B, are the largest tensor of this graph
    assert ggml_alloc.largest_tensor_bytes(graph) == 128_256 * 512 * 4
    assert ggml_alloc.largest_tensor_bytes(graph) <= ggml_alloc.peak_bytes(graph)
