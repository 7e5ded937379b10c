"""kvplan sweep: one row per point with exact bytes, table truncation, files, errors."""

from __future__ import annotations

import csv
import io
import json
import re

from tests.conftest import REF_7B, REF_PHONE


def _csv(text):
    return list(csv.DictReader(io.StringIO(text)))


def test_pixel8_7b_grid_has_one_row_per_point_with_exact_bytes(run):
    result = run("sweep", "--device", "pixel8", "--model", "7b", "--ctx", "1k..32k:1k", "--kv-bits", "16,8,4",
                 "--format", "csv")
    assert result.exit_code == 0, result.stderr
    rows = _csv(result.stdout)
    # 32 contexts × 3 cache widths
    assert len(rows) == 96
    bits_of = {"f16": 16, "int8": 8, "int4": 4}  # the cache formats by name, as check --format json writes them
    for row in rows:
        ctx, bits = int(row["ctx"]), bits_of[row["k_format"]]
        # 2 · 32 layers · 32 KV heads · 128 · bits/8 bytes per token (524,288 at 16 bits)
        assert int(row["kv_bytes_per_token"]) == 2 * 32 * 32 * 128 * bits // 8
        assert int(row["kv_bytes"]) == ctx * 2 * 32 * 32 * 128 * bits // 8
        assert int(row["total_bytes"]) == int(row["weights_bytes"]) + int(row["kv_bytes"])
        assert int(row["headroom_bytes"]) == int(row["budget_bytes"]) - int(row["total_bytes"])
    assert {r["k_format"] for r in rows} == {"f16", "int8", "int4"} and "k_bits" not in rows[0]


def test_csv_matches_check_json(run, run_json):
    rows = _csv(run("sweep", "-d", REF_PHONE, "-m", REF_7B, "-c", "4k,8k", "-n", "1,2", "--pinned-prefix", "512",
                    "-f", "csv").stdout)
    assert len(rows) == 4
    for row in rows:
        _, doc = run_json("check", "-d", REF_PHONE, "-m", REF_7B, "-c", row["ctx"], "-n", row["sequences"],
                          "--pinned-prefix", "512")
        assert int(row["total_bytes"]) == doc["memory"]["total_bytes"]
        assert int(row["headroom_bytes"]) == doc["memory"]["headroom_bytes"]
        assert int(row["pinned_prefix_bytes"]) == doc["memory"]["pinned_prefix_bytes"]
        assert row["verdict"] == doc["verdict"]
        assert row["max_ctx"] == ("" if doc["max_ctx"] is None else str(doc["max_ctx"]))
        assert abs(float(row["decode_tokens_per_s"]) - doc["decode_tokens_per_s"]) < 1e-6


def test_json_rows_are_exact(run):
    result = run("sweep", "-d", REF_PHONE, "-m", REF_7B, "-c", "4096", "--weight-bits", "4,8", "-f", "json")
    doc = json.loads(result.stdout)
    assert doc["rows_count"] == 2 and [r["weight_bits"] for r in doc["rows"]] == [4.0, 8.0]
    # 7e9 params at 8 bits = 7,000,000,000 B (the stated 1.75 GB applies only at the profile's own bits)
    assert doc["rows"][1]["weights_bytes"] == 7_000_000_000
    assert doc["rows"][0]["kv_bytes"] == 2_147_483_648


def test_table_shows_first_and_last_rows_unless_all(run):
    result = run("sweep", "-d", REF_PHONE, "-m", REF_7B, "-c", "1..100")
    assert "80 rows omitted" in result.stdout
    # One device and model: named once in the title, not on every row (each row starts with its ctx).
    assert result.stdout.splitlines()[0].startswith("sweep: 100 configurations — ref-phone × ref-7b")

    def data_rows(text: str) -> int:
        return sum(1 for line in text.splitlines() if re.match(r"\s*[\d,]+\s+\d", line))

    assert data_rows(result.stdout) == 20
    full = run("sweep", "-d", REF_PHONE, "-m", REF_7B, "-c", "1..100", "--all")
    assert data_rows(full.stdout) == 100


def test_output_file_format_from_extension(run, tmp_path):
    out = tmp_path / "grid.csv"
    result = run("sweep", "-d", REF_PHONE, "-m", REF_7B, "-c", "1k,2k", "-o", out)
    assert result.exit_code == 0 and result.stdout == ""
    assert len(_csv(out.read_text())) == 2


def test_bad_input_names_the_option(run):
    result = run("sweep", "-d", REF_PHONE, "-m", REF_7B, "-c", "8k..1k")
    assert result.exit_code == 2 and "kvplan: error: --ctx:" in result.stderr
    result = run("sweep", "-d", REF_PHONE, "-m", REF_7B, "-c", "1k", "--kv-bits", "16,x")
    assert result.exit_code == 2 and "--kv-bits:" in result.stderr
    result = run("sweep", "-m", REF_7B, "-c", "1k")
    assert result.exit_code == 2 and "--device" in result.stderr


def test_large_json_is_streamed_to_a_file_and_equals_stdout(run, tmp_path):
    # above 10,000 rows JSON is compact and written chunk by chunk; the file and stdout are the same document
    out = tmp_path / "grid.json"
    result = run("sweep", "-d", REF_PHONE, "-m", REF_7B, "-c", "1..12000", "-o", out)
    assert result.exit_code == 0 and "wrote 12,000 rows" in result.stderr
    doc = json.loads(out.read_text())
    assert doc["rows_count"] == 12000 and len(doc["rows"]) == 12000
    # ref-7b: 32 layers × 32 heads × 128 × 2 (K, V) × 2 bytes = 524,288 B per token; at 12,000 tokens 6,291,456,000 B
    assert doc["rows"][-1]["kv_bytes"] == 6_291_456_000
    assert run("sweep", "-d", REF_PHONE, "-m", REF_7B, "-c", "1..12000", "-f", "json").stdout == out.read_text()
