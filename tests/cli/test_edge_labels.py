"""What the tables say at the edges: why a max context is empty (sweep as compare), a decode target out of reach
or met at every context (check as fit), the pinned prefix in a sweep's title, fit's sizes in the units asked
for, and a warning about an OS reserve given on the command line worded without the YAML field."""

from __future__ import annotations

import json

import pytest


def _line(text: str, start: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(start))


def test_sweep_says_unbounded_or_none_where_compare_does(run):
    # Mistral-7B-v0.1: every layer behind 4,096 tokens, the cache stops growing → unbounded;
    # DeepSeek-V2-Lite: 7.98 GB total at 4k on the 6 GB budget, its weights alone over it → none
    out = run("sweep", "-d", "pixel8", "-m", "mistral-7b-v0.1,deepseek-v2-lite", "-c", "4k").stdout
    assert _line(out, "mistral-7b-v0.1").endswith("unbounded")
    assert _line(out, "deepseek-v2-lite").endswith("none")
    compare = run("compare", "-d", "pixel8", "-m", "mistral-7b-v0.1,deepseek-v2-lite", "-c", "4k").stdout
    assert _line(compare, "pixel8  mistral-7b-v0.1").endswith("unbounded (trained 32,768)")
    assert _line(compare, "pixel8  deepseek-v2-lite").endswith("none")


def test_sweep_title_names_the_pinned_prefix(run):
    out = run("sweep", "-d", "pixel8", "-m", "7b", "-c", "4k", "--pinned-prefix", "1k").stdout
    assert "1,024-token pinned prefix" in out.splitlines()[0]


def test_fit_sizes_follow_units(run):
    # headroom at 4,096 tokens: 6e9 − 3.37e9 − 4,096 · 524,288 = 482,516,992 B = 460.16 MiB
    out = run("fit", "-d", "pixel8", "-m", "7b", "-c", "4k", "--units", "iec").stdout
    assert "TIGHT, headroom 460.16 MiB" in _line(out, "at 4,096 tokens")


def test_check_says_why_there_is_no_context_at_the_target(run):
    # an empty cache reads the 3.37e9 B of weights per token: 34.15e9 B/s / 3.37e9 B + 2.37 ms → about 9.9 tok/s
    out = run("check", "-d", "pixel8", "-m", "7b", "-c", "4k", "--target-tok-s", "1000").stdout
    assert _line(out, "max context at ≥ 1000 tok/s").endswith("none: even an empty cache decodes slower")
    out = run("check", "-d", "pixel8", "-m", "mistral-7b-v0.1", "-c", "4k", "--target-tok-s", "5").stdout
    assert _line(out, "max context at ≥ 5 tok/s").endswith(
        "unbounded: the cache stops growing while decoding at least this fast")
    doc = json.loads(run("check", "-d", "pixel8", "-m", "7b", "-c", "4k", "--target-tok-s", "5", "-f",
                         "json").stdout)
    assert doc["max_ctx_at_target"] == 5016


def test_a_flag_reserve_warning_does_not_name_the_yaml_field(run):
    result = run("check", "-d", "pixel8", "-m", "7b", "-c", "4k", "--os-reserve", "50 MB")
    shown = result.stdout + result.stderr  # the warning is printed under the table
    assert "an OS reserve of 50,000,000 B is under 100 MB on pixel8's 8.00 GB of RAM" in shown
    assert "os_reserve" not in shown


def test_a_size_given_as_a_context_suggests_a_count_without_a_redundant_gloss(run):
    assert "--ctx: 1b is a size; a context is a token count such as 1\n" in run(
        "check", "-d", "pixel8", "-m", "7b", "-c", "1b").stderr
    assert "such as 8k (8,192 tokens)" in run("check", "-d", "pixel8", "-m", "7b", "-c", "8kb").stderr


@pytest.mark.parametrize("value", ["-1", "0"])
def test_a_decode_target_must_be_positive_with_one_message(run, value):
    result = run("check", "-d", "pixel8", "-m", "7b", "-c", "1k", f"--target-tok-s={value}")
    assert result.exit_code == 2
    assert f"--target-tok-s: must be a positive, finite rate, got {float(value)}" in result.stderr


def test_aliases_of_one_profile_make_one_row(run):
    # pixel-8 is pixel8's alias and 7b llama-2-7b's: one configuration, not four identical rows
    out = run("compare", "-c", "4k", "-d", "pixel8,pixel-8", "-m", "7b,llama-2-7b").stdout
    assert sum(line.startswith("pixel8  llama-2-7b") for line in out.splitlines()) == 1
    assert run("sweep", "-c", "4k", "-d", "pixel8,pixel-8", "-m", "7b,llama-2-7b").stdout.startswith(
        "sweep: 1 configuration")


def test_a_plot_says_when_the_context_lies_past_its_axis(run, tmp_path):
    result = run("plot", "memory", "-d", "pixel8", "-m", "7b", "-c", "8k", "--ctx-max", "4k", "-o", tmp_path / "m.png")
    assert result.exit_code == 0
    assert "--ctx 8,192 lies past --ctx-max 4,096: the plot does not mark it" in result.stderr


def test_no_suggested_window_widens_a_models_own(run_json):
    # Gemma-3-1B's local layers keep 512 tokens: an 8k/4k/2k/1k window on every layer would widen them
    _, doc = run_json("check", "-d", "pixel8", "-m", "gemma-3-1b", "-c", "2M")
    assert doc["verdict"] == "over" and "sliding_window" not in [c["change"] for c in doc["changes_to_fit"]]
    _, doc = run_json("check", "-d", "pixel8", "-m", "7b", "-c", "8k")  # no window of its own: still offered
    assert "sliding_window" in [c["change"] for c in doc["changes_to_fit"]]


@pytest.mark.parametrize("command", ["check", "sweep", "compare", "fit"])
def test_a_vanishing_decode_target_is_met_wherever_memory_allows(run_json, command):
    # 1e-300 tok/s: B / T overflows any byte count; every context that fits in memory meets it (max ctx 5,016)
    _, doc = run_json(command, "-d", "pixel8", "-m", "7b", "-c", "4k", "--target-tok-s", "1e-300")
    rows = doc.get("rows") or [doc]
    assert rows[0]["max_ctx_at_target"] == 5016


def test_the_llamacpp_command_is_quoted_for_a_shell(run_json, tmp_path):
    import shlex
    from pathlib import Path

    device = tmp_path / "my phone.yaml"
    device.write_text((Path(__file__).resolve().parents[2] / "device_profiles" / "pixel8.yaml").read_text())
    _, doc = run_json("check", "-d", device, "-m", "7b", "-c", "1k")
    assert shlex.split(doc["llamacpp_command"])[2:4] == ["--device", str(device)]


@pytest.mark.parametrize("command", ["sweep", "compare", "fit"])
def test_csv_output_keeps_its_warnings_on_stderr(run, command):
    result = run(command, "-d", "pixel8", "-m", "mistral-7b-v0.1", "-c", "32k", "-f", "csv")
    assert "kvplan: warning: llama.cpp ignores mistral-7b-v0.1's 4,096-token sliding window" in result.stderr
    assert "warning" not in result.stdout
