"""kvplan check through the CLI: exit codes, JSON keys and the issue's acceptance figures."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import REF_7B, REF_PHONE

CONTRACT_KEYS = {"verdict", "ctx", "kv_bytes_per_token", "max_ctx", "decode_tokens_per_s", "memory"}
MEMORY_KEYS = {"budget_bytes", "weights_bytes", "kv_bytes", "overhead_bytes", "total_bytes", "headroom_bytes"}


def test_pixel8_7b_at_8k_is_over(run_json):
    code, doc = run_json("check", "--device", "pixel8", "--model", "7b", "--ctx", "8192")
    assert code == 1
    assert CONTRACT_KEYS <= doc.keys() and MEMORY_KEYS <= doc["memory"].keys()
    # 2 · 32 layers · 32 KV heads · 128 · 2 B = 524,288 B/token; · 8,192 = 4,294,967,296
    assert doc["kv_bytes_per_token"] == 524_288
    assert doc["memory"]["kv_bytes"] == 4_294_967_296
    # 8 GB − 2 GB reserve = 6,000,000,000
    assert doc["memory"]["budget_bytes"] == 6_000_000_000
    assert doc["verdict"] == "over"
    m = doc["memory"]
    assert m["total_bytes"] == m["weights_bytes"] + m["kv_bytes"] + m["pinned_prefix_bytes"] + m["overhead_bytes"]
    assert m["headroom_bytes"] == m["budget_bytes"] - m["total_bytes"]
    # every figure a whole number of bytes; a phone has no Metal working set (null), an Android phone no fixed
    # per-app memory limit (null)
    assert m.pop("gpu_working_set_bytes") is None
    assert m.pop("app_limit_bytes") is None
    assert all(isinstance(v, int) for v in m.values())


def test_pixel8_7b_at_4k_cache(run_json):
    code, doc = run_json("check", "--device", "pixel8", "--model", "7b", "--ctx", "4k")
    assert doc["ctx"] == 4096
    assert doc["memory"]["kv_bytes"] == 2_147_483_648  # 524,288 · 4,096
    # total 3,370,000,000 + 2,147,483,648 = 5,517,483,648; headroom 482,516,352 < 600,000,000 (10 %) → tight, exit 0
    assert (code, doc["verdict"], doc["memory"]["headroom_bytes"]) == (0, "tight", 482_516_352)


def test_max_ctx_fits_and_one_more_does_not(run_json):
    _, doc = run_json("check", "--device", "pixel8", "--model", "7b", "--ctx", "8192")
    max_ctx = doc["max_ctx"]
    code, at_max = run_json("check", "--device", "pixel8", "--model", "7b", "--ctx", str(max_ctx))
    assert code == 0 and at_max["verdict"] in ("fit", "tight")
    code, past = run_json("check", "--device", "pixel8", "--model", "7b", "--ctx", str(max_ctx + 1))
    assert code == 1 and past["verdict"] == "over"


def test_changes_to_fit_really_fit(run_json):
    _, doc = run_json("check", "--device", "pixel8", "--model", "7b", "--ctx", "8192")
    assert doc["changes_to_fit"], "an over-budget check suggests changes"
    for change in doc["changes_to_fit"]:
        assert change["verdict"] in ("fit", "tight")
        assert change["headroom_bytes"] >= 0


def test_kv_bits_and_separate_k_v(run_json):
    args = ["check", "-d", str(REF_PHONE), "-m", str(REF_7B), "--ctx", "4096"]
    _, doc = run_json(*args, "--kv-bits", "8")
    assert doc["kv_bytes_per_token"] == 262_144  # 2 · 32 · 32 · 128 · 1 B
    _, doc = run_json(*args, "--k-bits", "8", "--v-bits", "4")
    assert doc["kv_bytes_per_token"] == 196_608  # 32 · 32 · 128 · (1 + 0.5) B
    _, doc = run_json(*args, "--kv-type", "q8_0")
    assert doc["kv_bytes_per_token"] == 278_528  # 2 · 32 layers · (4,096 values / 32 · 34 B) = 64 · 4,352
    _, doc = run_json(*args, "--kv-bits", "4", "--kv-group-size", "32")
    assert doc["kv_bytes_per_token"] == 2 * 32 * (2048 + 128 * 2)  # 4,096 values: 2,048 B data + 128 groups · 2 B


def test_sequences_and_pinned_prefix(run_json):
    args = ["check", "-d", str(REF_PHONE), "-m", str(REF_7B), "--ctx", "2048"]
    _, doc = run_json(*args, "--sequences", "2", "--pinned-prefix", "512")
    # 2 sequences · 2,048 · 524,288 = 2,147,483,648; prefix 512 · 524,288 = 268,435,456
    assert doc["memory"]["kv_bytes"] == 2_147_483_648
    assert doc["memory"]["pinned_prefix_bytes"] == 268_435_456
    assert doc["memory"]["total_bytes"] == 1_750_000_000 + 2_147_483_648 + 268_435_456


def test_tight_exits_zero(run_json):
    # headroom at 8,000 tokens: 6e9 − 1.75e9 − 8,000 · 524,288 = 55,696,000 < 600,000,000 (10 %) → tight
    code, doc = run_json("check", "-d", str(REF_PHONE), "-m", str(REF_7B), "--ctx", "8000")
    assert (code, doc["verdict"]) == (0, "tight")
    code, doc = run_json("check", "-d", str(REF_PHONE), "-m", str(REF_7B), "--ctx", "8000", "--margin", "0")
    assert (code, doc["verdict"]) == (0, "fit")


def test_plain_table_text(run):
    result = run("check", "-d", str(REF_PHONE), "-m", str(REF_7B), "--ctx", "4096")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0] == "ref-phone × ref-7b at 4,096 tokens — FIT"
    assert "weights (as stated in the profile, 7.00B params)  1,750,000,000 B  1.75 GB     29.2 %" in lines
    assert "KV cache (f16, 4,096 tokens)                      2,147,483,648 B  2.15 GB     35.8 %" in lines
    assert any(line.startswith("headroom → FIT") and "2,102,516,352 B" in line for line in lines)


def test_markdown(run):
    result = run("check", "-d", str(REF_PHONE), "-m", str(REF_7B), "--ctx", "4096", "--format", "markdown")
    assert result.exit_code == 0
    assert "| KV cache (f16, 4,096 tokens) | 2,147,483,648 B | 2.15 GB | 35.8 % |" in result.stdout


def test_iec_units(run):
    result = run("check", "-d", str(REF_PHONE), "-m", str(REF_7B), "--ctx", "4096", "--units", "iec")
    assert "2.00 GiB" in result.stdout  # 2,147,483,648 = 2 · 2^30


@pytest.mark.parametrize("args, fragment", [
    (["--ctx", "lots"], "--ctx: expected a token count"),
    (["--ctx", "0"], "--ctx: a token count must be positive"),
    (["--kv-bits", "40"], "from 1 to 32"),
    (["--kv-type", "q3_k"], "unknown cache type"),
    (["--os-reserve", "9 GB"], "--os-reserve: must be less than"),
    (["--margin", "150%"], "--margin"),
])
def test_bad_options_exit_2(run, args, fragment):
    base = {"--ctx": "4096"}
    argv = ["check", "-d", str(REF_PHONE), "-m", str(REF_7B)]
    if "--ctx" not in args:
        argv += ["--ctx", base["--ctx"]]
    result = run(*argv, *args)
    assert result.exit_code == 2
    assert fragment in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def test_unknown_profile_suggests(run):
    result = run("check", "-d", "pixle8", "-m", "7b", "--ctx", "4k")
    assert result.exit_code == 2
    assert "unknown device 'pixle8'" in result.stderr and "pixel8" in result.stderr


def test_console_script_runs_and_imports_no_numpy_or_matplotlib():
    code = ("import sys, kvplan.cli.app; "
            "print('matplotlib' in sys.modules, 'numpy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_check_json_path_does_not_import_rich_numpy_or_matplotlib():
    code = ("import sys\n"
            "from kvplan.cli.app import app\n"
            "try:\n"
            "    app(['check', '-d', 'pixel8', '-m', '7b', '--ctx', '8k', '--format', 'json'])\n"
            "except SystemExit as exit:\n"
            "    print('exit', exit.code, file=sys.stderr)\n"
            "print(sorted(m for m in ('numpy', 'matplotlib', 'rich') if m in sys.modules), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    # the command really ran to its verdict (over → exit 1) and printed the cache, importing none of them
    assert '"kv_bytes": 4294967296' in done.stdout
    assert done.stderr.strip().splitlines()[-2:] == ["exit 1", "[]"]


def test_warm_check_reads_no_yaml_and_builds_no_pydantic_profiles(tmp_path):
    # The second run finds the profiles validated in the cache: neither the YAML parser nor the
    # pydantic profile models are imported (kvplan.profiles.cache).
    code = ("import sys\n"
            "from kvplan.cli.app import build_app\n"
            "try:\n"
            "    build_app('check')(['check', '-d', 'pixel8', '-m', '7b', '--ctx', '8k', '--format', 'json'])\n"
            "except SystemExit as exit:\n"
            "    print('exit', exit.code, file=sys.stderr)\n"
            "print(sorted(m for m in ('yaml', 'kvplan.profiles.spec', 'kvplan.profiles.policy', 'numpy', 'matplotlib', 'rich')"
            " if m in sys.modules), file=sys.stderr)")
    env = {**__import__("os").environ, "KVPLAN_CACHE_DIR": str(tmp_path)}
    cold = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    warm = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    for done in (cold, warm):  # both runs reached the verdict with the same cache bytes
        assert '"kv_bytes": 4294967296' in done.stdout and "exit 1" in done.stderr
    assert "'yaml'" in cold.stderr.strip().splitlines()[-1]
    assert warm.stderr.strip().splitlines()[-1] == "[]"
