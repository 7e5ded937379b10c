"""``kvplan sweep --plot FILE`` through the CLI: files by extension, output unchanged, bad paths before work."""

from __future__ import annotations

import csv
import io

import pytest

from tests.conftest import REF_7B, REF_PHONE

MAGIC = {"png": b"\x89PNG\r\n\x1a\n", "pdf": b"%PDF-", "svg": b"<?xml"}


def test_issue_command_writes_a_png_and_still_prints_the_table(run, tmp_path):
    path = tmp_path / "s.png"
    result = run("sweep", "--device", "pixel8", "--model", "7b", "--ctx", "1k..32k:1k", "--kv-bits", "16,8,4",
                 "--plot", path)
    assert result.exit_code == 0, result.stderr
    assert path.read_bytes().startswith(MAGIC["png"])
    assert "sweep: 96 configurations" in result.stdout  # 32 contexts × 3 cache widths
    assert f"kvplan: note: wrote {path}" in result.stderr


@pytest.mark.parametrize("ext", ["png", "svg", "pdf"])
def test_each_extension_and_csv_on_stdout(run, tmp_path, ext):
    path = tmp_path / f"grid.{ext.upper() if ext == 'pdf' else ext}"  # the extension's case does not matter
    result = run("sweep", "-d", REF_PHONE, "-m", REF_7B, "-c", "1k,4k,8k", "-n", "1,2", "-f", "csv",
                 "--plot", path, "--units", "iec")
    assert result.exit_code == 0, result.stderr
    assert path.read_bytes().startswith(MAGIC[ext])
    assert len(list(csv.DictReader(io.StringIO(result.stdout)))) == 6  # stdout stays pure CSV


def test_single_context_plots_too(run, tmp_path):
    path = tmp_path / "one.png"
    result = run("sweep", "-d", REF_PHONE, "-m", REF_7B, "-c", "8k", "--kv-bits", "16,8", "--plot", path)
    assert result.exit_code == 0, result.stderr
    assert path.read_bytes().startswith(MAGIC["png"])


@pytest.mark.parametrize("bad, message", [
    ("x.gif", "unknown plot extension .gif; use .png, .svg, .pdf"),
    ("x", "unknown plot extension (none)"),
    ("missing/x.png", "does not exist"),
])
def test_bad_plot_path_fails_before_the_grid_is_evaluated(run, tmp_path, bad, message):
    # the model does not exist: had the sweep been evaluated first, the error would be about the model
    result = run("sweep", "-d", REF_PHONE, "-m", "no-such-model", "-c", "1k..8k:1k", "--plot", tmp_path / bad)
    assert result.exit_code == 2
    assert message in result.stderr and "no-such-model" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert result.stdout == ""
    assert list(tmp_path.rglob("*")) == []  # no file, not even a temporary one


def test_no_matplotlib_without_plot():
    import subprocess
    import sys

    code = "import sys, kvplan.cli.app, kvplan.cli.sweep; print('matplotlib' in sys.modules, 'numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False False"
