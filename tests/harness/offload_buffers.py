#!/usr/bin/env python3
"""Measure where llama.cpp puts each buffer when layers or experts are offloaded to a second device.

Opt-in harness (not run by CI). There is no GPU here: llama.cpp's RPC backend (``-DGGML_RPC=ON``) gives a real
second device. A ``ggml-rpc-server`` on 127.0.0.1 is that device (``RPC0[127.0.0.1:50052]``), and a tiny C++
probe, compiled against the RPC build's libllama, loads a weight-less GGUF (make_gguf.py) with
``n_gpu_layers`` N and the tensor overrides that ``--n-cpu-moe N`` / ``-ot REGEX=CPU`` add
(``common/common.h`` ``llm_add_n_cpu_ffn_overrides``: ``blk\\.<i>\\.ffn_(up|down|gate|gate_up)_(ch|)exps`` →
the CPU buffer type for i < N), creates one context and prints ``llama_get_memory_breakdown()`` per buffer
type (model / context = KV cache + output buffer / compute).

The model is loaded with ``no_alloc`` (llama_model_params: "only load metadata and simulate memory
allocations"), the mode llama.cpp's own ``--fit`` uses to size a configuration before loading it: each buffer's
size is ``ggml_backend_alloc_ctx_tensors_from_buft_size`` of its tensors (model, KV) and the scheduler's reserved
size (compute), nothing is allocated or sent to the server, so a 61 GB model is measured in seconds.
``no_alloc`` needs ``load_mode`` none (an mmap'd buffer cannot be simulated), so the CPU weights show as buffer
type ``CPU`` instead of ``CPU_Mapped``; ``--alloc`` runs the real allocation instead (mmap; the RPC server then
receives the offloaded weights: small models only).

Usage:
    ggml-rpc-server -p 50052 &                     # from the RPC build
    python tests/harness/offload_buffers.py --llama-build BUILD --gguf-dir DIR \
        --out tests/data/llamacpp/offload/offload.json --version "..." \
        --run qwen3-30b-a3b:ngl=99:ncmoe=0 --run llama-3.1-8b:ngl=16 ...

Each ``--run`` is MODEL[:ngl=N][:ncmoe=N][:ot=REGEX][:ctx=N][:fa=0|1][:nkvo=1][:alloc=1].
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cprobe import compile_probe  # noqa: E402

REPO = Path(__file__).resolve().parents[2]

PROBE_SRC = r'''
#include "llama.h"
#include "llama-ext.h"
#include "ggml-backend.h"
#include "ggml-rpc.h"
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

// usage: probe model n_ctx n_gpu_layers n_cpu_moe fa(0/1) offload_kqv(0/1) no_alloc(0/1) rpc_endpoint|- [ot_regex ...]
int main(int argc, char ** argv) {
    if (argc < 9) { fprintf(stderr, "usage\n"); return 2; }
    llama_backend_init();
    ggml_backend_load_all();
    if (strcmp(argv[8], "-") != 0) {
        ggml_backend_reg_t reg = ggml_backend_rpc_add_server(argv[8]);
        ggml_backend_register(reg);
    }
    const int n_cpu_moe = atoi(argv[4]);
    static std::vector<std::string> patterns;
    for (int i = 0; i < n_cpu_moe; ++i) {  // common/common.h llm_add_n_cpu_ffn_overrides(LLM_FFN_EXPS_REGEX)
        patterns.push_back("blk\\." + std::to_string(i) + "\\.ffn_(up|down|gate|gate_up)_(ch|)exps");
    }
    for (int i = 9; i < argc; ++i) patterns.push_back(argv[i]);  // -ot REGEX=CPU
    std::vector<llama_model_tensor_buft_override> ot;
    for (auto & p : patterns) ot.push_back({p.c_str(), ggml_backend_cpu_buffer_type()});
    ot.push_back({nullptr, nullptr});

    auto mp = llama_model_default_params();
    mp.n_gpu_layers = atoi(argv[3]);
    mp.no_alloc = atoi(argv[7]) != 0;
    mp.load_mode = mp.no_alloc ? LLAMA_LOAD_MODE_NONE : LLAMA_LOAD_MODE_MMAP;
    mp.tensor_buft_overrides = patterns.empty() ? nullptr : ot.data();
    fprintf(stderr, "PROBE n_gpu_layers=%d n_cpu_moe=%d no_alloc=%d overrides=%zu\n", mp.n_gpu_layers, n_cpu_moe,
            (int) mp.no_alloc, patterns.size());
    llama_model * model = llama_model_load_from_file(argv[1], mp);
    if (!model) { fprintf(stderr, "PROBE_ERROR load\n"); return 1; }
    auto cp = llama_context_default_params();
    cp.n_ctx = atoi(argv[2]);
    cp.n_batch = 2048;
    cp.n_ubatch = 512;
    cp.n_seq_max = 1;
    cp.flash_attn_type = atoi(argv[5]) ? LLAMA_FLASH_ATTN_TYPE_ENABLED : LLAMA_FLASH_ATTN_TYPE_DISABLED;
    cp.offload_kqv = atoi(argv[6]) != 0;
    cp.n_outputs_max = 1;          // as llama-server sets it (tools/server/server-context.cpp: n_parallel outputs)
    cp.n_outputs_max_per_seq = 1;
    cp.n_threads = cp.n_threads_batch = 1;
    llama_context * ctx = llama_init_from_model(model, cp);
    if (!ctx) { fprintf(stderr, "PROBE_ERROR context\n"); llama_model_free(model); return 1; }
    for (const auto & kv : llama_get_memory_breakdown(ctx)) {
        printf("PROBE buft=%s model=%zu context=%zu compute=%zu\n", ggml_backend_buft_name(kv.first),
               kv.second.model, kv.second.context, kv.second.compute);
    }
    printf("PROBE n_ctx=%u n_batch=%u n_ubatch=%u n_seq_max=%u\n", llama_n_ctx(ctx), llama_n_batch(ctx),
           llama_n_ubatch(ctx), llama_n_seq_max(ctx));
    llama_free(ctx);
    llama_model_free(model);
    return 0;
}
'''

KEEP = re.compile(r"(buffer size|offload|llama_context: (n_ctx|n_batch|n_ubatch|flash_attn)|graph splits|PROBE|"
                  r"error|failed|RPC)", re.I)
BRK = re.compile(r"PROBE buft=(\S+(?: \S+)?) model=(\d+) context=(\d+) compute=(\d+)")
EFF = re.compile(r"PROBE n_ctx=(\d+) n_batch=(\d+) n_ubatch=(\d+) n_seq_max=(\d+)")


def build_probe(build: Path, src_root: Path, work: Path) -> Path:
    return compile_probe(PROBE_SRC, "offloadprobe", build, src_root, work,
                         libs=("llama", "ggml", "ggml-base", "ggml-rpc"), only_if_changed=True)


def parse_run(text: str) -> dict:
    model, *opts = text.split(":")
    p = {"model": model, "n_ctx": 4096, "n_gpu_layers": 0, "n_cpu_moe": 0, "override_tensor": [],
         "flash_attn": True, "offload_kqv": True, "no_alloc": True}
    for o in opts:
        k, v = o.split("=", 1)
        if k == "ngl":
            p["n_gpu_layers"] = int(v)
        elif k == "ncmoe":
            p["n_cpu_moe"] = int(v)
        elif k == "ot":
            p["override_tensor"].append(v)
        elif k == "ctx":
            p["n_ctx"] = int(v)
        elif k == "fa":
            p["flash_attn"] = v == "1"
        elif k == "nkvo":
            p["offload_kqv"] = v != "1"
        elif k == "alloc":
            p["no_alloc"] = v != "1"
        else:
            raise SystemExit(f"unknown run option {k}")
    return p


def run_one(exe: Path, gguf: Path, p: dict, rpc: str) -> dict:
    args = [str(exe), str(gguf), str(p["n_ctx"]), str(p["n_gpu_layers"]), str(p["n_cpu_moe"]),
            "1" if p["flash_attn"] else "0", "1" if p["offload_kqv"] else "0", "1" if p["no_alloc"] else "0", rpc,
            *p["override_tensor"]]
    t0 = time.time()
    r = subprocess.run(args, capture_output=True, text=True)
    log = r.stderr + r.stdout
    lines = [ln.rstrip() for ln in log.splitlines() if KEEP.search(ln) and "llama_model_loader" not in ln
             and "print_info" not in ln]
    res = {"params": p, "returncode": r.returncode, "seconds": round(time.time() - t0, 2), "log": lines,
           "breakdown_bytes": {m.group(1): {"model": int(m.group(2)), "context": int(m.group(3)),
                                            "compute": int(m.group(4))} for m in BRK.finditer(log)}}
    e = EFF.search(log)
    if e:
        res["effective"] = dict(zip(["n_ctx", "n_batch", "n_ubatch", "n_seq_max"], map(int, e.groups())))
    return res


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--llama-build", required=True, type=Path, help="cmake build dir with -DGGML_RPC=ON")
    ap.add_argument("--llama-src", type=Path, help="llama.cpp source root")
    ap.add_argument("--gguf-dir", required=True, type=Path)
    ap.add_argument("--rpc", default="127.0.0.1:50052", help="the ggml-rpc-server endpoint ('-': no second device)")
    ap.add_argument("--run", action="append", required=True)
    ap.add_argument("--out", type=Path, default=REPO / "tests/data/llamacpp/offload/offload.json")
    ap.add_argument("--version", default="")
    a = ap.parse_args(argv)
    src_root = a.llama_src or a.llama_build.parent
    exe = build_probe(a.llama_build, src_root, a.gguf_dir / "probe-offload")
    runs = []
    for text in a.run:
        p = parse_run(text)
        r = run_one(exe, a.gguf_dir / f"{p['model']}-F16.gguf", p, a.rpc)
        runs.append(r)
        print(text, r["returncode"], json.dumps(r["breakdown_bytes"]), r["seconds"], flush=True)
    doc = {"llama_cpp": a.version, "harness": "tests/harness/offload_buffers.py",
           "device": f"CPU + RPC device (ggml-rpc-server on {a.rpc}, its CPU backend), n_threads 1",
           "source_gguf": "weight-less F16 GGUFs from tests/harness/make_gguf.py",
           "notes": "breakdown_bytes: llama_get_memory_breakdown() per buffer type: model, context (KV cache + "
                    "output buffer; no_alloc does not simulate the output buffer, so it is the KV cache alone), compute. "
                    "no_alloc runs simulate the allocations (load_mode none: the CPU weights are buffer type CPU, "
                    "not CPU_Mapped). n_batch 2048, n_ubatch 512, one sequence, n_outputs_max 1 (as llama-server "
                    "with -np 1 sets it).",
           "runs": runs}
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
