"""The process harness reproduces its committed measurements: a rerun on a fresh machine (2026-12-02, a new build
of the same sdist by tests/harness/process_rerun.sh) of six configurations, two with their out-of-memory line.

llama.cpp's own buffer lines must be equal, the anonymous memory within 1 MiB, the peak within 1 % or 32 MiB (a
mapped file's pages vary with the page cache: DeepSeek-V2-Lite's 8.9 GB file came out 20 MiB lower), and the lines
within the bisection's 4 MiB step.
"""

from __future__ import annotations

import json
import os

import pytest

HERE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "tests", "data",
                    "llamacpp", "process")
MiB = 2**20
with open(os.path.join(HERE, "measurements.json")) as fh:
    COMMITTED = json.load(fh)["records"]
with open(os.path.join(HERE, "rerun-2026-12-02.json")) as fh:
    RERUN_DOC = json.load(fh)
RERUN = RERUN_DOC["records"]


def test_the_rerun_is_of_the_same_build_and_covers_six_configurations():
    assert "build 11434" in RERUN_DOC["llama_server_version"]
    assert len(RERUN) == 6 and set(RERUN) <= set(COMMITTED)
    assert sum(1 for r in RERUN.values() if r.get("oom")) == 2


@pytest.mark.parametrize("key", sorted(RERUN))
def test_the_rerun_reproduces_the_committed_figures(key):
    a, b = COMMITTED[key], RERUN[key]
    assert [(x["name"], x["mib"]) for x in a["buffers"]] == [(x["name"], x["mib"]) for x in b["buffers"]]
    assert abs(a["status"]["RssAnon_bytes"] - b["status"]["RssAnon_bytes"]) <= MiB
    hwm = a["status"]["VmHWM_bytes"]
    assert abs(hwm - b["status"]["VmHWM_bytes"]) <= max(0.01 * hwm, 32 * MiB)
    if b.get("oom"):
        assert abs(a["oom"]["oom_line_bytes"] - b["oom"]["oom_line_bytes"]) <= 4 * MiB
