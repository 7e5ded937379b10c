"""A small Hugging Face Hub on 127.0.0.1 for the hub tests, and a way to run kvplan against it.

The fixtures ``hub`` and ``hub_env`` are in conftest.py.

The server (stdlib ``http.server`` in a thread) implements the routes huggingface_hub 2.x calls for
what kvplan does (read from its source: ``hf_api.py``, ``file_download.py``, ``hf_file_system.py``,
``utils/_http.py``):

- ``GET /api/models/{repo}`` and ``/api/models/{repo}/revision/{rev}`` — model_info: ``id``, ``sha``,
  ``siblings``, ``gated``, and ``safetensors`` {parameters, total} when the repo is given one;
- ``GET /api/models/{repo}/tree/{rev}[/{path}]`` — list_repo_tree (HfFileSystem.ls/info);
- ``POST /api/models/{repo}/paths-info/{rev}`` — get_paths_info;
- ``HEAD``/``GET /{repo}/resolve/{rev}/{path}`` — ``ETag``, ``X-Repo-Commit``, ``Content-Length``,
  ``Accept-Ranges``; ``Range: bytes=a-b`` → 206 with ``Content-Range`` (416 past the end);
- errors as the Hub sends them: an unknown repo → 401 ``X-Error-Code: RepoNotFound``; a gated repo
  without a token → 401 ``X-Error-Code: GatedRepo`` on resolve; a missing file → 404
  ``X-Error-Code: EntryNotFound`` (with ``X-Repo-Commit``); an unknown revision → 404 ``RevisionNotFound``.

Every request is logged with the byte range served, so a test can prove the weights were not read.
kvplan runs in a subprocess per call (:func:`resolve_in_subprocess`), because huggingface_hub reads
``HF_ENDPOINT``, ``HF_HUB_CACHE`` and ``HF_HUB_OFFLINE`` once, when it is imported.
"""

from __future__ import annotations

import hashlib
import json
import re
import struct
import subprocess
import sys
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

import pytest

TOKEN = "hf_test_token_kvplan"


@dataclass
class FakeRepo:
    repo_id: str
    files: dict  # path in repo → bytes or a Path
    gated: bool = False
    safetensors: dict | None = None  # model_info's summary: {"parameters": {...}, "total": n}
    commit: str = ""
    tags: tuple[str, ...] = ()  # further revisions (branches or tags) pointing at ``commit``

    def __post_init__(self):
        if not self.commit:
            self.commit = hashlib.sha1(self.repo_id.encode()).hexdigest()

    def size(self, path: str) -> int:
        data = self.files[path]
        return data.stat().st_size if isinstance(data, Path) else len(data)

    def read(self, path: str, start: int, end: int) -> bytes:  # end exclusive
        data = self.files[path]
        if isinstance(data, Path):
            with open(data, "rb") as handle:
                handle.seek(start)
                return handle.read(end - start)
        return data[start:end]

    def etag(self, path: str) -> str:
        return hashlib.sha1(f"{self.commit}/{path}/{self.size(path)}".encode()).hexdigest()


@dataclass
class Served:
    method: str
    path: str
    status: int
    start: int | None = None
    end: int | None = None  # exclusive
    auth: bool = False


class FakeHub:
    def __init__(self):
        self.repos: dict[str, FakeRepo] = {}
        self.log: list[Served] = []
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def add(self, repo: FakeRepo) -> FakeRepo:
        self.repos[repo.repo_id] = repo
        return repo

    def record(self, entry: Served) -> None:
        with self.lock:
            self.log.append(entry)

    def bytes_served(self, filename: str) -> int:
        return sum(e.end - e.start for e in self.log
                   if e.method == "GET" and e.path.endswith("/" + filename) and e.start is not None)

    def max_offset_served(self, filename: str) -> int:
        return max((e.end for e in self.log if e.method == "GET" and e.path.endswith("/" + filename)
                    and e.end is not None), default=0)

    def requests(self, method: str | None = None) -> list[Served]:
        return [e for e in self.log if method is None or e.method == method]


def _handler(hub: FakeHub):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):  # quiet
            pass

        # --- plumbing ---
        def _send(self, status: int, body: bytes = b"", headers: dict | None = None, head: bool = False,
                  start=None, end=None):
            self.send_response(status)
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            if "Content-Length" not in (headers or {}):
                self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if not head and body:
                self.wfile.write(body)
            hub.record(Served(self.command, urlsplit(self.path).path, status, start, end,
                              bool(self.headers.get("Authorization"))))

        def _json(self, status: int, data, headers: dict | None = None):
            self._send(status, json.dumps(data).encode(), {"Content-Type": "application/json", **(headers or {})},
                       head=self.command == "HEAD")

        def _error(self, status: int, code: str | None, message: str, extra: dict | None = None):
            headers = {"X-Error-Message": message, **(extra or {})}
            if code:
                headers["X-Error-Code"] = code
            self._json(status, {"error": message}, headers)

        def _authorized(self, repo: FakeRepo) -> bool:
            return not repo.gated or self.headers.get("Authorization") == f"Bearer {TOKEN}"

        def _repo(self, repo_id: str) -> FakeRepo | None:
            repo = hub.repos.get(repo_id)
            if repo is None:
                self._error(401, "RepoNotFound", "Repository not found")
            return repo

        def _revision_ok(self, repo: FakeRepo, rev: str) -> bool:
            if unquote(rev) in ("main", repo.commit, *repo.tags):
                return True
            self._error(404, "RevisionNotFound", "Invalid rev id: " + unquote(rev))
            return False

        def _entry(self, repo: FakeRepo, path: str) -> dict:
            return {"type": "file", "oid": repo.etag(path), "size": repo.size(path), "path": path}

        # --- routes ---
        def do_HEAD(self):
            self._route()

        def do_GET(self):
            self._route()

        def do_POST(self):
            self._route()

        def _route(self):
            parts = urlsplit(self.path)
            path = parts.path
            if path.startswith("/api/models/"):
                return self._api(path[len("/api/models/"):], parse_qs(parts.query))
            m = re.match(r"^/([^/]+/[^/]+)/resolve/([^/]+)/(.+)$", path)
            if m:
                return self._resolve(m.group(1), m.group(2), unquote(m.group(3)))
            self._error(404, None, f"no route {self.command} {path}")

        def _api(self, rest: str, query: dict):
            segs = rest.split("/")
            repo = self._repo("/".join(segs[:2]))
            if repo is None:
                return
            tail = segs[2:]
            if not tail or tail[0] == "revision":
                if tail and not self._revision_ok(repo, "/".join(tail[1:])):
                    return
                info = {"id": repo.repo_id, "modelId": repo.repo_id, "sha": repo.commit, "private": False,
                        "gated": "manual" if repo.gated else False, "disabled": False,
                        "siblings": [{"rfilename": p} for p in sorted(repo.files)], "tags": []}
                if repo.safetensors:
                    info["safetensors"] = repo.safetensors
                return self._json(200, info)
            if tail[0] == "tree":
                if not self._revision_ok(repo, tail[1]):
                    return
                folder = unquote("/".join(tail[2:]))
                recursive = query.get("recursive", ["false"])[0].lower() == "true"
                entries, dirs = [], set()
                for p in sorted(repo.files):
                    if folder and not p.startswith(folder + "/"):
                        continue
                    rel = p[len(folder) + 1:] if folder else p
                    if "/" in rel and not recursive:
                        dirs.add((folder + "/" if folder else "") + rel.split("/")[0])
                        continue
                    entries.append(self._entry(repo, p))
                entries += [{"type": "directory", "oid": "0" * 40, "size": 0, "path": d} for d in sorted(dirs)]
                return self._json(200, entries)
            if tail[0] == "paths-info" and self.command == "POST":
                if not self._revision_ok(repo, tail[1]):
                    return
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length).decode()
                form = parse_qs(body) if "json" not in (self.headers.get("Content-Type") or "") else json.loads(body)
                wanted = form.get("paths", [])
                return self._json(200, [self._entry(repo, p) for p in wanted if p in repo.files])
            self._error(404, None, f"no API route {rest}")

        def _resolve(self, repo_id: str, rev: str, filename: str):
            repo = self._repo(repo_id)
            if repo is None or not self._revision_ok(repo, rev):
                return
            if not self._authorized(repo):
                return self._error(401, "GatedRepo", "Access to model " + repo_id + " is restricted.")
            if filename not in repo.files:
                return self._error(404, "EntryNotFound", "Entry not found", {"X-Repo-Commit": repo.commit})
            size = repo.size(filename)
            headers = {"ETag": f'"{repo.etag(filename)}"', "X-Repo-Commit": repo.commit, "Accept-Ranges": "bytes",
                       "Content-Type": "application/octet-stream"}
            rng = self.headers.get("Range")
            if rng:
                m = re.match(r"^bytes=(\d+)-(\d*)$", rng.strip())
                if not m:
                    return self._error(400, None, "bad range " + rng)
                start = int(m.group(1))
                end = min(int(m.group(2)) + 1 if m.group(2) else size, size)
                if start >= size:
                    return self._send(416, b"", {"Content-Range": f"bytes */{size}"})
                body = b"" if self.command == "HEAD" else repo.read(filename, start, end)
                headers.update({"Content-Range": f"bytes {start}-{end - 1}/{size}", "Content-Length": str(end - start)})
                return self._send(206, body, headers, head=self.command == "HEAD", start=start, end=end)
            headers["Content-Length"] = str(size)
            if self.command == "HEAD":
                return self._send(200, b"", headers, head=True)
            return self._send(200, repo.read(filename, 0, size), headers, start=0, end=size)

    return Handler


# --- repository contents ----------------------------------------------------------------------------

LLAMA_CONFIG = {  # TinyLlama-1.1B's shape (tests/data/hf_configs has the real file for the importer tests)
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 2048, "intermediate_size": 5632,
    "num_attention_heads": 32, "num_hidden_layers": 22, "num_key_value_heads": 4, "max_position_embeddings": 2048,
    "vocab_size": 32000, "tie_word_embeddings": False, "torch_dtype": "bfloat16", "rms_norm_eps": 1e-05,
}
LLAMA_DERIVED_PARAMS = 1_100_048_384  # what kvplan's importer derives from LLAMA_CONFIG


def safetensors_file(tensors: dict[str, tuple[str, list[int]]]) -> bytes:
    """A real safetensors file: 8-byte header length, JSON header, then the (zero) data."""
    sizes = {"BF16": 2, "F16": 2, "F32": 4}
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, (dtype, shape) in tensors.items():
        n = sizes[dtype]
        for d in shape:
            n *= d
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + n]}
        offset += n
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    return struct.pack("<Q", len(raw)) + raw + bytes(offset)


def write_tiny_llama_gguf(path: Path, *, vocab: int = 20000, hidden: int = 256, layers: int = 4,
                          ffn: int = 512, name: str = "Tiny Llama", extra_tensor_mib: int = 0,
                          split_max_tensors: int = 0, big_endian: bool = False) -> Path:
    """A llama-shaped GGUF written with the gguf package: real metadata, a tokenizer, f16/f32 tensors.

    With ``split_max_tensors`` the writer splits it into ``NAME-0000i-of-0000n.gguf`` shards (gguf-split's
    layout: the metadata in the first, ``split.*`` keys in each, every shard its own tensor infos).
    """
    gguf = pytest.importorskip("gguf")
    np = pytest.importorskip("numpy")
    endian = gguf.GGUFEndian.BIG if big_endian else gguf.GGUFEndian.LITTLE
    w = gguf.GGUFWriter(str(path), "llama", split_max_tensors=split_max_tensors, endianess=endian)
    w.add_name(name)
    w.add_block_count(layers)
    w.add_context_length(4096)
    w.add_embedding_length(hidden)
    w.add_feed_forward_length(ffn)
    w.add_head_count(8)
    w.add_head_count_kv(2)
    w.add_rope_dimension_count(hidden // 8)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_tokenizer_model("llama")
    w.add_token_list([f"tok{i:06d}" for i in range(vocab)])
    w.add_token_scores([float(i) for i in range(vocab)])
    w.add_token_types([1] * vocab)
    w.add_array("tokenizer.ggml.merges", [f"t{i} o{i}" for i in range(vocab // 2)])
    w.add_bool("tokenizer.ggml.add_bos_token", True)
    w.add_float64("test.float64", 0.25)
    w.add_int64("test.int64", -5)
    w.add_array("test.nested", [[1, 2], [3, 4]])
    f16, f32 = np.float16, np.float32
    w.add_tensor("token_embd.weight", np.zeros((vocab, hidden), dtype=f16))
    for i in range(layers):
        for t, shape in (("attn_q", (hidden, hidden)), ("attn_k", (hidden // 4, hidden)),
                         ("attn_v", (hidden // 4, hidden)), ("attn_output", (hidden, hidden)),
                         ("ffn_gate", (ffn, hidden)), ("ffn_up", (ffn, hidden)), ("ffn_down", (hidden, ffn))):
            w.add_tensor(f"blk.{i}.{t}.weight", np.zeros(shape, dtype=f16))
        w.add_tensor(f"blk.{i}.attn_norm.weight", np.zeros(hidden, dtype=f32))
        w.add_tensor(f"blk.{i}.ffn_norm.weight", np.zeros(hidden, dtype=f32))
    w.add_tensor("output_norm.weight", np.zeros(hidden, dtype=f32))
    w.add_tensor("output.weight", np.zeros((vocab, hidden), dtype=f16))
    if extra_tensor_mib:
        w.add_tensor("test.padding", np.zeros((extra_tensor_mib * 2**20 // 4,), dtype=f32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


# --- running kvplan against it ----------------------------------------------------------------------

_SCRIPT = r"""
import json, sys, time
t0 = time.perf_counter()
from kvplan.errors import KvplanError
from kvplan.hub.resolve import resolve_hub_profile
try:
    found = resolve_hub_profile(sys.argv[1])
    out = {"ok": True, "mapping": found.mapping, "origin": found.origin, "from_cache": found.from_cache,
           "notes": list(found.notes), "record": found.record}
except KvplanError as exc:
    out = {"ok": False, "error": type(exc).__name__, "message": str(exc)}
out["seconds"] = time.perf_counter() - t0
out["hub_imported"] = "huggingface_hub" in sys.modules
print(json.dumps(out))
"""


def resolve_in_subprocess(spec: str, env: dict, **extra_env) -> dict:
    proc = subprocess.run([sys.executable, "-c", _SCRIPT, spec], env={**env, **extra_env}, capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])
# A tiny llama shape for the tests whose safetensors files hold a few hundred values: kvplan refuses a parameter
# count its model's shape cannot hold (1,608 parameters for TinyLlama's 22 layers of 2,048), so those files come
# with a config they could be the weights of (1 layer, hidden 8, 1 head of 8: output projection 8 × 8 = 64 values).
TINY_LLAMA_CONFIG = {**LLAMA_CONFIG, "hidden_size": 8, "intermediate_size": 16, "num_attention_heads": 1,
                     "num_hidden_layers": 1, "num_key_value_heads": 1, "vocab_size": 100}


def write_tiny_audio_mmproj(path: Path, *, projection_dim: int = 256, kind: str = "qwen2a") -> Path:
    """A tiny Whisper-encoder audio projector (``clip.has_audio_encoder``) written with the gguf package, zeros:
    E 32, F 64, 2 layers, 8 mel bins, 10 positions, its tensors as kvplan.engine.audio_encoder lists them (F16
    matrices). For qwen2a its tensors hold 184,064 B at projection_dim 2048 (tests/unit/test_import_audio_mmproj.py
    derives it by hand)."""
    from kvplan.engine.audio_encoder import audio_encoder_tensors

    gguf = pytest.importorskip("gguf")
    np = pytest.importorskip("numpy")
    w = gguf.GGUFWriter(str(path), "clip")
    w.add_string("clip.projector_type", kind)
    w.add_bool("clip.has_audio_encoder", True)
    for key, value in (("embedding_length", 32), ("feed_forward_length", 64), ("block_count", 2),
                       ("attention.head_count", 4), ("projection_dim", projection_dim), ("num_mel_bins", 8)):
        w.add_uint32(f"clip.audio.{key}", value)
    if kind != "qwen2a":
        w.add_uint32("clip.audio.projector.stack_factor", 8 if kind == "ultravox" else 4)
    for name, ne, typ in audio_encoder_tensors(kind, n_embd=32, n_ff=64, n_layer=2, n_mel=8,
                                               projection_dim=projection_dim, n_positions=10, projector_hidden=64):
        w.add_tensor(name, np.zeros(tuple(reversed(ne)), dtype={"f16": np.float16, "f32": np.float32}[typ]))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path
