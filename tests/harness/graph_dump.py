#!/usr/bin/env python3
"""Dump the reserve graph llama.cpp hands to ggml-alloc, replay the allocator over it, and compare it with kvplan's.

Opt-in harness (not run by CI). An LD_PRELOAD shim (source below) wraps ``ggml_gallocr_reserve_n``
(``ggml/src/ggml-alloc.c``) and writes, before calling the real one, every leaf and node of the scheduler's graph:
op, bytes (``ggml_nbytes``), view source, flags, whether its data lives outside the allocator (weights, KV cache),
name, sources, shape and view offset. The context probe of ``buffers.py`` runs under it. ``replay()`` then runs
ggml-alloc's rules over the dump (leafs first, inputs at first sight, in-place reuse of an owned parent with one
consumer and the same shape, never through a view, frees at the last consumer; ``ggml_gallocr_alloc_graph_impl``,
``ggml_gallocr_allocate_node``); it reproduces the measured compute buffer, which is how the graphs of
``kvplan/engine/llamacpp_graph.py`` were checked node by node (``--compare``).

Usage:
    python tests/harness/graph_dump.py --llama-build BUILD --gguf GGUF --out DUMP \\
        [n_ctx n_batch n_ubatch n_seq_max fa type_k type_v kv_unified swa_full n_outputs_max]
    python tests/harness/graph_dump.py --replay DUMP.0
    python tests/harness/graph_dump.py --replay DUMP.0 --compare MODEL N_CTX N_UBATCH FA N_SEQ N_OUTPUTS
"""
from __future__ import annotations

import argparse
import difflib
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]

SHIM_SRC = r'''
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include "ggml.h"
#include "ggml-alloc.h"
#include "ggml-impl.h"
static void dump_t(FILE *f, const char *kind, struct ggml_tensor *t) {
    fprintf(f, "%s %p %s %zu %p %d %d |%s|", kind, (void*)t, ggml_op_desc(t), ggml_nbytes(t), (void*)t->view_src,
            t->flags, (t->data != NULL || t->buffer != NULL) ? 1 : 0, t->name);
    for (int j = 0; j < GGML_MAX_SRC; j++) if (t->src[j]) fprintf(f, " %p", (void*)t->src[j]);
    fprintf(f, " ne %lld %lld %lld %lld off %zu\n", (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2],
            (long long)t->ne[3], t->view_offs);
}
bool ggml_gallocr_reserve_n(ggml_gallocr_t galloc, struct ggml_cgraph * graph, const int * node_buffer_ids,
                            const int * leaf_buffer_ids) {
    static bool (*real)(ggml_gallocr_t, struct ggml_cgraph *, const int *, const int *) = 0;
    static int count = 0;
    if (!real) real = dlsym(RTLD_NEXT, "ggml_gallocr_reserve_n");
    const char *path = getenv("GDUMP");
    if (path) {
        char p[512]; snprintf(p, sizeof p, "%s.%d", path, count++);
        FILE *f = fopen(p, "w");
        for (int i = 0; i < graph->n_leafs; i++) dump_t(f, "L", graph->leafs[i]);
        for (int i = 0; i < graph->n_nodes; i++) dump_t(f, "N", graph->nodes[i]);
        fclose(f);
    }
    return real(galloc, graph, node_buffer_ids, leaf_buffer_ids);
}
'''

#: ggml_op_can_inplace (ggml/src/ggml-alloc.c), plus the unary ops (GGML_OP_UNARY)
INPLACE = {"FILL", "SCALE", "DIAG_MASK_ZERO", "DIAG_MASK_INF", "ADD", "ADD_ID", "ADD1", "SUB", "MUL", "DIV", "SQR",
           "SQRT", "LOG", "ROPE", "ROPE_BACK", "SILU_BACK", "RMS_NORM", "RMS_NORM_BACK", "CLAMP", "SOFT_MAX",
           "SOFT_MAX_BACK", "SILU", "SIGMOID", "SOFTPLUS", "RELU", "GELU", "NEG", "EXP", "TANH"}
INPUT, OUTPUT = 1, 2


def parse(path):
    tensors, leafs, nodes = {}, [], []
    for line in open(path):
        head, rest = line.split("|", 1)
        name, tail = rest.split("|", 1)
        kind, ptr, op, nb, vsrc, flags, ext = head.split()
        srcs, shape = tail.split(" ne ")
        ne, off = shape.split(" off ")
        tensors[ptr] = dict(op=op, nbytes=int(nb), view_src=None if vsrc == "(nil)" else vsrc, flags=int(flags),
                            ext=int(ext), name=name, srcs=srcs.split(), ne=tuple(ne.split()), off=int(off))
        (leafs if kind == "L" else nodes).append(ptr)
    return tensors, leafs, nodes


def replay(path):
    """ggml-alloc over a dump: (peak bytes, events [("A", ptr, offset, high-water) / ("R", ptr, parent) / ("F", ptr)],
    tensors)."""
    sys.path.insert(0, str(REPO))
    from kvplan.engine.ggml_alloc import _Allocator

    T, leafs, nodes = parse(path)
    for t in list(T.values()):
        for q in t["srcs"]:
            T.setdefault(q, dict(op="?", nbytes=0, view_src=None, flags=0, ext=1, name="?", srcs=[], ne=(), off=0))
    st = {p: dict(children=0, views=0, allocated=False, addr=None) for p in T}
    A, log = _Allocator(32), []

    def alloc(p):
        t, h = T[p], st[p]
        if t["ext"] or h["allocated"] or t["view_src"] is not None:
            return
        h["allocated"] = True
        if t["op"] in INPLACE:
            for q in t["srcs"]:
                pq, hq = T[q], st[q]
                if not hq["allocated"] or pq["flags"] & OUTPUT or pq["ne"] != t["ne"] or pq["nbytes"] != t["nbytes"]:
                    continue
                if hq["children"] == 1 and hq["views"] == 0:
                    h["addr"], hq["allocated"] = hq["addr"], False
                    log.append(("R", p, q))
                    return
        h["addr"] = A.alloc(t["nbytes"])
        log.append(("A", p, h["addr"], A.max_size))

    def free(p):
        if not T[p]["flags"] & OUTPUT:
            A.free(st[p]["addr"], T[p]["nbytes"])
            st[p]["allocated"] = False
            log.append(("F", p))

    for p in leafs:
        alloc(p)
    for p in nodes:
        t = T[p]
        if t["view_src"] is not None and t["op"] != "NONE":
            st[t["view_src"]]["views"] += 1
        if t["flags"] & INPUT:
            alloc(p)
        for q in t["srcs"]:
            st[q]["children"] += 1
            if T[q]["flags"] & INPUT:
                alloc(q)
    for p in nodes:
        for q in T[p]["srcs"]:
            alloc(q)
        alloc(p)
        for q in T[p]["srcs"]:
            hq = st[q]
            hq["children"] -= 1
            if hq["children"] == 0 and hq["views"] == 0:
                v = T[q]["view_src"]
                if v is not None:
                    st[v]["views"] -= 1
                    if st[v]["views"] == 0 and st[v]["children"] == 0 and st[v]["allocated"]:
                        free(v)
                elif hq["allocated"]:
                    free(q)
    return A.max_size, log, T


def compare(path, model, n_ctx, n_ubatch, fa, n_seq, n_outputs):
    """kvplan's graph for the same run against the dump: the first allocation that differs (size or offset)."""
    sys.path.insert(0, str(REPO))
    from kvplan.caches.buffers import _ProfileView
    from kvplan.engine import ggml_alloc
    from kvplan.engine import llamacpp_buffers as lb
    from kvplan.profiles.catalog import Catalog

    peak, log, T = replay(path)
    captured = {}
    real_peak = ggml_alloc.peak_bytes

    def grab(g, *a, **k):
        captured["g"] = g
        return real_peak(g, *a, **k)

    ggml_alloc.peak_bytes = grab
    lb.compute_buffer_bytes.cache_clear()
    got = lb.compute_buffer_bytes_from_profile(
        _ProfileView(Catalog().model(model).profile), n_ctx=n_ctx, n_batch=2048, n_ubatch=n_ubatch, flash_attn=fa,
        n_seq_max=n_seq, kv_unified=False, n_outputs=n_outputs or None, build="b11434")
    ggml_alloc.peak_bytes = real_peak
    g, trace = captured["g"], []
    real_peak(g, trace=trace)
    print(f"dump replay {peak} B, kvplan {got} B ({(got - peak) / 2**20:+.2f} MiB)")
    ra = [(T[e[1]]["nbytes"], e[2], T[e[1]]["op"], T[e[1]]["name"]) for e in log if e[0] == "A" and T[e[1]]["nbytes"]]
    oa = [(g.size[t], off) for kind, t, off in trace if kind == "A" and g.size[t]]
    for i, (x, y) in enumerate(zip(ra, oa)):
        if (x[0], x[1]) != y:
            print("first allocation that differs:", i)
            for k in range(max(0, i - 4), min(len(ra), i + 4)):
                print("   llama.cpp", ra[k], " kvplan", oa[k] if k < len(oa) else None)
            break
    sizes = difflib.SequenceMatcher(a=[x[0] for x in ra], b=[y[0] for y in oa], autojunk=False)
    print("allocation sizes equal in sequence:", sizes.ratio() == 1.0)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--llama-build", type=Path)
    ap.add_argument("--gguf", type=Path)
    ap.add_argument("--out", type=Path, help="dump path prefix (one file per reserve: PREFIX.0, PREFIX.1 …)")
    ap.add_argument("--replay", type=Path)
    ap.add_argument("--compare", nargs=6, metavar=("MODEL", "N_CTX", "N_UBATCH", "FA", "N_SEQ", "N_OUTPUTS"))
    ap.add_argument("params", nargs="*", default=["4096", "2048", "512", "1", "1", "f16", "f16", "0", "0", "1"])
    a = ap.parse_args(argv)
    if a.replay:
        if a.compare:
            m, c, ub, fa, ns, no = a.compare
            compare(a.replay, m, int(c), int(ub), fa == "1", int(ns), int(no))
        else:
            peak, log, T = replay(a.replay)
            first = min(i for i, e in enumerate(log) if e[0] == "A" and e[3] == peak)
            print(f"peak {peak} B ({peak / 2**20:.2f} MiB), reached by {T[log[first][1]]['name']} "
                  f"({T[log[first][1]]['op']})")
        return 0
    sys.path.insert(0, str(HERE))
    import buffers  # noqa: E402  (the context probe)

    src = a.llama_build.parent
    work = a.out.parent
    exe = buffers.build_probe(a.llama_build, src, work / "probe")
    (work / "gdump_shim.c").write_text(SHIM_SRC)
    subprocess.run(["gcc", "-O1", "-shared", "-fPIC", str(work / "gdump_shim.c"), "-o", str(work / "gdump_shim.so"),
                    f"-I{src}/ggml/include", f"-I{src}/ggml/src", "-ldl"], check=True)
    env = dict(os.environ, GDUMP=str(a.out),
               LD_PRELOAD=f"{work / 'probe' / 'nopopulate.so'} {work / 'gdump_shim.so'}")
    r = subprocess.run([str(exe), str(a.gguf), *a.params], env=env, capture_output=True, text=True)
    print("\n".join(ln for ln in r.stdout.splitlines() if ln.startswith("PROBE")))
    return r.returncode


if __name__ == "__main__":
    sys.exit(main())
