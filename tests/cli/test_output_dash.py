"""`-o -` is standard output, as Unix tools read it — never a file named '-'. A binary plot to a terminal is refused
(exit 2, before any work); to a pipe its bytes are written. The command's own table is not printed as well."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import DATA, REF_7B, REF_PHONE

PAIR = ["--device", REF_PHONE, "--model", REF_7B]
GATE = DATA / "gate" / "pass" / "ref-4k.yaml"
HF = DATA / "hf_configs" / "qwen3-0.6b.json"


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_check_json_to_standard_output(run, in_tmp):
    result = run("check", *PAIR, "--ctx", "4k", "--format", "json", "-o", "-")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["kv_bytes_per_token"] == 524_288  # 2 · 32 layers · 32 heads · 128 · 2 B
    assert "wrote" not in result.stderr
    assert list(in_tmp.iterdir()) == []


@pytest.mark.parametrize("argv, start", [
    (["sweep", "-d", "pixel8", "-m", "7b", "-c", "1k,4k", "--format", "csv", "-o", "-"], "device,model,ctx,"),
    (["import", "hf", str(HF), "-o", "-"], "# Model profile imported by 'kvplan import hf'"),
    (["gate", str(GATE), "--json", "-"], "{"),
    (["gate", str(GATE), "--markdown", "-"], "#"),
    (["report", str(GATE), "-o", "-"], "# Design review: ref-4k.yaml"),
    (["calibrate", str(DATA.parent.parent / "examples" / "llama-bench-m2.json"), "-o", "-"],
     "# Written by kvplan calibrate"),
])
def test_every_command_with_an_output_file_takes_dash(run, in_tmp, argv, start):
    result = run(*argv)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith(start), result.stdout[:200]
    assert list(in_tmp.iterdir()) == []


def test_gate_json_to_stdout_is_the_only_thing_there(run, in_tmp):
    result = run("gate", GATE, "--json", "-")
    assert json.loads(result.stdout)["passed"] is True  # no table before it


def test_standard_output_twice_is_refused(run, in_tmp):
    result = run("gate", GATE, "--json", "-", "--markdown", "-")
    assert result.exit_code == 2
    assert "standard output given for more than one output" in result.stderr


def test_a_plot_to_a_pipe_is_its_png_bytes(in_tmp):
    done = subprocess.run([sys.executable, "-m", "kvplan", "plot", "memory", *map(str, PAIR), "-o", "-"],
                          capture_output=True, cwd=in_tmp)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(b"\x89PNG\r\n\x1a\n")
    assert list(in_tmp.iterdir()) == []


@pytest.mark.skipif(os.name != "posix", reason="a pseudo-terminal")
def test_a_plot_to_a_terminal_is_refused_politely(in_tmp):
    import pty

    leader, follower = pty.openpty()
    try:
        done = subprocess.run([sys.executable, "-m", "kvplan", "plot", "memory", *map(str, PAIR), "-o", "-"],
                              stdout=follower, stderr=subprocess.PIPE, cwd=in_tmp, timeout=60)
    finally:
        os.close(follower)
        os.close(leader)
    assert done.returncode == 2
    assert done.stderr.decode().strip() == ("kvplan: error: -: this output is binary and standard output is a "
                                            "terminal: pipe it (-o - | display) or give a file name")
    assert list(in_tmp.iterdir()) == []
