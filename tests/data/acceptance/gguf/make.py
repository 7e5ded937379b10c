"""Write the acceptance GGUF fixtures (run from the repository root; needs the gguf package):

    .venv/bin/python tests/data/acceptance/gguf/make.py

tiny-untied.gguf  a one-layer llama (hidden 32, 2 heads of 16, FFN 32, vocab 32) in F16 with its own output.weight
tiny-tied.gguf    the same without output.weight: the output reuses token_embd
truncated.gguf    the first 200 bytes of tiny-untied.gguf (a download cut short)
bad-type.gguf     tiny-untied.gguf's header (no tensor data) with token_embd's storage type set to 999 (no such
                  ggml type): the type is refused before the missing data is noticed

Shapes are the smallest a llama GGUF can have with F16 rows, so each file is a few kB.
"""

from __future__ import annotations

from pathlib import Path

import gguf
import numpy as np

HERE = Path(__file__).parent
HIDDEN = FFN = VOCAB = 32


def write(path: Path, *, output: bool) -> bytes:
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name("Tiny F16")
    w.add_block_count(1)
    w.add_head_count(2)
    w.add_head_count_kv(2)
    w.add_embedding_length(HIDDEN)
    w.add_feed_forward_length(FFN)
    w.add_context_length(2048)
    w.add_vocab_size(VOCAB)
    w.add_file_type(1)  # LLAMA_FTYPE_MOSTLY_F16

    def f16(name, rows, cols):
        w.add_tensor(name, np.zeros((rows, cols), dtype=np.float16))

    f16("token_embd.weight", VOCAB, HIDDEN)
    if output:
        f16("output.weight", VOCAB, HIDDEN)
    w.add_tensor("output_norm.weight", np.zeros(HIDDEN, dtype=np.float32))
    for n in ("attn_q", "attn_k", "attn_v", "attn_output"):
        f16(f"blk.0.{n}.weight", HIDDEN, HIDDEN)
    f16("blk.0.ffn_gate.weight", FFN, HIDDEN)
    f16("blk.0.ffn_up.weight", FFN, HIDDEN)
    f16("blk.0.ffn_down.weight", HIDDEN, FFN)
    for n in ("attn_norm", "ffn_norm"):
        w.add_tensor(f"blk.0.{n}.weight", np.zeros(HIDDEN, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path.read_bytes()


untied = write(HERE / "tiny-untied.gguf", output=True)
write(HERE / "tiny-tied.gguf", output=False)
(HERE / "truncated.gguf").write_bytes(untied[:200])
data = bytearray(untied)
at = data.find(b"token_embd.weight") + len(b"token_embd.weight")  # then n_dims (u32), dims (u64 each), type (u32)
type_at = at + 4 + 8 * int.from_bytes(data[at:at + 4], "little")
data[type_at:type_at + 4] = (999).to_bytes(4, "little")
header_bytes = gguf.GGUFReader(HERE / "tiny-untied.gguf").data_offset
(HERE / "bad-type.gguf").write_bytes(bytes(data[:header_bytes]))
