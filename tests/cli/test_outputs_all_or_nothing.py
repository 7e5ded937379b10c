"""A command writes all its output files or none: a failure while writing one of them (a full disk on the Nth
file, a plot folder that cannot be made) leaves none of the others, no temporary file and no folder it made.

Before: `check --plot-dir /proc/kvp -o res.json` left res.json; `report -o r.md` on a full disk left r_files/ with
its PNGs and no report; `check --plot-dir d -o c.json` left c.json and one of three plots.
"""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest

from tests.conftest import DATA, REF_7B, REF_PHONE

CHECK = ["check", "--device", REF_PHONE, "--model", REF_7B, "--ctx", "4k"]
GATE = DATA / "gate" / "pass" / "ref-4k.yaml"


def _everything(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.fixture
def disk_full_on(monkeypatch):
    """``disk_full_on(n)``: the n-th file written (1-based) fails with ENOSPC after writing part of itself."""
    from kvplan.files import outfiles
    from kvplan.plots import save

    original = outfiles.write_atomic

    def arm(n: int):
        calls = []

        def failing(path, produce, **options):
            calls.append(path)
            if len(calls) != n:
                return original(path, produce, **options)

            def partial(tmp):
                tmp.write_bytes(b"half a file")
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return original(path, partial, **options)

        monkeypatch.setattr(outfiles, "write_atomic", failing)
        monkeypatch.setattr(save, "write_atomic", failing)
        return calls
    return arm


@pytest.mark.skipif(not Path("/proc/self").exists(), reason="needs /proc (a folder nothing can be made in)")
def test_a_plot_folder_that_cannot_be_made_leaves_no_json(run, tmp_path):
    result = run(*CHECK, "--plot-dir", "/proc/kvp", "-o", tmp_path / "res.json")
    assert result.exit_code == 2
    assert "/proc/kvp" in result.stderr
    assert _everything(tmp_path) == []


@pytest.mark.parametrize("n", [1, 2, 3, 4])  # -o c.json is the 1st file written, then the three plots
def test_check_with_a_full_disk_on_any_file_writes_none(run, tmp_path, disk_full_on, n):
    calls = disk_full_on(n)
    result = run(*CHECK, "--plot-dir", tmp_path / "plots", "-o", tmp_path / "c.json")
    assert result.exit_code == 2, result.stderr
    assert "No space left on device" in result.stderr
    assert "wrote" not in result.stderr
    assert len(calls) == n  # it stops at the failing file
    assert _everything(tmp_path) == []  # no c.json, no plot, no temporary file, no plots/ folder


def test_check_with_room_writes_all_four(run, tmp_path, disk_full_on):
    disk_full_on(99)
    result = run(*CHECK, "--plot-dir", tmp_path / "plots", "-o", tmp_path / "c.json")
    assert result.exit_code == 0, result.stderr
    assert _everything(tmp_path) == ["c.json", "plots", "plots/kvplan-attention.png", "plots/kvplan-decode.png",
                                     "plots/kvplan-memory.png"]
    assert result.stderr.count("kvplan: note: wrote") == 4
    assert json.loads((tmp_path / "c.json").read_text())["verdict"] == "fit"


@pytest.mark.parametrize("n", [1, 2])  # the PNG, then the report
def test_report_on_a_full_disk_leaves_no_files_folder(run, tmp_path, disk_full_on, n):
    disk_full_on(n)
    result = run("report", GATE, "-o", tmp_path / "r.md")
    assert result.exit_code == 2, result.stderr
    assert _everything(tmp_path) == []  # neither r.md nor r_files/ (with its PNG)


def test_an_existing_file_is_kept_when_a_later_output_fails(run, tmp_path, disk_full_on):
    (tmp_path / "c.json").write_text("previous\n")
    disk_full_on(2)
    result = run(*CHECK, "--plot-dir", tmp_path / "plots", "-o", tmp_path / "c.json")
    assert result.exit_code == 2
    assert (tmp_path / "c.json").read_text() == "previous\n"
    assert _everything(tmp_path) == ["c.json"]


def test_gate_with_three_reports_writes_all_or_none(run, tmp_path, disk_full_on):
    disk_full_on(3)
    outputs = ["--json", tmp_path / "g.json", "--junit", tmp_path / "g.xml", "--markdown", tmp_path / "g.md"]
    result = run("gate", GATE, *outputs)
    assert result.exit_code == 2
    assert _everything(tmp_path) == []
    disk_full_on(99)
    result = run("gate", GATE, *outputs)
    assert result.exit_code == 0, result.stderr
    assert _everything(tmp_path) == ["g.json", "g.md", "g.xml"]
