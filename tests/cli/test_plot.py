"""``kvplan plot KIND`` and ``kvplan check --plot/--plot-dir`` through the CLI."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import REF_7B, REF_PHONE

PNG = b"\x89PNG\r\n\x1a\n"


def _is_svg(path) -> bool:
    import xml.etree.ElementTree as ET

    return ET.parse(path).getroot().tag == "{http://www.w3.org/2000/svg}svg"


@pytest.mark.parametrize("args", [
    ("memory", "--device", "pixel8", "--model", "7b"),
    ("attention", "--model", "7b"),
    ("decode", "--device", "pixel8", "--model", "7b"),
    ("fitmap", "--device", "pixel8", "--device", "iphone-15-pro", "--model", "7b", "--model", "llama-3.2-3b"),
])
def test_issue_commands_write_png_and_svg(run, tmp_path, monkeypatch, args):
    monkeypatch.chdir(tmp_path)
    kind = args[0]
    result = run("plot", *args)  # default file name
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "" and result.stderr == f"kvplan: note: wrote kvplan-{kind}.png\n"
    assert (tmp_path / f"kvplan-{kind}.png").read_bytes().startswith(PNG)
    result = run("plot", *args, "-o", f"{kind}.svg")
    assert result.exit_code == 0, result.stderr
    assert _is_svg(tmp_path / f"{kind}.svg")


def test_check_plot_dir_writes_the_matching_set(run, tmp_path):
    out = tmp_path / "out"  # created on demand
    result = run("check", "--device", "pixel8", "--model", "7b", "--ctx", "8192", "--plot-dir", out,
                 "--plot", tmp_path / "summary.pdf", "--format", "json")
    assert result.exit_code == 1  # over, as without plots
    assert result.stdout.lstrip().startswith("{")  # notes go to stderr, stdout stays JSON
    assert sorted(p.name for p in out.iterdir()) == ["kvplan-attention.png", "kvplan-decode.png",
                                                    "kvplan-memory.png"]
    assert all(p.read_bytes().startswith(PNG) for p in out.iterdir())
    assert (tmp_path / "summary.pdf").read_bytes().startswith(b"%PDF-")
    assert "kvplan: note: wrote" in result.stderr


@pytest.mark.parametrize("bad, message", [
    ("x.gif", "unknown plot extension .gif; use .png, .svg, .pdf"),
    ("missing/x.png", "folder"),
])
def test_bad_plot_path_fails_before_computing(run, tmp_path, bad, message):
    # the model does not exist: had the command computed first, the error would be about the model
    result = run("check", "--device", REF_PHONE, "--model", "no-such-model", "--ctx", "8k",
                 "--plot", tmp_path / bad)
    assert result.exit_code == 2
    assert message in result.stderr and "no-such-model" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    result = run("plot", "memory", "--device", REF_PHONE, "--model", "no-such-model", "-o", tmp_path / bad)
    assert result.exit_code == 2 and message in result.stderr


def test_plot_dir_that_is_a_file_is_an_error(run, tmp_path):
    (tmp_path / "f").write_text("")
    result = run("check", "--device", REF_PHONE, "--model", REF_7B, "--ctx", "4k", "--plot-dir", tmp_path / "f")
    assert result.exit_code == 2 and "is not a folder" in result.stderr


def test_plot_options(run, tmp_path):
    # SVG keeps its text, so the options' effects can be read back from the file itself
    path = tmp_path / "d.svg"
    result = run("plot", "decode", "--device", REF_PHONE, "--model", REF_7B, "--model", "7b", "--ctx", "4k",
                 "--ctx-max", "16k", "--target-tok-s", "10", "-o", path)
    assert result.exit_code == 0, result.stderr
    assert "target 10 tok/s" in path.read_text()
    path = tmp_path / "m.svg"
    result = run("plot", "memory", "--device", REF_PHONE, "--model", REF_7B, "--units", "iec", "--kv-type", "q8_0",
                 "-o", path)
    assert result.exit_code == 0, result.stderr
    text = path.read_text()
    assert "memory [GiB]" in text and "q8_0" in text and "memory [GB]" not in text
    result = run("plot", "fitmap", "--device", REF_PHONE, "--model", REF_7B, "--ctx", "8k", "-o", path)
    assert result.exit_code == 0, result.stderr
    result = run("plot", "memory", "--device", REF_PHONE, "--model", REF_7B, "--ctx-max", "8", "-o", path)
    assert result.exit_code == 2 and "--ctx-max" in result.stderr


def test_plotting_costs_nothing_without_plot():
    code = ("import sys, kvplan.cli.app, kvplan.cli.plot, kvplan.cli.check;"
            "assert 'matplotlib' not in sys.modules and 'numpy' not in sys.modules, 'heavy import'")
    subprocess.run([sys.executable, "-c", code], check=True)
    code = ("import sys; from typer.testing import CliRunner; from kvplan.cli.app import app;"
            f"r = CliRunner().invoke(app, ['check', '-d', {str(REF_PHONE)!r}, '-m', {str(REF_7B)!r}, '-c', '4k']);"
            "assert r.exit_code == 0, r.output;"
            "assert 'matplotlib' not in sys.modules, 'check without --plot imported matplotlib'")
    subprocess.run([sys.executable, "-c", code], check=True)
