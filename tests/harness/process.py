#!/usr/bin/env python3
"""Measure a real llama-server process: peak resident memory and the out-of-memory line.

Opt-in harness (not run by CI; root; Linux with a cgroup v1 or v2 memory controller).
Needs a llama.cpp build with `llama-server` and the `gguf`, `numpy`, `pyyaml` packages
(for make_gguf.py). Writes tests/data/llamacpp/process/measurements.json.

Usage:
    python tests/harness/process.py --bin BUILD/bin --gguf-dir DIR [--only ID ...] [--no-bisect]

For each configuration of CONFIGS: make (or reuse) a weight-less GGUF with real shapes and an
n_vocab-sized vocabulary (make_gguf.py; Q4_0 files take llama-quantize's per-tensor types from
tests/data/llamacpp/quant/), drop the GGUF's and the binaries' pages from the page cache, start
llama-server on 127.0.0.1 in a fresh memory cgroup, wait for /health, send one completion
request (n_predict 2), then read /proc/PID/status (VmHWM, VmRSS, RssAnon, RssFile, RssShmem),
the cgroup's peak and memory.stat, and llama.cpp's own buffer log lines; stop the server by
its PID (SIGTERM, SIGKILL after 15 s) and remove the cgroup.

Out-of-memory line (configurations with bisect=True): the smallest cgroup memory limit
(memory.limit_in_bytes + memory.memsw.limit_in_bytes on v1, memory.max + memory.swap.max=0 on
v2), to 4 MiB, under which the server loads AND answers the request within the attempt's
timeout. Every attempt is recorded (limit, outcome, seconds).

Weights are zeros (a sparse hole), so every run takes seconds; the page cache still holds
real (zero-filled) pages for every part of the file that is read, as with real weights.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import platform
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))
OUT_DEFAULT = REPO / "tests" / "data" / "llamacpp" / "process" / "measurements.json"
MiB = 2**20
STEP_BYTES = 4 * MiB          # bisection resolution
SAFETY_LIMIT_BYTES = 14 << 30  # measurement runs: a cap that protects the shared machine

# id, model, weights (f16 | q4_0), ctx, np, cache (f16 | q8_0), mmap, repack (None: flag not passed), bisect
CONFIGS = [
    dict(id="llama-3.2-1b_f16w_c4096_np1_kvf16_mmap", model="llama-3.2-1b", weights="f16", ctx=4096, np=1,
         cache="f16", mmap=True, repack=None, bisect=True),
    dict(id="llama-3.2-1b_f16w_c4096_np1_kvf16_nommap", model="llama-3.2-1b", weights="f16", ctx=4096, np=1,
         cache="f16", mmap=False, repack=None, bisect=True),
    dict(id="llama-3.2-1b_f16w_c32768_np1_kvq8_nommap", model="llama-3.2-1b", weights="f16", ctx=32768, np=1,
         cache="q8_0", mmap=False, repack=None, bisect=False),
    dict(id="llama-3.2-1b_q4w_c8192_np1_kvf16_mmap_repack", model="llama-3.2-1b", weights="q4_0", ctx=8192,
         np=1, cache="f16", mmap=True, repack=True, bisect=False),
    dict(id="llama-3.2-1b_q4w_c8192_np1_kvf16_mmap_norepack", model="llama-3.2-1b", weights="q4_0", ctx=8192,
         np=1, cache="f16", mmap=True, repack=False, bisect=False),
    dict(id="llama-3.2-1b_q4w_c8192_np1_kvf16_nommap_repack", model="llama-3.2-1b", weights="q4_0", ctx=8192,
         np=1, cache="f16", mmap=False, repack=True, bisect=True),
    dict(id="llama-3.2-1b_q4w_c8192_np1_kvf16_nommap_norepack", model="llama-3.2-1b", weights="q4_0", ctx=8192,
         np=1, cache="f16", mmap=False, repack=False, bisect=False),
    dict(id="qwen2.5-0.5b_f16w_c512_np1_kvf16_mmap", model="qwen2.5-0.5b", weights="f16", ctx=512, np=1,
         cache="f16", mmap=True, repack=None, bisect=True),
    dict(id="qwen2.5-0.5b_f16w_c16384_np1_kvq8_nommap", model="qwen2.5-0.5b", weights="f16", ctx=16384, np=1,
         cache="q8_0", mmap=False, repack=None, bisect=True),
    dict(id="qwen3-0.6b_f16w_c2048_np4_kvf16_mmap", model="qwen3-0.6b", weights="f16", ctx=2048, np=4,
         cache="f16", mmap=True, repack=None, bisect=False),
    dict(id="gemma-3-1b_f16w_c8192_np1_kvf16_mmap", model="gemma-3-1b", weights="f16", ctx=8192, np=1,
         cache="f16", mmap=True, repack=None, bisect=False),
    dict(id="gemma-3-1b_f16w_c32768_np1_kvf16_nommap", model="gemma-3-1b", weights="f16", ctx=32768, np=1,
         cache="f16", mmap=False, repack=None, bisect=True),
    dict(id="gemma-3-1b_q4w_c4096_np1_kvq8_nommap_repack", model="gemma-3-1b", weights="q4_0", ctx=4096, np=1,
         cache="q8_0", mmap=False, repack=True, bisect=False),
    dict(id="llama-3.1-8b_q4w_c4096_np1_kvf16_mmap_repack", model="llama-3.1-8b", weights="q4_0", ctx=4096,
         np=1, cache="f16", mmap=True, repack=True, bisect=False),
    dict(id="llama-3.1-8b_q4w_c4096_np1_kvf16_mmap_norepack", model="llama-3.1-8b", weights="q4_0", ctx=4096,
         np=1, cache="f16", mmap=True, repack=False, bisect=False),
    dict(id="llama-3.1-8b_q4w_c8192_np1_kvf16_nommap_norepack", model="llama-3.1-8b", weights="q4_0", ctx=8192,
         np=1, cache="f16", mmap=False, repack=False, bisect=True),
    dict(id="llama-3.1-8b_q4w_c16384_np1_kvq8_nommap_repack", model="llama-3.1-8b", weights="q4_0", ctx=16384,
         np=1, cache="q8_0", mmap=False, repack=True, bisect=False),
    # mmap out-of-memory lines where the anonymous part is large (session 5): the cache, or the repacked copy
    dict(id="llama-3.2-1b_f16w_c32768_np1_kvf16_mmap", model="llama-3.2-1b", weights="f16", ctx=32768, np=1,
         cache="f16", mmap=True, repack=None, bisect=True),
    dict(id="llama-3.2-1b_q4w_c8192_np1_kvf16_mmap_repack_oom", model="llama-3.2-1b", weights="q4_0", ctx=8192,
         np=1, cache="f16", mmap=True, repack=True, bisect=True),
    dict(id="qwen3-0.6b_f16w_c16384_np1_kvq8_mmap", model="qwen3-0.6b", weights="f16", ctx=16384, np=1,
         cache="q8_0", mmap=True, repack=None, bisect=True),
    dict(id="deepseek-v2-lite_q4w_c4096_np1_kvf16_mmap_norepack", model="deepseek-v2-lite", weights="q4_0",
         ctx=4096, np=1, cache="f16", mmap=True, repack=False, bisect=False),
]

# measurements first, bisections last: a run cut short still has every configuration measured
CONFIGS.sort(key=lambda c: c["bisect"])

STATUS_KEYS = ("VmPeak", "VmSize", "VmHWM", "VmRSS", "RssAnon", "RssFile", "RssShmem", "VmData", "VmSwap")
# llama.cpp log lines kept in the record (the rest of the log is not committed)
KEEP_LOG = re.compile(r"buffer size|n_ctx|n_seq_max|n_batch|n_ubatch|flash_attn|kv_unified|swa|type_k|type_v"
                      r"|mmap|repack|REPACK|memory_breakdown|model size|file type|n_vocab|CPU_|"
                      r"\| +- |llama_kv_cache|llama_context|n_ctx_seq|causal_attn|offload", re.I)
BUFFER_LINE = re.compile(r"(?P<where>\w+):\s+(?P<name>\S.*?) buffer size =\s+(?P<mib>[0-9.]+) MiB")
# common_memory_breakdown_print at exit, rows such as "|   - Host   |   2557 =  2357 +  128 +  72   |" (MiB;
# self = model + context + compute); CPU-only builds print Host and, with repack, CPU_REPACK
BREAKDOWN_ROW = re.compile(r"\|\s+- (?P<name>\S+)\s+\|\s+(?P<self>\d+) =\s+(?P<model>\d+) \+\s+(?P<context>\d+)"
                           r" \+\s+(?P<compute>\d+)\s+\|")


# --- machine and build ----------------------------------------------------------------------------------------

def machine() -> dict:
    mem = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines())
    cpu = next((ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                if ln.startswith("model name")), "")
    return {"kernel": platform.release(), "cpu": cpu, "cores": os.cpu_count(),
            "mem_total": mem["MemTotal"].strip(), "swap_total": mem["SwapTotal"].strip(),
            "libc": " ".join(platform.libc_ver()), "cgroup": cgroup_kind(), "page_size": os.sysconf("SC_PAGE_SIZE")}


def server_version(server: Path) -> str:
    r = subprocess.run([str(server), "--version"], capture_output=True, text=True, timeout=30)
    return (r.stdout + r.stderr).strip()


def help_text(server: Path) -> str:
    return subprocess.run([str(server), "--help"], capture_output=True, text=True, timeout=30).stdout


# --- cgroups ------------------------------------------------------------------------------------------------------

V1 = Path("/sys/fs/cgroup/memory")
V2 = Path("/sys/fs/cgroup")


def cgroup_kind() -> str:
    if (V1 / "memory.limit_in_bytes").exists():
        return "v1"
    if (V2 / "cgroup.controllers").exists() and "memory" in (V2 / "cgroup.controllers").read_text():
        return "v2"
    raise SystemExit("no memory cgroup controller (v1 /sys/fs/cgroup/memory or v2 with memory)")


class Cgroup:
    """A child memory cgroup for one server run; removed by close()."""

    def __init__(self, name: str, limit_bytes: int | None):
        self.kind = cgroup_kind()
        base = V1 if self.kind == "v1" else V2
        if self.kind == "v2":
            ctl = V2 / "cgroup.subtree_control"
            if "memory" not in ctl.read_text():
                ctl.write_text("+memory")
        self.path = base / name
        self.path.mkdir()
        if limit_bytes is not None:
            if self.kind == "v1":
                (self.path / "memory.limit_in_bytes").write_text(str(limit_bytes))
                if (self.path / "memory.memsw.limit_in_bytes").exists():
                    (self.path / "memory.memsw.limit_in_bytes").write_text(str(limit_bytes))
            else:
                (self.path / "memory.max").write_text(str(limit_bytes))
                if (self.path / "memory.swap.max").exists():
                    (self.path / "memory.swap.max").write_text("0")

    def procs_file(self) -> str:
        return str(self.path / "cgroup.procs")

    def read(self) -> dict:
        p = self.path
        stat = dict(ln.split() for ln in (p / "memory.stat").read_text().splitlines())
        if self.kind == "v1":
            oom = dict(ln.split() for ln in (p / "memory.oom_control").read_text().splitlines())
            return {"peak_bytes": int((p / "memory.max_usage_in_bytes").read_text()),
                    "usage_bytes": int((p / "memory.usage_in_bytes").read_text()),
                    "failcnt": int((p / "memory.failcnt").read_text()),
                    "oom_kill": int(oom.get("oom_kill", 0)),
                    "stat": {k: int(stat[k]) for k in ("rss", "cache", "mapped_file", "shmem", "rss_huge")
                             if k in stat}}
        events = dict(ln.split() for ln in (p / "memory.events").read_text().splitlines())
        peak = p / "memory.peak"
        return {"peak_bytes": int(peak.read_text()) if peak.exists() else None,
                "usage_bytes": int((p / "memory.current").read_text()),
                "failcnt": int(events.get("max", 0)), "oom_kill": int(events.get("oom_kill", 0)),
                "stat": {k: int(stat[k]) for k in ("anon", "file", "file_mapped", "shmem") if k in stat}}

    def close(self):
        for _ in range(100):
            try:
                self.path.rmdir()
                return
            except OSError:
                time.sleep(0.1)
        print(f"warning: could not remove {self.path}", file=sys.stderr)


# --- page cache ---------------------------------------------------------------------------------------------------

_libc = ctypes.CDLL(None, use_errno=True)
POSIX_FADV_DONTNEED = 4


def drop_page_cache(paths):
    """Evict the files' clean pages, so each run reads (and is charged for) them afresh."""
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            _libc.posix_fadvise(fd, ctypes.c_long(0), ctypes.c_long(0), POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


# --- one server run ---------------------------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def status(pid: int) -> dict:
    out = {}
    for ln in Path(f"/proc/{pid}/status").read_text().splitlines():
        k, _, v = ln.partition(":")
        if k in STATUS_KEYS:
            out[k + "_bytes"] = int(v.split()[0]) * 1024  # the kernel prints kB (KiB)
    return out


def http(url: str, body: dict | None = None, timeout: float = 10.0):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return r.status, json.loads(r.read() or b"null")


def command(server: Path, gguf: Path, c: dict, port: int, flags: dict) -> list[str]:
    cmd = [str(server), "-m", str(gguf), "--host", "127.0.0.1", "--port", str(port),
           "-c", str(c["ctx"]), "-np", str(c["np"]), "-t", "2", "-ngl", "0", "-lv", "4"]
    cmd += flags["fit_off"]
    if c["cache"] != "f16":
        cmd += ["-ctk", c["cache"], "-ctv", c["cache"], "-fa", "on"]
    if not c["mmap"]:
        cmd += flags["no_mmap"]
    if c["repack"] is not None:
        cmd += [flags["repack"] if c["repack"] else flags["no_repack"]]
    return cmd


def run_server(cmd: list[str], cg_name: str, limit_bytes: int | None, drop: list[Path],
               load_timeout_s: float, request_timeout_s: float) -> dict:
    """Start, wait for /health, one completion, measure, stop. Never leaves the process running."""
    drop_page_cache(drop)
    cg = Cgroup(cg_name, limit_bytes)
    port = int(cmd[cmd.index("--port") + 1])
    log_path = Path(f"/tmp/kvplan-process-{cg_name}.log")
    t0 = time.monotonic()
    rec: dict = {"limit_bytes": limit_bytes}
    proc = None
    peak_seen = {"RssAnon_bytes": 0, "RssFile_bytes": 0}

    def sample():
        try:
            s = status(proc.pid)
        except (FileNotFoundError, ProcessLookupError):
            return None
        for k in peak_seen:
            peak_seen[k] = max(peak_seen[k], s.get(k, 0))
        return s

    def into_cgroup(procs=cg.procs_file()):
        with open(procs, "w") as fh:  # the child joins before exec: every page it touches is charged
            fh.write(str(os.getpid()))

    try:
        with open(log_path, "w") as log:
            proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    preexec_fn=into_cgroup)
        outcome = None
        while True:  # load
            if proc.poll() is not None:
                outcome = f"exited {proc.returncode} while loading"
                break
            if time.monotonic() - t0 > load_timeout_s:
                outcome = f"not ready after {load_timeout_s:.0f} s"
                break
            sample()
            try:
                code, _ = http(f"http://127.0.0.1:{port}/health", timeout=2)
                if code == 200:
                    break
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
                pass
            time.sleep(0.2)
        rec["load_s"] = round(time.monotonic() - t0, 2)
        if outcome is None:
            t1 = time.monotonic()
            try:
                code, body = http(f"http://127.0.0.1:{port}/completion",
                                  {"prompt": "The capital of France is", "n_predict": 2, "temperature": 0,
                                   "cache_prompt": False}, timeout=request_timeout_s)
                n = (body or {}).get("tokens_predicted", 0)
                outcome = "ok" if code == 200 and n >= 1 else f"request returned {code}, {n} tokens"
                rec["tokens_predicted"] = n
                rec["prompt_tokens"] = (body or {}).get("tokens_evaluated")
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError) as e:
                outcome = f"request failed: {type(e).__name__}: {e}"
                if proc.poll() is not None:
                    outcome = f"exited {proc.returncode} during the request"
            rec["request_s"] = round(time.monotonic() - t1, 2)
        if outcome == "ok":
            rec["status"] = sample()
            rec["cgroup_live"] = cg.read()  # while the server still runs (the final read is after exit)
        rec["outcome"] = outcome
    finally:
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=30)
        rec["returncode"] = proc.returncode if proc is not None else None
        try:
            rec["cgroup"] = cg.read()
        finally:
            drop_page_cache(drop)
            cg.close()
    rec["sampled_max"] = peak_seen
    rec["seconds"] = round(time.monotonic() - t0, 2)
    text = log_path.read_text(errors="replace")
    rec["log"] = [ln for ln in text.splitlines() if KEEP_LOG.search(ln)][:400]
    rec["log_file"] = str(log_path)
    return rec


def buffers(log_lines: list[str]) -> list[dict]:
    """llama.cpp's `<where>: <name> buffer size = N MiB` lines (MiB rounded to 0.01 by llama.cpp)."""
    out = []
    for ln in log_lines:
        m = BUFFER_LINE.search(ln)
        if m:
            out.append({"where": m["where"], "name": m["name"], "mib": float(m["mib"])})
    return out


# --- bisection ----------------------------------------------------------------------------------------------------

def bisect(run, peak_bytes: int) -> dict:
    """Smallest limit (multiple of STEP_BYTES) at which run(limit) answers; run(limit) -> record."""
    attempts = []

    def attempt(limit):
        r = run(limit)
        attempts.append({"limit_bytes": limit, "outcome": r["outcome"], "returncode": r["returncode"],
                         "oom_kill": r["cgroup"].get("oom_kill"), "cgroup_peak_bytes": r["cgroup"]["peak_bytes"],
                         "VmHWM_bytes": (r.get("status") or {}).get("VmHWM_bytes"), "seconds": r["seconds"]})
        print(f"    limit {limit / MiB:9.0f} MiB: {r['outcome']} ({r['seconds']} s)", flush=True)
        return r["outcome"] == "ok"

    hi = -(-(peak_bytes + 64 * MiB) // STEP_BYTES) * STEP_BYTES
    while not attempt(hi):
        hi *= 2
        if hi > SAFETY_LIMIT_BYTES:
            return {"oom_line_bytes": None, "attempts": attempts, "note": "no limit up to the safety cap worked"}
    lo = (hi // 2) // STEP_BYTES * STEP_BYTES
    while attempt(lo):
        hi = lo
        lo = (lo // 2) // STEP_BYTES * STEP_BYTES
        if lo < STEP_BYTES:
            return {"oom_line_bytes": hi, "attempts": attempts, "note": f"works down to {hi // MiB} MiB"}
    while hi - lo > STEP_BYTES:  # invariant: lo fails, hi works
        mid = (lo + hi) // 2 // STEP_BYTES * STEP_BYTES
        if attempt(mid):
            hi = mid
        else:
            lo = mid
    return {"oom_line_bytes": hi, "largest_failing_bytes": lo, "resolution_bytes": STEP_BYTES,
            "attempts": attempts}


# --- files ----------------------------------------------------------------------------------------------------------

def gguf_for(model: str, weights: str, gguf_dir: Path) -> Path:
    import make_gguf
    path = gguf_dir / f"{model}-{weights.upper()}.gguf"
    if not path.exists():
        gguf_dir.mkdir(parents=True, exist_ok=True)
        spec = make_gguf.Spec(model).build()
        if weights == "f16":
            make_gguf.write(spec, path)
        else:
            ft = {"q4_0": make_gguf.gguf.LlamaFileType.MOSTLY_Q4_0}[weights]
            make_gguf.write(spec, path, types=make_gguf.quant_types(model, weights), file_type=ft)
    return path


def server_flags(help_: str) -> dict:
    flags = {}
    flags["no_mmap"] = ["-lm", "none"] if "--load-mode" in help_ else ["--no-mmap"]
    flags["fit_off"] = ["--fit", "off"] if re.search(r"--fit\b", help_) else []
    flags["repack"], flags["no_repack"] = ("--repack", "--no-repack") if "--no-repack" in help_ else (None, None)
    return flags


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", required=True, type=Path, help="directory with llama-server (BUILD/bin)")
    ap.add_argument("--gguf-dir", required=True, type=Path)
    ap.add_argument("--only", nargs="*", help="configuration ids (default: all)")
    ap.add_argument("--no-bisect", action="store_true")
    ap.add_argument("--out", type=Path, default=OUT_DEFAULT)
    ap.add_argument("--build-note", default="", help="how the build was made (recorded)")
    a = ap.parse_args(argv)
    if os.geteuid() != 0:
        raise SystemExit("needs root (cgroups)")
    server = a.bin / "llama-server"
    help_ = help_text(server)
    flags = server_flags(help_)
    libs = sorted(p for p in a.bin.glob("*.so*") if p.is_file())
    doc = json.loads(a.out.read_text()) if a.out.exists() else {"records": {}}
    doc.update({"llama_server_version": server_version(server), "build": a.build_note, "machine": machine(),
                "harness": "tests/harness/process.py",
                "ld_library_path": os.environ.get("LD_LIBRARY_PATH"),
                "request": {"endpoint": "/completion", "prompt": "The capital of France is", "n_predict": 2,
                            "temperature": 0, "cache_prompt": False},
                "units": "bytes unless a key says MiB; /proc status kB are KiB (x1024)"})
    t_all = time.monotonic()
    for c in CONFIGS:
        if a.only and c["id"] not in a.only:
            continue
        if c["repack"] is not None and flags["repack"] is None:
            print(f"skip {c['id']}: this build has no --repack/--no-repack")
            continue
        gguf = gguf_for(c["model"], c["weights"], a.gguf_dir)
        drop = [gguf, server, *libs]
        cmd = command(server, gguf, c, free_port(), flags)
        print(f"{c['id']}: {' '.join(cmd)}", flush=True)
        big = c["model"] in ("llama-3.1-8b", "deepseek-v2-lite")
        r = run_server(cmd, f"kvplan-{os.getpid()}-m", SAFETY_LIMIT_BYTES, drop,
                       load_timeout_s=600 if big else 180, request_timeout_s=300 if big else 120)
        rec = {"config": c, "command": cmd, "gguf": {"path": str(gguf),
               "apparent_bytes": gguf.stat().st_size}, **r}
        rec["buffers"] = buffers(r["log"])
        rec["buffers_sum_mib"] = round(sum(b["mib"] for b in rec["buffers"]), 2)
        rec["memory_breakdown_mib"] = {m["name"]: {k: int(m[k]) for k in ("self", "model", "context", "compute")}
                                       for m in map(BREAKDOWN_ROW.search, r["log"]) if m}
        st = r.get("status") or {}
        print(f"  {r['outcome']}: VmHWM {st.get('VmHWM_bytes', 0) / MiB:.1f} MiB, RssAnon "
              f"{st.get('RssAnon_bytes', 0) / MiB:.1f}, RssFile {st.get('RssFile_bytes', 0) / MiB:.1f}, cgroup peak "
              f"{r['cgroup']['peak_bytes'] / MiB:.1f}, buffers {rec['buffers_sum_mib']} MiB ({r['seconds']} s)",
              flush=True)
        doc["records"][c["id"]] = rec
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps(doc, indent=1) + "\n")  # after every measurement: partial runs are kept
        if c["bisect"] and not a.no_bisect and r["outcome"] == "ok":
            n = [0]

            def one(limit):
                n[0] += 1
                return run_server(command(server, gguf, c, free_port(), flags), f"kvplan-{os.getpid()}-b{n[0]}",
                                  limit, drop, load_timeout_s=120, request_timeout_s=60)
            rec["oom"] = bisect(one, r["cgroup"]["peak_bytes"])
            rec["oom"]["attempt_timeouts_s"] = {"load": 120, "request": 60}
            print(f"  OOM line {rec['oom']['oom_line_bytes'] / MiB if rec['oom']['oom_line_bytes'] else None} MiB")
            a.out.write_text(json.dumps(doc, indent=1) + "\n")
    doc["seconds_last_run"] = round(time.monotonic() - t_all, 1)
    a.out.write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    sys.exit(main())
