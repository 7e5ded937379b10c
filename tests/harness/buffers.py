#!/usr/bin/env python3
"""Measure llama.cpp's runtime buffers on CPU (KV cache, output buffer, compute
buffer) by creating real contexts on weight-less F16 GGUFs (make_gguf.py).

Opt-in harness (not run by CI).

A tiny C++ probe (source below, compiled against the built libllama) loads the
model (load_mode MMAP, n_gpu_layers 0), creates one context with the given parameters,
prints llama.cpp's own log lines (stderr) and the exact byte counts from
llama_get_memory_breakdown() (llama-ext.h; per buffer type: model, context =
KV cache + output buffer, compute), then exits. One process per run.

Usage:
    python tests/harness/buffers.py --llama-build BUILD --gguf-dir DIR \
        --models llama-2-7b gemma-2-2b ... [--grid full|small] \
        [--out tests/data/llamacpp/buffers] [--version "..."]

Grid (full): n_ctx in {256, 1024, 4096, 8192, 32768} x (n_batch, n_ubatch) in
{(512,512), (2048,512), (2048,2048)} x flash attention {off, on} x
(n_seq_max, kv_unified) in {(1,false), (4,false), (4,true)}. The KV cache is
f16 unless its f16 size would exceed --kv-f16-limit-gib (the buffer is
cleared, i.e. touched, at creation); then K/V are q8_0 with flash attention
and K q8_0 / V f16 without it (llama.cpp refuses a quantized V cache without
flash attention). Each run records the KV types used.
Grid (small): (n_batch, n_ubatch) in {(2048,512), (2048,2048)} and
(n_seq_max, kv_unified) in {(1,false), (4,false)}.
Grid (hybrid, build 11434): see grid_hybrid(); --outputs-of-sequences is implied per run there (n_outputs_max).
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cprobe import PARSE_TYPE, PRELUDE, compile_probe, compile_shim  # noqa: E402

REPO = Path(__file__).resolve().parents[2]

PROBE_SRC = PRELUDE + PARSE_TYPE + r'''
int main(int argc, char ** argv) {
    if (argc < 11) {
        fprintf(stderr, "usage: %s model n_ctx n_batch n_ubatch n_seq_max fa(0/1) type_k type_v kv_unified(0/1) swa_full(0/1)\n", argv[0]);
        return 2;
    }
    llama_backend_init();
    auto mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    mp.load_mode = LLAMA_LOAD_MODE_MMAP;  // weights stay a sparse hole, never read
    fprintf(stderr, "PROBE load_mode=%s\n", llama_load_mode_name(mp.load_mode));
    llama_model * model = llama_model_load_from_file(argv[1], mp);
    if (!model) { fprintf(stderr, "PROBE_ERROR load\n"); return 1; }
    auto cp = llama_context_default_params();
    cp.n_ctx      = atoi(argv[2]);
    cp.n_batch    = atoi(argv[3]);
    cp.n_ubatch   = atoi(argv[4]);
    cp.n_seq_max  = atoi(argv[5]);
    cp.flash_attn_type = atoi(argv[6]) ? LLAMA_FLASH_ATTN_TYPE_ENABLED : LLAMA_FLASH_ATTN_TYPE_DISABLED;
    cp.type_k     = parse_type(argv[7]);
    cp.type_v     = parse_type(argv[8]);
    cp.kv_unified = atoi(argv[9]) != 0;
    cp.swa_full   = atoi(argv[10]) != 0;
    if (argc > 11) cp.n_outputs_max = atoi(argv[11]);  // build 11434: llama-server sets it to -np
    cp.n_threads = cp.n_threads_batch = 1;
    llama_context * ctx = llama_init_from_model(model, cp);
    if (!ctx) { fprintf(stderr, "PROBE_ERROR context\n"); llama_model_free(model); return 1; }
    for (const auto & kv : llama_get_memory_breakdown(ctx)) {
        printf("PROBE buft=%s model=%zu context=%zu compute=%zu\n", ggml_backend_buft_name(kv.first),
               kv.second.model, kv.second.context, kv.second.compute);
    }
    printf("PROBE n_ctx=%u n_batch=%u n_ubatch=%u n_seq_max=%u\n", llama_n_ctx(ctx), llama_n_batch(ctx), llama_n_ubatch(ctx), llama_n_seq_max(ctx));
    llama_free(ctx);
    llama_model_free(model);
    return 0;
}
'''

# LD_PRELOAD shim: llama.cpp maps the model with MAP_POPULATE, which would fault the
# whole (sparse, all-zero) weight file into the page cache (13 GB RSS and ~60 s for
# llama-2-7b). Clearing the flag leaves the weights unread; it does not change any
# KV/output/compute buffer (those are separate host allocations).
SHIM_SRC = r'''
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sys/mman.h>
#include <sys/types.h>
void * mmap(void * addr, size_t len, int prot, int flags, int fd, off_t off) {
    static void * (*real)(void *, size_t, int, int, int, off_t) = 0;
    if (!real) real = (void * (*)(void *, size_t, int, int, int, off_t)) dlsym(RTLD_NEXT, "mmap");
    return real(addr, len, prot, flags & ~MAP_POPULATE, fd, off);
}
void * mmap64(void * addr, size_t len, int prot, int flags, int fd, off_t off) { return mmap(addr, len, prot, flags, fd, off); }
'''

PER_LAYER = re.compile(r"llama_kv_cache: layer +\d+:")  # build 11434's one line per layer (dev = CPU / filtered)
KEEP = re.compile(r"(buffer size|KV self size|llama_kv_cache|llama_context: (n_ctx|n_ctx_seq|n_batch|n_ubatch|flash_attn|kv_unified|n_seq_max|causal_attn|swa_full)|graph nodes|graph splits|PROBE|n_ctx_per_seq|n_ctx_seq|error|failed|warn)", re.I)
BUF = re.compile(r"(\S+)\s+(compute|output|KV|model) buffer size =\s+([\d.]+) MiB")
BRK = re.compile(r"PROBE buft=(\S+) model=(\d+) context=(\d+) compute=(\d+)")
EFF = re.compile(r"PROBE n_ctx=(\d+) n_batch=(\d+) n_ubatch=(\d+) n_seq_max=(\d+)")


def build_probe(build: Path, src_root: Path, work: Path) -> Path:
    exe = compile_probe(PROBE_SRC, "ctxprobe", build, src_root, work, only_if_changed=True)
    compile_shim(SHIM_SRC, "nopopulate", work)
    return exe


def run_one(exe: Path, gguf: Path, p: dict) -> dict:
    args = [str(exe), str(gguf), str(p["n_ctx"]), str(p["n_batch"]), str(p["n_ubatch"]), str(p["n_seq_max"]),
            "1" if p["flash_attn"] else "0", p["type_k"], p["type_v"],
            "1" if p["kv_unified"] else "0", "1" if p["swa_full"] else "0"]
    if p.get("n_outputs_max"):  # build 11434 only (llama_context_params.n_outputs_max); 0: n_batch
        args.append(str(p["n_outputs_max"]))
    t0 = time.time()
    env = dict(os.environ, LD_PRELOAD=str(exe.parent / "nopopulate.so"))
    r = subprocess.run(args, capture_output=True, text=True, env=env)
    log = r.stderr + r.stdout
    lines = [ln.rstrip() for ln in log.splitlines() if KEEP.search(ln) and "llama_model_loader" not in ln
             and "print_info" not in ln and not PER_LAYER.match(ln)]
    res = {"params": p, "returncode": r.returncode, "seconds": round(time.time() - t0, 2), "log": lines}
    logged = {}
    for m in BUF.finditer(log):
        logged.setdefault(f"{m.group(2)}_mib", {})[m.group(1)] = float(m.group(3))
    res["logged_mib"] = logged
    res["breakdown_bytes"] = {m.group(1): {"model": int(m.group(2)), "context": int(m.group(3)), "compute": int(m.group(4))}
                              for m in BRK.finditer(log)}
    e = EFF.search(log)
    if e:
        res["effective"] = dict(zip(["n_ctx", "n_batch", "n_ubatch", "n_seq_max"], map(int, e.groups())))
    return res


def kv_f16_bytes_per_token(meta: dict) -> int | None:
    return meta.get("kv_f16_bytes_per_token")


def grid_hybrid():
    """The hybrid/MoE grid (issue #23, build 11434): n_ctx {512, 4096, 32768} × -ub 512 (-b 2048) × flash attention
    {off, on} × (n_seq_max 1, 4; not unified) × n_outputs_max {library default n_batch, n_seq_max as llama-server},
    plus -ub 256 and 1024 at n_ctx 4096, one sequence. KV f16 throughout (a quantized V needs flash attention)."""
    for n_ctx, fa, ns, outs in itertools.product([512, 4096, 32768], [False, True], [1, 4], [0, 1]):
        yield dict(n_ctx=n_ctx, n_batch=2048, n_ubatch=512, flash_attn=fa, n_seq_max=ns, kv_unified=False,
                   n_outputs_max=ns if outs else 0)
    for nub, fa, outs in itertools.product([256, 1024], [False, True], [0, 1]):
        yield dict(n_ctx=4096, n_batch=2048, n_ubatch=nub, flash_attn=fa, n_seq_max=1, kv_unified=False,
                   n_outputs_max=1 if outs else 0)


def grid(kind: str):
    if kind == "hybrid":
        yield from grid_hybrid()
        return
    ctxs = [256, 1024, 4096, 8192, 32768]
    if kind == "full":
        bs = [(512, 512), (2048, 512), (2048, 2048)]
        seqs = [(1, False), (4, False), (4, True)]
    else:
        bs = [(2048, 512), (2048, 2048)]
        seqs = [(1, False), (4, False)]
    for n_ctx, (nb, nub), fa, (ns, uni) in itertools.product(ctxs, bs, [False, True], seqs):
        yield dict(n_ctx=n_ctx, n_batch=nb, n_ubatch=nub, flash_attn=fa, n_seq_max=ns, kv_unified=uni)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--llama-build", required=True, type=Path, help="cmake build dir (bin/libllama.so)")
    ap.add_argument("--llama-src", type=Path, help="llama.cpp source root (default: build/..)")
    ap.add_argument("--gguf-dir", required=True, type=Path)
    ap.add_argument("--models", nargs="+", required=True)
    ap.add_argument("--grid", choices=["full", "small", "hybrid"], default="small")
    ap.add_argument("--kv-f16-limit-gib", type=float, default=6.0)
    ap.add_argument("--swa-full", action="store_true", help="swa_full=true (llama.cpp's library default is true; llama-cli/server default false)")
    ap.add_argument("--outputs-of-sequences", action="store_true",
                    help="build 11434: n_outputs_max = n_seq_max, as llama-server sets it (the reserve graph keeps "
                         "-np rows of logits); default: the library's n_batch")
    ap.add_argument("--out", type=Path, default=REPO / "tests/data/llamacpp/buffers")
    ap.add_argument("--version", default="")
    a = ap.parse_args(argv)
    src_root = a.llama_src or a.llama_build.parent
    exe = build_probe(a.llama_build, src_root, a.gguf_dir / "probe")
    a.out.mkdir(parents=True, exist_ok=True)
    for m in a.models:
        gguf = a.gguf_dir / f"{m}-F16.gguf"
        # f16 KV bytes per token from a tiny probe run (the logged KV size at n_ctx 256)
        first = run_one(exe, gguf, dict(n_ctx=256, n_batch=512, n_ubatch=512, n_seq_max=1, flash_attn=True,
                                        kv_unified=False, swa_full=a.swa_full, type_k="f16", type_v="f16"))
        kv256 = sum(first["logged_mib"].get("KV_mib", {}).values()) * 1048576
        runs = []
        t0 = time.time()
        for p in grid(a.grid):
            p["swa_full"] = a.swa_full
            if a.outputs_of_sequences:
                p["n_outputs_max"] = p["n_seq_max"]
            f16_bytes = kv256 * p["n_ctx"] / 256
            if a.grid == "hybrid":
                p["type_k"], p["type_v"] = "f16", "f16"
            elif f16_bytes > a.kv_f16_limit_gib * 2**30:
                p["type_k"], p["type_v"] = ("q8_0", "q8_0") if p["flash_attn"] else ("q8_0", "f16")
            else:
                p["type_k"], p["type_v"] = "f16", "f16"
            r = run_one(exe, gguf, p)
            runs.append(r)
            cb = r["breakdown_bytes"]
            print(m, json.dumps(p), r["returncode"], {k: v["compute"] for k, v in cb.items()}, r["seconds"], flush=True)
        doc = {"llama_cpp": a.version, "harness": "tests/harness/buffers.py", "model": m,
               "device": "CPU only (n_gpu_layers 0, mmap), n_threads 1",
               "source_gguf": "weight-less F16 GGUF from tests/harness/make_gguf.py or make_hybrid_gguf.py (weights F16)",
               "notes": "logged_mib: llama.cpp's own log lines (MiB, 2 decimals). breakdown_bytes: exact bytes "
                        "from llama_get_memory_breakdown() per buffer type: context = KV cache + output buffer.",
               "grid": a.grid, "kv_f16_limit_gib": a.kv_f16_limit_gib, "swa_full": a.swa_full,
               "seconds_total": round(time.time() - t0, 1), "runs": runs}
        (a.out / f"{m}.json").write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
