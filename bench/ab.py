"""A/B start-up and gate cost of two kvplan checkouts, run alternately in one session: is B slower than A?

    python bench/ab.py OLD_CHECKOUT NEW_CHECKOUT [--reps 25]

Each round runs the same commands once from each checkout (``python -m kvplan`` with ``PYTHONPATH`` set to it,
bytecode compiled first as pip would), so whatever else the machine does hits both alike. Prints the median and
quartiles of the paired ratios NEW / OLD per command. Nothing here is a test: its figures go into
docs/performance.md. It needs only the interpreter that runs it (with kvplan's dependencies installed).
"""

from __future__ import annotations

import argparse
import compileall
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

COMMANDS = {
    "check --format json": ["check", "--device", "pixel8", "--model", "7b", "--ctx", "8192", "--format", "json"],
    "check (table)": ["check", "--device", "pixel8", "--model", "7b", "--ctx", "8192"],
    "check --runtime llama.cpp": ["check", "--device", "pixel8", "--model", "llama-3.1-8b", "--ctx", "32k",
                                  "--runtime", "llama.cpp", "--format", "json"],
    "sweep 10^6 points to CSV": None,  # filled in below (needs an output file)
}


CACHES: dict[Path, str] = {}  # each checkout its own profile cache: their formats may differ


def timed(root: Path, argv: list[str]) -> float:
    env = {**os.environ, "PYTHONPATH": str(root), "NO_COLOR": "1", "COLUMNS": "120", "KVPLAN_CACHE_DIR": CACHES[root]}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "kvplan", *argv], cwd=root, env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"{root}: kvplan {' '.join(argv)} failed (exit {done.returncode}):\n{done.stderr}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path)
    parser.add_argument("--reps", type=int, default=25)
    args = parser.parse_args()
    roots = {"old": args.old.resolve(), "new": args.new.resolve()}
    for root in roots.values():
        compileall.compile_dir(str(root / "kvplan"), quiet=1)
    with tempfile.TemporaryDirectory() as tmp:
        for side, root in roots.items():
            CACHES[root] = str(Path(tmp) / f"cache-{side}")
        commands = dict(COMMANDS)
        commands["sweep 10^6 points to CSV"] = ["sweep", "--device", "pixel8", "--model", "7b", "--ctx",
                                                "1..1000000", "--format", "csv", "-o", str(Path(tmp) / "s.csv")]
        times = {(name, side): [] for name in commands for side in roots}
        for name, argv in commands.items():  # warm-up: page cache, kvplan's profile cache
            for side, root in roots.items():
                timed(root, argv)
        for i in range(args.reps):
            for name, argv in commands.items():
                if name.startswith("sweep") and i % 5:  # the long one every fifth round
                    continue
                order = ("old", "new") if i % 2 == 0 else ("new", "old")
                for side in order:
                    times[(name, side)].append(timed(roots[side], argv))
    print(f"{'command':30s} {'old median':>11s} {'new median':>11s}   new/old paired ratio: median (quartiles)")
    for name in commands:
        old, new = times[(name, "old")], times[(name, "new")]
        ratios = sorted(b / a for a, b in zip(old, new))
        q = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else [ratios[0]] * 3
        print(f"{name:30s} {statistics.median(old):10.3f}s {statistics.median(new):10.3f}s   "
              f"{statistics.median(ratios):.3f} ({q[0]:.3f}–{q[2]:.3f}), {len(ratios)} pairs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
