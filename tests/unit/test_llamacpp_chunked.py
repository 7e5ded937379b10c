"""Chunked attention (Llama 4) in llama.cpp's cache, against build 11434's own allocation.

Data: ``tests/data/llamacpp/chunked/llama-4-scout-17b-16e.json`` (``tests/harness/chunked_buffers.py``, the weight-less
F16 GGUF of ``make_gguf.py``): n_ctx 512…32768 (and 65536) × f16 / q8_0 × -np 1 / 4, unified or not, flash attention
on, -ub 512, and --swa-full at 16384. llama.cpp keeps Llama 4's 36 chunked layers in llama_kv_cache_iswa's windowed
cache (src/models/llama4.cpp load_arch_hparams: LLAMA_SWA_TYPE_CHUNKED, n_swa 8192, load_swa_pattern(ml, 4)), so
they hold pad(min(n_ctx_seq, 8192 · streams_per_window + n_ubatch), 256) cells; the 12 NoPE layers hold them all.
"""

from __future__ import annotations

import json
import re

import pytest

from kvplan.caches.llamacpp import llamacpp_cache
from kvplan.caches.transformers import transformers_cache
from kvplan.engine.formats import format_from_name
from kvplan.profiles.catalog import Catalog
from kvplan.profiles.runtime import LlamaCppSpec, TransformersSpec
from tests.conftest import DATA

MIB = 2**20
DOC = json.loads((DATA / "llamacpp" / "chunked" / "llama-4-scout-17b-16e.json").read_text())
RUNS = DOC["runs"]
# one cell of one layer: K and V rows of 8 KV heads × 128 values; f16 2 B a value, q8_0 34 B per 32 values
ROW_BYTES = {"f16": 2 * 8 * 128 * 2, "q8_0": 2 * 8 * 128 * 34 // 32}  # 4,096 and 2,176


@pytest.fixture(scope="module")
def scout():
    return Catalog().model("llama-4-scout-17b-16e").profile


def _cache(model, p):
    fmt = format_from_name(p["type_k"])
    spec = LlamaCppSpec(kv_unified=p["kv_unified"], ubatch=p["n_ubatch"], batch=p["n_batch"],
                        swa_full=p["swa_full"], flash_attn="on" if p["flash_attn"] else "off")
    return llamacpp_cache(spec, model, fmt, fmt)


def _cells(run):
    """(cells, layers) of each llama_kv_cache llama.cpp logged, in order (full layers, then chunked)."""
    return [(int(m.group(1)), int(m.group(2))) for ln in run["log"]
            if (m := re.search(r"llama_kv_cache: size = .*\(\s*(\d+) cells,\s+(\d+) layers", ln))]


def test_the_data_is_build_11434_and_covers_the_cap():
    assert DOC["llama_cpp"].startswith("llama.cpp build 11434") and len(RUNS) == 36
    assert all(r["returncode"] == 0 for r in RUNS)
    # past one chunk the chunked layers stop growing: 65,536 cells for the 12 full layers, 8,704 for the 36 chunked
    long = next(r for r in RUNS if r["params"]["n_ctx"] == 65536 and r["params"]["n_seq_max"] == 1)
    assert _cells(long) == [(65536, 12), (8704, 36)]


@pytest.mark.parametrize("run", RUNS, ids=lambda r: "{n_ctx}-{type_k}-np{n_seq_max}-u{kv_unified:d}-swafull{swa_full:d}"
                         .format(**r["params"]))
def test_kv_equals_llama_cpp(scout, run):
    p = run["params"]
    c = _cache(scout, p)
    n = p["n_seq_max"]
    assert c.kv_bytes(p["n_ctx"], n) == run["breakdown_bytes"]["CPU"]["context"]
    cells = c.cells(p["n_ctx"], n)
    per_stream = [cells.n_ctx_seq if not p["kv_unified"] else cells.n_ctx, cells.swa_cells]
    assert [k for k, _ in _cells(run)] == per_stream and [ly for _, ly in _cells(run)] == [12, 36]


@pytest.mark.parametrize("n_ctx", [512, 4096, 8192, 16384, 32768])
def test_one_sequence_by_hand(scout, n_ctx):
    run = next(r for r in RUNS if r["params"]["n_ctx"] == n_ctx and r["params"]["n_seq_max"] == 1
               and r["params"]["type_k"] == "f16" and not r["params"]["swa_full"])
    chunked_cells = min(n_ctx, 8192 + 512)  # pad(min(n_ctx, 8,192 + n_ubatch 512), 256): 8,704 is a multiple of 256
    # 12 NoPE full layers × n_ctx cells + 36 chunked layers × their cells, 4,096 B a cell at f16
    assert run["breakdown_bytes"]["CPU"]["context"] == (12 * n_ctx + 36 * chunked_cells) * ROW_BYTES["f16"]


def test_swa_full_gives_the_chunked_layers_every_cell(scout):
    run = next(r for r in RUNS if r["params"]["swa_full"])
    # --swa-full: 48 layers × 16,384 cells × 4,096 B = 3,221,225,472 B (3 GiB)
    assert run["breakdown_bytes"]["CPU"]["context"] == 48 * 16384 * 4096 == _cache(scout, run["params"]).kv_bytes(16384)


def test_the_rule_names_the_chunk(scout):
    rules = {r.kind: dict(r.values) for r in _cache(scout, RUNS[0]["params"]).rules}
    assert rules["chunked_cells"] == {"layers": 36, "chunk": 8192, "profile_chunk": 8192}


def test_the_ideal_and_transformers_hold_one_chunk(scout):
    # the ideal cache at 32,768 tokens: 12 × 4,096 × 32,768 + 36 × 4,096 × min(32,768, 8,192) = 2,818,572,288 B
    from kvplan.caches.ideal import cache_layout

    ideal = cache_layout(scout)
    assert ideal.kv_bytes(32768) == 12 * 4096 * 32768 + 36 * 4096 * 8192 == 2_818_572_288
    # transformers (DynamicSlidingWindowLayer for chunked_attention, cache_utils.py DYNAMIC_LAYER_TYPE_MAPPING): the
    # same min(N, 8,192) after a decode step
    t = transformers_cache(TransformersSpec(), scout)
    assert t.kv_bytes(32768) == ideal.kv_bytes(32768)


@pytest.mark.parametrize("runtime", ["executorch", "onnxruntime-genai", "litert-lm"])  # mlx-lm: ChunkedKVCache
def test_the_other_runtimes_refuse_it_by_name(scout, runtime):
    from kvplan.caches.runtimes import cache_model
    from kvplan.errors import FieldError
    from kvplan.profiles.runtime import runtime_spec

    with pytest.raises(FieldError, match=r"attend in chunks of 8,192 tokens \(chunked attention, Llama 4\)"):
        cache_model(runtime_spec(runtime), scout)


def test_the_gguf_inventory_of_llama4(scout):
    from kvplan.engine.tensors import n_params, tensor_inventory
    from kvplan.plan.weights import model_shape

    tensors = {t.name: t for t in tensor_inventory(model_shape(scout))}
    # token_embd, output_norm, output, rope_freqs [64] + 48 blocks × (2 norms, q/k/v/o, router, 3 expert stacks,
    # 3 shared-expert matrices = 13): 4 + 624 = 628 (make_gguf.py's file: 628); the values: params + rope_freqs' 64
    assert len(tensors) == 628 and n_params(tuple(tensors.values())) == scout.params + 64
    assert tensors["blk.0.ffn_gate_exps.weight"].shape == (5120, 8192, 16)
    assert tensors["blk.0.ffn_up_shexp.weight"].shape == (5120, 8192)



def _llama4_header(path, extra=None):
    gguf = pytest.importorskip("gguf")
    np = pytest.importorskip("numpy")
    w = gguf.GGUFWriter(str(path), "llama4")
    w.add_name("Llama4 Test")
    w.add_block_count(8)
    w.add_head_count(8)
    w.add_head_count_kv(2)
    w.add_embedding_length(512)
    w.add_feed_forward_length(1024)
    w.add_context_length(262144)
    w.add_vocab_size(1000)
    for key, value in (extra or {}).items():
        w.add_uint32(key, value)
    w.add_tensor("blk.0.attn_output.weight", np.zeros((8 * 512, 512), dtype=np.float16))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def test_a_llama4_gguf_header_imports_its_chunks(tmp_path):
    from kvplan.importers.gguf import profile_from_gguf_file

    # no llama4.attention.sliding_window key (convert_hf_to_gguf writes none for Scout): llama.cpp's loader sets
    # LLAMA_SWA_TYPE_CHUNKED, n_swa 8192 and load_swa_pattern(ml, 4): layers 0–2 and 4–6 chunked, 3 and 7 full
    m = profile_from_gguf_file(_llama4_header(tmp_path / "l4.gguf")).model
    assert (m.attention_chunk_size, m.sliding_window_pattern, m.sliding_window) == (8192, "3:1", None)
    assert m.schedule.chunked_layers == 6 and m.schedule.layer(3).window_tokens is None
    # sliding_window 0 (MobileLLM): no chunk, every layer full (LLAMA_SWA_TYPE_NONE)
    m = profile_from_gguf_file(_llama4_header(tmp_path / "m.gguf", {"llama4.attention.sliding_window": 0})).model
    assert m.attention_chunk_size is None and m.schedule.chunked_layers == 0
