#!/usr/bin/env python3
"""Measure llama.cpp's hybrid memory (KV cache of the attention layers + recurrent state of the state layers)
on weight-less GGUFs of kvplan's hybrid profiles (make_hybrid_gguf.py), with the context probe of buffers.py.

Opt-in harness (not run by CI). One process per run; it records llama.cpp's own log lines
(``llama_kv_cache: … KV buffer size``, ``llama_memory_recurrent: … RS buffer size``, the recurrent memory's
``size = … R (f32) … S (f32)`` line) and the exact bytes of ``llama_get_memory_breakdown()`` (context = KV +
recurrent state + output buffer).

Grid: n_ctx {512, 1024, 4096, 8192, 16384, 32768} × cache type {f16, q8_0} × (n_seq_max, kv_unified)
{(1, no), (4, no), (4, yes)}; flash attention on (a quantized V cache needs it), n_batch 2048, n_ubatch 512.

Usage:
    python tests/harness/state_buffers.py --llama-build BUILD --gguf-dir DIR --models lfm2-1.2b \
        [--out tests/data/llamacpp/state] [--version "llama.cpp build 11434"]
"""
from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import buffers  # noqa: E402  (the probe and its runner)

REPO = Path(__file__).resolve().parents[2]


def grid():
    for n_ctx, cache, (ns, uni) in itertools.product([512, 1024, 4096, 8192, 16384, 32768], ["f16", "q8_0"],
                                                      [(1, False), (4, False), (4, True)]):
        yield dict(n_ctx=n_ctx, n_batch=2048, n_ubatch=512, flash_attn=True, n_seq_max=ns, kv_unified=uni,
                   swa_full=False, type_k=cache, type_v=cache)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--llama-build", required=True, type=Path)
    ap.add_argument("--llama-src", type=Path)
    ap.add_argument("--gguf-dir", required=True, type=Path)
    ap.add_argument("--models", nargs="+", required=True)
    ap.add_argument("--out", type=Path, default=REPO / "tests/data/llamacpp/state")
    ap.add_argument("--version", default="")
    a = ap.parse_args(argv)
    exe = buffers.build_probe(a.llama_build, a.llama_src or a.llama_build.parent, a.gguf_dir / "probe")
    a.out.mkdir(parents=True, exist_ok=True)
    for m in a.models:
        runs, t0 = [], time.time()
        for p in grid():
            r = buffers.run_one(exe, a.gguf_dir / f"{m}-F16.gguf", p)
            r["log"] = [ln for ln in r["log"] if "llama_kv_cache" in ln or "llama_memory_recurrent" in ln
                        or "buffer size" in ln or "PROBE" in ln or "error" in ln.lower()]
            runs.append(r)
            print(m, json.dumps(p), r["returncode"], r["logged_mib"], flush=True)
        doc = {"llama_cpp": a.version, "harness": "tests/harness/state_buffers.py", "model": m,
               "device": "CPU only (n_gpu_layers 0, mmap), n_threads 1",
               "source_gguf": "weight-less F16 GGUF from tests/harness/make_hybrid_gguf.py",
               "notes": "logged_mib: llama.cpp's log lines (MiB, 2 decimals); breakdown_bytes: exact bytes of "
                        "llama_get_memory_breakdown() per buffer type (context = KV + recurrent state + output).",
               "seconds_total": round(time.time() - t0, 1), "runs": runs}
        (a.out / f"{m}.json").write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
