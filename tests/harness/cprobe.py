"""Building the harnesses' small C++ probes against a llama.cpp build: one prelude, one compile step.

The probes (buffers.py, draft_probe.py, mtp_probe.py, offload_buffers.py) each open a GGUF with llama.cpp's C API
and print what it allocated; they share their includes and the cache-type parser (:data:`PRELUDE`) and are compiled
the same way (:func:`compile_probe`, :func:`compile_shim`). Opt-in, like every harness.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

PRELUDE = r'''
#include "llama.h"
#include "llama-ext.h"
#include "ggml-backend.h"
#include <cstdio>
#include <cstdlib>
#include <cstring>
'''

PARSE_TYPE = r'''
static ggml_type parse_type(const char * s) {
    if (!strcmp(s, "f16")) return GGML_TYPE_F16;
    if (!strcmp(s, "f32")) return GGML_TYPE_F32;
    if (!strcmp(s, "bf16")) return GGML_TYPE_BF16;
    if (!strcmp(s, "q8_0")) return GGML_TYPE_Q8_0;
    if (!strcmp(s, "q4_0")) return GGML_TYPE_Q4_0;
    fprintf(stderr, "bad type %s\n", s); exit(2);
}
'''


def compile_probe(source: str, name: str, build: Path, src_root: Path, work: Path,
                  libs: tuple[str, ...] = ("llama", "ggml", "ggml-base"), only_if_changed: bool = False) -> Path:
    """``work/name`` compiled from ``source`` against the build's shared libraries (rpath set to them)."""
    work.mkdir(parents=True, exist_ok=True)
    src, exe = work / f"{name}.cpp", work / name
    src.write_text(source)
    if only_if_changed and exe.exists() and exe.stat().st_mtime >= src.stat().st_mtime:
        return exe
    subprocess.run(["g++", "-O1", "-std=c++17", str(src), "-o", str(exe), f"-I{src_root}/include",
                    f"-I{src_root}/src", f"-I{src_root}/ggml/include", f"-L{build}/bin", *(f"-l{lib}" for lib in libs),
                    f"-Wl,-rpath,{build}/bin"], check=True)
    return exe


def compile_shim(source: str, name: str, work: Path, *extra: str) -> Path:
    """``work/name.so``, an LD_PRELOAD shim compiled from the C ``source`` (``extra``: more linker arguments)."""
    work.mkdir(parents=True, exist_ok=True)
    src, lib = work / f"{name}.c", work / f"{name}.so"
    src.write_text(source)
    subprocess.run(["gcc", "-shared", "-fPIC", "-O1", str(src), "-o", str(lib), "-ldl", *extra], check=True)
    return lib
