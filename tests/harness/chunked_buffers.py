#!/usr/bin/env python3
"""Measure llama.cpp's KV cache of a chunked-attention model (Llama 4: LLAMA_SWA_TYPE_CHUNKED, the chunked layers
in llama_kv_cache_iswa's windowed cache) on the weight-less GGUF make_gguf.py writes, with buffers.py's probe.

Opt-in harness (not run by CI). One process per run; it keeps llama.cpp's ``llama_kv_cache`` lines (cells and
MiB of each of the two caches: the full layers', the chunked layers'), the buffer lines and the exact bytes of
``llama_get_memory_breakdown()`` (context = KV + output; compute).

Grid: n_ctx {512, 1024, 4096, 8192, 16384, 32768} × cache type {f16, q8_0} × (n_seq_max, kv_unified)
{(1, no), (4, no), (4, yes)}, then n_ctx 65536 (past 4 chunks of 8192: the chunked cache stays at
pad(8192 · streams + n_ubatch, 256) cells) and --swa-full at 16384; flash attention on, n_batch 2048, n_ubatch
512. A run whose f16-equivalent cache would pass --max-gib (the buffer is cleared, so touched, at creation on a
shared machine) is made with q8_0 only.

Usage:
    python tests/harness/chunked_buffers.py --llama-build BUILD --gguf-dir DIR --models llama-4-scout-17b-16e \
        [--out tests/data/llamacpp/chunked] [--version "llama.cpp build 11434"]
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
    base = dict(n_batch=2048, n_ubatch=512, flash_attn=True, swa_full=False)
    for n_ctx, cache, (ns, uni) in itertools.product([512, 1024, 4096, 8192, 16384, 32768], ["f16", "q8_0"],
                                                      [(1, False), (4, False), (4, True)]):
        yield dict(base, n_ctx=n_ctx, n_seq_max=ns, kv_unified=uni, type_k=cache, type_v=cache)
    for ns, uni in [(1, False), (4, False), (4, True)]:
        yield dict(base, n_ctx=65536, n_seq_max=ns, kv_unified=uni, type_k="q8_0", type_v="q8_0")
    yield dict(base, n_ctx=16384, n_seq_max=1, kv_unified=False, type_k="f16", type_v="f16", swa_full=True)


def rough_f16_gib(p: dict, layers_full: int, layers_chunked: int, row_bytes: int, chunk: int = 8192) -> float:
    """An upper bound of the f16 cache, to keep a run off a shared machine's memory (not a figure under test)."""
    swa = min(p["n_ctx"], chunk * (p["n_seq_max"] if p["kv_unified"] else 1) * 1 + p["n_ubatch"]) \
        if not p["swa_full"] else p["n_ctx"]
    streams = 1 if p["kv_unified"] else p["n_seq_max"]
    return (layers_full * p["n_ctx"] + layers_chunked * swa * streams) * row_bytes / 2**30


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--llama-build", required=True, type=Path)
    ap.add_argument("--llama-src", type=Path)
    ap.add_argument("--gguf-dir", required=True, type=Path)
    ap.add_argument("--models", nargs="+", required=True)
    ap.add_argument("--out", type=Path, default=REPO / "tests/data/llamacpp/chunked")
    ap.add_argument("--version", default="")
    ap.add_argument("--max-gib", type=float, default=4.0)
    a = ap.parse_args(argv)
    exe = buffers.build_probe(a.llama_build, a.llama_src or a.llama_build.parent, a.gguf_dir / "probe")
    a.out.mkdir(parents=True, exist_ok=True)
    for m in a.models:
        runs, t0 = [], time.time()
        for p in grid():
            # Llama 4 Scout: 12 full + 36 chunked layers, K+V rows of 8 × 128 values at 2 B = 4,096 B
            if p["type_k"] == "f16" and rough_f16_gib(p, 12, 36, 4096) > a.max_gib:
                continue
            r = buffers.run_one(exe, a.gguf_dir / f"{m}-F16.gguf", p)
            r["log"] = [ln for ln in r["log"] if ("llama_kv_cache" in ln or "buffer size" in ln or "PROBE" in ln
                        or "swa" in ln.lower() or "error" in ln.lower()) and "llama_kv_cache: layer" not in ln]
            runs.append(r)
            print(m, json.dumps(p), r["returncode"], r["logged_mib"], flush=True)
        doc = {"llama_cpp": a.version, "harness": "tests/harness/chunked_buffers.py", "model": m,
               "device": "CPU only (n_gpu_layers 0, mmap), n_threads 1",
               "source_gguf": "weight-less F16 GGUF from tests/harness/make_gguf.py",
               "notes": "logged_mib: llama.cpp's log lines (MiB, 2 decimals); breakdown_bytes: exact bytes of "
                        "llama_get_memory_breakdown() per buffer type (context = KV + output).",
               "seconds_total": round(time.time() - t0, 1), "runs": runs}
        (a.out / f"{m}.json").write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
