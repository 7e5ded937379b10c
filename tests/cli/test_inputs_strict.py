"""Issue 14 on the command line and in files: units required, token counts, percentages, single-valued options
given once, senseless policies refused — each an exit code 2 and a message that names what the user typed."""

from __future__ import annotations

import json

import pytest

from tests.conftest import REF_7B, REF_PHONE

REF = ("-d", REF_PHONE, "-m", REF_7B)


def _error(result) -> str:
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr)
    assert "Traceback" not in result.stdout + result.stderr
    return result.stderr


# --- sizes need a unit ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("value, message", [
    ("2", "kvplan: error: --os-reserve: 2 has no unit: did you mean 2 GB?"),
    ("8000000000", "kvplan: error: --os-reserve: 8000000000 has no unit: did you mean 8000000000 B (8 GB)?"),
])
def test_bare_os_reserve_is_refused(run, value, message):
    assert message in _error(run("check", *REF, "-c", "4k", "--os-reserve", value))


def test_os_reserve_with_its_unit(run_json):
    code, doc = run_json("check", *REF, "-c", "4k", "--os-reserve", "3 GB")
    # budget 8 GB − 3 GB = 5,000,000,000 B
    assert code == 0 and doc["memory"]["budget_bytes"] == 5_000_000_000


def test_bare_size_in_a_device_file_names_file_line_and_field(run, tmp_path):
    path = tmp_path / "phone.yaml"
    path.write_text("name: phone\nram: 8 GB\nos_reserve: 2 GB\nmemory_bandwidth: 50\nflash_read: 2100\n")
    lines = _error(run("check", "-d", path, "-m", REF_7B, "-c", "4k")).splitlines()
    assert f"kvplan: error: {path}:4: memory_bandwidth: 50 has no unit: did you mean 50 GB/s?" in lines
    assert f"kvplan: error: {path}:5: flash_read: 2100 has no unit: did you mean 2100 MB/s?" in lines


def test_bare_size_in_a_gate_file(run, tmp_path):
    path = tmp_path / "gate.yaml"
    path.write_text(f"defaults:\n  device: {REF_PHONE}\n  model: {REF_7B}\n  margin: 10\n"
                    "configurations:\n  - name: a\n    ctx: 4k\n    max_total: 3897483648\n")
    err = _error(run("gate", path))
    assert f"{path}:4: defaults.margin: must be at least 0 and below 100 %, got 10: did you mean 10%?" in err
    assert (f"{path}:8: configurations.0.max_total: 3897483648 has no unit: did you mean 3897483648 B (3.9 GB)?"
            in err)  # 3,897,483,648 B = 3.90 GB, three significant digits: 3.9


# --- token counts -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("ctx", ["8192", "8,192", "8k", "8K"])
def test_every_spelling_of_8k_is_8192_tokens(run_json, ctx):
    code, doc = run_json("check", *REF, "-c", ctx)
    # 8,192 × 524,288 B/token = 4,294,967,296 B of cache
    assert doc["ctx"] == 8192 and doc["memory"]["kv_bytes"] == 4_294_967_296


@pytest.mark.parametrize("args, message", [
    (("-c", "1e6"), "--ctx: 1e6 is exponent notation, which a context does not take: write 1000000 "
                    "(1,000,000 tokens) or 1M (1,048,576 tokens)"),
    (("-c", "8kb"), "--ctx: 8kb is a size; a context is a token count such as 8k (8,192 tokens)"),
    (("-c", "4k", "--pinned-prefix", "2GB"), "--pinned-prefix: 2GB is a size; a prefix is a token count"),
    (("-c", "4k", "--sliding-window", "4e3"), "--sliding-window: 4e3 is exponent notation, which a window does not "
                                              "take: write 4000 (4,000 tokens) or 4k (4,096 tokens)"),
])
def test_token_options_refuse_exponents_and_sizes(run, args, message):
    assert f"kvplan: error: {message}" in _error(run("check", *REF, *args))


def test_sweep_list_keeps_thousands_separators(run):
    result = run("sweep", *REF, "--ctx", "1k, 8,192", "--ctx", "256, 512", "-f", "csv")
    assert result.exit_code == 0, result.stderr
    rows = result.stdout.splitlines()[1:]
    # 1k = 1,024; "8,192" one value (the values are separated by ", "); "256, 512" two
    assert [int(row.split(",")[2]) for row in rows] == [1024, 8192, 256, 512]


def _token_params():
    import typer

    from kvplan.cli.app import build_app

    token_names = {"ctx", "ctx_max", "pinned_prefix", "sliding_window", "kv_recent_window", "kv_evict_every",
                   "max_cache_len"}
    stack = [("kvplan", typer.main.get_command(build_app()))]
    while stack:
        path, command = stack.pop()
        for name, sub in getattr(command, "commands", {}).items():
            stack.append((f"{path} {name}", sub))
        for param in command.params:
            if param.name in token_names:
                yield path, param


def test_every_token_option_states_the_k_rule():
    from kvplan.units import TOKENS_RULE

    seen = list(_token_params())
    assert len({path for path, _ in seen}) >= 8  # check, sweep, compare, fit, the four plots
    missing = [f"{path} {param.opts[0]}" for path, param in seen if TOKENS_RULE not in (param.help or "")]
    assert not missing, missing


# --- percentages ------------------------------------------------------------------------------------------------


def test_bare_margin_above_one_suggests_a_percentage(run):
    err = _error(run("check", *REF, "-c", "4k", "--margin", "10"))
    assert "kvplan: error: --margin: must be at least 0 and below 100 %, got 10: did you mean 10%?" in err


def test_margin_as_percentage_and_fraction_agree(run_json):
    _, percent = run_json("check", *REF, "-c", "4k", "--margin", "35%")
    _, fraction = run_json("check", *REF, "-c", "4k", "--margin", "0.35")
    # headroom 6e9 − (1.75e9 + 2,147,483,648) = 2,102,516,352 B ≥ 35 % of 6e9 = 2,100,000,000 B → fit (not tight)
    assert percent["verdict"] == fraction["verdict"] == "fit"
    assert percent["memory"]["headroom_bytes"] == 2_102_516_352


def test_device_efficiency_as_a_percentage(run_json, tmp_path):
    path = tmp_path / "phone.yaml"
    path.write_text(REF_PHONE.read_text() + "bandwidth_efficiency: 50%\n")
    _, full = run_json("check", "-d", REF_PHONE, "-m", REF_7B, "-c", "4k")
    _, half = run_json("check", "-d", path, "-m", REF_7B, "-c", "4k")
    # half the bandwidth, no latency: exactly half the rate
    assert half["decode_tokens_per_s"] == pytest.approx(full["decode_tokens_per_s"] / 2, rel=1e-12)


# --- single-valued options, once -------------------------------------------------------------------------------


@pytest.mark.parametrize("argv, message", [
    (("check", "-d", "pixel8", "-d", "iphone-15-pro", "-m", REF_7B, "-c", "4k"),
     "--device given twice; it takes one value"),
    (("check", *REF, "-c", "4k", "--ctx", "8k"), "--ctx given twice; it takes one value"),
    (("check", *REF, "-c", "4k", "--runtime", "llama.cpp", "--kv-unified", "--kv-unified"),
     "--kv-unified given twice; give it once"),
    (("profiles", "show", "pixel8", "-f", "json", "--format", "table"), "--format given twice; it takes one value"),
    (("plot", "memory", *REF, "-c", "1k", "-c", "2k"), "--ctx given twice; it takes one value"),
    (("fit", *REF, "-c", "4k", "--margin", "5%", "--margin", "20%"), "--margin given twice"),
])
def test_a_single_valued_option_given_twice_is_an_error(run, argv, message):
    assert message in _error(run(*argv))


def test_list_options_still_repeat(run):
    result = run("sweep", "-d", REF_PHONE, "-d", "pixel8", "-m", REF_7B, "-c", "1k", "-c", "2k", "-f", "json")
    assert result.exit_code == 0, result.stderr
    assert len(json.loads(result.stdout)["rows"]) == 4  # 2 devices × 2 contexts


# --- senseless policies ------------------------------------------------------------------------------------------


def test_history_ratio_without_recent_window_is_refused(run):
    err = _error(run("check", *REF, "-c", "4k", "--kv-history-ratio", "20%"))
    assert ("kvplan: error: --kv-history-ratio 20% without --kv-recent-window evicts the newest tokens too (80% of "
            "all tokens, the one just generated included): add --kv-recent-window") in err


def test_policy_file_without_recent_window_names_file_line_field(run, tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("name: evict\nhistory:\n  ratio: 20%\n")
    err = _error(run("check", *REF, "-c", "4k", "--kv-policy", path))
    assert f"{path}:2: history: a ratio of 0.2 with no recent_window evicts the newest tokens too" in err


def test_history_ratio_bare_above_one(run):
    err = _error(run("check", *REF, "-c", "4k", "--kv-recent-window", "1k", "--kv-history-ratio", "20"))
    assert "--kv-history-ratio: must be between 0 and 1 (or 0–100 %), got 20: did you mean 20%?" in err



def test_sweep_list_that_reads_two_ways_is_refused(run):
    result = run("sweep", *REF, "--ctx", "256,512", "-f", "csv")
    assert result.exit_code == 2
    assert "--ctx: '256,512' is ambiguous in a list" in result.stderr and "'256, 512'" in result.stderr
