"""The llama.cpp process through the CLI: check's rows, --mmap/--repack/--judge/--llamacpp-build/--prompt-tokens,
the gate's judge key, and bad values (one line, exit 2)."""

from __future__ import annotations

import textwrap

import pytest

from kvplan.engine import llamacpp_process as lp

BASE = ("check", "--device", "pixel8", "--model", "llama-3.1-8b", "--ctx", "4096", "--runtime", "llama.cpp",
        "--weight-type", "q4_0")


def test_check_shows_the_process_rows_and_says_what_it_judged(run):
    out = run(*BASE).stdout
    for row in ("llama.cpp process: heap", "binary and libraries", "repacked copy of the weights",
                "total (resident peak)", "of it reclaimable", "of it non-reclaimable", "headroom of the resident peak"):
        assert row in out, row


def test_mmap_and_repack_hold_the_repacked_part_twice(run_json):
    _, doc = run_json(*BASE)
    m, p = doc["memory"], doc["memory"]["process"]
    # pixel8 is an Android phone: NEON with int8 matmul repacks Q4_0 (rows % 4) and the Q6_K output
    assert p["repacked_bytes"] == p["repack_copy_bytes"] > 0 and p["weights_file_bytes"] == m["weights_bytes"]
    assert m["total_bytes"] == p["resident_bytes"] == (
        m["weights_bytes"] + m["kv_peak_bytes"] + m["buffers_bytes"] + p["baseline_anon_bytes"]
        + p["baseline_file_bytes"] + p["repack_copy_bytes"])
    assert p["reclaimable_bytes"] == m["weights_bytes"] - lp.MMAP_WORKING_SET_BYTES
    assert p["non_reclaimable_bytes"] == p["resident_bytes"] - p["reclaimable_bytes"]
    assert (p["judged"], p["judged_bytes"]) == ("resident", m["total_bytes"])
    assert m["headroom_bytes"] == m["budget_bytes"] - m["total_bytes"]
    assert p["llamacpp_build"] == "b11434"


def test_no_mmap_holds_the_weights_once_and_nothing_is_reclaimable(run_json):
    _, mapped = run_json(*BASE)
    _, loaded = run_json(*BASE, "--no-mmap")
    p = loaded["memory"]["process"]
    assert p["repack_copy_bytes"] == p["weights_file_bytes"] == p["reclaimable_bytes"] == 0
    assert p["staging_bytes"] > 0  # the largest repacked tensor, read before it is repacked
    assert loaded["memory"]["total_bytes"] == (mapped["memory"]["total_bytes"]
                                               - mapped["memory"]["process"]["repack_copy_bytes"] + p["staging_bytes"])


def test_no_repack_drops_the_copy(run_json):
    _, doc = run_json(*BASE, "--no-repack")
    assert doc["memory"]["process"]["repacked_bytes"] == doc["memory"]["process"]["repack_copy_bytes"] == 0


LONG = (*BASE[:6], "16384", *BASE[7:], "--no-repack")


def test_judging_the_non_reclaimable_part_can_turn_the_verdict(run_json, run):
    # 8B Q4_0 at 16k on an 8 GB phone, not repacked: the resident peak (the 4.65 GB mapped file, the 2.15 GB cache,
    # the buffers, the process) is over the 6 GB budget; what the kernel cannot drop (all but the file pages) is not
    code, resident = run_json(*LONG)
    assert code == 1 and resident["verdict"] == "over"
    code, anon = run_json(*LONG, "--judge", "non-reclaimable")
    p = anon["memory"]["process"]
    assert (p["judged"], p["judged_bytes"]) == ("non_reclaimable", p["non_reclaimable_bytes"])
    assert anon["memory"]["headroom_bytes"] == anon["memory"]["budget_bytes"] - p["non_reclaimable_bytes"]
    assert anon["verdict"] in ("fit", "tight") and code == 0
    assert "headroom of the non-reclaimable part" in run(*LONG, "--judge", "non-reclaimable").stdout


def test_max_ctx_follows_the_judged_figure(run_json):
    _, resident = run_json(*LONG)
    _, anon = run_json(*LONG, "--judge", "non-reclaimable")
    assert resident["max_ctx"] < anon["max_ctx"]


def test_the_older_build_reserves_a_micro_batch_of_logits(run_json):
    _, new = run_json(*BASE)
    _, old = run_json(*BASE, "--llamacpp-build", "0c1e57098")
    assert old["memory"]["process"]["llamacpp_build"] == "0c1e57098"
    # 0c1e57098 reserves the logits of 512 tokens, 128,256 · 512 · 4 = 262,668,288 B: the buffer holds at least that
    # one tensor; build 11434 keeps one row (513,024 B), and its buffer is below that size
    assert old["runtime"]["compute_buffer_bytes"] >= 262_668_288 > new["runtime"]["compute_buffer_bytes"]
    _, numbered = run_json(*BASE, "--llamacpp-build", "11434")  # a bare build number
    assert numbered["memory"]["process"]["llamacpp_build"] == "b11434"


def test_a_short_prompt_touches_less_of_the_compute_buffer(run_json):
    _, full = run_json(*BASE)
    _, short = run_json(*BASE, "--prompt-tokens", "36")
    assert short["memory"]["process"]["compute_reserved_bytes"] == full["runtime"]["compute_buffer_bytes"]
    assert short["memory"]["buffers_bytes"] < full["memory"]["buffers_bytes"]


@pytest.mark.parametrize("args, fragment", [
    (("--llamacpp-build", "b9999"), "--llamacpp-build"),
    (("--judge", "swap"), "--judge"),
    (("--prompt-tokens", "0"), "--prompt-tokens"),
])
def test_bad_process_options_are_one_line_and_exit_2(run, args, fragment):
    result = run(*BASE, *args)
    assert result.exit_code == 2
    assert fragment in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_process_options_need_llamacpp(run):
    result = run("check", "--device", "pixel8", "--model", "7b", "--ctx", "4k", "--no-mmap")
    assert result.exit_code == 2 and "--mmap" in result.stderr and "--runtime llama.cpp" in result.stderr


def test_the_gate_judges_the_key_it_is_given(run, tmp_path):
    gate = tmp_path / "gate.yaml"
    gate.write_text(textwrap.dedent("""\
        configurations:
          - name: resident
            device: pixel8
            model: llama-3.1-8b
            weight_type: q4_0
            ctx: 16k
            runtime: {name: llama.cpp, repack: false}
            must_fit: true
          - name: anon
            device: pixel8
            model: llama-3.1-8b
            weight_type: q4_0
            ctx: 16k
            runtime: {name: llama.cpp, judge: non_reclaimable, build: 11434, mmap: true, repack: false}
            must_fit: true
        """))
    result = run("gate", gate, "--format", "json")
    assert result.exit_code == 1
    import json

    doc = json.loads(result.stdout)
    verdicts = {c["name"]: c["passed"] for c in doc["configurations"]}
    assert verdicts == {"resident": False, "anon": True}


def test_a_bad_judge_in_a_gate_file_names_its_line(run, tmp_path):
    gate = tmp_path / "gate.yaml"
    gate.write_text("configurations:\n  - name: x\n    device: pixel8\n    model: 7b\n    ctx: 4k\n"
                    "    runtime: {name: llama.cpp, judge: swap}\n")
    result = run("gate", gate)
    assert result.exit_code == 2
    assert "gate.yaml:6" in result.stderr and "judge" in result.stderr
