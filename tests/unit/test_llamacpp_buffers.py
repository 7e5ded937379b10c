"""kvplan.engine.llamacpp_buffers against llama.cpp's measured CPU buffers.

Data: tests/data/llamacpp/buffers/<model>.json (tests/harness/buffers.py,
llama.cpp 0c1e57098, CPU, F16 weights, no repack). Tolerance: 5 % or 8 MiB,
whichever is larger, for every measured run; the allocator replay in fact
reproduces every one of them to the byte (test_every_run_is_exact).
"""

from __future__ import annotations

import glob
import json
import os

import pytest
import yaml

from kvplan.engine.llamacpp_buffers import (
    compute_buffer_bytes,
    compute_buffer_bytes_from_profile,
    graph_of,
    output_buffer_bytes,
)

MiB = 2**20
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "tests", "data", "llamacpp", "buffers")
PROFILES = os.path.join(ROOT, "model_profiles")


def tolerance(measured: int) -> float:
    return max(0.05 * measured, 8 * MiB)


def _key(model, p):
    return (
        f"{model}-c{p['n_ctx']}-b{p['n_batch']}-ub{p['n_ubatch']}"
        f"-fa{int(p['flash_attn'])}-np{p['n_seq_max']}-u{int(p['kv_unified'])}"
        f"-{p['type_k']}-{p['type_v']}"
    )


def _profile(model):
    with open(os.path.join(PROFILES, f"{model}.yaml")) as fh:
        return yaml.safe_load(fh)


def _predict(profile, p):
    return compute_buffer_bytes_from_profile(
        profile,
        n_ctx=p["n_ctx"],
        n_batch=p["n_batch"],
        n_ubatch=p["n_ubatch"],
        flash_attn=p["flash_attn"],
        n_seq_max=p["n_seq_max"],
        kv_unified=p["kv_unified"],
        type_k=p["type_k"],
        type_v=p["type_v"],
    )


def _runs():
    out = []
    for path in sorted(glob.glob(os.path.join(DATA, "*.json"))):
        if os.path.basename(path) == "published.json":
            continue
        with open(path) as fh:
            d = json.load(fh)
        if not d["llama_cpp"].startswith("llama.cpp 0c1e57098"):  # build 11434's runs: test_llamacpp_buffers_hybrid_moe
            continue
        model = d["model"]
        for r in d["runs"]:
            if r.get("returncode", 0) != 0:
                continue
            p = r["params"]
            key = _key(model, p)
            out.append(pytest.param(model, p, r, id=key))
    return out


RUNS = _runs()


def test_every_model_has_runs():
    models = {p.values[0] for p in RUNS}
    assert len(models) == 9


def test_every_run_is_exact():
    # Stronger than the tolerance: the replay places every tensor where llama.cpp did.
    off = [p.id for p in RUNS
           if _predict(_profile(p.values[0]), p.values[1]) != p.values[2]["breakdown_bytes"]["CPU"]["compute"]]
    assert len(RUNS) == 410
    assert off == []


@pytest.mark.parametrize("model,params,run", RUNS)
def test_compute_buffer_matches_measurement(model, params, run):
    measured = run["breakdown_bytes"]["CPU"]["compute"]
    predicted = _predict(_profile(model), params)
    assert abs(predicted - measured) <= tolerance(measured), (
        f"{model}: measured {measured / MiB:.2f} MiB, predicted {predicted / MiB:.2f} MiB"
    )


@pytest.mark.parametrize(
    "model,params,run", [pytest.param(*p.values, id=p.id) for p in RUNS]
)
def test_output_buffer_matches_log(model, params, run):
    # The log prints MiB with 2 decimals; the output buffer is n_vocab x 4 bytes
    # per sequence at context creation (output_reserve(n_seq_max)).
    prof = _profile(model)
    logged = run["logged_mib"]["output_mib"]["CPU"]
    predicted = output_buffer_bytes(prof["vocab_size"], params["n_seq_max"])
    assert abs(predicted / MiB - logged) <= 0.006


def test_output_buffer_hand_derived():
    # Llama-2-7B, 4 sequences: 32000 vocab x 4 bytes x 4 rows = 512,000 bytes,
    # logged as 0.49 MiB. (llama_get_memory_breakdown()'s "context" figure in
    # this data equals the KV bytes alone, so only the log line checks this.)
    with open(os.path.join(DATA, "llama-2-7b.json")) as fh:
        d = json.load(fh)
    r = next(r for r in d["runs"] if r["params"]["n_seq_max"] == 4)
    assert output_buffer_bytes(32000, 4) == 512_000
    assert r["logged_mib"]["output_mib"]["CPU"] == round(512_000 / MiB, 2)
    # embeddings add n_embd floats per row
    assert output_buffer_bytes(32000, 1, n_embd=4096, embeddings=True) == 4 * (32000 + 4096)


LLAMA2_7B = dict(layers=32, n_head=32, n_head_kv=32, head_dim=128, v_head_dim=128,
                 hidden=4096, n_ff=11008, n_vocab=32000)


def _measured(model, **want):
    with open(os.path.join(DATA, f"{model}.json")) as fh:
        d = json.load(fh)
    return next(
        r["breakdown_bytes"]["CPU"]["compute"] for r in d["runs"]
        if all(r["params"][k] == v for k, v in want.items())
    )


def test_hand_derived_llama2_7b_32k_ub2048_no_fa():
    # Llama-2-7B, -c 32768 -b 2048 -ub 2048, FA off, 1 sequence: T = 2048,
    # n_kv = 32768, hid = q = 4096*2048*4 = 33,554,432.
    #   inputs, placed first: ids slot 2048*4 = 8,192 + inp_embd 33,554,432
    #     + positions 8,192 + K indices 2048*8 = 16,384 + V indices (V stored
    #     transposed) 32*128*2048*8 = 67,108,864 + f32 mask 32768*2048*4 =
    #     268,435,456 + output ids 8,192                         = 369,139,712
    #   a middle layer's scores kq [32768, 2048, 32] f32 = 8,589,934,592 go above
    #     four hidden-sized blocks (the residual, the normed input, Q and the
    #     hole Q's pre-RoPE copy left): 4*hid = 134,217,728
    # peak = 369,139,712 + 134,217,728 + 8,589,934,592 = 9,093,292,032.
    # The run measured at this size has a q8_0 K cache: K's 128x128 f32 rotation
    # (65,536 B) joins the inputs, and with the rotated copy of Q the scores sit
    # above three hidden-sized blocks with no hole: 9,093,292,032 + 65,536
    # - 33,554,432 = 9,059,803,136, the measured figure.
    kq = 32 * 32768 * 2048 * 4
    assert kq == 8 * 2**30
    inputs = 8_192 + 33_554_432 + 8_192 + 16_384 + 67_108_864 + 268_435_456 + 8_192
    assert inputs == 369_139_712
    expected = inputs + 4 * 33_554_432 + kq
    assert expected == 9_093_292_032
    args = dict(n_ctx=32768, n_ubatch=2048, n_batch=2048, flash_attn=False, n_seq_max=1,
                kv_unified=False, **LLAMA2_7B)
    assert compute_buffer_bytes(**args) == expected
    q8 = expected + 65_536 - 33_554_432
    assert q8 == 9_059_803_136
    assert compute_buffer_bytes(type_k="q8_0", **args) == q8
    assert _measured("llama-2-7b", n_ctx=32768, n_batch=2048, n_ubatch=2048, flash_attn=False,
                     n_seq_max=1, kv_unified=False, type_k="q8_0", type_v="f16") == q8


def test_hand_derived_llama2_7b_256_no_fa_v_indices():
    # -c 256 -ub 512 gives T = 256 (capped at n_ctx), hid = 4096*256*4 = 4,194,304:
    #   inputs: 1,024 + 4,194,304 + 1,024 + K idx 2,048
    #     + V idx 32*128*256*8 = 8,388,608 + mask 256*256*4 = 262,144 + 1,024 = 12,850,176
    #     (the allocator trace puts the first layer tensor at exactly this offset)
    #   the peak is a feed-forward: gate, up and their SwiGLU product
    #     3 * 11008*256*4 = 33,816,576 above three hidden-sized blocks
    #     (ffn_inp, the normed input, the residual's old slot) 3*hid = 12,582,912
    # 12,850,176 + 12,582,912 + 33,816,576 = 59,249,664, the measured figure.
    args = dict(n_ctx=256, n_ubatch=512, n_batch=512, flash_attn=False, n_seq_max=1,
                kv_unified=False, **LLAMA2_7B)
    expected = 12_850_176 + 3 * 4_194_304 + 3 * 11008 * 256 * 4
    assert expected == 59_249_664
    assert compute_buffer_bytes(**args) == expected
    assert _measured("llama-2-7b", n_ctx=256, n_batch=512, n_ubatch=512,
                     flash_attn=False, n_seq_max=1) == expected


def test_hand_derived_deepseek_v2_lite_mla_moe():
    # DeepSeek-V2-Lite, -c 1024 -ub 512, FA on, 1 sequence: T = 512,
    # hid = 2048*512*4 = 4,194,304. The peak is the output head: the logits
    # [102400, 512] f32 = 209,715,200 go above the token ids' hole 2,048,
    # inp_embd (never consumed, live to the end) 4,194,304, the final norm
    # 4,194,304 and one hidden-sized hole 4,194,304:
    #   2,048 + 3*4,194,304 + 209,715,200 = 222,300,160, the measured figure.
    prof = _profile("deepseek-v2-lite")
    assert graph_of(prof) == "mla"
    args = dict(n_ctx=1024, n_batch=2048, n_ubatch=512, flash_attn=True, n_seq_max=1,
                kv_unified=False)
    expected = 2_048 + 3 * 4_194_304 + 102400 * 512 * 4
    assert expected == 222_300_160
    assert compute_buffer_bytes_from_profile(prof, **args) == expected
    assert _measured("deepseek-v2-lite", **args) == expected


def test_quantized_cache_adds_rotations():
    # -ctk/-ctv q8_0 rotate Q, K, V and the attention output by Hadamard matrices
    # (128x128 for K of head width 128, 64x64 for V): Llama-2-7B -c 32768 -ub 2048
    # FA on measures 505,552,896 with q8_0 and 539,025,408 with f16 — the rotated
    # copies move where the allocator puts the logits. The replay gives both.
    args = dict(n_ctx=32768, n_ubatch=2048, n_batch=2048, flash_attn=True, n_seq_max=1,
                kv_unified=False, **LLAMA2_7B)
    f16 = compute_buffer_bytes(**args)
    q8 = compute_buffer_bytes(type_k="q8_0", type_v="q8_0", **args)
    assert (f16, q8) == (539_025_408, 505_552_896)
    assert _measured("llama-2-7b", n_ctx=32768, n_ubatch=2048, flash_attn=True, n_seq_max=1,
                     kv_unified=False, type_k="q8_0", type_v="q8_0") == q8


def test_former_closed_form_misses_are_exact():
    # The runs a max-of-phases closed form missed by 8-16 % (best-fit holes):
    # gemma-3-1b 32k without FA, phi-3-mini-4k FA at 8192 cells, DeepSeek FA at 4096+ cells.
    cases = [
        ("gemma-3-1b", dict(n_ctx=32768, n_ubatch=512, flash_attn=False), 586_418_176),
        ("phi-3-mini-4k", dict(n_ctx=8192, n_ubatch=512, flash_attn=True), 78_252_032),
        ("deepseek-v2-lite", dict(n_ctx=4096, n_ubatch=512, flash_attn=True), 251_934_720),
    ]
    for model, kw, expected in cases:
        args = dict(n_batch=2048, n_seq_max=1, kv_unified=False, **kw)
        assert _measured(model, type_k="f16", **args) == expected
        assert compute_buffer_bytes_from_profile(_profile(model), **args) == expected


def test_graph_family_unknown_is_refused():
    with pytest.raises(ValueError, match="graph must be one of"):
        compute_buffer_bytes(n_ctx=256, n_ubatch=256, n_batch=256, flash_attn=True, n_seq_max=1,
                             kv_unified=False, graph="mamba", **LLAMA2_7B)


def test_ubatch_capped_at_n_ctx_and_seq_split():
    kw = dict(flash_attn=False, kv_unified=False, layers=32, n_head=32,
              n_head_kv=32, head_dim=128, v_head_dim=128, hidden=4096,
              n_ff=11008, n_vocab=32000)
    # -c 256 -ub 2048 behaves as -ub 256
    assert compute_buffer_bytes(n_ctx=256, n_ubatch=2048, n_batch=2048, n_seq_max=1, **kw) == \
        compute_buffer_bytes(n_ctx=256, n_ubatch=256, n_batch=256, n_seq_max=1, **kw)
    # 4 sequences, non-unified: sized for n_ctx/4
    a = compute_buffer_bytes(n_ctx=32768, n_ubatch=512, n_batch=2048, n_seq_max=4, **kw)
    b = compute_buffer_bytes(n_ctx=8192, n_ubatch=512, n_batch=2048, n_seq_max=1, **kw)
    assert a == b


def _shapes_of_a_sample():
    """(shape, fa, period, head) that compute_buffer_bytes hands to the loop shortcut, for a sample of requests."""
    import itertools
    from unittest import mock

    from kvplan.engine import llamacpp_buffers as lb

    seen = []
    real = lb._peak

    def spy(shape, fa, period, head):
        seen.append((shape, fa, period, head))
        return real(shape, fa, period, head)

    names = ["llama-2-7b", "qwen3-0.6b", "gemma-2-2b", "gemma-3-1b", "phi-3-mini-4k", "deepseek-v2-lite"]
    lb.compute_buffer_bytes.cache_clear()
    with mock.patch.object(lb, "_peak", spy):
        for name, (ctx, ub, fa, np_, types) in itertools.product(
                names, [(4096, 512, True, 1, ("f16", "f16")), (20000, 2048, False, 3, ("q8_0", "q8_0")),
                        (9000, 256, True, 4, ("q8_0", "f16"))]):
            with open(os.path.join(PROFILES, f"{name}.yaml"), encoding="utf-8") as f:
                profile = yaml.safe_load(f)
            if profile.get("mla") and types[0] != types[1]:
                continue  # llama.cpp refuses different K/V types for MLA
            lb.compute_buffer_bytes_from_profile(profile, n_ctx=ctx, n_batch=2048, n_ubatch=ub, flash_attn=fa,
                                                 n_seq_max=np_, kv_unified=False, type_k=types[0], type_v=types[1])
    lb.compute_buffer_bytes.cache_clear()
    return seen


def test_the_shortened_layer_loop_peaks_as_the_full_graph():
    # the shortcut replays a graph with whole layer cycles left out; it must equal replaying every layer
    from kvplan.engine import ggml_alloc, llamacpp_graph
    from kvplan.engine import llamacpp_buffers as lb

    shapes = _shapes_of_a_sample()
    assert len(shapes) >= 15
    for shape, fa, period, head in shapes:
        full = ggml_alloc.peak_bytes(llamacpp_graph.reserve_graph(shape, fa))
        assert lb._peak(shape, fa, period, head) == full, (shape["graph"], shape["layers"], fa)
