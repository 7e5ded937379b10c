"""A large llama-bench file is read in one pass, and the profile fitted to it stays small.

20,000 rows (19 MB) took 186 s, then failed: each row's line was counted from the start of the file, and the
profile's sources listed every row (more than the 1 MB kvplan reads back). The rows here come from
tests/data/calibration/bench/m2_q4_0.jsonl: llama 7B Q4_0, 3,825,065,984 B, at 90 GB/s and 5 ms a token,
tg at depth d reads 3,825,065,984 + 524,288·d bytes: 1/avg_ts = that / 90e9 + 0.005 s.
"""

from __future__ import annotations

import json
from pathlib import Path

from kvplan.calibrate import readers

TEMPLATE = Path(__file__).parents[1] / "data" / "calibration" / "bench" / "m2_q4_0.jsonl"


def _bench_json(count: int) -> str:
    prefill, decode = (json.loads(line) for line in TEMPLATE.read_text().splitlines())
    rows = []
    for i in range(count):
        if i % 2:
            depth = 64 * (i // 2)
            rows.append(dict(decode, n_depth=depth,
                             avg_ts=round(1 / ((decode["model_size"] + 524_288 * depth) / 90e9 + 0.005), 4)))
        else:
            rows.append(dict(prefill))
    return json.dumps(rows, indent=2)


def test_row_lines_are_counted_in_one_pass(monkeypatch):
    counters = []

    class Counting(readers.LineCounter):
        def __init__(self, text):
            super().__init__(text)
            counters.append(self)

    monkeypatch.setattr(readers, "LineCounter", Counting)
    text = _bench_json(3000)
    rows = readers.parse_bench_text(text, "big.json", "json")
    assert len(rows) == 3000
    # Each row's line is where its '{' stands, as counting from the start gives it.
    starts = [i for i, line in enumerate(text.splitlines(), 1) if line == "  {"]
    assert [r.line for r in rows] == starts
    # '[' on line 1; the first row takes 50 lines: '{', 44 fields (the two sample lists 3 lines each), '}'.
    assert (rows[0].line, rows[1].line) == (2, 2 + 50)
    (counter,) = counters
    assert counter.chars_scanned <= len(text)  # one pass: 3,000 rows from the start would be ~1,500× more


def test_line_counter_answers_as_counting_from_the_start():
    text = "a\nbb\n\nccc\n"
    counter = readers.LineCounter(text)
    assert [counter.line_of(k) for k in (0, 2, 5, 6, 10)] == [1, 2, 3, 4, 5]
    assert counter.line_of(3) == 2  # going back counts again
    assert all(counter.line_of(k) == text.count("\n", 0, k) + 1 for k in range(len(text) + 1))


def test_a_profile_fitted_to_thousands_of_rows_names_them_briefly(run, tmp_path):
    bench = tmp_path / "big.json"
    bench.write_text(_bench_json(2000), encoding="utf-8")
    out = tmp_path / "dev.yaml"
    result = run("calibrate", bench, "-o", out, "--base", "macbook-air-m2-16gb")
    assert result.exit_code == 0, result.stderr
    text = out.read_text(encoding="utf-8")
    assert len(text) < 20_000  # listing 1,000 lines and residuals each was ~55 kB (130 kB for the two fits)
    assert "(1,000 rows)" in text
    assert "median |error|" in text
    assert "90.0 GB/s effective" in text  # the figure the rows were made from
