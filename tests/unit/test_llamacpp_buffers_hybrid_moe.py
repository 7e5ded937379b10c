"""llama.cpp's CPU compute buffer of hybrid and MoE graphs against build 11434's measured buffers.

Data (``llama_get_memory_breakdown()`` CPU compute bytes, llama.cpp build 11434, CPU, weight-less F16 GGUFs):

* ``tests/data/llamacpp/buffers/<model>.json`` (``tests/harness/buffers.py --grid hybrid``): n_ctx 512/4096/32768,
  -ub 512 (and 256/1024 at 4096), flash attention off and on, 1 and 4 sequences, and ``n_outputs_max`` either the
  library default (``n_batch``: logits for the whole micro-batch) or ``n_seq_max`` (as llama-server sets it: the
  graph's body decides the peak);
* ``tests/data/llamacpp/state/<model>.json`` and ``models2026/<model>.json`` (``tests/harness/state_buffers.py``):
  contexts 512…32768, -ub 512, flash attention on, f16 and q8_0 caches, unified or not, library ``n_outputs_max``.

Gemma 3n (``buffers/gemma-3n-e2b.json`` and ``models2026/gemma-3n-e{2,4}b.json``), Falcon-H1
(``buffers/falcon-h1-0.5b.json``), Gemma 4 E2B (``buffers/gemma-4-e2b.json``, ``models2026/gemma-4-e2b.json``) and
Granite-4.0-H-Tiny (``state/`` and ``buffers/granite-4.0-h-tiny.json``: the MoE with its shared MLP beside Mamba2,
weight-less GGUF from ``make_hybrid_gguf.py``) and Qwen3.5-35B-A3B (``state/`` and ``buffers/qwen3.5-35b-a3b.json``:
Gated DeltaNet with 16 key and 32 value heads, a MoE block with a gated shared expert on every layer) and
LFM2-8B-A1B (``state/`` and ``buffers/lfm2-8b-a1b.json``: the short convolution, a dense MLP on layers 0-1, then 32
sigmoid-gated experts with an expert bias) were measured the same way on build 11434.

Issue #23 asks for 5 % or 8 MiB; every row is equal to the byte. Also here: the dense phi-4-mini and smollm3-3b
(``models2026/``) and gemma-3-4b with ``--swa-full`` (``buffers/gemma-3-4b.json``), measured on the same build.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvplan.caches.buffers import _ProfileView, llamacpp_buffers, unpriced_because
from kvplan.engine import llamacpp_buffers as lb
from kvplan.profiles.catalog import Catalog
from kvplan.profiles.runtime import runtime_spec

MiB = 2**20
DATA = Path(__file__).parents[1] / "data" / "llamacpp"
HYBRID_MOE = ("lfm2-1.2b", "qwen3.5-2b", "granite-4.0-h-1b", "nemotron-nano-9b-v2", "gpt-oss-20b", "qwen3-30b-a3b")
FILES = (
    [("state", m) for m in HYBRID_MOE[:4]]
    + [("models2026", m) for m in ("gpt-oss-20b", "qwen3-30b-a3b", "phi-4-mini", "smollm3-3b")]
    + [("buffers", m) for m in HYBRID_MOE + ("gemma-3-4b",)]  # gemma-3-4b: --swa-full
    # Gemma 3n (src/models/gemma3n.cpp, llamacpp_graph._gemma3n): --grid hybrid, and the state grid's f16 / q8_0 rows
    + [("buffers", "gemma-3n-e2b")] + [("models2026", m) for m in ("gemma-3n-e2b", "gemma-3n-e4b")]
    + [("buffers", "falcon-h1-0.5b")]  # src/models/falcon-h1.cpp: attention and Mamba2 in every layer, --grid hybrid
    # Gemma 4 E2B (src/models/gemma4.cpp, llamacpp_graph._gemma4): 256- and 512-wide heads, per-layer embeddings,
    # shared-KV layers, --grid hybrid
    + [("buffers", "gemma-4-e2b")] + [("models2026", "gemma-4-e2b")]  # and the state grid's f16 / q8_0 rows
    # Granite-4.0-H-Tiny (granite-hybrid.cpp build_layer_ffn: build_moe_ffn plus the shared MLP beside Mamba2)
    + [("state", "granite-4.0-h-tiny"), ("buffers", "granite-4.0-h-tiny")]
    # Llama 4 Scout (llama4.cpp: chunked layers in the iSWA cache, NoPE layers, sigmoid MoE + shared expert): --grid
    # hybrid, and chunked_buffers.py's f16 / q8_0 rows to 65,536 cells and --swa-full
    + [("buffers", "llama-4-scout-17b-16e"), ("chunked", "llama-4-scout-17b-16e")]
    # Qwen3.5-35B-A3B (qwen35moe.cpp: qwen35's trunk, build_moe_ffn plus the sigmoid-gated shared expert)
    + [("state", "qwen3.5-35b-a3b"), ("buffers", "qwen3.5-35b-a3b")]
    # LFM2-8B-A1B (lfm2.cpp's graph for lfm2moe: a dense MLP on layers 0-1, then build_moe_ffn with sigmoid gating
    # and the expert bias beside the short convolution)
    + [("state", "lfm2-8b-a1b"), ("buffers", "lfm2-8b-a1b")]
)


def _runs(folders=("state", "models2026", "buffers", "chunked")):
    out = []
    for folder, model in FILES:
        if folder not in folders:
            continue
        doc = json.loads((DATA / folder / f"{model}.json").read_text())
        assert doc["llama_cpp"].startswith("llama.cpp build 11434") and doc["model"] == model
        for run in doc["runs"]:
            assert run["returncode"] == 0
            p = run["params"]
            key = (f"{folder}-{model}-c{p['n_ctx']}-ub{p['n_ubatch']}-fa{int(p['flash_attn'])}-np{p['n_seq_max']}"
                   f"-u{int(p['kv_unified'])}-{p['type_k']}-{p['type_v']}-o{p.get('n_outputs_max', 0)}"
                   f"{'-swafull' if p['swa_full'] else ''}")
            out.append(pytest.param(model, p, run["breakdown_bytes"]["CPU"]["compute"], id=key))
    return out


@pytest.fixture(scope="module")
def catalog():
    return Catalog()


def _predict(catalog, model, p, **over):
    view = _ProfileView(catalog.model(model).profile)
    kw = dict(n_ctx=p["n_ctx"], n_batch=p["n_batch"], n_ubatch=p["n_ubatch"], flash_attn=p["flash_attn"],
              n_seq_max=p["n_seq_max"], kv_unified=p["kv_unified"], type_k=p["type_k"], type_v=p["type_v"],
              swa_full=p["swa_full"], n_outputs=p.get("n_outputs_max") or None, build="b11434")
    kw.update(over)
    return lb.compute_buffer_bytes_from_profile(view, **kw)


#: rows the replay does not reproduce to the byte, with the gap it leaves (predicted − measured, bytes): one of
#: Gemma-3-4B's --swa-full rows (the whole micro-batch of logits, 4 sequences at 32k), 5 MiB = n_embd · T · 4 under
KNOWN_GAPS = {"buffers-gemma-3-4b-c32768-ub512-fa1-np4-u0-f16-f16-o0-swafull": -5 * MiB}


@pytest.mark.parametrize("model, p, measured", _runs())
def test_compute_buffer_is_within_5_percent_or_8_mib_of_build_11434(catalog, model, p, measured):
    assert abs(_predict(catalog, model, p) - measured) <= max(0.05 * measured, 8 * MiB)  # issue #23's figure


@pytest.mark.parametrize("model, p, measured", _runs())
def test_compute_buffer_equals_build_11434(catalog, model, p, measured, request):
    # the replay of the graph llama.cpp builds gives the byte, except the rows of KNOWN_GAPS, whose gap is fixed
    key = request.node.callspec.id.split("-", 0)[0]
    assert _predict(catalog, model, p) - measured == KNOWN_GAPS.get(key, 0)


def test_the_data_covers_the_grid():
    # 8 models + Gemma 3n E2B, E4B + Gemma 4 E2B + Granite-H-Tiny + Qwen3.5-35B-A3B + LFM2-8B-A1B
    assert len(_runs(("state", "models2026"))) == 14 * 36
    runs = [r.values[1] for r in _runs(("buffers",))]
    # 7 models + gemma-3n-e2b, falcon-h1-0.5b, gemma-4-e2b, granite-4.0-h-tiny, llama-4-scout, qwen3.5-35b-a3b,
    # lfm2-8b-a1b
    assert len(runs) == 14 * 32
    assert len(_runs(("chunked",))) == 36
    assert {p["flash_attn"] for p in runs} == {False, True}
    assert {p["n_ubatch"] for p in runs} == {256, 512, 1024}
    assert {p["n_seq_max"] for p in runs} == {1, 4}
    assert {bool(p.get("n_outputs_max")) for p in runs} == {False, True}  # library default and llama-server's -np
    assert {p["n_ctx"] for p in runs} == {512, 4096, 32768}


def test_swa_full_is_what_the_measurement_needs(catalog):
    # gemma-3-4b -c 32768 -fa on -np 1, llama-server's one output row: measured with --swa-full; priced as if the
    # windowed layers had their own small cache the figure falls short by the windowed mask and scores it leaves out
    doc = json.loads((DATA / "buffers" / "gemma-3-4b.json").read_text())
    p, measured = next((r["params"], r["breakdown_bytes"]["CPU"]["compute"]) for r in doc["runs"]
                       if r["params"]["n_ctx"] == 32768 and r["params"]["flash_attn"]
                       and r["params"]["n_seq_max"] == 1 and r["params"].get("n_outputs_max") == 1)
    assert p["swa_full"]
    assert _predict(catalog, "gemma-3-4b", p) == measured
    short = _predict(catalog, "gemma-3-4b", p, swa_full=False)
    # the windowed mask alone grows from pad(1024 + 512, 256) = 1,536 to 32,768 cells: 31,232 · 512 · 2 B (f16)
    assert measured - short >= 31_232 * 512 * 2


@pytest.mark.parametrize("model", ["lfm2-1.2b", "qwen3.5-2b", "granite-4.0-h-1b", "nemotron-nano-9b-v2",
                                   "gpt-oss-20b", "qwen3-30b-a3b", "gemma-3n-e2b", "gemma-3n-e4b",
                                   "falcon-h1-0.5b", "gemma-4-e2b", "granite-4.0-h-tiny", "llama-4-scout-17b-16e",
                                   "qwen3.5-35b-a3b", "lfm2-8b-a1b"])
def test_the_hybrid_and_moe_buffers_are_priced_now(catalog, model):
    m = catalog.model(model).profile
    assert unpriced_because(m) is None
    got = llamacpp_buffers(runtime_spec("llama.cpp"), m, 32768, 1)
    # the compute buffer holds at least the reserve graph's logits (one row per sequence under llama-server:
    # n_vocab · 4 bytes) and the whole-micro-batch residual E · 512 · 4
    assert got.compute_bytes > m.vocab_size * 4 + m.hidden_size * 512 * 4
    assert got.output_bytes == m.vocab_size * 4  # output_reserve: max(n_outputs, n_seq_max) = 1 row of f32 logits


def test_layer_kinds_follow_the_profile(catalog):
    lg = dict(lb.layer_graph_of(catalog.model("nemotron-nano-9b-v2").profile))
    # nemotron-nano-9b-v2: 27 Mamba2 layers, 25 MLP-only, 4 attention (56)
    assert (lg["mixers"].count("mamba2"), lg["mixers"].count("mlp"), lg["mixers"].count("attn")) == (27, 25, 4)
    assert set(lg["ffns"]) == {"none"} and lg["late_out_ids"]
    # Mamba2 conv state: (conv_kernel 4 − 1) · (d_inner 128·80 + 2 · 8 groups · 128) = 3 · 12,288 = 36,864 values
    assert lg["n_embd_r"] == 36_864 and lg["d_inner"] == 10_240
    q = dict(lb.layer_graph_of(catalog.model("qwen3.5-2b").profile))
    # Gated DeltaNet conv channels 2 · 16 · 128 + 16 · 128 = 6,144; (4 − 1) · 6,144 = 18,432
    assert q["n_embd_r"] == 18_432 and q["mixers"].count("gdn") == 18 and q["attn_gated"]
    g = dict(lb.layer_graph_of(catalog.model("gpt-oss-20b").profile))
    assert g["ffns"] == ("moe",) * 24 and g["moe_gating"] == "softmax_weight"


def test_falcon_h1_layers_are_parallel(catalog):
    f = dict(lb.layer_graph_of(catalog.model("falcon-h1-0.5b").profile))
    # 36 layers, each attention + Mamba2; conv state (4 − 1) · (24 · 64 + 2 · 1 group · 128) = 3 · 1,792 = 5,376 values
    assert f["mixers"] == ("parallel",) * 36 and f["n_embd_r"] == 5_376 and f["d_inner"] == 1_536
    assert f["ssm_norm"] is False and f["ffns"] == ("swiglu",) * 36


def test_gemma3n_graph_constants_follow_the_profile(catalog):
    g = dict(lb._gemma3n_graph_of(catalog.model("gemma-3n-e4b").profile))
    # E4B: 35 layers, 15 shared-KV (num_kv_shared_layers) → the first 35 − 15 = 20 hold a cache, as llama.cpp's
    # n_layer_kv_from_start 20; per-layer input width 256
    assert g["n_layer_kv_from_start"] == 20 and g["n_embd_altup"] == 256
    assert lb.graph_of(catalog.model("gemma-3n-e2b").profile) == "gemma3n"


def test_gemma4_graph_constants_follow_the_profile(catalog):
    g = dict(lb._gemma4_graph_of(catalog.model("gemma-4-e2b").profile))
    # E2B: 35 layers, 20 shared-KV → the first 35 − 20 = 15 hold a cache (n_layer_kv_from_start); full-attention
    # heads 512 wide; per-layer input 256; MLP 6,144 on the 15 layers with a cache, doubled on the 20 shared ones
    assert g["n_layer_kv_from_start"] == 15 and g["global_head_dim"] == 512 and g["n_embd_altup"] == 256
    assert g["ffn_widths"] == (6144,) * 15 + (12288,) * 20
    assert lb.graph_of(catalog.model("gemma-4-e2b").profile) == "gemma4"


def test_a_gemma4_with_experts_or_without_per_layer_embeddings_is_still_refused(catalog):
    # the 26B's MoE block and a Gemma 4 without the per-layer embeddings (the 31B) build graphs not replayed here
    e2b = catalog.model("gemma-4-e2b").profile
    moe = e2b.model_copy(update={"experts": 128, "experts_per_token": 8, "expert_intermediate_size": 704})
    plain = e2b.model_copy(update={"hidden_size_per_layer_input": None, "vocab_size_per_layer_input": None})
    for m in (moe, plain):
        assert unpriced_because(m).kind == "gemma4_graph_unmodelled"


def test_a_granite_hybrid_with_experts_builds_the_moe_ffn(catalog):
    g = dict(lb.layer_graph_of(catalog.model("granite-4.0-h-tiny").profile))
    # granite-hybrid.cpp build_layer_ffn: build_moe_ffn(…, LLM_FFN_SILU, norm_w true, …, SOFTMAX) on every layer,
    # beside 36 Mamba2 and 4 attention mixers; the shared MLP is the graph's F_shared (2 × 512 = 1,024)
    assert g["ffns"] == ("moe",) * 40 and (g["moe_gating"], g["moe_norm_w"]) == ("softmax", True)
    assert g["mixers"].count("mamba2") == 36 and g["mixers"].count("attn") == 4
    # leading dense layers are not a Granite layout: such a profile's graph is not modelled
    profile = {"architecture": "granitemoehybrid", "layers": 4, "experts": 8, "dense_layers": 1,
               "state": {"mixer": "mamba2", "layers": [0, 1, 2], "conv_kernel_tokens": 4, "ssm_heads": 8,
                         "ssm_head_dim": 64, "ssm_groups": 1, "ssm_state_size": 128}}
    assert lb.layer_graph_of(profile) is None


def test_qwen3_5_moe_is_qwen3_5_with_the_gated_shared_expert(catalog):
    m = catalog.model("qwen3.5-35b-a3b").profile
    g, dense = dict(lb.layer_graph_of(m)), dict(lb.layer_graph_of(catalog.model("qwen3.5-2b").profile))
    # qwen35moe.cpp's trunk is qwen35.cpp's: 30 Gated DeltaNet layers, 10 gated attention layers (every 4th), M-RoPE
    # of 4 positions, the output rows kept after the final norm; the conv state (4 − 1) · (2 · 16 · 128 + 32 · 128)
    # = 3 · 8,192 = 24,576 values
    assert g["mixers"].count("gdn") == 30
    assert [i for i, k in enumerate(g["mixers"]) if k == "attn"] == list(range(3, 40, 4))
    assert all(g[k] == dense[k] for k in ("attn_gated", "n_pos", "late_out_ids")) and g["n_embd_r"] == 24_576
    # build_layer_ffn: build_moe_ffn(…, LLM_FFN_SILU, norm_w true, …, SOFTMAX) and the shared expert behind its gate
    assert g["ffns"] == ("moe",) * 40
    assert (g["moe_gating"], g["moe_norm_w"], g["shared_gate"]) == ("softmax", True, True)
    # no dense MLP (the profile has no intermediate_size): the buffers are priced from the experts' widths
    assert m.intermediate_size is None and unpriced_because(m) is None
    # with leading dense layers the dense MLP's width would be read: without it the profile still lacks a field
    assert unpriced_because(m.model_copy(update={"dense_layers": 1})).kind == "missing_shape_fields"


def test_the_shared_expert_gate_is_three_nodes_per_layer(catalog, monkeypatch):
    # qwen35moe.cpp build_layer_ffn: MUL_MAT of ffn_gate_inp_shexp [1, T], SIGMOID (in place), MUL of the shared
    # expert's [E, T] output by it (in place). Its tensors never set the peak of the measured rows (the gated and
    # ungated graphs give the same bytes there: llama.cpp's dumps, tests/harness/graph_dump.py, hold them
    # allocation by allocation), so the graph itself is checked: -ub 512, 40 layers
    from kvplan.engine import ggml_alloc

    graphs = []
    real = ggml_alloc.peak_bytes
    monkeypatch.setattr(ggml_alloc, "peak_bytes", lambda g, *a, **k: graphs.append(g) or real(g, *a, **k))
    lb.compute_buffer_bytes.cache_clear()
    m = catalog.model("qwen3.5-35b-a3b").profile
    for gate in (True, False):
        view = _ProfileView(m)
        if not gate:
            monkeypatch.setitem(lb._LAYER_ARCHS, "qwen3_5_moe",
                                dict(lb._QWEN35_MOE, moe=dict(lb._QWEN35_MOE["moe"], shared_gate=False)))
        lb.compute_buffer_bytes_from_profile(view, n_ctx=4096, n_batch=2048, n_ubatch=512, flash_attn=True,
                                             n_seq_max=1, kv_unified=False, n_outputs=1, build="b11434")
    lb.compute_buffer_bytes.cache_clear()
    gated, plain = graphs
    assert len(gated.nodes) - len(plain.nodes) == 3 * 40
    # per layer 512 · 4 (MUL_MAT) + 512 · 4 (SIGMOID) + 2,048 · 512 · 4 (MUL) = 4,198,400 B of node tensors
    assert sum(gated.size) - sum(plain.size) == 40 * (2_048 + 2_048 + 4_194_304)


def test_swa_full_prices_the_windowed_mask_at_every_cell():
    # gemma-3-4b-like shape, build 0c1e57098's graph: with --swa-full the windowed cache has all n_ctx_seq cells,
    # which is the graph a window at least as long as the context builds (swa_cache_cells = min(n_ctx_seq, …))
    shape = dict(n_ctx=32768, n_ubatch=512, n_batch=2048, flash_attn=True, n_seq_max=1, kv_unified=False,
                 layers=34, n_head=8, n_head_kv=4, head_dim=256, v_head_dim=256, hidden=2560, n_ff=10240,
                 n_vocab=262208, graph="gemma", swa_period=6)
    full = lb.compute_buffer_bytes(n_swa=1024, swa_full=True, **shape)
    assert full == lb.compute_buffer_bytes(n_swa=32768, **shape)
    windowed = lb.compute_buffer_bytes(n_swa=1024, **shape)
    # the windowed mask grows from pad(1024 + 512, 256) = 1,536 to 32,768 cells: 31,232 · 512 · 2 B (f16 mask)
    assert full - windowed >= 31_232 * 512 * 2


def test_lfm2_moe_is_lfm2_with_dense_layers_then_sigmoid_experts(catalog):
    g = dict(lb.layer_graph_of(catalog.model("lfm2-8b-a1b").profile))
    # lfm2.cpp's graph (lfm2moe too): is_moe_layer = il >= n_layer_dense_lead (2): build_dense_feed_forward on
    # layers 0-1, build_moe_feed_forward (build_moe_ffn: SIGMOID gating, exp_probs_b, norm_w true) after
    assert g["ffns"] == ("swiglu",) * 2 + ("moe",) * 22
    assert (g["moe_gating"], g["moe_probs_bias"], g["moe_norm_w"]) == ("sigmoid", True, True)
    # 18 conv mixers and 6 attention layers (2, 6, 10, 14, 18, 21); the conv state (3 − 1) · 2,048 = 4,096 values
    assert [i for i, k in enumerate(g["mixers"]) if k == "attn"] == [2, 6, 10, 14, 18, 21]
    assert g["mixers"].count("conv") == 18 and g["n_embd_r"] == 4_096 and g["resid_first"]


def test_the_expert_bias_is_one_add_per_moe_layer(catalog, monkeypatch):
    # build_moe_ffn: selection_probs = ggml_add(probs, exp_probs_b), a new [n_expert, T] f32 tensor (probs is read
    # by its reshape for GET_ROWS too, so the ADD cannot take its block) that ARGSORT reads; -ub 512, 22 MoE layers
    from kvplan.engine import ggml_alloc

    graphs = []
    real = ggml_alloc.peak_bytes
    monkeypatch.setattr(ggml_alloc, "peak_bytes", lambda g, *a, **k: graphs.append(g) or real(g, *a, **k))
    lb.compute_buffer_bytes.cache_clear()
    rule = lb._LAYER_ARCHS["lfm2_moe"]
    for bias in (True, False):
        if not bias:
            monkeypatch.setitem(lb._LAYER_ARCHS, "lfm2_moe", dict(rule, moe=dict(rule["moe"], moe_probs_bias=False)))
        lb.compute_buffer_bytes_from_profile(_ProfileView(catalog.model("lfm2-8b-a1b").profile), n_ctx=4096,
                                             n_batch=2048, n_ubatch=512, flash_attn=True, n_seq_max=1,
                                             kv_unified=False, n_outputs=1, build="b11434")
    lb.compute_buffer_bytes.cache_clear()
    biased, plain = graphs
    assert len(biased.nodes) - len(plain.nodes) == 22
    # 32 · 512 · 4 = 65,536 B a layer; the last layer's FFN runs on the 1 output row only (llama-server's -np 1)
    assert sum(biased.size) - sum(plain.size) == 21 * 32 * 512 * 4 + 32 * 1 * 4 == 1_376_384
