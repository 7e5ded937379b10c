"""``--draft mtp`` against llama.cpp build 11434's own allocation of the MTP draft context
(tests/data/llamacpp/mtp/mtp_contexts.json, written by tests/harness/mtp_probe.py: a Qwen3.5 GGUF with its MTP block
loaded as llama-server -m MODEL --spec-type draft-mtp loads it, the target context, the MTP context on the same
model, then one verification batch with the MTP hooks on; llama_get_memory_breakdown() and every buffer allocated).

Every part equals llama.cpp to the byte on every 2B row (-c 4,096 … 32,768, a padded 5,000, -np 4, -ctk q8_0,
-ctkd q8_0, --spec-draft-n-max 1 and 8, -b 512): the MTP block's weights (the model buffer grows by them only with
draft-mtp), the MTP cache, the target's rollback snapshots of its state, the MTP context's compute and output
buffers, the target's output buffer after verification. The 35B-A3B rows give the same weights, cache, snapshots and
MTP context buffers (its MoE block in the replayed graph); its target's own buffers are not priced (the trunk's MoE
graph with state layers is not replayed), so neither is its verification output's base.
"""

from __future__ import annotations

import gzip
import json

import pytest

from kvplan.plan import Scenario, evaluate
from kvplan.profiles.catalog import Catalog
from tests.conftest import DATA, REF_PHONE

MEASURED = json.loads((DATA / "llamacpp" / "mtp" / "mtp_contexts.json").read_text())
ROWS = {r["id"]: r for r in MEASURED["rows"]}
SPEC = [r for r in MEASURED["rows"] if r["spec_type"] == "draft-mtp"]
SPEC_2B = [r for r in SPEC if r["model"] == "qwen3.5-2b-mtp"]
PROFILE = {"qwen3.5-2b-mtp": "qwen3.5-2b", "qwen3.5-35b-a3b-mtp": "qwen3.5-35b-a3b"}
LOGIT_BYTES = 4


def _cpu(context: dict, buft: str = "CPU") -> dict:
    return next(b for b in context["breakdown"] if b["buft"] == buft)


def _allocs(row, stage):
    return [a["bytes"] for a in row["allocations"] if a["stage"] == stage and a["buft"] == "CPU"]


def _scenario(row, draft="mtp"):
    """The row's request; the 2B priced tensor by tensor in the probe's F16 file (the 35B's profile has no dense
    MLP width for its tensors: at 16 bits a weight)."""
    cat = Catalog()
    weights = {"weight_type": "f16"} if "2b" in row["model"] else {"weight_bits": 16}
    return Scenario(cat.device(str(REF_PHONE)).profile, cat.model(PROFILE[row["model"]]).profile, row["n_ctx"],
                    sequences=row["n_parallel"], runtime={"name": "llama.cpp", "batch": row["n_batch"]},
                    k_format=row["type_k"], v_format=row["type_v"], draft=draft, **weights,
                    draft_kv_type=None if row["type_k_draft"] == "f16" else row["type_k_draft"],
                    draft_max_tokens=row["n_draft_max"])


def test_the_data_is_build_11434_and_every_row_ran():
    assert "11434" in MEASURED["llama_cpp"]
    assert len(SPEC_2B) == 8 and all(r["returncode"] == 0 for r in MEASURED["rows"])
    # the GGUF's block_count 25 holds the MTP block: llama_model_n_layer is the trunk's 25 − nextn_predict_layers 1
    assert all((r["n_layer"], r["n_layer_nextn"]) == (24, 1) for r in MEASURED["rows"] if "2b-mtp" in r["model"])


def test_the_mtp_block_is_loaded_only_with_draft_mtp():
    """Without draft-mtp llama.cpp skips the block's tensors (TENSOR_SKIP): the model buffer of the file with the
    block equals that of the file without it; with draft-mtp it holds the block too."""
    plain, no_mtp, spec = ROWS["2b-c4096-plain"], ROWS["2b-nomtp-c4096-plain"], ROWS["2b-c4096"]
    trunk = _cpu(plain["contexts"]["target"], "CPU_Mapped")["model_bytes"]
    assert trunk == _cpu(no_mtp["contexts"]["target"], "CPU_Mapped")["model_bytes"] == 3_764_747_520
    block = _cpu(spec["contexts"]["target"], "CPU_Mapped")["model_bytes"] - trunk
    # 60,817,408 F16 values (q 2,048·4,096, k and v 2,048·512, o 2,048·2,048, MLP 3·2,048·6,144, eh_proj 4,096·2,048)
    # + 10,752 F32 norm values (attn_norm, post_attention_norm, enorm, hnorm, shared_head_norm 2,048 each, q/k 256)
    assert block == 60_817_408 * 2 + 10_752 * 4 == 121_677_824
    ev = evaluate(_scenario(spec))
    assert ev.weights_bytes == trunk and ev.part("mtp_weights").bytes == block
    assert evaluate(_scenario(plain, draft=None)).weights_bytes == trunk


@pytest.mark.parametrize("row", SPEC, ids=[r["id"] for r in SPEC])
def test_mtp_kv_and_state_snapshots_equal_llamacpp(row):
    """The MTP context's memory is the MTP block's K and V over the target's cells (a plain llama_kv_cache filtered to
    il ≥ n_layer); the target's memory is its KV and state with 1 + n_max rows per state cell (n_rs_seq = n_max)."""
    ev = evaluate(_scenario(row))
    mtp, target = row["contexts"]["mtp"], row["contexts"]["target"]
    assert mtp["n_ctx"] == target["n_ctx"] and target["n_rs_seq"] == row["n_draft_max"] and mtp["n_rs_seq"] == 0
    assert ev.part("mtp_kv").bytes == _cpu(mtp)["context_bytes"]
    assert ev.kv_bytes + ev.part("mtp_state_snapshots").bytes == _cpu(target)["context_bytes"]


def test_mtp_kv_by_hand():
    # -c 5,000 → 5,120 cells; one layer × (K + V) × 2 KV heads × 256 × 2 B = 2,048 B a cell
    assert _cpu(ROWS["2b-c5000"]["contexts"]["mtp"])["context_bytes"] == 5120 * 2048
    # -ctkd q8_0 at 8,192: 512 values a row in 16 blocks of 34 B, K and V: 1,088 B a cell
    assert _cpu(ROWS["2b-c8192-ctkd-q8_0"]["contexts"]["mtp"])["context_bytes"] == 8192 * 2 * 16 * 34
    # the 2B's state: 18 layers × 1,122,304 B = 20,201,472 B a sequence; 3 snapshots × 4 sequences
    ev = evaluate(_scenario(ROWS["2b-c8192-np4"]))
    assert ev.part("mtp_state_snapshots").bytes == 3 * 20_201_472 * 4


@pytest.mark.parametrize("row", SPEC, ids=[r["id"] for r in SPEC])
def test_mtp_buffers_equal_llamacpp(row):
    """The MTP context's compute buffer (the replay of graph_mtp) and its output buffer (-np rows of logits) as
    allocated; kvplan's mtp_buffers adds the -np masked hidden rows output_reserve gives it once the MTP hook is on
    (src/llama-context.cpp 2145: embd_nextn n_embd · n_outputs_max; not allocated before the first draft)."""
    ev = evaluate(_scenario(row))
    mtp = row["contexts"]["mtp"]
    output_at_creation, kv, compute = _allocs(row, "mtp_context")
    n, vocab, hidden = row["n_parallel"], 248_320, 2048
    assert output_at_creation == n * vocab * LOGIT_BYTES and kv == _cpu(mtp)["context_bytes"]
    assert compute == _cpu(mtp)["compute_bytes"]
    assert ev.part("mtp_buffers").bytes == compute + output_at_creation + n * hidden * LOGIT_BYTES


@pytest.mark.parametrize("row", SPEC_2B, ids=[r["id"] for r in SPEC_2B])
def test_verification_output_buffer_equals_llamacpp(row):
    """After one verification batch with the hooks on, the target's output buffer is reallocated to the logits of
    min(-b, -np · (1 + n_max)) rows plus n_embd · n_batch unmasked hidden rows; kvplan's output buffer (the -np rows
    at load) plus mtp_verify_outputs is that size."""
    ev = evaluate(_scenario(row))
    (grown,) = _allocs(row, "verify_decode")
    n, k, batch = row["n_parallel"], row["n_draft_max"], row["n_batch"]
    assert grown == min(batch, n * (1 + k)) * 248_320 * 4 + 2048 * batch * 4
    assert ev.output_buffer_bytes + ev.part("mtp_verify_outputs").bytes == grown
    # the target's compute buffer, with the min(-b, -np · (1 + n_max)) output rows llama-server reserves; with -np 4
    # llama.cpp's is 4,292,608 B more (65,134,688 measured): its Gated DeltaNet graph with n_rs_seq rollback
    # snapshots over 4 sequences, not replayed (with one sequence the snapshots leave the graph as it is)
    gap = _cpu(row["contexts"]["target"])["compute_bytes"] - ev.compute_buffer_bytes
    assert gap == (4_292_608 if n == 4 else 0)


def test_moe_weights_kv_and_snapshots():
    """Qwen3.5-35B-A3B: the MTP block holds a MoE block (844,640,768 values, the file's growth), its cache is one
    attention layer's, the snapshots 3 × 65,863,680 B a sequence."""
    spec, plain = ROWS["35b-c4096"], ROWS["35b-c4096-plain"]
    block = (_cpu(spec["contexts"]["target"], "CPU_Mapped")["model_bytes"]
             - _cpu(plain["contexts"]["target"], "CPU_Mapped")["model_bytes"])
    # attention 27,263,488 + norms 4,096 + MoE 808,978,432 + eh_proj 8,388,608 + 3 norms 6,144 = 844,640,768 values,
    # all F16 but 9 F32 norm/router-gate vectors (attn/post norms, q/k norms, enorm, hnorm, shared_head_norm, the
    # shared-expert gate: 6 × 2,048 + 2 × 256 = 12,800) and the F32 router 2,048 × 256
    assert block == (844_640_768 - 12_800 - 524_288) * 2 + (12_800 + 524_288) * 4
    cat = Catalog()
    s = Scenario(cat.device(str(REF_PHONE)).profile, cat.model("qwen3.5-35b-a3b").profile, 4096, runtime="llama.cpp",
                 weight_bits=16, draft="mtp")
    ev = evaluate(s)
    assert ev.part("mtp_weights").bytes == 844_640_768 * 2  # priced at the profile's bits: the F32 vectors at 16
    assert ev.part("mtp_kv").bytes == _cpu(spec["contexts"]["mtp"])["context_bytes"] == 4096 * 2048
    assert ev.kv_bytes + ev.part("mtp_state_snapshots").bytes == _cpu(spec["contexts"]["target"])["context_bytes"]
    assert ev.part("mtp_state_snapshots").bytes == 3 * 65_863_680


@pytest.mark.parametrize("model, mtp_block", [("qwen3.5-2b", "blk.24."), ("qwen3.5-35b-a3b", "blk.40.")])
def test_quantizer_types_the_mtp_block_as_measured(model, mtp_block):
    """llama-quantize --dry-run on the 2B and 35B-A3B GGUFs with their MTP block (19 types each): kvplan's types and
    bytes of every tensor, the MTP block (block 24; the 35B-A3B's block 40, with its MoE) included, and the trunk's
    are those of the file without the block."""
    from dataclasses import replace

    from kvplan.engine.quantize import price_gguf
    from kvplan.plan.weights import model_shape

    data = json.loads(gzip.decompress((DATA / "llamacpp" / "mtp" / f"quant_{model}-mtp.json.gz").read_bytes()))
    assert data["llama_cpp"].startswith("llama.cpp build 11434") and len(data["types"]) == 19
    shape = model_shape(Catalog().model(model).profile)
    for ftype, truth in data["types"].items():
        mine = {t.name: (t.dtype.lower(), t.bytes) for t in price_gguf(replace(shape, mtp_layers=1), ftype).tensors}
        assert mine == {t["name"]: (t["type"].lower(), t["bytes"]) for t in truth["tensors"]}, ftype
        trunk = price_gguf(shape, ftype)
        assert trunk.total_bytes == sum(b for n, (_, b) in mine.items() if not n.startswith(mtp_block))
    if model != "qwen3.5-2b":
        return
    q4 = {t["name"]: t for t in data["types"]["q4_k_m"]["tensors"]}
    # Q4_K_M gives the last layer's attn_v and ffn_down q6_K (use_more_bits(24, 25)): 512 × 2,048 / 256 · 210 B
    assert q4["blk.24.attn_v.weight"]["type"] == "q6_K" and q4["blk.24.attn_v.weight"]["bytes"] == 2048 * 2 * 210
