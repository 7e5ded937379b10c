"""max_ctx (memory) beside the trained context, the same in check, fit, compare, sweep and gate;
one sequence's cache under llama.cpp.

Fixtures: ref-phone (6e9 B budget) and tests/data/maxctx: ref-7b-4k (524,288 B/token, 1.75 GB weights,
trained to 4,096) and ref-7b-swa (the same behind a 4,096 window on every layer, trained to 32,768).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import DATA, REF_PHONE

GLOBAL = DATA / "maxctx" / "ref-7b-4k.yaml"
WINDOWED = DATA / "maxctx" / "ref-7b-swa.yaml"
# (model, max_ctx, max_ctx_limited_by, max_ctx_trained):
# global: ⌊(6e9 − 1.75e9) / 524,288⌋ = 8,106 tokens; windowed: the cache stops at 2,147,483,648 B → unbounded
CASES = [(GLOBAL, 8106, "memory", 4096), (WINDOWED, None, "unbounded", 32768)]


@pytest.mark.parametrize("model, max_ctx, limited_by, trained", CASES)
def test_check_sweep_gate_fit_compare_agree(run, run_json, tmp_path: Path, model, max_ctx, limited_by, trained):
    _, check = run_json("check", "-d", REF_PHONE, "-m", model, "-c", "8192")
    assert (check["max_ctx"], check["max_ctx_limited_by"], check["max_ctx_trained"]) == (max_ctx, limited_by, trained)

    result = run("sweep", "-d", REF_PHONE, "-m", model, "-c", "1k,8k,40k", "-f", "json")
    rows = json.loads(result.stdout)["rows"]
    assert [r["max_ctx"] for r in rows] == [max_ctx] * 3

    _, fit = run_json("fit", "-d", REF_PHONE, "-m", model, "-c", "8192")
    assert (fit["max_ctx"], fit["max_ctx_limited_by"], fit["max_ctx_trained"]) == (max_ctx, limited_by, trained)

    _, compare = run_json("compare", "-d", REF_PHONE, "-m", model, "-c", "8192")
    (row,) = compare["rows"]
    assert (row["max_ctx"], row["max_ctx_limited_by"], row["max_ctx_trained"]) == (max_ctx, limited_by, trained)

    gate = tmp_path / "gate.yaml"
    gate.write_text(f"configurations:\n  - name: c\n    device: {REF_PHONE}\n    model: {model}\n    ctx: 1k\n"
                    "    min_max_ctx: 8106\n")
    code, doc = run_json("gate", gate)
    (cfg,) = doc["configurations"]
    assert cfg["check"]["max_ctx"] == max_ctx
    # min_max_ctx 8,106: the global model meets it exactly; an unbounded cache always does
    assert code == 0 and cfg["passed"] is True
    gate.write_text(gate.read_text().replace("8106", "8107"))
    code, _ = run_json("gate", gate)
    assert code == (1 if max_ctx == 8106 else 0)


def test_check_json_flags_a_context_past_the_trained_one(run_json):
    _, at_4k = run_json("check", "-d", REF_PHONE, "-m", GLOBAL, "-c", "4096")
    _, at_8k = run_json("check", "-d", REF_PHONE, "-m", GLOBAL, "-c", "8192")
    assert at_4k["ctx_beyond_trained"] is False and at_8k["ctx_beyond_trained"] is True  # 8,192 > 4,096


def test_check_table_shows_trained_context_beside_max_ctx(run):
    out = run("check", "-d", REF_PHONE, "-m", GLOBAL, "-c", "8192").stdout
    assert "8,106 tokens (model trained to 4,096)" in out
    assert "ref-7b-4k was trained to 4,096 tokens; 8,192 needs a context extension (RoPE scaling)" in out
    out = run("check", "-d", REF_PHONE, "-m", GLOBAL, "-c", "4096").stdout
    assert "context extension" not in out
    out = run("check", "-d", REF_PHONE, "-m", WINDOWED, "-c", "8192").stdout
    assert "unbounded: every layer windowed, the cache stops growing at 4,096 tokens (model trained to 32,768)" in out


def test_sliding_window_change_reports_unbounded_not_its_window(run_json):
    code, doc = run_json("check", "-d", REF_PHONE, "-m", GLOBAL, "-c", "8192")
    assert code == 1  # 1.75e9 + 8,192 · 524,288 = 6,044,967,296 B > 6e9
    (window,) = [c for c in doc["changes_to_fit"] if c["change"] == "sliding_window"]
    # 1.75e9 + 4,096 · 524,288 = 3,897,483,648 B: fit, and the cache never grows past it
    assert (window["value"], window["verdict"], window["total_bytes"]) == (4096, "fit", 3_897_483_648)
    assert window["max_ctx"] is None and window["max_ctx_limited_by"] == "unbounded"


def test_llamacpp_per_sequence_bytes_on_the_issue_command(run, run_json):
    argv = ("check", "-d", "pixel8", "-m", "llama-3.1-8b", "-c", "8192", "-n", "3", "--runtime", "llama.cpp")
    _, doc = run_json(*argv)
    # llama-3.1-8b: 32 layers · 8 KV heads · 128 · 2 (K, V) · 2 B = 131,072 B per cell;
    # -c 8,192 over 3 streams: pad(2,730, 256) = 2,816 cells each → 2,816 · 131,072 = 369,098,752 B per sequence
    assert doc["memory"]["kv_bytes"] == 3 * 369_098_752 == 1_107_296_256
    assert doc["memory"]["kv_bytes_per_sequence"] == 369_098_752
    out = run(*argv).stdout
    assert "KV cache (f16, 1 of 3 sequences, 2,816 cells of -c 8,192)" in out
    assert "KV cache of 2 more concurrent sequences" in out


@pytest.mark.parametrize("max_cache_len, max_ctx, text", [
    # 8,106 · 524,288 = 4,249,878,528 B ≤ 6e9 − 1.75e9: the static cache fits, and holds no more than that
    ("8106", 8106, "8,106 tokens (= max_cache_len; model trained to 4,096)"),
    # 16,384 · 524,288 = 8,589,934,592 B > 4.25e9: the preallocation does not fit (the weights do)
    ("16384", None, "none: the 16,384-token cache preallocated for max_cache_len does not fit"),
])
def test_static_cache_limit_is_named_alike_in_check_sweep_compare_and_gate(run, run_json, tmp_path, max_cache_len,
                                                                           max_ctx, text):
    static = ["--runtime", "transformers", "--cache", "static", "--max-cache-len", max_cache_len]
    assert text in run("check", "-d", REF_PHONE, "-m", GLOBAL, "-c", "1k", *static).stdout
    _, check = run_json("check", "-d", REF_PHONE, "-m", GLOBAL, "-c", "1k", *static)
    assert (check["max_ctx"], check["max_ctx_limited_by"]) == (max_ctx, "max_cache_len")
    rows = json.loads(run("sweep", "-d", REF_PHONE, "-m", GLOBAL, "-c", "1k,2k", *static, "-f", "json").stdout)["rows"]
    assert [(r["max_ctx"], r["max_ctx_limited_by"]) for r in rows] == [(max_ctx, "max_cache_len")] * 2
    _, compare = run_json("compare", "-d", REF_PHONE, "-m", GLOBAL, "-c", "1k", *static)
    assert (compare["rows"][0]["max_ctx"], compare["rows"][0]["max_ctx_limited_by"]) == (max_ctx, "max_cache_len")
    gate = tmp_path / "gate.yaml"  # min_max_ctx: a preallocation that does not fit is not "unbounded"
    gate.write_text(f"configurations:\n  - name: c\n    device: {REF_PHONE}\n    model: {GLOBAL}\n    ctx: 1k\n"
                    f"    must_fit: false\n    min_max_ctx: 1\n    runtime: {{name: transformers, cache: static, "
                    f"max_cache_len: {max_cache_len}}}\n")
    code, _ = run_json("gate", gate)
    assert code == (0 if max_ctx else 1)


def test_a_pinned_prefix_longer_than_a_static_cache_is_its_own_error(run, tmp_path):
    static = ["--runtime", "transformers", "--cache", "static", "--max-cache-len", "16k"]
    result = run("check", "-d", REF_PHONE, "-m", GLOBAL, "-c", "8k", "--pinned-prefix", "20k", *static)
    assert result.exit_code == 2
    assert "--pinned-prefix 20,480 exceeds --max-cache-len 16,384: the cache cannot hold it" in result.stderr
    gate = tmp_path / "gate.yaml"  # reported at the pinned_prefix line (6), not at ctx
    gate.write_text(f"configurations:\n  - name: c\n    device: {REF_PHONE}\n    model: {GLOBAL}\n    ctx: 8k\n"
                    "    pinned_prefix: 20k\n    runtime: {name: transformers, cache: static, max_cache_len: 16k}\n")
    result = run("gate", gate)
    assert result.exit_code == 2
    assert (f"{gate}:6: configurations.0.pinned_prefix: pinned_prefix 20,480 exceeds runtime.max_cache_len 16,384"
            in result.stderr)
