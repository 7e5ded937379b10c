"""Measure what llama.cpp's multimodal library reports for weight-less projector GGUFs.

Builds `mmproj_probe.cpp` against a llama.cpp tree (compiling `tools/mtmd/clip.cpp` and
`tools/mtmd/models/*.cpp`, linking the tree's built libggml), runs it once per GGUF (and per
`--image-max-tokens` value for Qwen2.5-VL), and records llama.cpp's own log lines (`model size`,
`compute buffer size`, `warmup with image size`, `flash attention is`) with the exact bytes
(`clip_ctx::mem_usage`, `clip_ctx::mem_compute`).

Audio projectors are probed through their audio context (`clip_init`'s `ctx_a`): the same two figures for the
3,000-frame warmup mel, plus `clip_n_output_tokens` of one such chunk.

Usage:
  python make_mmproj_gguf.py --out DIR [--outtype q8_0]
  python mmproj_buffers.py --llama-src SRC --gguf-dir DIR --version "llama.cpp build 11434" \
      --out tests/data/llamacpp/mmproj/measured.json
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: clip lengths [s] whose mtmd chunks and tokens are recorded for audio projectors
CLIP_SECONDS = "0.5,1,10,29.98,29.99,30,45,59.99,60,90,120"


def build(src: Path, work: Path) -> Path:
    work.mkdir(parents=True, exist_ok=True)
    inc = [f"-I{src}/tools/mtmd", f"-I{src}/ggml/include", f"-I{src}/include"]
    objs = []
    for cpp in [HERE / "mmproj_probe.cpp", src / "tools" / "mtmd" / "mtmd-audio.cpp",
                *sorted((src / "tools" / "mtmd" / "models").glob("*.cpp"))]:
        o = work / (cpp.stem + ".o")
        if not o.exists() or (cpp.parent == HERE and o.stat().st_mtime < cpp.stat().st_mtime):
            subprocess.run(["nice", "-n", "19", "g++-12", "-std=c++17", "-O1", "-c", str(cpp), *inc, "-o", str(o)],
                           check=True)
        objs.append(str(o))
    exe = work / "mmproj_probe"
    lib = src / "build" / "bin"
    subprocess.run(["g++-12", "-o", str(exe), *objs, f"-L{lib}", "-lggml", "-lggml-base", "-lggml-cpu",
                    f"-Wl,-rpath,{lib}", "-lpthread"], check=True)
    return exe


def run(exe: Path, gguf: Path, max_tokens: int | None, image: str | None = None, fa_off: bool = False) -> dict:
    args = [str(exe), str(gguf), str(max_tokens or 0)] + [image or "-"] + (["off"] if fa_off else [])
    p = subprocess.run(args, capture_output=True, text=True, check=True)
    log = p.stderr + p.stdout
    keep = [ln for ln in log.splitlines() if re.search(
        r"projector:|model size:|compute buffer size|warmup with|flash attention is|n_wa_pattern|n_merge|"
        r"n_mel_bins|proj_stack_factor|audio_chunk_len", ln)]
    m = re.search(r"PROBE weights_bytes=(\d+) compute_bytes=(\d+) warmup_image_size=(\d+) flash_attn=(\d)", log)
    out = {"gguf": gguf.name, "image_max_tokens": max_tokens, "weights_bytes": int(m[1]),
           "compute_bytes": int(m[2]), "warmup_image_size": int(m[3]), "flash_attn": bool(int(m[4])),
           "log": keep, "flash_attn_requested": "off" if fa_off else "auto"}
    m3 = re.search(r"PROBE audio warmup_audio_size=(\d+) n_mel_bins=(\d+) chunk_tokens=(\d+)", log)
    if m3:
        out["audio"] = {"warmup_audio_size": int(m3[1]), "n_mel_bins": int(m3[2]), "chunk_tokens": int(m3[3])}
    clips = re.findall(r"PROBE clip seconds=([\d.e+-]+) samples=(\d+) chunks=(\d+) tokens=(\d+) compute_bytes=(\d+)",
                       log)
    if clips:  # compute_bytes: the buffer after reserving the graph of the clip's first chunk
        out["clips"] = [{"seconds": float(c[0]), "samples": int(c[1]), "chunks": int(c[2]), "tokens": int(c[3]),
                         "compute_bytes": int(c[4])} for c in clips]
    if image and not image.startswith("clips:"):
        m2 = re.search(r"PROBE image=(\d+)x(\d+) compute_bytes=(\d+)", log)
        out["image"] = {"width": int(m2[1]), "height": int(m2[2]), "compute_bytes": int(m2[3])}
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--llama-src", required=True, type=Path)
    ap.add_argument("--gguf-dir", required=True, type=Path)
    ap.add_argument("--work", type=Path, default=Path("/tmp/kvplan-mmproj-probe"))
    ap.add_argument("--version", required=True)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--glob", default="mmproj-*.gguf", help="which GGUFs of --gguf-dir to probe")
    a = ap.parse_args(argv)
    exe = build(a.llama_src, a.work)
    t0 = time.time()
    runs = []
    for gguf in sorted(a.gguf_dir.glob(a.glob)):
        first = run(exe, gguf, None)
        if "audio" in first:  # an audio projector: its one 3,000-frame warmup, with flash attention and without
            # and the chunks / tokens mtmd makes of silent clips around the 30 s chunk edges
            first = run(exe, gguf, None, "clips:" + CLIP_SECONDS)
            runs += [first, run(exe, gguf, None, None, fa_off=True)]
            for r in runs[-2:]:
                print(json.dumps({k: v for k, v in r.items() if k != "log"}))
            continue
        vision_qwen = "qwen2.5-vl" in gguf.name
        for mt in ([None, 256, 1024] if vision_qwen else [None]):
            runs.append(run(exe, gguf, mt))
            print(json.dumps({k: v for k, v in runs[-1].items() if k != "log"}))
        # Qwen2.5-VL's graph follows the image: the buffer after reserving one image of each size
        # (smart_resize'd sizes: 1920x1080 → 1932x1092, 2240x1260; 644x644 is below the warmup's)
        if "f16" in gguf.name:  # -fa off: the T × T × n_head attention scores in every layer
            runs.append(run(exe, gguf, None, None, fa_off=True))
            print(json.dumps({k: v for k, v in runs[-1].items() if k != "log"}))
        if vision_qwen and "f16" in gguf.name:
            for image in ("1932x1092", "644x644", "2240x1260"):
                runs.append(run(exe, gguf, None, image))
                print(json.dumps({k: v for k, v in runs[-1].items() if k != "log"}))
    doc = {"llama_cpp": a.version, "backend": "CPU (GGML_NATIVE=OFF), clip flash attention auto",
           "harness": "tests/harness/make_mmproj_gguf.py + tests/harness/mmproj_buffers.py",
           "seconds_total": round(time.time() - t0, 1), "runs": runs}
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main()
