"""One evaluation core: a sweep row, an ``evaluate`` and a plot-curve point of the same configuration agree
exactly, for random configurations of every cache model and runtime (kvplan.plan.core is the one place the
figures are derived; these three callers may only differ in how many points they ask for)."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kvplan import Catalog
from kvplan.curves import decode_curves, memory_curves
from kvplan.errors import KvplanError
from kvplan.plan import Knobs, build_scenario, evaluate
from kvplan.sweep import NO_MAX_CTX, evaluate_group

CATALOG = Catalog()
DEVICES = ("pixel8", "iphone-15-pro", "macbook-air-m2-16gb", "raspberry-pi-5-8gb")
MODELS = ("llama-2-7b", "llama-3.2-1b", "gemma-3-1b", "gemma-2-2b", "mistral-7b-v0.1", "deepseek-v2-lite",
          "qwen3-0.6b", "phi-3-mini-4k")
CACHE_MODELS = (
    {},  # the ideal formula
    {"runtime": "llama.cpp"},
    {"runtime": {"name": "llama.cpp", "kv_unified": True}},
    {"runtime": "transformers"},
    {"runtime": {"name": "transformers", "cache": "static", "max_cache_len": 65536}},
    {"kv_policy": {"recent_window": 1024, "history": {"ratio": 0.25, "k": {"bits": 4, "group_size": 64}}}},
    {"kv_bits": 8},
    {"kv_type": "q8_0", "runtime": "llama.cpp"},
    {"runtime": "mlx-lm"},
    {"runtime": {"name": "mlx-lm", "max_kv_size": 4096, "prefill_step_size": 1000}},
    {"kv_bits": 4, "runtime": "mlx-lm"},
    {"runtime": "onnxruntime-genai"},
    {"runtime": {"name": "onnxruntime-genai", "past_present_share_buffer": True, "max_length": 65536}},
    {"runtime": {"name": "litert-lm", "max_num_tokens": 65536}},
)


@st.composite
def configurations(draw):
    knobs = dict(draw(st.sampled_from(CACHE_MODELS)))
    knobs["sequences"] = draw(st.integers(1, 4))
    if draw(st.booleans()):
        knobs["target_tokens_per_s"] = draw(st.sampled_from([2.0, 8.0, 30.0]))
    if "runtime" not in knobs and draw(st.booleans()):
        knobs["pinned_prefix_tokens"] = draw(st.sampled_from([256, 2048]))
    ctx = draw(st.integers(1, 65536))
    return draw(st.sampled_from(DEVICES)), draw(st.sampled_from(MODELS)), ctx, knobs


def _scenario(device, model, ctx, knobs):
    return build_scenario(CATALOG.device(device).profile, CATALOG.model(model).profile, ctx, Knobs(**knobs))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(configurations())
def test_sweep_row_evaluate_and_curve_point_agree(config):
    device, model, ctx, knobs = config
    try:
        s = _scenario(*config)
        ev = evaluate(s)
    except KvplanError:  # a runtime refusing this model or context: nothing to compare
        return
    row = evaluate_group(s, [ctx], [s.sequences]).take(0)
    assert int(row.kv_bytes) == ev.kv_bytes
    assert int(row.kv_peak_bytes) == ev.kv_peak_bytes
    assert int(row.total_bytes) == ev.total_bytes
    assert int(row.headroom_bytes) == ev.headroom_bytes
    assert int(row.buffers_bytes) == ev.buffers_bytes
    assert int(row.weights_bytes) == ev.weights_bytes
    assert int(row.pinned_prefix_bytes) == ev.pinned_prefix_bytes
    assert int(row.verdict) == ("fit", "tight", "over").index(ev.verdict.value)
    assert float(row.decode_tokens_per_s) == ev.decode_tokens_per_s
    assert int(row.max_ctx) == (ev.max_ctx if ev.max_ctx is not None else NO_MAX_CTX)
    assert str(row.max_ctx_limited_by) == ev.max_ctx_limited_by
    if s.target_tokens_per_s:
        assert int(row.max_ctx_at_target) == (ev.max_ctx_at_target if ev.max_ctx_at_target is not None
                                              else NO_MAX_CTX)
    prefill = float(row.prefill_s)
    assert (math.isnan(prefill) and ev.prefill_s is None) or prefill == ev.prefill_s

    # a curve ending at ctx has ctx as its last point (unless the cache holds fewer tokens: then it ends there)
    memory = memory_curves(s, ctx_max_tokens=ctx)
    if int(memory.ctx_tokens[-1]) == ctx:
        assert int(memory.kv_bytes[-1]) == ev.kv_peak_bytes
        assert int(memory.total_bytes[-1]) == ev.total_bytes
        assert int(np.asarray(memory.buffers_bytes)[-1]) == ev.buffers_bytes
    decode = decode_curves(s, ctx_max_tokens=ctx)
    if int(decode.ctx_tokens[-1]) == ctx:
        assert float(decode.decode_tokens_per_s[-1]) == ev.decode_tokens_per_s
        assert float(decode.roofline_tokens_per_s[-1]) == ev.decode_tokens_per_s_roofline
        assert int(decode.verdict_codes[-1]) == ("fit", "tight", "over").index(ev.verdict.value)
        streamed = float(decode.streamed_tokens_per_s[-1])
        if ev.flash.steady_overflow_bytes:
            assert streamed == ev.flash.streamed_decode_tokens_per_s
        else:
            assert math.isnan(streamed)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(configurations(), st.lists(st.integers(1, 131072), min_size=2, max_size=6), st.lists(st.integers(1, 3),
                                                                                            min_size=1, max_size=3))
def test_every_row_of_a_grid_is_its_own_evaluation(config, ctx_values, seq_values):
    """Many rows at once (the array path, with its grouping of llama.cpp's buffers and its max-context search
    once per sequence count) against one evaluate per row (the scalar path)."""
    device, model, _, knobs = config
    knobs.pop("sequences")
    try:
        base = _scenario(device, model, 1, knobs)
        expected = [evaluate(base.with_changes(ctx=c, sequences=n)) for n in seq_values for c in ctx_values]
    except KvplanError:
        return
    ctx = np.tile(np.asarray(ctx_values), len(seq_values))
    seq = np.repeat(np.asarray(seq_values), len(ctx_values))
    cols = evaluate_group(base, ctx, seq)
    for i, ev in enumerate(expected):
        assert int(cols.total_bytes[i]) == ev.total_bytes, (i, ev.scenario.ctx, ev.scenario.sequences)
        assert int(cols.buffers_bytes[i]) == ev.buffers_bytes
        assert float(cols.decode_tokens_per_s[i]) == ev.decode_tokens_per_s
        assert int(cols.max_ctx[i]) == (ev.max_ctx if ev.max_ctx is not None else NO_MAX_CTX)


OFFLOAD_DEVICES = ("laptop-rtx-4060-16gb", "macbook-pro-m4-pro-24gb", "pixel8")
OFFLOAD_MODELS = ("llama-3.2-1b", "qwen3-30b-a3b", "gemma-3-1b", "llama-3.1-8b")


@st.composite
def offloaded(draw):
    model = draw(st.sampled_from(OFFLOAD_MODELS))
    knobs = dict(draw(st.sampled_from(({}, {"runtime": "llama.cpp"}))))
    knobs["n_gpu_layers"] = draw(st.sampled_from((None, 0, 1, 5, 20, 99)))
    if model == "qwen3-30b-a3b":
        knobs["n_cpu_moe"] = draw(st.sampled_from((None, 12, 48)))
    return (draw(st.sampled_from(OFFLOAD_DEVICES)), model, draw(st.integers(1, 65536)), knobs,
            draw(st.lists(st.integers(1, 131072), min_size=1, max_size=4)))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(offloaded())
def test_offloaded_sweep_rows_evaluations_and_curves_agree(config):
    """Offloaded (an offload knob, or the laptop's own GPU memory): each memory's figures, the worse verdict, the
    placed decode rate and the max context are the same whether a point, a grid or a curve asks for them."""
    device, model, ctx, knobs, more = config
    try:
        s = _scenario(device, model, ctx, knobs)
        ev = evaluate(s)
        expected = [ev] + [evaluate(s.with_changes(ctx=c)) for c in more]
    except KvplanError:
        return
    if ev.offload is None:  # pixel8 without an offload knob: one memory
        return
    cols = evaluate_group(s, [e.scenario.ctx for e in expected], [s.sequences] * len(expected))
    for i, e in enumerate(expected):
        mem = {m.memory: m for m in e.offload.memories}
        assert int(cols.gpu_total_bytes[i]) == mem["gpu"].total_bytes
        assert int(cols.ram_total_bytes[i]) == mem["ram"].total_bytes
        assert int(cols.gpu_headroom_bytes[i]) == mem["gpu"].headroom_bytes
        assert int(cols.gpu_verdict[i]) == ("fit", "tight", "over").index(mem["gpu"].verdict.value)
        assert int(cols.ram_verdict[i]) == ("fit", "tight", "over").index(mem["ram"].verdict.value)
        assert int(cols.verdict[i]) == ("fit", "tight", "over").index(e.verdict.value)
        assert int(cols.headroom_bytes[i]) == e.headroom_bytes
        assert int(cols.total_bytes[i]) == e.total_bytes  # the resident total, as compare's
        assert float(cols.decode_tokens_per_s[i]) == e.decode_tokens_per_s
        assert int(cols.max_ctx[i]) == (e.max_ctx if e.max_ctx is not None else NO_MAX_CTX)
    decode = decode_curves(s, ctx_max_tokens=ctx)
    if int(decode.ctx_tokens[-1]) == ctx:
        assert float(decode.decode_tokens_per_s[-1]) == ev.decode_tokens_per_s
        assert int(decode.verdict_codes[-1]) == ("fit", "tight", "over").index(ev.verdict.value)
