"""``kvplan calibrate`` defects found by exploratory testing: malformed numbers, per-row cache types, rows that
give one point, options with no tg rows, and errors that name the option or row at fault."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).parents[2]
EXAMPLE = ROOT / "examples" / "llama-bench-m2.json"
BENCH = ROOT / "tests" / "data" / "calibration" / "bench"
MEMORY = ("--ram", "8GiB", "--os-reserve", "2.67GiB", "--flash-read", "1.48GB/s")


def test_malformed_size_is_exit_2_at_its_cell(run, tmp_path):
    bad = tmp_path / "bad.md"
    bad.write_text("| model | size | params | backend | test | t/s |\n| --- | --: | --: | --- | --: | --: |\n"
                   "| llama 7B Q4_0 | 3.5.6 GiB | 6.74 B | Metal | tg128 | 21.91 ± 0.00 |\n")
    result = run("calibrate", bad, *MEMORY, "-o", tmp_path / "out.yaml")
    assert result.exit_code == 2
    assert result.stderr == f"kvplan: error: {bad}:3: size: expected a size like '3.56 GiB', got '3.5.6 GiB'\n"
    assert not (tmp_path / "out.yaml").exists()


# Two tg rows at depth 8,192 that differ only in their cache types (llama-bench -ctk f16,q8_0 -ctv f16,q8_0).
CTK_ROWS = ["| llama 7B Q4_0 | 3.56 GiB | 6.74 B | Metal | 99 | f16 | f16 | tg128 @ d8192 | 10.80 ± 0.00 |",
            "| llama 7B Q4_0 | 3.56 GiB | 6.74 B | Metal | 99 | q8_0 | q8_0 | tg128 @ d8192 | 14.20 ± 0.00 |"]
CTK_HEADER = ("| model | size | params | backend | ngl | type_k | type_v | test | t/s |\n"
              "| --- | --: | --: | --- | --: | --- | --- | --: | --: |\n")


@pytest.mark.parametrize("order", [(0, 1), (1, 0)], ids=["f16-first", "q8_0-first"])
def test_each_row_prices_its_own_cache_types(run, tmp_path, order):
    bench = tmp_path / "ctk.md"
    bench.write_text(CTK_HEADER + "\n".join(CTK_ROWS[i] for i in order) + "\n")
    result = run("calibrate", bench, *MEMORY, "-m", "7b", "-o", tmp_path / "a.yaml", "-f", "json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    work = {f"{r['test']} line {r['line']}": r["work_bytes_per_token"] for r in doc["rows"]}
    f16_line, q8_line = (3 + order.index(0), 3 + order.index(1))
    # 3.56 GiB = 3,822,520,893 B less the Q4_0 token_embd 32,000 × 4,096 / 32 × 18 = 73,728,000 B, plus the cache
    # at the mean depth 8,192 + 128 / 2 = 8,256 tokens:
    # f16:  2 × 32 layers × 4,096 × 2 B      = 524,288 B/token → 3,748,792,893 + 4,328,521,728 = 8,077,314,621
    # q8_0: 2 × 32 layers × 4,096 × 34/32 B  = 278,528 B/token → 3,748,792,893 + 2,299,527,168 = 6,048,320,061
    assert work == {f"tg128 @ d8192 line {f16_line}": 8_077_314_621, f"tg128 @ d8192 line {q8_line}": 6_048_320_061}
    # two points fitted exactly: slope (1/10.80 − 1/14.20) s / 2,028,994,560 B → 91.5 GB/s effective;
    # latency 1/14.20 − 6,048,320,061 / 91.52e9 = 70.42 − 66.09 = 4.33 ms, whatever the order of the rows
    assert doc["device"]["decode_latency_s"] == pytest.approx(0.00433)
    assert doc["device"]["memory_bandwidth_bytes_per_s"] == pytest.approx(91.5e9)
    note, = doc["notes"]  # the cache of each type, in the order the rows give them
    assert "524,288 bytes/token at f16/f16" in note and "278,528 bytes/token at q8_0/q8_0" in note


def two_tg_rows_at_one_point(tmp_path) -> Path:
    """Two tg rows of one model file (llama-bench -t 4,8): the same bytes per token, two rates."""
    line = (BENCH / "m2_q4_0.jsonl").read_text().splitlines()[1]
    assert '"n_gen": 128' in line and '"n_prompt": 0' in line
    second = line.replace('"n_threads": 4', '"n_threads": 8').replace('"avg_ts": 21.910000', '"avg_ts": 21.600000')
    path = tmp_path / "tg2.jsonl"
    path.write_text(line + "\n" + second + "\n")
    return path


def test_rows_at_one_point_take_the_base_latency_and_say_so(run, tmp_path):
    bench = two_tg_rows_at_one_point(tmp_path)
    out = tmp_path / "two.yaml"
    result = run("calibrate", bench, "--base", "macbook-air-m2-8gb", "-o", out)
    assert result.exit_code == 0, result.stderr
    assert ("the 2 tg rows all read 3,784,892,416 bytes per token (one point), which gives one equation for two "
            "unknowns (bandwidth and latency): one unknown too many; latency fixed at 4.39 ms from "
            "macbook-air-m2-8gb's decode_latency") in result.stderr
    text = out.read_text()
    assert "decode_latency: 4.39 ms" in text
    source = yaml.safe_load(text)["sources"]["decode_latency"]
    assert "latency 4.39 ms (from macbook-air-m2-8gb's decode_latency)" in source and "(given)" not in source
    # least squares through (3,784,892,416 B, 1/21.91 − 4.39 ms) and (…, 1/21.60 − 4.39 ms): the mean of
    # 41.251 and 41.906 ms = 41.578 ms → 3,784,892,416 / 41.578 ms = 91.03 GB/s = 0.910 of 100 GB/s
    assert "bandwidth_efficiency: 0.91\n" in text


def test_one_point_without_a_base_latency_is_pure_bandwidth_and_says_so(run, tmp_path):
    bench = two_tg_rows_at_one_point(tmp_path)
    out = tmp_path / "zero.yaml"
    result = run("calibrate", bench, *MEMORY, "--bandwidth", "100GB/s", "-o", out)
    assert result.exit_code == 0, result.stderr
    assert "one unknown too many; latency fixed at 0.00 ms from 0 (pure bandwidth)" in result.stderr
    source = yaml.safe_load(out.read_text())["sources"]["decode_latency"]
    assert "latency 0.00 ms (0, pure bandwidth: no latency given and no base device's)" in source


def test_the_same_file_twice_is_one_point(run, tmp_path):
    single = tmp_path / "one.jsonl"
    single.write_text((BENCH / "m2_q4_0.jsonl").read_text().splitlines()[1] + "\n")
    result = run("calibrate", single, single, "--base", "macbook-air-m2-8gb", "-o", tmp_path / "d.yaml")
    assert result.exit_code == 0, result.stderr
    assert "latency fixed at 4.39 ms from macbook-air-m2-8gb's decode_latency" in result.stderr
    assert "decode_latency: 4.39 ms" in (tmp_path / "d.yaml").read_text()


def test_no_tg_rows_bandwidth_and_latency_go_into_the_profile(run, tmp_path):
    pp = tmp_path / "pp.csv"
    pp.write_text("\n".join((BENCH / "m2_q4_0.csv").read_text().splitlines()[:2]) + "\n")
    out = tmp_path / "pp.yaml"
    result = run("calibrate", pp, "--base", "macbook-air-m2-8gb", "--bandwidth", "120GB/s", "--latency", "3ms",
                 "-o", out)
    assert result.exit_code == 0, result.stderr
    text = out.read_text()
    assert "\nmemory_bandwidth: 120GB/s\n" in text and "\ndecode_latency: 3ms\n" in text
    assert "  memory_bandwidth: given to kvplan calibrate (peak; no tg rows to fit)\n" in text
    assert ("no tg rows, so no decode figure is fitted; memory_bandwidth and decode_latency as given; "
            "bandwidth_efficiency from macbook-air-m2-8gb, not measured here") in result.stderr
    # without them the base device's figures stay, and the note says they were not measured
    kept = run("calibrate", pp, "--base", "macbook-air-m2-8gb", "-o", tmp_path / "kept.yaml")
    assert kept.exit_code == 0, kept.stderr
    assert ("memory_bandwidth, bandwidth_efficiency, decode_latency from macbook-air-m2-8gb, not measured here"
            in kept.stderr)
    assert "\nmemory_bandwidth: 100 GB/s\n" in (tmp_path / "kept.yaml").read_text()


def test_given_figures_are_not_credited_to_the_base(run, tmp_path):
    out = tmp_path / "m2.yaml"
    result = run("calibrate", EXAMPLE, "--base", "macbook-air-m2-8gb", "--ram", "16GiB", "-o", out)
    assert result.exit_code == 0, result.stderr
    assert "\n  ram: given to kvplan calibrate\n" in out.read_text()


@pytest.mark.parametrize("args, message", [
    (("--bandwidth", "50GB/s"),
     "--bandwidth 50GB/s: the tg rows read faster than this peak (effective bandwidth 91.8 GB/s fitted, "
     "bandwidth_efficiency would be 1.837); give the device's peak (spec-sheet) bandwidth"),
    (("--bandwidth", "1000TB/s"),
     "--bandwidth 1000TB/s: the tg rows' effective bandwidth 91.8 GB/s is under 0.05 % of this peak (is a unit "
     "wrong?); give the device's peak (spec-sheet) bandwidth"),
    (("--base", "pixel8"),
     "--base pixel8's memory_bandwidth 68.3 GB/s: the tg rows read faster than this peak (effective bandwidth "
     "91.8 GB/s fitted, bandwidth_efficiency would be 1.345); are the rows from another device? give --base with "
     "the right one, or --bandwidth with the peak"),
    (("--ram", "4GiB", "--os-reserve", "5GiB", "--flash-read", "2GB/s"),
     "--os-reserve 5GiB must be less than --ram 4GiB (5,368,709,120 ≥ 4,294,967,296 bytes)"),
    (("--base", "macbook-air-m2-8gb", "--ram", "2GiB"),
     "--base macbook-air-m2-8gb's os_reserve 2.67 GiB must be less than --ram 2GiB "
     "(2,866,890,671 ≥ 2,147,483,648 bytes)"),
    (("--latency", "1s"),
     f"--latency 1s: not below the measured time per token of {EXAMPLE}:232 (45.64 ms at 21.91 t/s), which is "
     "that latency plus the time to read the step's bytes: no bandwidth fits"),
    (("-m", "llama 7B Q4_0="), "--model 'llama 7B Q4_0=': expected 'MODEL_TYPE=NAME', with a model name after '='"),
    (("-m", "=7b"), "--model '=7b': expected 'MODEL_TYPE=NAME', with a model type before '='"),
])
def test_errors_name_the_option_at_fault(run, tmp_path, args, message):
    out = tmp_path / "m2.yaml"
    result = run("calibrate", EXAMPLE, *args, "-o", out)
    assert result.exit_code == 2
    assert result.stderr == f"kvplan: error: {message}\n"
    assert "m2.yaml" not in result.stderr and not out.exists()


@pytest.mark.parametrize("field, value, message", [
    # 1,000 − 73,728,000 (Q4_0 token_embd) + 524,288 × 64 = −40,172,568 B
    ("model_size", 1000, "model_size: bytes read per token come out at -40,172,568 (model size 1,000 B − input "
                         "embeddings 73,728,000 B + KV cache): the size is below the model's embedding table; is "
                         "it this model's file?"),
    ("type_k", "bogus", "type_k: unknown cache type 'bogus'; known: f32, f16, bf16, fp8, int8, int4, q8_0, q4_0, "
                        "q4_1, q5_0, q5_1, iq4_nl, or a bit width 1-32"),
])
def test_a_bad_row_value_is_an_error_at_that_row(run, tmp_path, field, value, message):
    records = json.loads(EXAMPLE.read_text())
    records[5][field] = value  # the Q4_0 tg128 row, the last object of the array
    bad = tmp_path / "t.json"
    bad.write_text(json.dumps(records, indent=1))
    row_line = [n for n, text in enumerate(bad.read_text().splitlines(), 1) if text == " {"][5]  # where it opens
    result = run("calibrate", bad, "--base", "macbook-air-m2-8gb", "-o", tmp_path / "t.yaml")
    assert result.exit_code == 2
    assert result.stderr == f"kvplan: error: {bad}:{row_line}: {message}\n"
