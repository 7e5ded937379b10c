"""A reader that leaves before kvplan writes (``kvplan check … | true``) silences the output, not the command:
the plot is still written and the exit code is still the verdict's (a failing gate must fail under pipefail)."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash for the pipe")


def _exit_before_reader(args: list[str], tmp_path) -> int:
    command = " ".join(shlex.quote(a) for a in [sys.executable, "-m", "kvplan", *args])
    done = subprocess.run(["bash", "-c", f"{command} | true; exit ${{PIPESTATUS[0]}}"], capture_output=True,
                          env={**os.environ, "KVPLAN_CACHE_DIR": str(tmp_path / "cache")}, cwd=tmp_path)
    assert b"Traceback" not in done.stderr, done.stderr
    return done.returncode


def test_an_over_verdict_keeps_exit_1_and_its_plot(tmp_path):
    plot = tmp_path / "p.png"
    assert _exit_before_reader(["check", "-d", "pixel8", "-m", "7b", "-c", "8k", "--plot", str(plot)], tmp_path) == 1
    assert plot.exists()


def test_a_failing_gate_keeps_exit_1(tmp_path):
    gate = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "release-failing.yaml")
    assert _exit_before_reader(["gate", os.path.abspath(gate), "--format", "json"], tmp_path) == 1
