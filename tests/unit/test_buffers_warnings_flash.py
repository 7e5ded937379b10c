"""llama.cpp's buffers in the total, the warnings of an evaluation, and the flash figures (peak vs steady)."""

from __future__ import annotations

import math

import pytest

from kvplan.engine import llamacpp_buffers as lb
from kvplan.plan import Knobs, build_scenario, evaluate
from kvplan.profiles.catalog import Catalog
from kvplan.profiles.runtime import runtime_spec
from kvplan.render.warnings import word


@pytest.fixture(scope="module")
def catalog():
    return Catalog()


def _ev(catalog, device, model, ctx, **knobs):
    return evaluate(build_scenario(catalog.device(device).profile, catalog.model(model).profile, ctx, Knobs(**knobs)))


def test_llamacpp_total_counts_compute_and_output_buffers(catalog):
    ev = _ev(catalog, "pixel8", "llama-2-7b", 4096, runtime=runtime_spec("llama.cpp"))
    # output buffer: n_vocab 32,000 float32 logits for 1 sequence = 32,000 · 4 = 128,000 B
    assert ev.output_buffer_bytes == 128_000
    # compute buffer: the engine's replay for -c 4096 -ub 512 -b 2048, flash attention on (auto on CPU), with
    # build 11434's reserve graph keeping the logits of -np = 1 row
    assert ev.compute_buffer_bytes == lb.compute_buffer_bytes(
        n_ctx=4096, n_ubatch=512, n_batch=2048, flash_attn=True, n_seq_max=1, kv_unified=False, layers=32,
        n_head=32, n_head_kv=32, head_dim=128, v_head_dim=128, hidden=4096, n_ff=11008, n_vocab=32000, n_outputs=1,
        build="b11434")
    # the total is the process's resident peak: weights, cache, the two buffers, the baseline (mmap: no copy,
    # the profile gives bits per weight so no tensor is known to be repacked)
    p = ev.process
    assert p.repacked_bytes == p.repack_copy_bytes == 0
    assert ev.total_bytes == (ev.weights_bytes + ev.kv_bytes + ev.compute_buffer_bytes + ev.output_buffer_bytes
                              + p.baseline_anon_bytes + p.baseline_file_bytes)
    assert ev.buffers_bytes == ev.compute_buffer_bytes + 128_000
    # 3,370,000,000 weights + 2,147,483,648 KV (4,096 cells · 524,288 B) + buffers + the process: its heap
    # 10,506,240 + 189 · 32,000 = 16,554,240 B and the binary's 15,568,896 B
    assert (p.baseline_anon_bytes, p.baseline_file_bytes) == (16_554_240, 15_568_896)
    assert ev.total_bytes == 3_370_000_000 + 2_147_483_648 + ev.buffers_bytes + 16_554_240 + 15_568_896
    assert ev.headroom_bytes == 6_000_000_000 - ev.total_bytes


def test_flash_attention_off_buffer_is_larger(catalog):
    on = _ev(catalog, "pixel8", "llama-2-7b", 8192, runtime=runtime_spec("llama.cpp"))
    off = _ev(catalog, "pixel8", "llama-2-7b", 8192, runtime=runtime_spec("llama.cpp", flash_attn="off"))
    # without flash attention the K·Q scores alone are n_head · n_kv · n_ubatch · 4 = 32 · 8,192 · 512 · 4 B
    assert off.compute_buffer_bytes >= 32 * 8192 * 512 * 4 > on.compute_buffer_bytes


def test_two_sequences_two_logit_rows(catalog):
    ev = _ev(catalog, "pixel8", "llama-3.2-1b", 8192, sequences=2, runtime=runtime_spec("llama.cpp"))
    assert ev.output_buffer_bytes == 2 * 128_256 * 4  # 2 rows of 128,256 float32 logits


def test_max_ctx_counts_the_buffers_exactly(catalog):
    ev = _ev(catalog, "pixel8", "llama-2-7b", 4096, runtime=runtime_spec("llama.cpp", flash_attn="off"))
    m = ev.max_ctx
    at, past = (_ev(catalog, "pixel8", "llama-2-7b", c, runtime=runtime_spec("llama.cpp", flash_attn="off"))
                for c in (m, m + 1))
    assert at.total_bytes <= at.budget_bytes < past.total_bytes


def test_ideal_says_what_llamacpp_would_add(catalog):
    ideal = _ev(catalog, "pixel8", "llama-2-7b", 4096)
    llama = _ev(catalog, "pixel8", "llama-2-7b", 4096, runtime=runtime_spec("llama.cpp"))
    assert ideal.buffers_bytes == 0 and ideal.total_bytes == 3_370_000_000 + 2_147_483_648
    assert ideal.llamacpp_buffers_bytes == llama.buffers_bytes
    assert llama.llamacpp_buffers_bytes is None


@pytest.mark.parametrize("model, window", [("mistral-7b-v0.1", 4096), ("phi-3-mini-4k", 2047)])
def test_window_llamacpp_ignores_is_a_warning(catalog, model, window):
    ev = _ev(catalog, "pixel8", model, 32768)
    (fact,) = [w for w in ev.warnings if w.kind == "window_ignored"]
    w = word(fact)
    assert f"{window:,}-token sliding window" in w
    if model == "mistral-7b-v0.1":
        # llama.cpp: 32,768 cells · 32 layers · 2 (K, V) · 8 heads · 128 · 2 B = 4,294,967,296 B; ideal keeps 4,096
        assert "4.29 GB of KV cache here, not 536.87 MB, over the budget" in w


def test_no_window_warning_where_it_does_not_matter(catalog):
    assert not _ev(catalog, "pixel8", "mistral-7b-v0.1", 4096).warnings  # within the window: same cache
    assert not _ev(catalog, "pixel8", "mistral-7b-v0.1", 32768, runtime=runtime_spec("llama.cpp")).warnings
    assert not _ev(catalog, "pixel8", "gemma-2-2b", 8192).warnings  # llama.cpp keeps gemma2's window


def test_context_far_past_training_is_a_warning(catalog):
    ev = _ev(catalog, "pixel8", "llama-2-7b", 4096 * 8 + 1)
    assert any("8×" in w or "more than 8" in w for w in map(word, ev.warnings))
    assert not any("trained" in w for w in map(word, _ev(catalog, "pixel8", "llama-2-7b", 4096 * 8).warnings))


def test_implausible_device_figures_warn(catalog):
    from kvplan.plan.warnings import implausible_inputs

    d = catalog.device("pixel8").profile
    tiny = d.model_copy(update={"ram": 100 * 10**6, "memory_bandwidth": 50.0})
    s = build_scenario(tiny, catalog.model("llama-3.2-1b").profile, 64, Knobs(os_reserve_bytes=0))
    out = [word(w) for w in implausible_inputs(s, 64)]
    assert any("ram 100,000,000 B is under 256 MB" in w for w in out)
    assert any("memory_bandwidth 50 B/s is under 1 GB/s" in w for w in out)


def test_flash_overflow_and_whole_cache_swap(catalog):
    ev = _ev(catalog, "pixel8", "llama-2-7b", 8192)
    d = catalog.device("pixel8").profile
    # total 3,370,000,000 + 4,294,967,296 = 7,664,967,296; over the 6,000,000,000 budget by 1,664,967,296
    assert ev.flash.overflow_bytes == ev.flash.steady_overflow_bytes == 1_664_967_296
    assert ev.flash.overflow_swap_in_s == pytest.approx(1_664_967_296 / d.flash_read)
    assert ev.flash.swap_in_s == pytest.approx(4_294_967_296 / d.flash_read)
    assert not ev.flash.transient


def test_transformers_peak_after_prefill_is_transient(catalog):
    ev = _ev(catalog, "pixel8", "mistral-7b-v0.1", 32768, runtime=runtime_spec("transformers"))
    assert ev.kv_peak_bytes > ev.kv_bytes
    assert ev.flash.overflow_bytes == ev.total_bytes - ev.budget_bytes > 0
    assert ev.flash.steady_overflow_bytes == 0 and ev.flash.transient
    assert ev.flash.streamed_decode_tokens_per_s == ev.decode_tokens_per_s  # decode runs from RAM
    assert ev.flash.slowdown == 1.0


def test_aggregate_rate_is_per_sequence_times_sequences(catalog):
    ev = _ev(catalog, "pixel8", "llama-3.2-1b", 4096, sequences=4)
    assert ev.aggregate_decode_tokens_per_s == pytest.approx(4 * ev.decode_tokens_per_s)
    assert math.isfinite(ev.aggregate_decode_tokens_per_s)


def _measured_runs():
    import json
    from pathlib import Path

    out = []
    for path in sorted((Path(__file__).parents[1] / "data" / "llamacpp" / "buffers").glob("*.json")):
        doc = json.loads(path.read_text())
        if not doc.get("llama_cpp", "").startswith("llama.cpp 0c1e57098"):  # build 11434's: another test
            continue
        for run in doc.get("runs", ()):  # published.json holds log lines of other machines, not runs
            if run.get("returncode") == 0 and not run["params"].get("swa_full"):
                out.append((doc["model"], run["params"], run["breakdown_bytes"]["CPU"]["compute"]))
    return out


@pytest.mark.parametrize("model, params, measured", _measured_runs(),
                         ids=lambda v: v if isinstance(v, str) else None)
def test_check_prices_the_measured_compute_buffer_through_the_plan(catalog, model, params, measured):
    # the whole path a user takes: --runtime llama.cpp options and the cache types of the scenario reach the
    # allocator replay, which llama.cpp's own breakdown (llama_get_memory_breakdown, CPU compute) must equal
    from kvplan.caches.buffers import llamacpp_buffers
    from kvplan.caches.llamacpp import llamacpp_cache
    from kvplan.engine.formats import format_from_name

    # the data is of llama.cpp 0c1e57098 (its compute buffer reserved a whole micro-batch of logits)
    spec = runtime_spec("llama.cpp", ubatch=params["n_ubatch"], batch=params["n_batch"],
                        flash_attn="on" if params["flash_attn"] else "off", kv_unified=params["kv_unified"],
                        build="0c1e57098")
    m = catalog.model(model).profile
    cache = llamacpp_cache(spec, m, format_from_name(params["type_k"]), format_from_name(params["type_v"]))
    v = cache.v_format or cache.k_format
    got = llamacpp_buffers(spec, m, params["n_ctx"], params["n_seq_max"], cache.k_format.name, v.name)
    assert got.compute_bytes == measured
