"""`kvplan import gguf`: general.file_type becomes weight_type, the comments say what the values are, and a bad
file is one line naming it. The GGUFs are written here with the gguf package's writer (a few hundred kB)."""

from __future__ import annotations

import pytest
import yaml

from tests.conftest import REF_PHONE

gguf = pytest.importorskip("gguf")
np = pytest.importorskip("numpy")

Q = gguf.GGMLQuantizationType
Q4_K_ROW, Q6_K_ROW = 144, 210  # bytes of a 256-value row: Q4_K 144 (4.5 bits), Q6_K 210 (6.5625 bits)


def write_tiny_q4_k_m(path, *, file_type=15, all_q4_k=False, output=True):
    """A one-layer llama (hidden 256, 4 heads of 64, FFN 256, vocab 256) typed as llama.cpp's quantizer types
    Q4_K_M: output and the use_more_bits layers' attn_v / ffn_down Q6_K (with one layer, layer 0 is one of
    them: i ≥ 7·1/8 = 0), every other matrix Q4_K, norms F32. ``all_q4_k``: every matrix Q4_K instead."""
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name("Tiny Q4")
    w.add_block_count(1)
    w.add_head_count(4)
    w.add_head_count_kv(4)
    w.add_embedding_length(256)
    w.add_feed_forward_length(256)
    w.add_context_length(4096)
    w.add_vocab_size(256)
    if file_type is not None:
        w.add_file_type(file_type)

    def matrix(name, six_bits):
        dtype, row = (Q.Q6_K, Q6_K_ROW) if six_bits and not all_q4_k else (Q.Q4_K, Q4_K_ROW)
        w.add_tensor(name, np.zeros((256, row), dtype=np.uint8), raw_dtype=dtype)

    matrix("token_embd.weight", False)
    if output:
        matrix("output.weight", True)
    w.add_tensor("output_norm.weight", np.zeros(256, dtype=np.float32))
    for n in ("attn_q", "attn_k", "attn_output", "ffn_gate", "ffn_up"):
        matrix(f"blk.0.{n}.weight", False)
    for n in ("attn_v", "ffn_down"):
        matrix(f"blk.0.{n}.weight", True)
    for n in ("attn_norm", "ffn_norm"):
        w.add_tensor(f"blk.0.{n}.weight", np.zeros(256, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


# 6 Q4_K matrices (token_embd, q, k, o, gate, up) × 256 rows × 144 B = 221,184
# + 3 Q6_K matrices (output, v, down) × 256 × 210 B = 161,280 + 3 F32 norms × 256 × 4 B = 3,072
TINY_Q4_K_M_BYTES = 6 * 256 * 144 + 3 * 256 * 210 + 3 * 256 * 4
assert TINY_Q4_K_M_BYTES == 385_536


def test_file_type_becomes_weight_type_and_agrees_with_weight_type_pricing(run, run_json, tmp_path):
    out = tmp_path / "tiny.yaml"
    result = run("import", "gguf", write_tiny_q4_k_m(tmp_path / "tiny.gguf"), "-o", out)
    assert result.exit_code == 0, result.stderr
    data = yaml.safe_load(out.read_text())
    assert data["weight_type"] == "q4_k_m"  # general.file_type 15 = LLAMA_FTYPE_MOSTLY_Q4_K_M
    assert data["weights"] == f"{TINY_Q4_K_M_BYTES} B"
    assert "kvplan prices" not in result.stderr  # no disagreement to report
    _, as_imported = run_json("check", "-d", REF_PHONE, "-m", out, "-c", "4096")
    _, priced = run_json("check", "-d", REF_PHONE, "-m", out, "-c", "4096", "--weight-type", "q4_k_m")
    assert as_imported["memory"]["weights_bytes"] == priced["memory"]["weights_bytes"] == TINY_Q4_K_M_BYTES
    assert priced["weights"]["bytes_by_type"] == {"f32": 3 * 256 * 4, "q4_K": 6 * 256 * 144, "q6_K": 3 * 256 * 210}


def test_a_file_unlike_kvplans_pricing_is_said_so(run, tmp_path):
    # every matrix Q4_K: 9 × 256 × 144 + 3,072 = 334,848 B, where Q4_K_M prices 385,536 B
    result = run("import", "gguf", write_tiny_q4_k_m(tmp_path / "t.gguf", all_q4_k=True))
    assert result.exit_code == 0
    assert yaml.safe_load(result.stdout)["weights"] == f"{9 * 256 * 144 + 3 * 256 * 4} B"
    assert ("the file holds 334,848 bytes of tensors; kvplan prices q4_k_m for this shape at 385,536 (-50,688)"
            in result.stderr)


def test_unknown_or_missing_file_type_leaves_weight_type_out(run, tmp_path):
    result = run("import", "gguf", write_tiny_q4_k_m(tmp_path / "a.gguf", file_type=19))  # MOSTLY_IQ2_XXS
    assert "weight_type" not in yaml.safe_load(result.stdout)
    assert "general.file_type 19 is not a format kvplan prices" in result.stderr
    result = run("import", "gguf", write_tiny_q4_k_m(tmp_path / "b.gguf", file_type=None))
    assert "weight_type" not in yaml.safe_load(result.stdout) and "no general.file_type" in result.stderr


def test_another_weight_type_replaces_the_files_bytes(run, tmp_path):
    data = yaml.safe_load(run("import", "gguf", write_tiny_q4_k_m(tmp_path / "t.gguf"), "--weight-type",
                              "q8_0").stdout)
    assert data["weight_type"] == "q8_0" and "weights" not in data


def test_every_comment_matches_its_value(run, tmp_path):
    untied = run("import", "gguf", write_tiny_q4_k_m(tmp_path / "u.gguf")).stdout
    assert "tie_embeddings: false              # the file has its own output.weight" in untied
    assert "head_dim: 64                       # embedding_length / head_count = 256 / 4" in untied
    tied = run("import", "gguf", write_tiny_q4_k_m(tmp_path / "t.gguf", output=False)).stdout
    assert "tie_embeddings: true               # no output.weight tensor: the output reuses token_embd" in tied


@pytest.mark.parametrize("damage, message", [
    # cut inside the header: a file whose header is whole imports (only the header is read), as --model reads it
    (lambda data: data[:64], "not a readable GGUF file: damaged or truncated (64 bytes; the file ends inside"),
    (lambda data: b"GGUX" + data[4:], "not a readable GGUF file: it starts with b'GGUX', a GGUF file with b'GGUF'"),
    (lambda data: b"", "not a readable GGUF file: the file is empty"),
])
def test_a_bad_gguf_is_one_line_naming_the_file(run, tmp_path, damage, message):
    good = write_tiny_q4_k_m(tmp_path / "good.gguf").read_bytes()
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(damage(good))
    result = run("import", "gguf", bad)
    assert result.exit_code == 2
    assert result.stderr.startswith(f"kvplan: error: {bad}: {message}") and result.stderr.count("\n") == 1
    assert "numpy" not in result.stderr and "reshape" not in result.stderr


def test_an_unknown_tensor_type_is_one_line(run, tmp_path):
    data = bytearray(write_tiny_q4_k_m(tmp_path / "good.gguf").read_bytes())
    at = data.find(b"token_embd.weight") + len(b"token_embd.weight")  # then n_dims (u32), dims (u64 each), type
    n_dims = int.from_bytes(data[at:at + 4], "little")
    type_at = at + 4 + 8 * n_dims
    data[type_at:type_at + 4] = (999).to_bytes(4, "little")
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(bytes(data))
    result = run("import", "gguf", bad)
    assert result.exit_code == 2
    assert result.stderr.startswith(f"kvplan: error: {bad}: not a readable GGUF file: a tensor has storage type "
                                    "id 999") and result.stderr.count("\n") == 1


def test_mxfp4_moe_file_type_is_named(run, tmp_path):
    # general.file_type 38 = LLAMA_FTYPE_MOSTLY_MXFP4_MOE (gguf-py LlamaFileType.MOSTLY_MXFP4_MOE)
    data = yaml.safe_load(run("import", "gguf", write_tiny_q4_k_m(tmp_path / "m.gguf", file_type=38)).stdout)
    assert data["weight_type"] == "mxfp4_moe"
