"""``--draft mtp`` (kvplan.plan.mtp): the MTP head's fields from a config and a GGUF header, its parts by hand, the
draft step it prices, and the refusals. The figures llama.cpp measured are tests/unit/test_mtp_measured.py's."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvplan.engine.mtp import mtp_block_params, mtp_ffn_params
from kvplan.errors import FieldError
from kvplan.plan import Scenario, evaluate
from kvplan.plan.mtp_head import MTP_HEAD, is_mtp
from kvplan.profiles.catalog import Catalog
from tests.conftest import DATA, REF_PHONE

gguf = pytest.importorskip("gguf")
np = pytest.importorskip("numpy")


def _scenario(model="qwen3.5-2b", ctx=4096, **kw):
    cat = Catalog()
    return Scenario(cat.device(str(REF_PHONE)).profile, cat.model(model).profile, ctx, **kw)


def test_block_params_by_hand():
    # Qwen3.5-2B: q 2,048·8·256·2 = 8,388,608, k + v 2 · 2,048·2·256 = 2,097,152, o 8·256·2,048 = 4,194,304,
    # q/k norms 512 → 14,680,576; norms 4,096; MLP 3·2,048·6,144 = 37,748,736; eh_proj 2·2,048·2,048 = 8,388,608;
    # 3 norms 6,144: 60,828,160 (the GGUF with the block holds 1,942,653,248 − 1,881,825,088 more values)
    assert mtp_block_params(2048, 8, 2, 256, 6144) == 14_680_576 + 4_096 + 37_748_736 + 8_388_608 + 6_144 == 60_828_160
    # 35B-A3B: attention 27,263,488; MoE router 524,288 + 256 · 3,145,728 + shared 3,145,728 + gate 2,048
    assert mtp_ffn_params(2048, 0, 256, 512, 1) == 524_288 + 805_306_368 + 3_145_728 + 2_048 == 808_978_432
    assert mtp_block_params(2048, 16, 2, 256, 0, 256, 512, 1) == 27_263_488 + 4_096 + 808_978_432 + 8_388_608 + 6_144
    # a token runs 8 routed experts: 524,288 + 8 · 3,145,728 + 3,145,728 + 2,048
    assert mtp_ffn_params(2048, 0, 256, 512, 1, used=8) == 28_837_888


def test_profiles_carry_one_mtp_layer():
    cat = Catalog()
    assert cat.model("qwen3.5-2b").profile.mtp_layers == 1 == cat.model("qwen3.5-35b-a3b").profile.mtp_layers
    assert cat.model("qwen3-4b").profile.mtp_layers == 0


def test_hf_import_reads_mtp_num_hidden_layers():
    from kvplan.importers.hf import profile_from_hf_config

    config = json.loads((DATA / "hf_configs" / "qwen3.5-35b-a3b.json").read_text())
    assert profile_from_hf_config(config, name="q35").model.mtp_layers == 1
    config.get("text_config", config).pop("mtp_num_hidden_layers")
    assert profile_from_hf_config(config, name="q35").model.mtp_layers == 0


def _write_qwen35(path, mtp):
    w = gguf.GGUFWriter(str(path), "qwen35")
    w.add_block_count(8 + mtp)
    for key, value in (("qwen35.attention.head_count", 8), ("qwen35.attention.head_count_kv", 2),
                       ("qwen35.embedding_length", 512), ("qwen35.feed_forward_length", 1024),
                       ("qwen35.context_length", 8192), ("qwen35.vocab_size", 1000), ("qwen35.ssm.conv_kernel", 4),
                       ("qwen35.ssm.inner_size", 2048), ("qwen35.ssm.state_size", 128),
                       ("qwen35.ssm.time_step_rank", 16), ("qwen35.ssm.group_count", 16),
                       ("qwen35.full_attention_interval", 4), ("qwen35.nextn_predict_layers", mtp)):
        w.add_uint32(key, value)
    w.add_tensor("blk.0.attn_output.weight", np.zeros((8 * 512, 512), dtype=np.float16))  # 4 MiB of trunk
    if mtp:
        w.add_tensor("blk.8.nextn.eh_proj.weight", np.zeros((512, 1024), dtype=np.float16))  # 1 MiB of MTP block
        w.add_tensor("blk.8.nextn.enorm.weight", np.zeros((512,), dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def test_gguf_import_keeps_the_mtp_block_out_of_weights_and_params(tmp_path):
    from kvplan.importers.gguf import profile_from_gguf_file

    m = profile_from_gguf_file(_write_qwen35(tmp_path / "q.gguf", 1)).model
    assert (m.layers, m.mtp_layers) == (8, 1)
    assert m.params == 8 * 512 * 512 and m.weights == 8 * 512 * 512 * 2  # the trunk's tensor only
    assert m.mtp_weights == 512 * 1024 * 2 + 512 * 4  # eh_proj F16 + enorm F32
    plain = profile_from_gguf_file(_write_qwen35(tmp_path / "p.gguf", 0)).model
    assert plain.mtp_layers == 0 and plain.mtp_weights is None and plain.weights == m.weights


def test_the_draft_field_takes_mtp():
    s = _scenario(draft="mtp")
    assert s.draft is MTP_HEAD and is_mtp(s.draft) and s.draft.name == "mtp"
    with pytest.raises(FieldError, match="no multi-token-prediction layers"):
        _scenario("qwen3-4b", draft="mtp")


def test_parts_by_hand_under_the_ideal_formula():
    # 4-bit weights: the block's 60,828,160 values → 30,414,080 B; the cache: one layer × (K + V) × 2 heads × 256 ×
    # 2 B = 2,048 B a token → 8,388,608 at 4,096; no llama.cpp parts
    ev = evaluate(_scenario(draft="mtp", acceptance_rate=0.7))
    assert ev.part("mtp_weights").bytes == 60_828_160 // 2
    assert ev.part("mtp_kv").bytes == 4096 * 2048
    assert ev.part("mtp_state_snapshots") is None and ev.part("mtp_buffers") is None
    # a draft step: the block (dense: all of it) + the tied output head 248,320 · 2,048 · 4 bits + the MTP cache
    assert ev.speculative.draft_bytes_per_step == 30_414_080 + 248_320 * 2048 // 2 + 8_388_608


def test_llamacpp_parts_by_hand():
    ev = evaluate(_scenario(draft="mtp", sequences=2, runtime="llama.cpp", draft_max_tokens=5, draft_kv_type="q8_0"))
    # q8_0: 512 values a row, 16 blocks of 34 B, K and V → 1,088 B a cell, 4,096 cells over 2 streams
    assert ev.part("mtp_kv").bytes == 4096 * 1088
    # 5 snapshots × 20,201,472 B × 2 sequences
    assert ev.part("mtp_state_snapshots").bytes == 5 * 20_201_472 * 2
    # min(2,048, 2 · 6) = 12 rows of logits beyond the 2 at load, plus 2,048 · 2,048 hidden rows
    assert ev.part("mtp_verify_outputs").bytes == 10 * 248_320 * 4 + 2048 * 2048 * 4
    assert ev.part("mtp_weights").facts["mtp_layers"] == 1


def test_weight_type_prices_the_block_as_llama_quantize():
    # q4_k_m: as measured in tests/data/llamacpp/mtp/quant_qwen3.5-2b-mtp.json.gz (37,767,168 B: attn_v and
    # ffn_down q6_K, the other matrices q4_K, the norms F32); the trunk's weights unchanged
    plain = evaluate(_scenario(weight_type="q4_k_m"))
    ev = evaluate(_scenario(weight_type="q4_k_m", draft="mtp"))
    assert ev.part("mtp_weights").bytes == 37_767_168 and ev.weights_bytes == plain.weights_bytes


@settings(max_examples=25, deadline=None)
@given(ctx=st.integers(1, 300_000), sequences=st.integers(1, 8))
def test_mtp_kv_grows_with_the_context_and_the_sequences_share_it(ctx, sequences):
    """The MTP cache holds the target's cells: never less at a larger context, and (llama.cpp) split over the
    streams of -np, never more than the cells of one more 256-cell step per stream."""
    ev = evaluate(_scenario(ctx=ctx, draft="mtp", runtime="llama.cpp", sequences=sequences))
    more = evaluate(_scenario(ctx=ctx + 256, draft="mtp", runtime="llama.cpp", sequences=sequences))
    kv = ev.part("mtp_kv").bytes
    assert kv % 2048 == 0 and kv >= ctx * 2048 and more.part("mtp_kv").bytes >= kv


def test_cli_draft_mtp(run, run_json):
    code, doc = run_json("check", "--device", str(REF_PHONE), "--model", "qwen3.5-2b", "--ctx", "4k", "--runtime",
                         "llama.cpp", "--draft", "mtp", "--acceptance", "0.7")
    assert code == 0 and doc["speculative"]["draft"] == "mtp"
    assert {"mtp_weights", "mtp_kv", "mtp_state_snapshots", "mtp_buffers", "mtp_verify_outputs"} <= set(
        doc["memory"]["parts"])
    bad = run("check", "--device", str(REF_PHONE), "--model", "qwen3-4b", "--ctx", "4k", "--draft", "mtp")
    assert bad.exit_code == 2 and "no multi-token-prediction layers" in bad.stderr
    assert "Traceback" not in bad.stderr and len(bad.stderr.strip().splitlines()) == 1
