"""A GGUF file's header as compact test data: its metadata (without the tokenizer's arrays) and its tensor table.

    python tests/harness/dump_gguf_header.py FILE.gguf NAME [--out tests/data/gguf_headers]

Writes ``NAME.json.gz``: ``metadata`` (every key but the ``tokenizer.ggml.*`` arrays, which no profile field reads
but for the tokens' count: ``tokenizer.ggml.tokens`` is kept as that many empty strings),
``tensors`` as ``[name, elements, bytes, shape (outermost first)]`` — what
``kvplan.importers.gguf.profile_from_gguf_metadata`` takes — and the source file's name and size. The headers come
from the weight-less GGUFs of tests/harness/make_gguf.py / make_hybrid_gguf.py, which llama.cpp build 11434 loaded
in the committed measurements. Opt-in, like every harness.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from kvplan.importers.gguf_header import header_metadata, read_local_header  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("gguf", type=Path)
    ap.add_argument("name")
    ap.add_argument("--out", type=Path, default=REPO / "tests" / "data" / "gguf_headers")
    ap.add_argument("--made-by", default="")
    a = ap.parse_args(argv)
    meta, tensors = header_metadata(read_local_header(a.gguf, what=""))
    tokens = meta.get("tokenizer.ggml.tokens")
    meta = {k: v for k, v in meta.items() if not (k.startswith("tokenizer.ggml.") and isinstance(v, list))}
    if isinstance(tokens, list):  # its length is the vocabulary where no vocab_size key is written
        meta["tokenizer.ggml.tokens"] = [""] * len(tokens)
    doc = {"source_gguf": a.gguf.name, "file_bytes": a.gguf.stat().st_size, "made_by": a.made_by,
           "harness": "tests/harness/dump_gguf_header.py", "metadata": meta,
           "tensors": [[t[0], t[1], t[2], list(t[3])] for t in tensors]}
    a.out.mkdir(parents=True, exist_ok=True)
    with gzip.open(a.out / f"{a.name}.json.gz", "wt") as f:
        json.dump(doc, f, separators=(",", ":"))
    print(a.out / f"{a.name}.json.gz", len(tensors), "tensors")
    return 0


if __name__ == "__main__":
    sys.exit(main())
