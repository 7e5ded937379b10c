"""Every JSON reader refuses a duplicate key (naming it and its lines), deep nesting and a 5,000-digit number with
exit 2 — never last-wins in silence, never exit 3 (Python's json raises RecursionError and ValueError there)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvplan.files import jsonio, keyed_json
from tests.conftest import REF_PHONE

HF = Path(__file__).parents[1] / "data" / "hf_configs" / "llama-3.2-1b.json"
JSONL = Path(__file__).parents[1] / "data" / "calibration" / "bench" / "m2_q4_0.jsonl"


def _config_with(tmp_path, replace: str) -> Path:
    text = HF.read_text(encoding="utf-8")
    assert '"num_hidden_layers": 16' in text
    path = tmp_path / "config.json"
    path.write_text(text.replace('"num_hidden_layers": 16', replace), encoding="utf-8")
    return path


def _line_of(path: Path, fragment: str, nth: int = 0) -> int:
    return [i for i, line in enumerate(path.read_text().splitlines(), 1) if fragment in line][nth]


@pytest.mark.parametrize("argv", [["import", "hf"], ["check", "--device", str(REF_PHONE), "--ctx", "4k", "--model"]])
def test_a_config_json_with_a_duplicate_key_is_refused_at_its_line(run, tmp_path, argv):
    path = _config_with(tmp_path, '"num_hidden_layers": 16,\n  "num_hidden_layers": 99')
    first, second = _line_of(path, "num_hidden_layers"), _line_of(path, "num_hidden_layers", 1)
    assert second == first + 1
    result = run(*argv, path)
    assert result.exit_code == 2
    assert (f"{path}:{second}: num_hidden_layers: duplicate key (first given on line {first})") in result.stderr


@pytest.mark.parametrize("argv", [["import", "hf"], ["check", "--device", str(REF_PHONE), "--ctx", "4k", "--model"]])
@pytest.mark.parametrize("text, message", [
    ("[" * 100_000 + "]" * 100_000, ":1: refused: nested deeper than 64 levels"),
    ('{"a": ' + "[" * 65 + "]" * 65 + "}", ":1: refused: nested deeper than 64 levels"),
    ('{\n"num_hidden_layers": ' + "7" * 5000 + "}", ":2: a number of 5,000 digits is far beyond any figure kvplan"),
])
def test_a_config_json_nested_too_deep_or_with_a_huge_number_is_bad_input(run, tmp_path, argv, text, message):
    path = tmp_path / "config.json"
    path.write_text(text, encoding="utf-8")
    result = run(*argv, path)
    assert result.exit_code == 2, result.stderr
    assert f"{path}{message}" in result.stderr
    assert "internal error" not in result.stderr


def _bench_rows() -> list[dict]:
    return [json.loads(line) for line in JSONL.read_text().splitlines()]


def test_a_llama_bench_json_row_with_a_duplicate_key_is_refused(run, tmp_path):
    rows = _bench_rows()
    text = json.dumps(rows, indent=2).replace('"avg_ts": 21.91,', '"avg_ts": 21.91,\n    "avg_ts": 99.0,')
    path = tmp_path / "bench.json"
    path.write_text(text, encoding="utf-8")
    first, second = _line_of(path, '"avg_ts"', 1), _line_of(path, '"avg_ts"', 2)  # the second row's two
    result = run("calibrate", path, "-o", tmp_path / "out.yaml", "--base", "macbook-air-m2-16gb")
    assert result.exit_code == 2
    assert f"{path}:{second}: json: avg_ts: duplicate key (first given on line {first})" in result.stderr
    assert not (tmp_path / "out.yaml").exists()


@pytest.mark.parametrize("suffix", ["json", "jsonl"])
@pytest.mark.parametrize("kind", ["deep", "digits", "duplicate"])
def test_llama_bench_json_and_jsonl_are_refused_as_bad_input(run, tmp_path, suffix, kind):
    row = json.dumps(_bench_rows()[1])
    bad = {"deep": row[:-1] + ', "x": ' + "[" * 5000 + "]" * 5000 + "}",
           "digits": row.replace('"n_gen": 128', '"n_gen": ' + "1" * 5000),
           "duplicate": row.replace('"n_gen": 128', '"n_gen": 128, "n_gen": 64')}[kind]
    text = f"[\n{row},\n{bad}\n]\n" if suffix == "json" else f"{row}\n{bad}\n"
    path = tmp_path / f"bench.{suffix}"
    path.write_text(text, encoding="utf-8")
    result = run("calibrate", path, "-o", tmp_path / "out.yaml", "--base", "macbook-air-m2-16gb")
    assert result.exit_code == 2, result.stderr
    line = 3 if suffix == "json" else 2
    expected = {"deep": "refused: nested deeper than 64 levels",
                "digits": "a number of 5,000 digits", "duplicate": "n_gen: duplicate key"}[kind]
    assert f"{path}:{line}: {suffix}: {expected}" in result.stderr


def test_a_damaged_cache_entry_is_a_miss(tmp_path):
    for text in ("[" * 100_000, '{"key": 1, "key": 2, "data": 3}', '{"key": ' + "1" * 5000 + "}"):
        entry = tmp_path / "entry.json"
        entry.write_text(text, encoding="utf-8")
        assert keyed_json.load_entry(entry, 2) is None


def test_strict_loads_reads_what_json_reads():
    text = '{"a": [1, 2.5, "x", null, true], "b": {"c": -3}}'
    assert jsonio.loads(text) == json.loads(text)
    assert jsonio.loads("7" * 4300) == int("7" * 4300)
