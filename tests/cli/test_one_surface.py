"""One surface across fit, compare, sweep, gate and report: schema_version and warnings in every JSON document,
the same CSV and JSON columns and number formats in sweep and compare (under every runtime), per-sequence rates
labelled and the aggregate beside them."""

from __future__ import annotations

import csv
import io
import json

import pytest

from tests.conftest import REF_7B, REF_PHONE

GATE = """configurations:
  - name: two
    device: {phone}
    model: {model}
    ctx: 4k
    sequences: 2
    min_decode_tok_s: 9
  - name: one
    device: {phone}
    model: {model}
    ctx: 4k
"""
# ref-phone reads 50 GB/s at efficiency 1; ref-7b has 1.75 GB of weights and 524,288 B/token.
# Two 4k sequences: 1.75e9 + 2 × 2,147,483,648 = 6,044,967,296 B per step → 50e9 / that per sequence.
PER_SEQUENCE_2 = 50e9 / 6_044_967_296  # 8.2713433… tok/s, 16.5426867… over both
ONE_4K = 50e9 / (1.75e9 + 2_147_483_648)  # 12.828… tok/s


@pytest.fixture
def gate_file(tmp_path):
    path = tmp_path / "seq.yaml"
    path.write_text(GATE.format(phone=REF_PHONE, model=REF_7B))
    return path


def _csv(text):
    return list(csv.DictReader(io.StringIO(text)))


@pytest.mark.parametrize("args", [
    ("fit", "-d", REF_PHONE, "-m", REF_7B),
    ("fit", "-d", REF_PHONE, "-m", REF_7B, "-c", "8k"),
    ("compare", "-c", "4k", "-d", REF_PHONE, "-m", REF_7B),
    ("sweep", "-d", REF_PHONE, "-m", REF_7B, "-c", "1k,4k"),
    ("sweep", "-d", REF_PHONE, "-m", REF_7B, "-c", "1..10001"),  # compact JSON above 10,000 rows
])
def test_every_json_document_has_schema_version_and_warnings(run, args):
    result = run(*args, "--format", "json")
    doc = json.loads(result.stdout)
    assert doc["schema_version"] == 1 and doc["warnings"] == []


def test_gate_json_has_warnings_and_the_aggregate_rate(run, gate_file):
    doc = json.loads(run("gate", gate_file, "--format", "json").stdout)
    assert doc["schema_version"] == 1 and doc["warnings"] == []
    two, one = (c["check"] for c in doc["configurations"])
    assert two["decode_tokens_per_s"] == pytest.approx(PER_SEQUENCE_2, rel=1e-12)
    assert two["aggregate_decode_tokens_per_s"] == 2 * two["decode_tokens_per_s"]
    assert one["aggregate_decode_tokens_per_s"] == one["decode_tokens_per_s"] == pytest.approx(ONE_4K, rel=1e-12)


def test_warnings_are_gathered_once(run):
    # the same 8 GB / 2 GB budget on both phones: llama.cpp's warning about mistral's window reads the same
    doc = json.loads(run("compare", "-c", "32k", "-d", "pixel8", "-d", "galaxy-s24", "-m", "mistral-7b-v0.1",
                         "-f", "json").stdout)
    assert len(doc["rows"]) == 2 and all(len(r["warnings"]) == 1 for r in doc["rows"])
    assert doc["warnings"] == doc["rows"][0]["warnings"] and "llama.cpp ignores" in doc["warnings"][0]
    sweep = json.loads(run("sweep", "-d", "pixel8", "-m", "mistral-7b-v0.1", "-c", "1k,32k", "-f", "json").stdout)
    assert sweep["warnings"] == doc["warnings"]
    fit = json.loads(run("fit", "-d", "pixel8", "-m", "mistral-7b-v0.1", "-c", "32k", "-f", "json").stdout)
    assert fit["warnings"] == doc["warnings"]
    csv_run = run("sweep", "-d", "pixel8", "-m", "mistral-7b-v0.1", "-c", "1k,32k", "-f", "csv")
    assert "warning: llama.cpp ignores" in csv_run.stderr  # CSV has no place for it


def test_warnings_of_keeps_the_first_of_each():
    from kvplan.plan import build_scenario, evaluate
    from kvplan.plan.knobs import Knobs
    from kvplan.profiles.catalog import Catalog
    from kvplan.plan.facts import warning
    from kvplan.render.rates import warnings_of

    catalog = Catalog()
    ev = evaluate(build_scenario(catalog.device(str(REF_PHONE)).profile, catalog.model(str(REF_7B)).profile, 4096,
                                 Knobs()))
    x, y, z = (warning("ctx_under_plausible", ctx_tokens=n, min_tokens=64) for n in (8, 16, 32))
    a, b = ev.with_changes(warnings=(x, y)), ev.with_changes(warnings=(y, z))
    assert warnings_of([a, b, ev]) == [x, y, z] and warnings_of([ev]) == []


def test_sweep_json_uses_check_key_names(run):
    doc = json.loads(run("sweep", "-d", REF_PHONE, "-m", REF_7B, "-c", "4k", "-f", "json").stdout)
    row = doc["rows"][0]
    assert "k_bits" not in row and "v_bits" not in row and (row["k_format"], row["v_format"]) == ("f16", "f16")
    check = json.loads(run("check", "-d", REF_PHONE, "-m", REF_7B, "-c", "4k", "-f", "json").stdout)
    # runtime and kv_policy are labels in a sweep row ("ideal", "none"), objects in check
    shared = {k for k in row if k in check} - {"runtime", "kv_policy"}
    assert {"k_format", "v_format", "weight_bits", "decode_tokens_per_s", "max_ctx", "ctx", "sequences"} <= shared
    assert all(row[k] == check[k] for k in shared)
    memory = {k: row[k] for k in row if k in check["memory"]}
    assert memory and all(v == check["memory"][k] for k, v in memory.items())


# The same point under each cache model: the contract's formula, llama.cpp (its buffers and a named weight format
# in the total) and transformers. (compare's -c, sweep's -c list, the rest shared.)
POINTS = {
    "ideal": ("-d", REF_PHONE, "-m", REF_7B, "-n", "2"),
    "llama.cpp": ("-d", "pixel8", "-m", "7b", "-n", "4", "--weight-type", "q4_k_m", "--runtime", "llama.cpp"),
    "transformers": ("-d", "pixel8", "-m", "7b", "-n", "2", "--runtime", "transformers"),
}


@pytest.mark.parametrize("target", [(), ("--target-tok-s", "5")])
@pytest.mark.parametrize("point", list(POINTS))
def test_sweep_and_compare_write_the_same_columns_and_rows(run, point, target):
    common = (*POINTS[point], *target)
    compare_csv = run("compare", "-c", "4k", *common, "-f", "csv").stdout
    sweep_csv = run("sweep", "-c", "4k", *common, "-f", "csv").stdout
    # one header, one row: the same columns in the same order, every field written the same way
    assert compare_csv == sweep_csv
    (c,) = _csv(compare_csv)
    last = ["weight_type", "max_ctx_limited_by", "max_ctx_trained"] + ["max_ctx_at_target"] * bool(target) + \
        ["process_bytes"] * (point == "llama.cpp")  # the llama.cpp process, only under that runtime
    assert list(c)[-len(last):] == last
    assert list(c)[18:20] == ["max_ctx", "prefill_s"]  # the positions sweep always had
    # JSON rows: the same keys in the same order hold the same values (full precision); compare adds what CSV
    # has no place for
    cj = json.loads(run("compare", "-c", "4k", *common, "-f", "json").stdout)
    sj = json.loads(run("sweep", "-c", "4k", *common, "-f", "json").stdout)
    (crow,), (srow,) = cj["rows"], sj["rows"]
    assert list(srow) == sj["columns"] == list(c)
    assert list(crow) == list(c) + ["ctx_beyond_trained", "warnings"]
    assert {k: crow[k] for k in srow} == srow
    # every row adds up, the buffers and the llama.cpp process included
    assert int(c["total_bytes"]) == sum(int(c.get(k, 0)) for k in (
        "weights_bytes", "kv_peak_bytes", "pinned_prefix_bytes", "overhead_bytes", "buffers_bytes", "process_bytes"))


def test_compare_and_sweep_say_what_limits_max_ctx(run):
    # pixel8 × llama-2-7b (max_context 4,096): 4-bit weights leave 6e9 − 3.37e9 = 2.63e9 B → ⌊2.63e9 / 524,288⌋ =
    # 5,016 tokens, set by memory; 16-bit weights (13.48e9 B) exceed the 6e9 budget alone → none, set by the weights
    for bits, limited_by, max_ctx in (("4", "memory", "5016"), ("16", "weights", "")):
        args = ("-c", "4k", "-d", "pixel8", "-m", "7b", "--weight-bits", bits, "-f", "csv")
        (c,) = _csv(run("compare", *args).stdout)
        (s,) = _csv(run("sweep", *args).stdout)
        assert (c["max_ctx"], c["max_ctx_limited_by"], c["max_ctx_trained"]) == (max_ctx, limited_by, "4096") == \
            (s["max_ctx"], s["max_ctx_limited_by"], s["max_ctx_trained"])
    # a profile without max_context: empty in CSV, null in JSON, in both commands
    args = ("-c", "4k", "-d", REF_PHONE, "-m", REF_7B)
    (c,) = _csv(run("compare", *args, "-f", "csv").stdout)
    assert c["max_ctx_trained"] == "" and "max_ctx_at_target" not in c
    for command in ("compare", "sweep"):
        (row,) = json.loads(run(command, *args, "-f", "json").stdout)["rows"]
        assert row["max_ctx_trained"] is None and "max_ctx_at_target" not in row


def test_ideal_row_figures_and_number_formats(run):
    (c,) = _csv(run("compare", "-c", "4k", *POINTS["ideal"], "-f", "csv").stdout)
    # one number format: whole bits as integers, rates with 6 decimals
    assert c["weight_bits"] == "4" and c["decode_tokens_per_s"] == f"{PER_SEQUENCE_2:.6f}" == "8.271343"
    assert c["aggregate_decode_tokens_per_s"] == f"{2 * PER_SEQUENCE_2:.6f}" == "16.542687"
    assert (c["runtime"], c["buffers_bytes"], c["weight_type"]) == ("ideal", "0", "")


def test_llamacpp_row_carries_its_buffers_and_weight_format(run):
    (c,) = _csv(run("compare", "-c", "4k", *POINTS["llama.cpp"], "-f", "csv").stdout)
    check = json.loads(run("check", "-c", "4k", *POINTS["llama.cpp"], "-f", "json").stdout)["memory"]
    # -c 4096 over -np 4 streams: 1,024 cells each (a multiple of 256), 4,096 cells × 524,288 B = 2,147,483,648 B
    assert c["kv_bytes"] == c["kv_peak_bytes"] == "2147483648"
    # the output buffer alone is 4 sequences × 32,000 logits × 4 B = 512,000 B; the compute buffer adds the rest
    assert int(c["buffers_bytes"]) == check["buffers_bytes"] > 512_000
    assert int(c["weights_bytes"]) == check["weights_bytes"] and int(c["total_bytes"]) == check["total_bytes"]
    # -np is the sequences column, not part of the label
    assert (c["runtime"], c["sequences"], c["weight_type"]) == ("llama.cpp", "4", "q4_k_m")


def test_transformers_row_figures(run):
    (c,) = _csv(run("compare", "-c", "4k", *POINTS["transformers"], "-f", "csv").stdout)
    # two 4k sequences: 2 × 4,096 × 524,288 = 4,294,967,296 B of cache; 6.74e9 × 4 / 8 = 3,370,000,000 B of weights;
    # no buffers: 7,664,967,296 B
    assert (c["kv_bytes"], c["weights_bytes"], c["buffers_bytes"]) == ("4294967296", "3370000000", "0")
    assert c["total_bytes"] == "7664967296" and (c["runtime"], c["weight_type"]) == ("transformers", "")


def test_fractional_weight_bits_read_back_exactly(run):
    common = ("-d", REF_PHONE, "-m", REF_7B, "--weight-bits", "4.5")
    (c,) = _csv(run("compare", "-c", "4k", *common, "-f", "csv").stdout)
    (s,) = _csv(run("sweep", "-c", "4k", *common, "-f", "csv").stdout)
    assert c["weight_bits"] == s["weight_bits"] == "4.5"


def test_sweep_csv_writer_formats_like_the_scalar_one():
    """csvfast's vectorized weight_bits column is csvnum.bits of each value."""
    import numpy as np

    from kvplan.render.csvnum import bits
    from kvplan.render.sweep import _field

    values = np.array([4.0, 4.5, 3.35, 8.0, 4.8359375])
    matrix = _field("weight_bits", values)
    text = [bytes(row[row != 0]).decode() for row in matrix]
    assert text == [bits(v) for v in values] == ["4", "4.5", "3.35", "8", "4.8359375"]


def test_tables_label_the_per_sequence_rate_and_show_the_aggregate(run, gate_file):
    compare = run("compare", "-c", "4k", "-d", REF_PHONE, "-m", REF_7B, "-n", "2").stdout
    assert "decode tok/s per sequence" in compare and "aggregate tok/s" in compare and "16.5" in compare
    sweep = run("sweep", "-c", "4k", "-d", REF_PHONE, "-m", REF_7B, "-n", "1,2").stdout
    assert "decode tok/s per sequence" in sweep and "aggregate tok/s" in sweep
    fit = run("fit", "-d", REF_PHONE, "-m", REF_7B, "-c", "4k", "-n", "2").stdout
    assert "8.3 tok/s per sequence, 16.5 tok/s over 2 sequences" in fit
    gate = run("gate", gate_file).stdout
    assert "decode tok/s per sequence" in gate and "aggregate tok/s" in gate
    report = run("report", gate_file).stdout
    assert "8.3 tok/s per sequence, 16.5 tok/s over 2 sequences at 4,096 tokens" in report
    # one sequence everywhere: no aggregate column, no "per sequence"
    single = run("compare", "-c", "4k", "-d", REF_PHONE, "-m", REF_7B).stdout
    assert "aggregate" not in single and "per sequence" not in single


def test_json_and_csv_carry_the_aggregate_rate(run):
    compare = json.loads(run("compare", "-c", "4k", "-d", REF_PHONE, "-m", REF_7B, "-n", "2", "-f", "json").stdout)
    row = compare["rows"][0]
    assert row["aggregate_decode_tokens_per_s"] == 2 * row["decode_tokens_per_s"]
    fit = json.loads(run("fit", "-d", REF_PHONE, "-m", REF_7B, "-c", "4k", "-n", "2", "-f", "json").stdout)
    assert fit["aggregate_decode_tokens_per_s"] == 2 * fit["decode_tokens_per_s"]
    for change in fit["changes_to_fit"]:
        assert change["aggregate_decode_tokens_per_s"] == change["sequences"] * change["decode_tokens_per_s"]
    sweep = _csv(run("sweep", "-c", "4k", "-d", REF_PHONE, "-m", REF_7B, "-n", "1,3", "-f", "csv").stdout)
    # one 4k sequence: 50e9 / 3,897,483,648; three: 50e9 / (1.75e9 + 3 × 2,147,483,648), × 3 in aggregate
    one, three = 50e9 / 3_897_483_648, 50e9 / 8_192_450_944
    assert [(r["decode_tokens_per_s"], r["aggregate_decode_tokens_per_s"]) for r in sweep] == \
        [(f"{one:.6f}", f"{one:.6f}"), (f"{three:.6f}", f"{3 * three:.6f}")]
