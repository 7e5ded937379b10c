"""Error wording that names the option the user gave, -o extensions, repeated list values, "1 token", fit CSV."""

from __future__ import annotations

import csv
import io

import pytest

from kvplan.profiles.catalog import Catalog
from kvplan.engine.formats import format_from_bits, format_from_name
from kvplan.plan import Scenario
from kvplan.caches.runtimes import asked_as
from tests.conftest import REF_7B, REF_PHONE

REF = ("-d", REF_PHONE, "-m", REF_7B)


@pytest.mark.parametrize("args, given", [
    (("--kv-bits", "3", "--runtime", "transformers"), "--kv-bits: transformers caches in the model dtype, "
     "f32/f16/bf16 (or its own quantized cache, not modelled): 3 bits (int3) is not one of them"),
    (("--kv-bits", "8", "--runtime", "transformers"), "--kv-bits: transformers caches"),
    (("--kv-type", "q8_0", "--runtime", "transformers"), "--kv-type: transformers caches"),
    (("--k-type", "q8_0", "--runtime", "transformers"), "--k-type: transformers caches"),
    (("--kv-bits", "3", "--runtime", "llama.cpp"), "--kv-bits: llama.cpp has no cache type for 3 bits (int3);"),
    (("--v-bits", "3", "--runtime", "llama.cpp"), "--v-bits: llama.cpp has no cache type for 3 bits (int3);"),
])
def test_cache_type_errors_name_the_option_given(run, args, given):
    result = run("check", *REF, "-c", "4k", *args)
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.startswith(f"kvplan: error: {given}") and result.stderr.count("kvplan: error:") == 1
    if "--k-type" not in args:
        assert "--k-type" not in result.stderr


def test_asked_as_spells_each_origin():
    cat = Catalog()
    s = Scenario(cat.device(str(REF_PHONE)).profile, cat.model(str(REF_7B)).profile, 4096)
    q8 = format_from_name("q8_0")
    assert asked_as(s.with_changes(k_format=q8, v_format=q8), "k") == ("kv_type", "q8_0")
    int8 = format_from_bits(8)  # --kv-bits 8 (equal to the named int8, but not it)
    assert asked_as(s.with_changes(k_format=int8, v_format=int8), "v") == ("kv_bits", "8 bits (int8)")
    named = format_from_name("int8")
    assert asked_as(s.with_changes(k_format=named, v_format=named), "k") == ("kv_type", "int8")
    grouped = format_from_bits(4, 32)
    assert asked_as(s.with_changes(k_format=grouped), "k") == ("k_bits", "4 bits (int4/g32)")
    assert asked_as(s, "k") == (None, "ref-7b's f16 cache (its profile's kv_type / kv_bits)")


def test_history_ratio_out_of_range(run):
    result = run("check", *REF, "-c", "4k", "--kv-recent-window", "1k", "--kv-history-ratio", "120%")
    assert result.exit_code == 2
    assert "kvplan: error: --kv-history-ratio: must be between 0 and 1 (or 0–100 %), got 120%" in result.stderr


@pytest.mark.parametrize("command", ["sweep", "compare"])
def test_unknown_output_extension_is_refused_before_evaluating(run, tmp_path, command):
    out = tmp_path / "out.xlsx"
    result = run(command, *REF, "-c", "4k", "-o", out)
    assert result.exit_code == 2 and result.stdout == "" and not out.exists()
    assert result.stderr.strip() == (f"kvplan: error: --output {out}: unknown extension '.xlsx'; use .csv, .json, "
                                     ".md or .txt, or give --format")
    ok = run(command, *REF, "-c", "4k", "-o", out, "--format", "csv")  # --format says what goes in it
    assert ok.exit_code == 0, ok.stderr
    assert next(csv.reader(io.StringIO(out.read_text())))[0] in ("device", "configuration", "model")


def test_txt_output_is_a_table(run, tmp_path):
    out = tmp_path / "out.txt"
    result = run("sweep", *REF, "-c", "4k", "-o", out)
    assert result.exit_code == 0, result.stderr
    assert "4,096" in out.read_text() and not out.read_text().startswith("device,")
    streamed = run("sweep", *REF, "-c", "4k", "-o", tmp_path / "out.csv")
    assert "wrote 1 row to" in streamed.stderr  # not "1 rows"


def test_repeated_list_values_give_one_row(run):
    result = run("sweep", *REF, "-c", "4k,4096", "--kv-bits", "8,8", "-f", "csv")
    assert result.exit_code == 0, result.stderr
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert [(r["ctx"], r["k_format"]) for r in rows] == [("4096", "int8")]
    typed = run("sweep", *REF, "-c", "4k", "--kv-type", "q8_0,q8_0", "--kv-type", "q8_0", "-f", "csv")
    assert len(list(csv.DictReader(io.StringIO(typed.stdout)))) == 1


def test_one_token_is_singular(run):
    out = run("check", *REF, "-c", "1").stdout
    assert "ref-phone × ref-7b at 1 token — FIT" in out and "KV cache (f16, 1 token)" in out
    assert "1 tokens" not in out
    assert "compare at 1 token" in run("compare", *REF, "-c", "1").stdout


def test_fit_csv_uses_the_sweep_decimals(run):
    result = run("fit", *REF, "-c", "8k", "-f", "csv")
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    (kv8,) = [r for r in rows if r["change"] == "kv_bits" and r["value"] == "8"]
    # 8-bit cache: 8,192 × 262,144 = 2,147,483,648 B; a step reads 1.75e9 + that = 3,897,483,648 B;
    # 50 GB/s / 3,897,483,648 B = 12.8287899… tok/s, written with 6 decimals as the sweep writes it
    assert kv8["decode_tokens_per_s"] == "12.828790"
    sweep = run("sweep", *REF, "-c", "8k", "--kv-bits", "8", "-f", "csv")
    assert next(csv.DictReader(io.StringIO(sweep.stdout)))["decode_tokens_per_s"] == "12.828790"


def test_compare_csv_uses_the_sweep_decimals(run):
    result = run("compare", *REF, "-c", "8k", "--kv-bits", "8", "-f", "csv")
    (row,) = list(csv.DictReader(io.StringIO(result.stdout)))
    # as above: 50 GB/s / (1.75e9 + 8,192 × 262,144 B) = 12.8287899… tok/s → 6 decimals, like sweep and fit
    assert row["decode_tokens_per_s"] == "12.828790"


def test_gate_junit_says_1_token(run, tmp_path):
    gate = tmp_path / "one.yaml"
    gate.write_text(f"configurations:\n  - name: tiny\n    device: {REF_PHONE}\n    model: {REF_7B}\n"
                    "    ctx: 1\n    max_total: 1 GB\n")
    junit = tmp_path / "one.xml"
    # 1.75e9 B of weights alone exceed max_total 1 GB: the configuration fails and JUnit gets its failure text
    assert run("gate", str(gate), "--junit", str(junit)).exit_code == 1
    text = junit.read_text()
    assert "at 1 token (" in text and "1 tokens" not in text
