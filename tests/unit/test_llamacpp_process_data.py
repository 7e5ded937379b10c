"""Integrity of tests/data/llamacpp/process/measurements.json (tests/harness/process.py).

Only the data's own consistency is checked here (fields present, figures that the kernel ties
together, the bisection's bracket), not kvplan's predictions. problems() collects every fault;
the corrupted copies below show that it finds each kind.
"""

from __future__ import annotations

import copy
import json
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "tests", "data", "llamacpp", "process", "measurements.json")
STATUS = ("VmHWM_bytes", "VmRSS_bytes", "RssAnon_bytes", "RssFile_bytes", "RssShmem_bytes")
CONFIG = ("id", "model", "weights", "ctx", "np", "cache", "mmap", "repack", "bisect")
# llama.cpp prints "<where>: <name> buffer size = N MiB"; re-parsed here independently of the harness
BUFFER = re.compile(r"(\S+):\s+(.+?) buffer size =\s+([0-9.]+) MiB")


def load():
    with open(DATA) as fh:
        return json.load(fh)


def _flag(cmd, name):
    return cmd[cmd.index(name) + 1] if name in cmd else None


def record_problems(key, r):
    out = []
    c = r.get("config", {})
    for f in CONFIG:
        if f not in c:
            out.append(f"{key}: config.{f} missing")
    if out:
        return out
    if c["id"] != key:
        out.append(f"{key}: config.id is {c['id']}")
    if r.get("outcome") != "ok":
        return out + [f"{key}: outcome {r.get('outcome')!r}"]
    cmd = r["command"]
    if _flag(cmd, "-c") != str(c["ctx"]) or _flag(cmd, "-np") != str(c["np"]) or _flag(cmd, "-t") != "2":
        out.append(f"{key}: command -c/-np/-t do not match the config")
    if (_flag(cmd, "-lm") == "none" or "--no-mmap" in cmd) == c["mmap"]:
        out.append(f"{key}: command's mmap flag does not match mmap={c['mmap']}")
    if c["cache"] != "f16" and (_flag(cmd, "-ctk") != c["cache"] or _flag(cmd, "-ctv") != c["cache"]):
        out.append(f"{key}: command's cache types do not match {c['cache']}")
    if c["repack"] is not None and ("--repack" if c["repack"] else "--no-repack") not in cmd:
        out.append(f"{key}: command's repack flag does not match repack={c['repack']}")
    st = r.get("status") or {}
    missing = [f for f in STATUS if not isinstance(st.get(f), int)]
    if missing:
        return out + [f"{key}: status lacks {missing}"]
    # the kernel's VmRSS is the sum of the three counters (all in kB); VmHWM is its high-water mark
    if st["VmRSS_bytes"] != st["RssAnon_bytes"] + st["RssFile_bytes"] + st["RssShmem_bytes"]:
        out.append(f"{key}: VmRSS != RssAnon + RssFile + RssShmem")
    if not st["VmHWM_bytes"] >= st["VmRSS_bytes"] >= st["RssAnon_bytes"] > 0:
        out.append(f"{key}: not VmHWM >= VmRSS >= RssAnon > 0")
    cg = r.get("cgroup") or {}
    if not isinstance(cg.get("peak_bytes"), int) or cg["peak_bytes"] <= 0:
        out.append(f"{key}: cgroup peak missing")
    elif cg["peak_bytes"] < cg.get("usage_bytes", 0):
        out.append(f"{key}: cgroup peak below its usage")
    if cg.get("oom_kill"):
        out.append(f"{key}: the measurement run saw an OOM kill")
    parsed = [(m[1], m[2], float(m[3])) for m in (BUFFER.search(ln) for ln in r.get("log", [])) if m]
    if not parsed:
        out.append(f"{key}: no buffer lines in the log")
    if [(b["where"], b["name"], b["mib"]) for b in r.get("buffers", [])] != parsed:
        out.append(f"{key}: buffers differ from the log's buffer lines")
    if abs(sum(p[2] for p in parsed) - r.get("buffers_sum_mib", -1)) > 0.005:
        out.append(f"{key}: buffers_sum_mib is not the sum of the buffer lines")
    if "oom" in r:
        out += oom_problems(key, r["oom"])
    return out


def oom_problems(key, oom):
    out = []
    line = oom.get("oom_line_bytes")
    att = oom.get("attempts") or []
    ok = [a["limit_bytes"] for a in att if a["outcome"] == "ok"]
    bad = [a["limit_bytes"] for a in att if a["outcome"] != "ok"]
    if line is None or not ok or not bad:
        return [f"{key}: OOM bisection without a line or without both outcomes"]
    if line != min(ok):
        out.append(f"{key}: OOM line {line} is not the smallest limit that answered ({min(ok)})")
    if line > max(a["limit_bytes"] for a in att):
        out.append(f"{key}: OOM line above every limit tried")
    if max(bad) >= line:
        out.append(f"{key}: a limit at or above the OOM line failed ({max(bad)})")
    if line - max(bad) > oom.get("resolution_bytes", 0) or oom.get("largest_failing_bytes") != max(bad):
        out.append(f"{key}: bisection bracket wider than its resolution")
    return out


def problems(doc):
    out = []
    for f in ("llama_server_version", "build", "machine", "request", "records"):
        if not doc.get(f):
            out.append(f"{f} missing")
    recs = doc.get("records") or {}
    for key, r in recs.items():
        out += record_problems(key, r)
    ok = [r for r in recs.values() if r.get("outcome") == "ok"]
    if len(ok) < 15:
        out.append(f"only {len(ok)} configurations measured (15 needed)")
    lines = [r for r in ok if (r.get("oom") or {}).get("oom_line_bytes")]
    if len(lines) < 5 or {r["config"]["mmap"] for r in lines} != {True, False}:
        out.append("fewer than 5 OOM lines, or not both mmap on and off")
    return out


def test_committed_measurements_are_consistent():
    assert problems(load()) == []


def test_committed_measurements_cover_the_issue_grid():
    cs = [r["config"] for r in load()["records"].values() if r["outcome"] == "ok"]
    assert {"llama-3.2-1b", "gemma-3-1b", "llama-3.1-8b"} <= {c["model"] for c in cs}
    assert {"qwen2.5-0.5b", "qwen3-0.6b"} & {c["model"] for c in cs}
    assert {c["mmap"] for c in cs} == {True, False}
    assert {c["repack"] for c in cs} >= {True, False}
    assert {c["cache"] for c in cs} == {"f16", "q8_0"}
    assert min(c["ctx"] for c in cs) == 512 and max(c["ctx"] for c in cs) == 32768


def _first_ok(doc):
    return next(k for k, r in doc["records"].items() if r["outcome"] == "ok" and "oom" in r)


def _corrupt_hwm(r):
    r["status"]["VmHWM_bytes"] = r["status"]["VmRSS_bytes"] - 4096


def _corrupt_rss_sum(r):
    r["status"]["RssAnon_bytes"] += 4096


def _corrupt_buffer(r):
    r["buffers"][0]["mib"] += 1.0


def _corrupt_oom_line(r):
    r["oom"]["oom_line_bytes"] = max(a["limit_bytes"] for a in r["oom"]["attempts"]) + 4 * 2**20


def _corrupt_bracket(r):
    r["oom"]["attempts"] = [a for a in r["oom"]["attempts"] if a["outcome"] != "ok"
                            or a["limit_bytes"] != r["oom"]["oom_line_bytes"]]


def _corrupt_command(r):
    r["command"][r["command"].index("-c") + 1] = "999"


@pytest.mark.parametrize("corrupt", [_corrupt_hwm, _corrupt_rss_sum, _corrupt_buffer, _corrupt_oom_line,
                                     _corrupt_bracket, _corrupt_command])
def test_each_kind_of_fault_is_found(corrupt):
    doc = copy.deepcopy(load())
    key = _first_ok(doc)
    corrupt(doc["records"][key])
    found = problems(doc)
    assert found and all(p.startswith(key) for p in found), found
