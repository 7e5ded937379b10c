"""`kvplan profiles probe` and `--device this`: a profile of the machine the tests run on."""

from __future__ import annotations

import subprocess
import sys

import yaml


def kvplan(*args, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kvplan", *map(str, args)], capture_output=True, text=True,
                          timeout=300, check=False, cwd=cwd)


def test_probe_quick_to_a_file_then_check_with_it(tmp_path):
    out = tmp_path / "me.yaml"
    done = kvplan("profiles", "probe", "--quick", "-o", out, "--name", "me")
    assert done.returncode == 0, done.stderr
    assert "probe: measuring memory bandwidth" in done.stderr  # progress on stderr
    data = yaml.safe_load(out.read_text())
    assert data["name"] == "me" and {"ram", "memory_bandwidth", "flash_read"} <= set(data["sources"])
    assert kvplan("profiles", "validate", out).returncode == 0
    check = kvplan("check", "--device", out, "--model", "7b", "--ctx", "4k")
    assert check.returncode in (0, 1), check.stderr
    # an existing file is not overwritten without --force
    again = kvplan("profiles", "probe", "--quick", "-o", out)
    assert again.returncode == 2 and "--force" in again.stderr
    assert kvplan("profiles", "probe", "--quick", "-o", out, "--force").returncode == 0


def test_probe_to_stdout_and_device_this():
    done = kvplan("profiles", "probe", "--quick")
    assert done.returncode == 0 and yaml.safe_load(done.stdout)["platform"] in ("linux", "macos", "windows")
    check = kvplan("check", "--device", "this", "--model", "7b", "--ctx", "4k")
    assert check.returncode in (0, 1), check.stderr
    assert "device 'this'" in check.stderr
