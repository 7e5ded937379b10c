"""SIGTERM (a CI timeout) and SIGHUP unwind like Ctrl-C: the temporary output file goes, the exit status is 128 + the
signal (143 for SIGTERM), as a shell reports it. Before, SIGTERM left `.big.csv.XXXX.tmp` (45 MB) behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX signals")


@pytest.mark.parametrize("name", ["SIGTERM", "SIGHUP"])
def test_a_signal_mid_write_leaves_no_temporary_file(tmp_path, name):
    number = getattr(signal, name)
    # 10⁶ rows of CSV: about 1.5 s of work after the temporary file is made, time enough to signal it.
    process = subprocess.Popen([sys.executable, "-m", "kvplan", "sweep", "--device", "pixel8", "--model", "7b",
                                "--ctx", "1..1000000", "--format", "csv", "-o", "big.csv"],
                               cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               # a runner under nohup ignores SIGHUP, and kvplan rightly keeps an ignored signal
                               # ignored: give the child the default disposition a terminal's process has
                               preexec_fn=lambda: signal.signal(number, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    while not list(tmp_path.glob(".big.csv.*.tmp")):
        assert process.poll() is None, "finished before its temporary file was seen"
        assert time.monotonic() < deadline
        time.sleep(0.005)
    process.send_signal(number)
    assert process.wait(timeout=60) == 128 + number  # 143 for SIGTERM, 129 for SIGHUP
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no temporary file, no partial big.csv
