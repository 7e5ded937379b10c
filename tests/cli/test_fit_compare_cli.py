"""kvplan fit (every listed change really fits when applied with check) and kvplan compare."""

from __future__ import annotations

import json

import pytest

from tests.conftest import REF_7B, REF_PHONE


def test_fit_pixel8_7b_8192_changes_each_fit_with_check(run, run_json):
    code, doc = run_json("fit", "--device", "pixel8", "--model", "7b", "--ctx", "8192")
    assert code == 1 and doc["verdict"] == "over"
    changes = doc["changes_to_fit"]
    assert {c["change"] for c in changes} >= {"kv_bits", "ctx"}
    # ranked: fewest caveats first; of one kind, the least lossy first (KV at 8 bits before 4 bits)
    caveats = [len(c["caveats"]) for c in changes]
    assert caveats == sorted(caveats)
    kv = [c["value"] for c in changes if c["change"] == "kv_bits"]
    assert kv == sorted(kv, reverse=True) and len(kv) >= 2
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


# --- cache types, the KV peak and the runtime / policy columns ----------------------------------------------

WINDOWED = REF_PHONE.parent.parent / "planning" / "windowed-1b.yaml"
POLICY = REF_PHONE.parents[3] / "examples" / "kv-policy.yaml"


def test_fit_reproduces_the_q8_0_gate_configuration(run_json, run):
    # examples/release.yaml pro-7b-galaxy-s24: galaxy-s24, 7b, ctx 4k, kv_type q8_0, pinned_prefix 512
    args = ("-d", "galaxy-s24", "-m", "7b", "-c", "4k", "--kv-type", "q8_0", "--pinned-prefix", "512")
    code, fit = run_json("fit", *args)
    _, check = run_json("check", *args)
    assert code == 0 and fit["k_format"] == fit["v_format"] == "q8_0"
    assert fit["memory"] == check["memory"] and fit["max_ctx"] == check["max_ctx"]
    # 7b: 2 · 32 · 32 · 128 = 262,144 values a token at 34 B per 32 (q8_0) = 278,528 B/token
    assert fit["kv_bytes_per_token"] == 278_528


def test_fit_changes_under_a_cache_type_keep_it_in_their_commands(run_json, run):
    code, doc = run_json("fit", "-d", REF_PHONE, "-m", REF_7B, "-c", "20k", "--k-type", "q8_0", "--v-type", "q4_0")
    assert code == 1 and doc["changes_to_fit"]
    for change in doc["changes_to_fit"]:
        argv = change["check_command"]
        if change["change"] != "kv_bits":  # the other changes keep the types (bits would be other formats)
            assert argv[argv.index("--k-type") + 1] == "q8_0" and argv[argv.index("--v-type") + 1] == "q4_0"
        result = run(*argv[1:], "--format", "json")
        assert result.exit_code == 0
        assert json.loads(result.stdout)["memory"]["headroom_bytes"] == change["headroom_bytes"]


def test_compare_takes_cache_types_and_group_size(run_json):
    _, q8 = run_json("compare", "-c", "4k", "-d", REF_PHONE, "-m", REF_7B, "--kv-type", "q8_0")
    _, g32 = run_json("compare", "-c", "4k", "-d", REF_PHONE, "-m", REF_7B, "--kv-bits", "8", "--kv-group-size", "32")
    # q8_0 is 8 bits plus one fp16 scale per 32 values: the same 278,528 B/token as int8/g32
    assert q8["rows"][0]["k_format"] == "q8_0" and g32["rows"][0]["k_format"] == "int8/g32"
    assert q8["rows"][0]["kv_bytes_per_token"] == g32["rows"][0]["kv_bytes_per_token"] == 278_528


@pytest.mark.parametrize("extra, runtime, policy", [
    ([], "ideal", "none"), (["--runtime", "transformers"], "transformers", "none"),
    (["--runtime", "llama.cpp", "-n", "2", "--kv-unified"], "llama.cpp unified", "none"),  # -np: the sequences
    (["--kv-policy", POLICY], "ideal", "window4k-fp16-history20-k4v3")])
def test_compare_rows_add_up_with_the_peak_and_name_runtime_and_policy(run_json, run, extra, runtime, policy):
    _, doc = run_json("compare", "-c", "40000", "-d", REF_PHONE, "-m", WINDOWED, "-m", REF_7B, *extra)
    for row in doc["rows"]:
        assert row["total_bytes"] == (row["weights_bytes"] + row["kv_peak_bytes"] + row["pinned_prefix_bytes"]
                                      + row["overhead_bytes"] + row["buffers_bytes"] + row.get("process_bytes", 0))
        assert ("process_bytes" in row) == runtime.startswith("llama.cpp")  # a column only under llama.cpp
        assert row["runtime"] == runtime and row["kv_policy"] == policy
    csv_text = run("compare", "-c", "40000", "-d", REF_PHONE, "-m", WINDOWED, *extra, "-f", "csv").stdout
    # sweep's columns in sweep's order (tests/cli/test_one_surface.py), compare's own last
    assert csv_text.splitlines()[0].endswith(",max_ctx,prefill_s,kv_peak_bytes,runtime,kv_policy,"
                                             "aggregate_decode_tokens_per_s,buffers_bytes,weight_type,"
                                             "max_ctx_limited_by,max_ctx_trained"
                                             + (",process_bytes" if runtime.startswith("llama.cpp") else ""))
    assert f",{runtime},{policy}," in csv_text.splitlines()[1]
    table = run("compare", "-c", "40000", "-d", REF_PHONE, "-m", WINDOWED, *extra).stdout
    assert (f"runtime {runtime}" in table) == (runtime != "ideal")
    assert (f"KV policy {policy}" in table) == (policy != "none")
    peaks = any(r["kv_peak_bytes"] != r["kv_bytes"] for r in doc["rows"] if r["model"] == doc["models"][0])
    assert ("KV peak" in table) == peaks


def test_compare_transformers_windowed_peak_is_in_the_table(run, run_json):
    # transformers' DynamicCache holds the whole prompt of a windowed layer right after a one-shot prefill
    _, doc = run_json("compare", "-c", "40000", "-d", REF_PHONE, "-m", WINDOWED, "--runtime", "transformers")
    row = doc["rows"][0]
    assert row["kv_peak_bytes"] > row["kv_bytes"]
    assert "KV peak" in run("compare", "-c", "40000", "-d", REF_PHONE, "-m", WINDOWED, "--runtime",
                            "transformers").stdout


# --- compare's buffers column, fit -o --------------------------------------------------------------------------

def test_compare_table_shows_llamacpp_buffers_only_when_there_are_some(run, run_json):
    args = ("compare", "-c", "4k", "-d", "pixel8", "-m", "7b", "--runtime", "llama.cpp")
    _, doc = run_json(*args)
    (row,) = doc["rows"]
    # 4,096 cells × 524,288 B = 2,147,483,648 B of cache; 6.74e9 × 4 / 8 = 3,370,000,000 B of weights; the buffers
    # and the llama.cpp process (heap 10,506,240 + 189 · 32,000 B, libraries 15,568,896 B) are the rest
    assert row["process_bytes"] == 10_506_240 + 189 * 32_000 + 15_568_896
    assert row["buffers_bytes"] == row["total_bytes"] - 3_370_000_000 - 2_147_483_648 - row["process_bytes"] > 0
    assert row["weight_type"] == "" and row["runtime"] == "llama.cpp"
    table = run(*args).stdout
    assert "buffers" in table.splitlines()[1] and "counted in the total" in table
    assert "buffers" not in run("compare", "-c", "4k", "-d", "pixel8", "-m", "7b").stdout


FIT_8K = ("fit", "-d", "pixel8", "-m", "7b", "-c", "8k")


@pytest.mark.parametrize("name, fmt", [("fit.json", "json"), ("fit.csv", "csv"), ("fit.md", "markdown"),
                                       ("fit.txt", "table"), ("fit", "table")])
def test_fit_output_file_takes_its_format_from_the_extension(run, tmp_path, name, fmt):
    target = tmp_path / name
    target.write_text("an older, longer file " * 100)  # replaced whole, not written over in place
    result = run(*FIT_8K, "-o", target)
    # 8k of llama-2-7b on pixel8: 3.37e9 + 8,192 × 524,288 = 7,664,967,296 B > the 6e9 budget, exit 1 as on stdout
    assert result.exit_code == 1 and result.stdout == "" and f"wrote {target}" in result.stderr
    printed = run(*FIT_8K, "-f", fmt).stdout
    assert target.read_text() == printed  # the table: the plain one a pipe gets (the runner is no terminal)
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]  # no temporary file left behind
    if fmt == "json":
        assert json.loads(target.read_text())["memory"]["total_bytes"] == 7_664_967_296


def test_fit_output_format_overrides_the_extension(run, tmp_path):
    target = tmp_path / "fit.dat"
    assert run(*FIT_8K, "-f", "json", "-o", target).exit_code == 1
    assert json.loads(target.read_text())["schema_version"] == 1


@pytest.mark.parametrize("args, message", [
    # the extension is judged before the (unknown) model is looked up: no work is done
    (("fit", "-d", "pixel8", "-m", "no-such-model", "-o", "fit.xlsx"), "unknown extension '.xlsx'"),
    (("fit", "-d", "pixel8", "-m", "7b", "-o", "fit.csv"), "--output fit.csv (CSV by its extension)"),
    (("fit", "-d", "pixel8", "-m", "7b", "-o", "no-such-folder/fit.json"), "folder 'no-such-folder' does not exist"),
])
def test_fit_bad_output_is_a_usage_error_before_any_work(run, tmp_path, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    result = run(*args)
    assert result.exit_code == 2 and message in result.stderr and "Traceback" not in result.stderr
    assert list(tmp_path.iterdir()) == []
