#!/usr/bin/env python3
"""Compare two process measurement files (tests/harness/process.py): the committed one and a rerun.

    python3 tests/harness/process_compare.py COMMITTED.json RERUN.json

Prints, for every configuration in both, VmHWM, RssAnon, RssFile, llama.cpp's buffer sum and the out-of-memory
line of each, and their differences in MiB. A rerun reproduces the data when the buffers are equal (they are
llama.cpp's own log lines), VmHWM and RssAnon agree within a few MiB, and the lines within the bisection's 4 MiB
(or where the attempt timeouts decide them, under mmap, within a few steps of it).
"""
from __future__ import annotations

import json
import sys

MiB = 2**20


def main(argv=None):
    a_path, b_path = (argv or sys.argv[1:])[:2]
    a, b = (json.load(open(p))["records"] for p in (a_path, b_path))
    print(f"{'configuration':52s} {'VmHWM':>16s} {'RssAnon':>16s} {'buffers':>16s} {'OOM line':>18s}")
    for key in sorted(set(a) & set(b)):
        ra, rb = a[key], b[key]
        cols = []
        for field in ("VmHWM_bytes", "RssAnon_bytes"):
            x, y = ra["status"][field] / MiB, rb["status"][field] / MiB
            cols.append(f"{x:7.0f} {y - x:+7.1f}")
        cols.append(f"{ra['buffers_sum_mib']:7.0f} {rb['buffers_sum_mib'] - ra['buffers_sum_mib']:+7.2f}")
        la, lb = ((r.get("oom") or {}).get("oom_line_bytes") for r in (ra, rb))
        cols.append(f"{la / MiB:8.0f} {(lb - la) / MiB:+8.0f}" if la and lb else f"{'-':>18s}")
        print(f"{key:52s} {' '.join(f'{c:>16s}' for c in cols)}")


if __name__ == "__main__":
    main()
