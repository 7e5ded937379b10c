"""kvplan fit (every listed change really fits when applied with check) and kvplan compare."""

from __future__ import annotations

import json

from tests.conftest import REF_7B, REF_PHONE


def test_fit_pixel8_7b_8192_changes_each_fit_with_check(run, run_json):
    code, doc = run_json("fit", "--device", "pixel8", "--model", "7b", "--ctx", "8192")
    assert code == 1 and doc["verdict"] == "over"
    changes = doc["changes_to_fit"]
    assert {c["change"] for c in changes} >= {"kv_bits", "ctx"}
    assert [c["headroom_bytes"] for c in changes] == sorted((c["headroom_bytes"] for c in changes), reverse=True)
    for change in changes:
        argv = change["check_command"]
        assert argv[:2] == ["kvplan", "check"]
        result = run(*argv[1:], "--format", "json")
        assert result.exit_code == 0, (argv, result.stderr)
        assert json.loads(result.stdout)["memory"]["headroom_bytes"] == change["headroom_bytes"]


def test_fit_table_prints_copyable_commands(run):
    result = run("fit", "--device", "pixel8", "--model", "7b", "--ctx", "8192")
    assert "kvplan check --device pixel8 --model 7b --ctx 8192 --kv-bits 4" in result.stdout


def test_fit_reports_largest_context_and_at_target(run_json):
    code, doc = run_json("fit", "-d", REF_PHONE, "-m", REF_7B, "--target-tok-s", "10")
    assert code == 0 and doc["ctx"] is None
    # ⌊(6e9 − 1.75e9) / 524,288⌋ = 8,106 tokens fit
    assert doc["max_ctx"] == 8106
    # 10 tok/s at 50 GB/s allows 5e9 B per step: ⌊(5e9 − 1.75e9) / 524,288⌋ = 6,198
    assert doc["max_ctx_at_target"] == 6198


def test_fit_with_sequences_and_pinned_prefix(run, run_json):
    code, doc = run_json("fit", "-d", REF_PHONE, "-m", REF_7B, "-c", "4k", "-n", "2", "--pinned-prefix", "512")
    # 2 × 2,147,483,648 + 512 × 524,288 (268,435,456) + 1.75e9 = 6,313,402,752 > 6e9
    assert code == 1 and doc["memory"]["total_bytes"] == 6_313_402_752
    for change in doc["changes_to_fit"]:
        assert run(*change["check_command"][1:]).exit_code == 0


def test_compare_matrix(run_json, run):
    code, doc = run_json("compare", "--ctx", "4k", "-d", REF_PHONE, "-m", REF_7B, "-n", "2")
    assert code == 0 and len(doc["rows"]) == 1
    row = doc["rows"][0]
    # two 4k caches: 2 × 2,147,483,648 + 1.75e9 = 6,044,967,296 → over by 44,967,296
    assert row["total_bytes"] == 6_044_967_296 and row["headroom_bytes"] == -44_967_296 and row["verdict"] == "over"
    assert row["max_ctx"] == 4053


def test_compare_defaults_to_every_builtin_device(run_json):
    code, doc = run_json("compare", "--ctx", "4k", "-m", "7b")
    assert code == 0 and "pixel8" in doc["devices"] and len(doc["rows"]) == len(doc["devices"]) >= 2


def test_compare_needs_a_device_or_a_model(run):
    result = run("compare", "--ctx", "4k")
    assert result.exit_code == 2 and "--model" in result.stderr
