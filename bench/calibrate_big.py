"""How long `kvplan calibrate` takes on a large llama-bench file (figures for docs/performance.md).

Writes a `llama-bench -o json` array of N rows built from the two rows of tests/data/calibration/bench/
m2_q4_0.jsonl (pp512 and tg128 of llama 7B Q4_0 on an Apple M2), the tg rows at depths 0, 64, 128, … so the
fit has many points, and times one `kvplan calibrate FILE -o OUT.yaml --base macbook-air-m2-16gb` per size. Nothing here is a test.

    python bench/calibrate_big.py [--rows 5000 20000]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "tests" / "data" / "calibration" / "bench" / "m2_q4_0.jsonl"


def bench_rows(count: int) -> list[dict]:
    """``count`` rows: every other one a pp512, the rest tg128 at depths 0, 64, … 32,704 (then again), at the rate
    of 90 GB/s and 5 ms a token: (3,825,065,984 B + 524,288 B/token · depth) / 90e9 B/s + 0.005 s."""
    prefill, decode = (json.loads(line) for line in TEMPLATE.read_text().splitlines())
    rows = []
    for i in range(count):
        if i % 2:
            depth = 64 * ((i // 2) % 512)
            seconds = (decode["model_size"] + 524_288 * depth) / 90e9 + 0.005
            row = dict(decode, n_depth=depth, avg_ts=round(1 / seconds, 4))
        else:
            row = dict(prefill)
        rows.append(row)
    return rows


def write_bench(path: Path, count: int) -> None:
    path.write_text(json.dumps(bench_rows(count), indent=2), encoding="utf-8")  # llama-bench indents too


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[5000, 20000])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        for count in args.rows:
            bench = Path(folder) / f"bench-{count}.json"
            write_bench(bench, count)
            start = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "kvplan", "calibrate", str(bench), "-o",
                                   str(Path(folder) / f"out-{count}.yaml"), "--base", "macbook-air-m2-16gb"],
                                  capture_output=True, text=True, cwd=ROOT)
            elapsed = time.perf_counter() - start
            print(f"{count:>7,} rows  {bench.stat().st_size / 1e6:6.1f} MB  {elapsed:7.2f} s  exit {done.returncode}"
                  + (f"  {done.stderr.strip().splitlines()[-1][:200]}" if done.returncode else ""))


if __name__ == "__main__":
    main()
