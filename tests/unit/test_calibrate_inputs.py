"""kvplan calibrate's inputs read strictly: every number of a bench file, byte-order marks, each row's cache types,
rows that give one point, and errors placed at the row that causes them (found by exploratory testing)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvplan.calibrate import parse_bench_text, read_bench
from kvplan.calibrate.fit_device import ModelFacts, calibrate_device, decode_work
from kvplan.errors import ProfileError

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "tests" / "data" / "calibration" / "bench"
EXAMPLE = ROOT / "examples" / "llama-bench-m2.json"

HEADER = "| model | size | params | backend | test | t/s |\n| --- | --: | --: | --- | --: | --: |\n"


def md_row(size="3.56 GiB", params="6.74 B", rate="21.91 ± 0.00", test="tg128") -> str:
    return HEADER + f"| llama 7B Q4_0 | {size} | {params} | Metal | {test} | {rate} |\n"


# --- every number of a Markdown row is a file:line: column: error, never a crash --------------------------------


@pytest.mark.parametrize("cells, message", [
    (dict(size="3.5.6 GiB"), "bad.md:3: size: expected a size like '3.56 GiB', got '3.5.6 GiB'"),
    (dict(size="3..56 GiB"), "bad.md:3: size: expected a size like '3.56 GiB', got '3..56 GiB'"),
    (dict(params="6..74 B"), "bad.md:3: params: expected a count like '6.74 B', got '6..74 B'"),
    (dict(params="6.7.4 B"), "bad.md:3: params: expected a count like '6.74 B', got '6.7.4 B'"),
    (dict(rate="21.91 ± -"), "bad.md:3: t/s: expected a standard deviation ≥ 0 tokens/s after '±' "
                             "(like '23.85 ± 0.11'), got '21.91 ± -'"),
    (dict(rate="21.91 ± 0..0"), "bad.md:3: t/s: expected a standard deviation ≥ 0 tokens/s after '±' "
                                "(like '23.85 ± 0.11'), got '21.91 ± 0..0'"),
    (dict(rate="21.91 ±"), "bad.md:3: t/s: expected a rate like '23.85 ± 0.11', got '21.91 ±'"),
    (dict(rate="6..72 ± 0.1"), "bad.md:3: t/s: expected a number of tokens per second, got '6..72'"),
])
def test_malformed_markdown_numbers_are_located_errors(cells, message):
    with pytest.raises(ProfileError) as err:
        parse_bench_text(md_row(**cells), "bad.md", "md")
    assert err.value.problems == [message]


def test_well_formed_markdown_numbers_still_read():
    # 3.56 GiB = 3.56 × 2^30 = 3,822,520,893.44 → 3,822,520,893 B; '.5 B' params = 500,000,000
    row, = parse_bench_text(md_row(size="3.56GiB", params=".5 B", rate="21.91±0.25"), "ok.md", "md")
    assert (row.model_size_bytes, row.model_n_params, row.avg_ts, row.stddev_ts) == (3_822_520_893, 500_000_000,
                                                                                     21.91, 0.25)


@pytest.mark.parametrize("stddev, message", [
    ("abc", "x.jsonl:1: stddev_ts: expected a standard deviation ≥ 0 tokens/s, got 'abc'"),
    (-1.5, "x.jsonl:1: stddev_ts: expected a standard deviation ≥ 0 tokens/s, got -1.5"),
    (True, "x.jsonl:1: stddev_ts: expected a standard deviation ≥ 0 tokens/s, got True"),
])
def test_bad_machine_readable_stddev_is_a_located_error(stddev, message):
    record = json.loads((BENCH / "m2_q4_0.jsonl").read_text().splitlines()[1])
    record["stddev_ts"] = stddev
    with pytest.raises(ProfileError) as err:
        parse_bench_text(json.dumps(record) + "\n", "x.jsonl", "jsonl")
    assert err.value.problems == [message]


# --- a UTF-8 byte-order mark (PowerShell's Out-File -Encoding utf8) is not content -------------------------------


@pytest.mark.parametrize("name", ["m2.md", "m2_q4_0.jsonl", "m2_q4_0.csv", EXAMPLE])
def test_byte_order_mark_is_accepted(tmp_path, name):
    source = BENCH / name if isinstance(name, str) else name
    with_bom = tmp_path / source.name
    with_bom.write_bytes(b"\xef\xbb\xbf" + source.read_bytes())
    rows = read_bench(with_bom)
    plain = read_bench(source)
    # the same rows at the same lines: only the file name differs
    assert [(r.line, r.model_type, r.avg_ts, r.model_size_bytes) for r in rows] == \
        [(r.line, r.model_type, r.avg_ts, r.model_size_bytes) for r in plain]


# --- each row's own cache types price its KV term -----------------------------------------------------------------

CTK = """| model | size | params | backend | ngl | type_k | type_v | test | t/s |
| --- | --: | --: | --- | --: | --- | --- | --: | --: |
| llama 7B Q4_0 | 3.56 GiB | 6.74 B | Metal | 99 | f16 | f16 | tg128 @ d8192 | 10.80 ± 0.00 |
| llama 7B Q4_0 | 3.56 GiB | 6.74 B | Metal | 99 | q8_0 | q8_0 | tg128 @ d8192 | 14.20 ± 0.00 |
"""


def test_decode_work_prices_each_row_at_its_own_cache_types():
    # LLaMA-7B: f16 cache 2 × 32 layers × 4,096 × 2 B = 524,288 B/token; q8_0 2 × 32 × 4,096 × 34/32 = 278,528
    facts = {"llama 7B Q4_0": ModelFacts(embedding_bytes=73_728_000, kv_bytes_per_token=524_288,
                                         kv_bytes_by_cache_type={("f16", "f16"): 524_288, ("q8_0", "q8_0"): 278_528})}
    f16, q8 = parse_bench_text(CTK, "ctk.md", "md")
    # 3.56 GiB = 3,822,520,893 B; mean depth 8,192 + 128 / 2 = 8,256 tokens
    # f16: 3,822,520,893 − 73,728,000 + 524,288 × 8,256 = 8,077,314,621
    # q8_0: 3,822,520,893 − 73,728,000 + 278,528 × 8,256 = 6,048,320,061
    assert decode_work([f16, q8], facts) == [8_077_314_621, 6_048_320_061]
    assert decode_work([q8, f16], facts) == [6_048_320_061, 8_077_314_621]  # the order of the rows does not matter


# --- errors at the row and field that cause them --------------------------------------------------------------------


def test_a_size_below_the_embeddings_is_an_error_at_its_own_row(tmp_path):
    records = json.loads(EXAMPLE.read_text())
    records[5]["model_size"] = 1000  # the Q4_0 tg128 row, 6th object of the array (line 232)
    bad = tmp_path / "t.json"
    bad.write_text(json.dumps(records, indent=1))
    rows = read_bench(bad)
    facts = {r.model_type: ModelFacts(embedding_bytes=73_728_000, kv_bytes_per_token=524_288) for r in rows}
    with pytest.raises(ProfileError) as err:
        calibrate_device(rows, models=facts)
    line = rows[5].line
    assert rows[5].line != rows[1].line  # not the first tg row's line
    # 1,000 − 73,728,000 + 524,288 × 64 = −40,172,568 B
    assert err.value.problems == [f"{bad}:{line}: model_size: bytes read per token come out at -40,172,568 (model "
                                  "size 1,000 B − input embeddings 73,728,000 B + KV cache): the size is below the "
                                  "model's embedding table; is it this model's file?"]


def test_a_latency_above_a_measured_step_is_an_error_at_that_row():
    rows = [r for r in read_bench(EXAMPLE) if r.is_decode]
    with pytest.raises(ProfileError) as err:
        calibrate_device(rows, latency_s=0.05, latency_source="given")
    # the fastest row, Q4_0 at 21.91 t/s, takes 1 / 21.91 = 45.64 ms per token: below a 50 ms latency
    assert err.value.problems == [f"{EXAMPLE}:232: avg_ts: 21.91 tokens/s is 45.64 ms per token, not above the "
                                  "fixed latency 50.00 ms (given): no bandwidth fits"]


# --- one distinct bytes per token: the latency's source is said, never "given" when nobody gave it --------------


def test_rows_at_one_point_fit_no_latency_and_say_why():
    line = (BENCH / "m2_q4_0.jsonl").read_text().splitlines()[1]
    rows = parse_bench_text(line + "\n" + line.replace('"avg_ts": 21.910000', '"avg_ts": 21.600000') + "\n",
                            "tg2.jsonl", "jsonl")
    cal = calibrate_device(rows)
    assert cal.decode.latency_s == 0 and not cal.decode.latency_fitted
    assert "latency 0.00 ms (0: the tg rows hold one distinct bytes per token, too few to fit a latency)" \
        in cal.sources["decode_latency"]
    fixed = calibrate_device(rows, latency_s=0.00439, latency_source="from macbook-air-m2-8gb's decode_latency")
    assert "latency 4.39 ms (from macbook-air-m2-8gb's decode_latency)" in fixed.sources["decode_latency"]
