"""Plots and reports under transformers' StaticCache: the context axis ends at --max-cache-len (no ctx past it)."""

from __future__ import annotations

import pytest

from tests.conftest import DATA

pytest.importorskip("matplotlib")

STATIC = ("--runtime", "transformers", "--cache", "static", "--max-cache-len", "16k")
ISSUE = ("-d", "pixel8", "-m", "gemma-3-4b", "-c", "8k", *STATIC)  # the reported configuration
PNG = b"\x89PNG\r\n\x1a\n"


def test_check_plot_dir_and_summary(run, tmp_path):
    result = run("check", *ISSUE, "--plot-dir", tmp_path / "pd", "--plot", tmp_path / "summary.png")
    assert result.exit_code == 0, result.stderr
    for name in ("kvplan-memory.png", "kvplan-decode.png", "kvplan-attention.png"):
        assert (tmp_path / "pd" / name).read_bytes().startswith(PNG)
    assert (tmp_path / "summary.png").read_bytes().startswith(PNG)


@pytest.mark.parametrize("kind", ["memory", "decode", "attention"])
def test_each_plot_kind(run, tmp_path, kind):
    out = tmp_path / f"{kind}.png"
    result = run("plot", kind, *ISSUE, "-o", out)
    assert result.exit_code == 0, result.stderr
    assert out.read_bytes().startswith(PNG)


def test_ctx_max_past_the_limit_is_cut(run, tmp_path):
    out = tmp_path / "m.png"
    result = run("plot", "memory", *ISSUE, "--ctx-max", "64k", "-o", out)
    assert result.exit_code == 0, result.stderr


def test_overlaid_decode_with_the_limit(run, tmp_path):
    out = tmp_path / "d.png"
    result = run("plot", "decode", "-d", "pixel8", "-m", "gemma-3-4b", "-m", "gemma-3-1b", "-c", "4k", *STATIC,
                 "-o", out)
    assert result.exit_code == 0, result.stderr


@pytest.mark.parametrize("ext", ["md", "html"])
def test_report_of_a_static_cache_gate_file(run, tmp_path, ext):
    out = tmp_path / f"x.{ext}"
    result = run("report", DATA / "plots" / "static-cache-gate.yaml", "-o", out)
    assert result.exit_code == 0, result.stderr
    if ext == "md":
        assert (tmp_path / "x_files" / "static-2k.png").read_bytes().startswith(PNG)
        # the check table: 1.75e9 + 4,096 preallocated × 524,288 = 3,897,483,648 B (no second cache for the
        # 0-token pinned prefix)
        assert "3,897,483,648 B" in out.read_text()
