"""llama.cpp's CPU compute buffer of hybrid and MoE graphs against build 11434's measured buffers.

Data (``llama_get_memory_breakdown()`` CPU compute bytes, llama.cpp build 11434, CPU, weight-less F16 GGUFs):

* ``tests/data/llamacpp/buffers/<model>.json`` (``tests/harness/buffers.py --grid hybrid``): n_ctx 512/4096/32768,
  -ub 512 (and 256/1024 at 4096), flash attention off and on, 1 and 4 sequences, and ``n_outputs_max`` either the
  library default (``n_batch``: logits for the whole micro-batch) or ``n_seq_max`` (as llama-server sets it: the
  graph's body decides the peak);
* ``tests/data/llamacpp/state/<model>.json`` and ``models2026/<model>.json`` (``tests/harness/state_buffers.py``):
  contexts 512…32768, -ub 512, flash attention on, f16 and q8_0 caches, unified or not, library ``n_outputs_max``.

Tolerance (issue #23): 5 % or 8 MiB, whichever is larger.
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
MODELS = {
    "lfm2-1.2b": "state", "qwen3.5-2b": "state", "granite-4.0-h-1b": "state", "nemotron-nano-9b-v2": "state",
    "gpt-oss-20b": "models2026", "qwen3-30b-a3b": "models2026",
}


def _runs(folders=("state", "models2026", "buffers")):
    out = []
    for model, folder in MODELS.items():
        for where in folders:
            name = folder if where != "buffers" else "buffers"
            if where != "buffers" and where != folder:
                continue
            path = DATA / name / f"{model}.json"
            if not path.exists():
                continue
            doc = json.loads(path.read_text())
            assert doc["llama_cpp"].startswith("llama.cpp build 11434")
            for run in doc["runs"]:
                assert run["returncode"] == 0
                p = run["params"]
                key = (f"{name}-{model}-c{p['n_ctx']}-ub{p['n_ubatch']}-fa{int(p['flash_attn'])}-np{p['n_seq_max']}"
                       f"-u{int(p['kv_unified'])}-{p['type_k']}-{p['type_v']}-o{p.get('n_outputs_max', 0)}")
                out.append(pytest.param(model, p, run["breakdown_bytes"]["CPU"]["compute"], id=key))
    return out


@pytest.fixture(scope="module")
def catalog():
    return Catalog()


def tolerance(measured: int) -> float:
    return max(0.05 * measured, 8 * MiB)


@pytest.mark.parametrize("model, p, measured", _runs())
def test_compute_buffer_is_within_5_percent_or_8_mib_of_build_11434(catalog, model, p, measured):
    view = _ProfileView(catalog.model(model).profile)
    got = lb.compute_buffer_bytes_from_profile(
        view, n_ctx=p["n_ctx"], n_batch=p["n_batch"], n_ubatch=p["n_ubatch"], flash_attn=p["flash_attn"],
        n_seq_max=p["n_seq_max"], kv_unified=p["kv_unified"], type_k=p["type_k"], type_v=p["type_v"],
        swa_full=p["swa_full"], n_outputs=p.get("n_outputs_max") or None, build="b11434")
    assert abs(got - measured) <= tolerance(measured), (got, measured, (got - measured) / MiB)


def test_the_data_covers_every_model_and_both_cache_types():
    runs = _runs(folders=("state", "models2026"))
    assert len(runs) == 6 * 36
    assert {r.values[1]["type_k"] for r in runs} == {"f16", "q8_0"}
    assert {r.values[1]["n_ctx"] for r in runs} == {512, 1024, 4096, 8192, 16384, 32768}


@pytest.mark.parametrize("model", ["lfm2-1.2b", "qwen3.5-2b", "granite-4.0-h-1b", "nemotron-nano-9b-v2",
                                   "gpt-oss-20b", "qwen3-30b-a3b"])
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


def test_a_granite_hybrid_with_experts_is_still_refused():
    profile = {"architecture": "granitemoehybrid", "layers": 4, "experts": 8,
               "state": {"mixer": "mamba2", "layers": [0, 1, 2], "conv_kernel_tokens": 4, "ssm_heads": 8,
                         "ssm_head_dim": 64, "ssm_groups": 1, "ssm_state_size": 128}}
    assert lb.layer_graph_of(profile) is None


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
