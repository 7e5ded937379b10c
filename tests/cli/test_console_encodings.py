"""A console that cannot encode kvplan's symbols (—, ×, ≥, →) gets them spelled in ASCII, never an encoding
error after the work is done (exit 3)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


@pytest.mark.parametrize("encoding", ["ascii", "cp1252", "latin-1"])
@pytest.mark.parametrize("args", [["check", "-d", "pixel8", "-m", "7b", "-c", "8k"],
                                  ["check", "-d", "pixel8", "-m", "7b", "-c", "8k", "--format", "markdown"],
                                  ["fit", "-d", "pixel8", "-m", "7b", "-c", "8k", "--target-tok-s", "5"]])
def test_tables_print_on_a_narrow_console(tmp_path, encoding, args):
    env = {**os.environ, "PYTHONIOENCODING": encoding, "KVPLAN_CACHE_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", "kvplan", *args], capture_output=True, env=env)
    assert done.returncode == 1, done.stderr  # over budget, as on any console
    text = done.stdout.decode(encoding)
    assert "llama-2-7b at 8,192 tokens" in text and "Traceback" not in done.stderr.decode(encoding)
    if encoding == "ascii":
        assert "pixel8 x llama-2-7b at 8,192 tokens - OVER" in text
