#!/usr/bin/env python3
"""Run llama.cpp's real quantizer (llama-quantize --dry-run) on weight-less F16
GGUFs (see make_gguf.py) and record, per model and per quantization type, the
ggml type chosen for every tensor and its exact byte size.

Opt-in harness (not run by CI).

Usage:
    python tests/harness/quantize_all.py --quantize BUILD/bin/llama-quantize \
        --gguf-dir DIR [--models m1 m2 ...] [--types q4_k_m q4_0 ...] \
        [--out tests/data/llamacpp/quant] [--version "b0 (0c1e57098) ..."]
    python tests/harness/quantize_all.py --verify MODEL --types q4_k_m q4_0 ...
        (also runs a real quantization and compares per-tensor types/bytes
         with the dry run; writes <out>/verify_<MODEL>.json)

Exact bytes: llama-quantize prints sizes in MiB with two decimals, so the
harness takes the type chosen per tensor from the log line and computes
bytes = nrows * row_size(type, ne0) (what ggml_nbytes / the dry run itself
compute), then checks each against the printed MiB (+-0.005 MiB) and the sum
against the printed "quant size" total.
"""
from __future__ import annotations

import argparse
import gzip
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import gguf

REPO = Path(__file__).resolve().parents[2]

TYPES = ["f32", "f16", "bf16", "q8_0", "q6_k", "q5_k_m", "q5_k_s", "q5_1", "q5_0",
         "q4_k_m", "q4_k_s", "q4_1", "q4_0", "q3_k_l", "q3_k_m", "q3_k_s", "q2_k",
         "iq4_xs", "iq4_nl"]

LINE = re.compile(
    r"\[\s*(\d+)/\s*(\d+)\]\s+(\S+)\s+-\s+\[([\d,\s]+)\],\s+type =\s+(\S+),\s+"
    r"size =\s+([\d.]+) MiB(?: ->\s+([\d.]+) MiB \((\S+)\))?")
TOTAL = re.compile(r"quant size\s+=\s+([\d.]+) MiB")

TYPE_BY_NAME = {t.name.lower(): t for t in gguf.GGMLQuantizationType}


def row_bytes(type_name: str, shape: list[int]) -> int:
    t = TYPE_BY_NAME[type_name.lower()]
    bs, ts = gguf.GGML_QUANT_SIZES[t]
    ne0 = shape[0]
    assert ne0 % bs == 0, (type_name, shape)
    nrows = 1
    for x in shape[1:]:
        nrows *= x
    return nrows * (ne0 // bs) * ts


def dry_run(quantize: str, gguf_path: Path, qtype: str) -> tuple[dict, str]:
    cmd = [quantize, "--dry-run", str(gguf_path), qtype.upper(), "2"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    log = p.stdout + p.stderr
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}):\n{log[-3000:]}")
    return parse(log), log


def parse(log: str) -> dict:
    tensors = []
    for m in LINE.finditer(log):
        _, _, name, shape_s, src_type, mib_a, mib_b, new_type = m.groups()
        shape = [int(x) for x in shape_s.split(",")]
        while len(shape) > 1 and shape[-1] == 1:
            shape.pop()
        typ = new_type or src_type
        b = row_bytes(typ, shape)
        printed = float(mib_b or mib_a)
        if abs(b / 1048576 - printed) > 0.0051:
            raise AssertionError(f"{name}: computed {b} B vs printed {printed} MiB")
        tensors.append({"name": name, "shape": shape, "type": typ, "bytes": b})
    total = sum(t["bytes"] for t in tensors)
    mt = TOTAL.search(log)
    if mt is None:
        raise AssertionError("no 'quant size' line in log")
    if abs(total / 1048576 - float(mt.group(1))) > 0.0051:
        raise AssertionError(f"total {total} B vs printed {mt.group(1)} MiB")
    return {"total_bytes": total, "printed_total_mib": float(mt.group(1)), "tensors": tensors}


def dump(doc: dict, path: Path) -> None:
    """Compact JSON: one line per tensor."""
    out = ["{"]
    head = {k: v for k, v in doc.items() if k != "types"}
    for k, v in head.items():
        out.append(f"  {json.dumps(k)}: {json.dumps(v)},")
    out.append('  "types": {')
    tkeys = list(doc["types"])
    for i, t in enumerate(tkeys):
        d = doc["types"][t]
        out.append(f"    {json.dumps(t)}: {{\"total_bytes\": {d['total_bytes']}, "
                   f"\"printed_total_mib\": {d['printed_total_mib']}, \"tensors\": [")
        for j, x in enumerate(d["tensors"]):
            out.append("      " + json.dumps(x, separators=(", ", ": ")) + ("," if j < len(d["tensors"]) - 1 else ""))
        out.append("    ]}" + ("," if i < len(tkeys) - 1 else ""))
    out.append("  }")
    out.append("}")
    # gzip -n: the committed files are compressed (one model's 19 types: ~550 KB of JSON, ~15 KB gzipped)
    path.with_suffix(".json.gz").write_bytes(gzip.compress(("\n".join(out) + "\n").encode(), mtime=0))


def verify(quantize: str, gguf_path: Path, model: str, types: list[str], workdir: Path) -> dict:
    """Real quantization vs dry run: per-tensor type and bytes must agree."""
    results = {}
    for qt in types:
        dr, _ = dry_run(quantize, gguf_path, qt)
        outp = workdir / f"{model}-{qt}.gguf"
        t0 = time.time()
        p = subprocess.run([quantize, str(gguf_path), str(outp), qt.upper(), "2"], capture_output=True, text=True)
        secs = time.time() - t0
        if p.returncode != 0:
            results[qt] = {"ok": False, "error": (p.stdout + p.stderr)[-2000:]}
            continue
        r = gguf.GGUFReader(str(outp))
        real = {t.name: (t.tensor_type.name.lower(), int(t.n_bytes), [int(x) for x in t.shape]) for t in r.tensors}
        mism = []
        for t in dr["tensors"]:
            rt = real.get(t["name"])
            if rt is None or rt[0] != t["type"].lower() or rt[1] != t["bytes"]:
                mism.append({"name": t["name"], "dry": [t["type"], t["bytes"]], "real": rt})
        results[qt] = {
            "ok": not mism and len(real) == len(dr["tensors"]),
            "n_tensors": len(real), "dry_total_bytes": dr["total_bytes"],
            "real_total_tensor_bytes": sum(v[1] for v in real.values()),
            "real_file_bytes": outp.stat().st_size, "real_quantize_seconds": round(secs, 1),
            "mismatches": mism,
        }
        outp.unlink()
    return results


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quantize", required=True)
    ap.add_argument("--gguf-dir", required=True, type=Path)
    ap.add_argument("--models", nargs="*")
    ap.add_argument("--types", nargs="*", default=TYPES)
    ap.add_argument("--out", type=Path, default=REPO / "tests/data/llamacpp/quant")
    ap.add_argument("--version", default="")
    ap.add_argument("--verify", metavar="MODEL")
    ap.add_argument("--source", default="make_gguf.py",
                    help="the harness that wrote the F16 GGUFs (make_gguf.py, make_hybrid_gguf.py), recorded in the file")
    a = ap.parse_args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    if a.verify:
        res = verify(a.quantize, a.gguf_dir / f"{a.verify}-F16.gguf", a.verify, a.types, a.gguf_dir)
        doc = {"llama_cpp": a.version, "harness": "tests/harness/quantize_all.py --verify", "model": a.verify,
               "check": "real llama-quantize output (read back with gguf-py) vs --dry-run: per-tensor type and bytes",
               "results": res}
        (a.out / f"verify_{a.verify}.json").write_text(json.dumps(doc, indent=1) + "\n")
        print(json.dumps({k: v.get("ok") for k, v in res.items()}))
        return 0 if all(v.get("ok") for v in res.values()) else 1
    models = a.models or sorted(p.name[:-len("-F16.gguf")] for p in a.gguf_dir.glob("*-F16.gguf"))
    for m in models:
        t0 = time.time()
        doc = {"llama_cpp": a.version, "harness": "tests/harness/quantize_all.py", "model": m,
               "source_gguf": f"weight-less F16 GGUF from tests/harness/{a.source}",
               "method": "llama-quantize --dry-run <F16 gguf> <TYPE>; bytes = nrows*row_size(type, ne0), checked against printed MiB",
               "types": {}}
        for qt in a.types:
            doc["types"][qt], _ = dry_run(a.quantize, a.gguf_dir / f"{m}-F16.gguf", qt)
        dump(doc, a.out / f"{m}.json")  # written as <m>.json.gz
        print(m, {t: doc["types"][t]["total_bytes"] for t in ("q4_k_m", "q4_0") if t in doc["types"]},
              f"{time.time() - t0:.1f}s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
