"""kvplan sweep: the KV peak, runtime and policy columns, --kv-type lists, --kv-group-size, --sliding-window
and --target-tok-s; each row equals `kvplan check` of the same point."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from tests.conftest import REF_7B, REF_PHONE

ROOT = Path(__file__).parents[2]
POLICY = ROOT / "examples" / "kv-policy.yaml"
WINDOWED = ROOT / "tests" / "data" / "planning" / "windowed-1b.yaml"


def _csv(text):
    return list(csv.DictReader(io.StringIO(text)))


def _adds_up(row) -> bool:
    return int(row["total_bytes"]) == (int(row["weights_bytes"]) + int(row["kv_peak_bytes"])
                                       + int(row["pinned_prefix_bytes"]) + int(row["overhead_bytes"])
                                       + int(row.get("buffers_bytes") or 0) + int(row.get("process_bytes") or 0))


def test_policy_rows_add_up_with_the_peak_and_name_the_policy(run, run_json):
    # the review's case: under the policy the total counts the peak (tokens awaiting the next eviction)
    result = run("sweep", "-d", "pixel8", "-m", "llama-3.1-8b", "-c", "128k", "--kv-policy", POLICY, "-f", "csv")
    assert result.exit_code == 0, result.stderr
    [row] = _csv(result.stdout)
    assert _adds_up(row) and int(row["kv_peak_bytes"]) > int(row["kv_bytes"])
    assert row["runtime"] == "ideal" and row["kv_policy"] == "window4k-fp16-history20-k4v3"
    _, doc = run_json("check", "-d", "pixel8", "-m", "llama-3.1-8b", "-c", "128k", "--kv-policy", POLICY)
    assert int(row["kv_bytes"]) == doc["memory"]["kv_bytes"]
    assert int(row["kv_peak_bytes"]) == doc["memory"]["kv_peak_bytes"]
    assert int(row["total_bytes"]) == doc["memory"]["total_bytes"]
    table = run("sweep", "-d", "pixel8", "-m", "llama-3.1-8b", "-c", "128k", "--kv-policy", POLICY).stdout
    assert "KV policy window4k-fp16-history20-k4v3" in table and "KV peak" in table


@pytest.mark.parametrize("extra, label", [([], "ideal"), (["--runtime", "llama.cpp"], "llama.cpp"),
                                          (["--runtime", "llama.cpp", "--kv-unified"], "llama.cpp unified"),
                                          (["--runtime", "transformers"], "transformers"),
                                          (["--runtime", "transformers", "--cache", "static"], "transformers static")])
def test_runtime_rows_add_up_and_name_the_runtime(run, extra, label):
    rows = _csv(run("sweep", "-d", REF_PHONE, "-m", WINDOWED, "-c", "1000,5000,40000", "-n", "1,2", *extra,
                    "-f", "csv").stdout)
    assert len(rows) == 6 and all(_adds_up(r) for r in rows)
    assert {r["runtime"] for r in rows} == {label} and {r["kv_policy"] for r in rows} == {"none"}
    table = run("sweep", "-d", REF_PHONE, "-m", WINDOWED, "-c", "1000", *extra).stdout
    assert (f"runtime {label}" in table) == (label != "ideal")


def test_kv_type_list_rows_equal_check(run, run_json):
    result = run("sweep", "-d", REF_PHONE, "-m", REF_7B, "-c", "4k,8k", "--kv-type", "f16,q8_0", "--kv-type", "q4_0",
                 "--target-tok-s", "5", "-f", "csv")
    assert result.exit_code == 0, result.stderr
    rows = _csv(result.stdout)
    assert [r["k_format"] for r in rows] == ["f16", "f16", "q8_0", "q8_0", "q4_0", "q4_0"]
    # ref-7b: 2 · 32 layers · 32 heads · 128 values = 262,144 values a token; q8_0 stores 34 B per 32 values
    # → 262,144 / 32 · 34 = 278,528 B/token; q4_0 18 B per 32 → 147,456 B/token; f16 524,288 B/token
    assert [int(r["kv_bytes_per_token"]) for r in rows[::2]] == [524_288, 278_528, 147_456]
    for row in rows:
        _, doc = run_json("check", "-d", REF_PHONE, "-m", REF_7B, "-c", row["ctx"], "--kv-type", row["k_format"],
                          "--target-tok-s", "5")
        assert int(row["total_bytes"]) == doc["memory"]["total_bytes"]
        assert int(row["kv_peak_bytes"]) == doc["memory"]["kv_peak_bytes"]
        assert row["max_ctx"] == str(doc["max_ctx"])
        assert row["max_ctx_at_target"] == ("" if doc["max_ctx_at_target"] is None else str(doc["max_ctx_at_target"]))


def test_bits_types_group_size_and_window_together(run, run_json):
    result = run("sweep", "-d", REF_PHONE, "-m", REF_7B, "-c", "4k", "--kv-bits", "4", "--kv-type", "q4_0",
                 "--kv-group-size", "32", "--sliding-window", "1k", "-f", "csv")
    assert result.exit_code == 0, result.stderr
    rows = _csv(result.stdout)
    # the group size goes to the bits (int4/g32: 16 B data + 2 B scale per 32 values = q4_0's 18 B), not to q4_0
    assert [r["k_format"] for r in rows] == ["int4/g32", "q4_0"]
    assert rows[0]["kv_bytes_per_token"] == rows[1]["kv_bytes_per_token"] == "147456"
    assert "max_ctx_at_target" not in rows[0]
    for row, options in zip(rows, (["--kv-bits", "4", "--kv-group-size", "32"], ["--kv-type", "q4_0"])):
        _, doc = run_json("check", "-d", REF_PHONE, "-m", REF_7B, "-c", "4k", *options, "--sliding-window", "1k")
        # every layer behind a 1,024-token window: 1,024 × 147,456 B = 150,994,944 B
        assert int(row["kv_bytes"]) == doc["memory"]["kv_bytes"] == 150_994_944
        assert row["max_ctx"] == "" and doc["max_ctx"] is None  # the cache stops growing: unbounded


@pytest.mark.parametrize("args, message", [(["--kv-type", "q9"], "--kv-type: unknown cache type 'q9'"),
                                           (["--k-type", "f16,"], "--k-type: empty value"),
                                           (["--kv-type", "q8_0", "--kv-group-size", "32"], "--kv-group-size"),
                                           (["--sliding-window", "lots"], "--sliding-window")])
def test_bad_format_options_are_usage_errors(run, args, message):
    result = run("sweep", "-d", REF_PHONE, "-m", REF_7B, "-c", "4k", *args)
    assert result.exit_code == 2 and message in result.stderr
