"""`kvplan import gguf` of a hybrid's quantized file: its weights are priced tensor by tensor (the state layers'
tensors too) and agree with the file; before, a state model's weight_type could not be priced. The GGUF is
written here with the gguf package's writer, typed as llama.cpp build 11434's quantizer types Q4_K_M."""

from __future__ import annotations

import pytest
import yaml

from tests.conftest import REF_PHONE

gguf = pytest.importorskip("gguf")
np = pytest.importorskip("numpy")

Q = gguf.GGMLQuantizationType
ROW = {Q.Q4_K: 144, Q.Q6_K: 210}  # bytes of a 256-value row


def write_tiny_lfm2_q4_k_m(path):
    """A two-block LFM2 (hidden 256, block 0 a short convolution of kernel 3, block 1 attention with 4 heads of
    64, FFN 256, vocabulary 256, tied), typed as llama-quantize types Q4_K_M:

    * token_embd (tied: the output) Q6_K;
    * the one attn_v: i_attention_wv 0 of n_attention_wv 1, use_more_bits(0, 1) (0 ≥ 7·1/8 = 0) → Q6_K;
    * ffn_down: i 0, 1 of n_ffn_down = 2 blocks, use_more_bits(1, 2) (1 ≥ 7·2/8 = 1) → block 1 Q6_K, block 0 Q4_K;
    * every other matrix Q4_K; the conv kernel [3, 256] F32 (never quantized), norms F32.
    """
    w = gguf.GGUFWriter(str(path), "lfm2")
    w.add_name("Tiny LFM2")
    w.add_block_count(2)
    w.add_head_count(4)
    w.add_head_count_kv([0, 4])
    w.add_embedding_length(256)
    w.add_feed_forward_length(256)
    w.add_context_length(4096)
    w.add_vocab_size(256)
    w.add_uint32("lfm2.shortconv.l_cache", 3)
    w.add_file_type(15)  # LLAMA_FTYPE_MOSTLY_Q4_K_M

    def matrix(name, rows, qtype=Q.Q4_K):
        w.add_tensor(name, np.zeros((rows, ROW[qtype]), dtype=np.uint8), raw_dtype=qtype)

    def f32(name, *shape):
        w.add_tensor(name, np.zeros(tuple(reversed(shape)), dtype=np.float32))

    matrix("token_embd.weight", 256, Q.Q6_K)
    f32("token_embd_norm.weight", 256)
    for b in (0, 1):
        f32(f"blk.{b}.attn_norm.weight", 256)
        f32(f"blk.{b}.ffn_norm.weight", 256)
        matrix(f"blk.{b}.ffn_gate.weight", 256)
        matrix(f"blk.{b}.ffn_up.weight", 256)
        matrix(f"blk.{b}.ffn_down.weight", 256, Q.Q6_K if b == 1 else Q.Q4_K)
    f32("blk.0.shortconv.conv.weight", 3, 256)
    matrix("blk.0.shortconv.in_proj.weight", 768)
    matrix("blk.0.shortconv.out_proj.weight", 256)
    for n in ("attn_q", "attn_k", "attn_output"):
        matrix(f"blk.1.{n}.weight", 256)
    matrix("blk.1.attn_v.weight", 256, Q.Q6_K)
    f32("blk.1.attn_q_norm.weight", 64)
    f32("blk.1.attn_k_norm.weight", 64)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


# Q6_K: token_embd, attn_v, blk.1.ffn_down: 3 × 256 rows × 210 = 161,280
# Q4_K rows: in_proj 768 + out_proj 256 + gate/up 4 × 256 + blk.0.ffn_down 256 + q, k, o 3 × 256 = 3,072 rows × 144
#   = 442,368
# F32: conv 3 × 256 × 4 = 3,072; norms (5 × 256 + 2 × 64) × 4 = 5,632
TINY_LFM2_BYTES = 3 * 256 * 210 + 3072 * 144 + 3 * 256 * 4 + (5 * 256 + 2 * 64) * 4
assert TINY_LFM2_BYTES == 612_352


def test_hybrid_file_priced_tensor_by_tensor(run, run_json, tmp_path):
    out = tmp_path / "tiny-lfm2.yaml"
    result = run("import", "gguf", write_tiny_lfm2_q4_k_m(tmp_path / "tiny-lfm2.gguf"), "-o", out)
    assert result.exit_code == 0, result.stderr
    data = yaml.safe_load(out.read_text())
    assert data["weight_type"] == "q4_k_m" and data["weights"] == f"{TINY_LFM2_BYTES} B"
    assert data["state"]["layers"] == [0]
    assert "kvplan prices" not in result.stderr and "cannot price" not in result.stderr
    _, priced = run_json("check", "-d", REF_PHONE, "-m", out, "-c", "4096", "--weight-type", "q4_k_m")
    assert priced["memory"]["weights_bytes"] == TINY_LFM2_BYTES
    assert priced["weights"]["bytes_by_type"] == {"f32": 3072 + 5632, "q4_K": 3072 * 144, "q6_K": 3 * 256 * 210}
    assert priced["weights"]["bytes_by_kind"]["conv"] == 3 * 256 * 4
