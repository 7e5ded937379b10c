"""llama.cpp's CPU compute buffer of Mixtral-8x7B (the llama graph with experts, ``src/models/llama.cpp``: soft-max
gating, top-2, weights renormalised, no shared expert) against build 11434's measured buffers.

Data: ``tests/data/llamacpp/buffers/mixtral-8x7b.json`` (``tests/harness/buffers.py --grid hybrid`` on
``make_gguf.py``'s weight-less F16 GGUF): n_ctx 512/4096/32768, -ub 512 (and 256/1024 at 4096), flash attention off
and on, 1 and 4 sequences, ``n_outputs_max`` the library default or ``n_seq_max``. Issue #23 asks for 5 % or 8 MiB;
every row is equal to the byte. Kept apart from test_llamacpp_buffers_hybrid_moe.py's FILES (its row counts).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvplan.caches.buffers import _ProfileView, unpriced_because
from kvplan.caches.llamacpp import llamacpp_cache
from kvplan.engine import llamacpp_buffers as lb
from kvplan.engine.formats import format_from_name
from kvplan.engine.quantize import price_gguf
from kvplan.plan.weights import model_shape
from kvplan.profiles.catalog import Catalog
from kvplan.profiles.runtime import LlamaCppSpec

MiB = 2**20
DOC = json.loads((Path(__file__).parents[1] / "data" / "llamacpp" / "buffers" / "mixtral-8x7b.json").read_text())
RUNS = [pytest.param(r["params"], r["breakdown_bytes"]["CPU"]["compute"],
                     id="c{n_ctx}-ub{n_ubatch}-fa{fa}-np{n_seq_max}-o{o}".format(
                         fa=int(r["params"]["flash_attn"]), o=r["params"].get("n_outputs_max", 0), **r["params"]))
        for r in DOC["runs"]]


@pytest.fixture(scope="module")
def mixtral():
    return Catalog().model("mixtral").profile


def _predict(profile, p):
    return lb.compute_buffer_bytes_from_profile(
        _ProfileView(profile), n_ctx=p["n_ctx"], n_batch=p["n_batch"], n_ubatch=p["n_ubatch"],
        flash_attn=p["flash_attn"], n_seq_max=p["n_seq_max"], kv_unified=p["kv_unified"], type_k=p["type_k"],
        type_v=p["type_v"], swa_full=p["swa_full"], n_outputs=p.get("n_outputs_max") or None, build="b11434")


def test_the_data_is_build_11434s_hybrid_grid():
    assert DOC["llama_cpp"].startswith("llama.cpp build 11434") and DOC["model"] == "mixtral-8x7b"
    assert all(r["returncode"] == 0 for r in DOC["runs"])
    params = [r["params"] for r in DOC["runs"]]
    # 3 contexts × fa off/on × 1/4 sequences × 2 n_outputs_max, + -ub 256/1024 × fa × 2 at 4096 = 24 + 8
    assert len(params) == 3 * 2 * 2 * 2 + 2 * 2 * 2 == 32
    assert {p["n_ctx"] for p in params} == {512, 4096, 32768} and {p["flash_attn"] for p in params} == {False, True}


def test_mixtral_is_replayed(mixtral):
    assert unpriced_because(mixtral) is None
    layers = dict(lb.layer_graph_of(mixtral))
    assert layers["ffns"] == ("moe",) * 32 and layers["mixers"] == ("attn",) * 32
    assert (layers["moe_gating"], layers["moe_norm_w"]) == ("softmax", True)  # llama.cpp: SOFTMAX, norm_w true


@pytest.mark.parametrize("p, measured", RUNS)
def test_compute_buffer_is_within_5_percent_or_8_mib_of_build_11434(mixtral, p, measured):
    assert abs(_predict(mixtral, p) - measured) <= max(0.05 * measured, 8 * MiB)  # issue #23's figure


@pytest.mark.parametrize("p, measured", RUNS)
def test_compute_buffer_equals_build_11434(mixtral, p, measured):
    assert _predict(mixtral, p) == measured


@pytest.mark.parametrize("p, run", [pytest.param(r["params"], r, id=i.id) for r, i in zip(DOC["runs"], RUNS)])
def test_kv_cache_equals_build_11434(mixtral, p, run):
    # one cell: 32 layers · 2 (K, V) · 8 KV heads · 128 · 2 B (f16) = 131,072 B, every layer over the whole context;
    # each of the n_seq_max streams holds n_ctx / n_seq_max cells padded to 256 (-c 512 -np 4: 128 → 256, so 1,024)
    per_seq = -(-p["n_ctx"] // p["n_seq_max"] // 256) * 256
    cells = p["n_seq_max"] * per_seq
    assert run["breakdown_bytes"]["CPU"]["context"] == 131_072 * cells
    spec = LlamaCppSpec(kv_unified=p["kv_unified"], ubatch=p["n_ubatch"], batch=p["n_batch"],
                        flash_attn="on" if p["flash_attn"] else "off")
    fmt = format_from_name(p["type_k"])
    assert llamacpp_cache(spec, mixtral, fmt, fmt).kv_bytes(p["n_ctx"], p["n_seq_max"]) == 131_072 * cells


def test_f16_weights_equal_the_loaded_model():
    # llama_get_memory_breakdown's model bytes of the F16 GGUF: F32 norms/routers + F16 matrices, as priced
    model = DOC["runs"][0]["breakdown_bytes"]["CPU_Mapped"]["model"]
    assert model == price_gguf(model_shape(Catalog().model("mixtral").profile), "f16").total_bytes == 93_408_215_040
