"""kvplan.engine.llamacpp_buffers against llama.cpp's measured CPU buffers.

Data: tests/data/llamacpp/buffers/<model>.json (tests/harness/buffers.py,
llama.cpp 0c1e57098, CPU, F16 weights, no repack). Tolerance: 5 % or 8 MiB,
whichever is larger, for every measured run. Runs the closed form does not
meet are listed in KNOWN_MISSES and marked xfail(strict=True): when the model
improves and one of them passes, the strict xfail fails and the entry must go.
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
    compute_buffer_phases,
    output_buffer_bytes,
)

MiB = 2**20
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "tests", "data", "llamacpp", "buffers")
PROFILES = os.path.join(ROOT, "model_profiles")


def tolerance(measured: int) -> float:
    return max(0.05 * measured, 8 * MiB)


# Runs where the closed form is off by more than the tolerance. Each is
# allocator placement the closed form cannot follow (read off GGML_ALLOCATOR_DEBUG
# traces of this llama.cpp, see docs/runtimes.md, "Buffers beside the cache"): the best-fit allocator put
# a tensor of the last layers high in the layer's region, and the next big block
# (the logits, or one layer's KQ scores) had to go above it.
#   deepseek-v2-lite fa1 with n_kv >= 4096 and one stream (or 8192 cells): the
#     MoE sum of layer 26 sits ~8 hid up, logits above it (+11.8 %; with fewer
#     cells it sits 1 hid up, as the formula assumes);
#   deepseek-v2-lite c32768 ub512 fa0 np4: one layer's KQ lands 8 hid higher (-8.9 %);
#   gemma-3-1b c32768 fa0: the final norm lands 20 hid up, in a hole the full-
#     attention layers' KQ left (-7.6 %);
#   phi-3-mini-4k fa1 with 8192 cells: the final norm sits right on inp_embd (no
#     hole; other fa1 runs have 2.0-2.7 hid), so the formula is +16.1 % high.
KNOWN_MISSES = frozenset([
    "deepseek-v2-lite-c32768-b2048-ub2048-fa1-np1-u0-f16-f16",
    "deepseek-v2-lite-c32768-b2048-ub2048-fa1-np4-u0-f16-f16",
    "deepseek-v2-lite-c32768-b2048-ub512-fa0-np4-u0-f16-f16",
    "deepseek-v2-lite-c32768-b2048-ub512-fa1-np1-u0-f16-f16",
    "deepseek-v2-lite-c32768-b2048-ub512-fa1-np4-u0-f16-f16",
    "deepseek-v2-lite-c4096-b2048-ub2048-fa1-np1-u0-f16-f16",
    "deepseek-v2-lite-c4096-b2048-ub512-fa1-np1-u0-f16-f16",
    "deepseek-v2-lite-c8192-b2048-ub2048-fa1-np1-u0-f16-f16",
    "deepseek-v2-lite-c8192-b2048-ub512-fa1-np1-u0-f16-f16",
    "gemma-3-1b-c32768-b2048-ub2048-fa0-np1-u0-f16-f16",
    "gemma-3-1b-c32768-b2048-ub512-fa0-np1-u0-f16-f16",
    "phi-3-mini-4k-c32768-b2048-ub2048-fa1-np4-u0-q8_0-q8_0",
    "phi-3-mini-4k-c32768-b2048-ub512-fa1-np4-u0-q8_0-q8_0",
    "phi-3-mini-4k-c8192-b2048-ub2048-fa1-np1-u0-f16-f16",
    "phi-3-mini-4k-c8192-b2048-ub512-fa1-np1-u0-f16-f16",
])


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
    )


def _runs():
    out = []
    for path in sorted(glob.glob(os.path.join(DATA, "*.json"))):
        if os.path.basename(path) == "published.json":
            continue
        with open(path) as fh:
            d = json.load(fh)
        model = d["model"]
        prof = _profile(model)
        for r in d["runs"]:
            if r.get("returncode", 0) != 0:
                continue
            p = r["params"]
            key = _key(model, p)
            measured = r["breakdown_bytes"]["CPU"]["compute"]
            marks = ()
            if key in KNOWN_MISSES:
                pred = _predict(prof, p)
                marks = (
                    pytest.mark.xfail(
                        strict=True,
                        reason=(
                            f"measured {measured / MiB:.2f} MiB vs predicted "
                            f"{pred / MiB:.2f} MiB ({(pred - measured) / measured:+.1%})"
                        ),
                    ),
                )
            out.append(pytest.param(model, p, r, id=key, marks=marks))
    return out


RUNS = _runs()


def test_every_model_has_runs():
    models = {p.values[0] for p in RUNS}
    assert len(models) == 9


def test_known_misses_are_real_runs():
    ids = {p.id for p in RUNS}
    assert KNOWN_MISSES <= ids


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
    #   inputs: ids slot 2048*4 = 8,192 + inp_embd 33,554,432 + positions 8,192
    #     + K indices 2048*8 = 16,384 + V indices 32*128*2048*8 = 67,108,864
    #     + f32 mask 32768*2048*4 = 268,435,456 + output ids 8,192  = 369,139,712
    #   attention: 2*hid + 2*q = 134,217,728 + KQ 32*32768*2048*4 = 8,589,934,592
    #     + inputs                                                = 9,093,292,032
    #   ffn: 2.5*hid 83,886,080 + 3*11008*2048*4 270,532,608 + inputs = 723,558,400
    #   output: 8,192 + 2*hid 67,108,864 + logits 32000*2048*4 262,144,000 = 329,261,056
    # peak = attention.
    kq = 32 * 32768 * 2048 * 4
    assert kq == 8 * 2**30
    inputs = 8_192 + 33_554_432 + 8_192 + 16_384 + 67_108_864 + 268_435_456 + 8_192
    assert inputs == 369_139_712
    expected = inputs + 4 * 33_554_432 + kq
    assert expected == 9_093_292_032
    args = dict(n_ctx=32768, n_ubatch=2048, n_batch=2048, flash_attn=False, n_seq_max=1,
                kv_unified=False, **LLAMA2_7B)
    phases = compute_buffer_phases(**args)
    assert phases == {"inputs": 369_139_712, "attention": 9_093_292_032,
                      "ffn": 723_558_400, "output": 329_261_056}
    got = compute_buffer_bytes(**args)
    assert got == expected
    measured = _measured("llama-2-7b", n_ctx=32768, n_batch=2048, n_ubatch=2048,
                         flash_attn=False, n_seq_max=1)
    assert abs(got - measured) <= tolerance(measured)


def test_hand_derived_llama2_7b_256_no_fa_v_indices():
    # The short-context runs without flash attention were 14 % low before the V
    # indices were counted. -c 256 -ub 512 gives T = 256 (capped at n_ctx),
    # hid = 4096*256*4 = 4,194,304:
    #   inputs: 1,024 + 4,194,304 + 1,024 + K idx 2,048
    #     + V idx 32*128*256*8 = 8,388,608 + mask 256*256*4 = 262,144 + 1,024 = 12,850,176
    #     (the allocator trace of this run puts the first layer tensor at exactly
    #     this offset)
    #   ffn: 2.5*hid 10,485,760 + 3*11008*256*4 33,816,576 + inputs = 57,152,512
    #   attention: 4*hid 16,777,216 + KQ 32*256*256*4 8,388,608 + inputs = 38,016,000
    # measured 59,249,664 (the trace: 3 hid below gate/up/act instead of 2.5).
    args = dict(n_ctx=256, n_ubatch=512, n_batch=512, flash_attn=False, n_seq_max=1,
                kv_unified=False, **LLAMA2_7B)
    phases = compute_buffer_phases(**args)
    assert phases["inputs"] == 12_850_176
    assert phases["ffn"] == 57_152_512
    assert phases["attention"] == 38_016_000
    measured = _measured("llama-2-7b", n_ctx=256, n_batch=512, n_ubatch=512,
                         flash_attn=False, n_seq_max=1)
    assert measured == 59_249_664
    assert abs(compute_buffer_bytes(**args) - measured) <= tolerance(measured)


def test_hand_derived_deepseek_v2_lite_mla_moe():
    # DeepSeek-V2-Lite, -c 1024 -ub 512, FA on, 1 sequence: T = 512,
    # hid = 2048*512*4 = 4,194,304, q = 16*192*512*4 = 6,291,456,
    # absorbed query 16*(512+64)*512*4 = 18,874,368.
    #   inputs: 2,048 + 4,194,304 + 2,048 + K idx 4,096 (MLA: no V cache, no V
    #     indices) + f16 mask 1024*512*2 = 1,048,576 + 2,048 = 5,253,120
    #   attention: 2*hid 8,388,608 + q + 2*18,874,368 + K-less (FA: no KQ) = 52,428,800
    #     + inputs = 57,681,920
    #   ffn: dense layer 0: 2.5*hid 10,485,760 + 3*10944*512*4 67,239,936 = 77,725,696;
    #     MoE: 10,485,760 + 3*1408*6*512*4 51,904,512 + 2048*6*512*4 25,165,824
    #     = 87,556,096 -> the larger, + inputs = 92,809,216
    #   output: 2,048 + (1 + 1.0 hole + 1)*hid 12,582,912 + 102400*512*4 209,715,200
    #     = 222,300,160
    with open(os.path.join(PROFILES, "deepseek-v2-lite.yaml")) as fh:
        prof = yaml.safe_load(fh)
    args = dict(n_ctx=1024, n_batch=2048, n_ubatch=512, flash_attn=True, n_seq_max=1,
                kv_unified=False)
    from kvplan.engine.llamacpp_buffers import graph_of
    assert graph_of(prof) == "mla"
    phases = compute_buffer_phases(
        layers=27, n_head=16, n_head_kv=16, head_dim=192, v_head_dim=128, hidden=2048,
        n_ff=10944, n_vocab=102400, graph="mla", kv_lora_rank=512, rope_head_dim=64,
        n_ff_expert=1408, n_expert_used=6, dense_layers=1, **args)
    assert phases == {"inputs": 5_253_120, "attention": 57_681_920,
                      "ffn": 92_809_216, "output": 222_300_160}
    assert compute_buffer_bytes_from_profile(prof, **args) == 222_300_160
    # the measured run is exactly this
    assert _measured("deepseek-v2-lite", **args) == 222_300_160


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
