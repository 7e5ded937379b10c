"""`kvplan profiles probe` and `--device this`: a profile of the machine the tests run on, and its cache."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml


@pytest.fixture
def env(tmp_path) -> dict:
    """kvplan's cache in a fresh folder: the probe cache of one test is not another's."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("KVPLAN_")}
    return {**base, "KVPLAN_CACHE_DIR": str(tmp_path / "cache"), "COLUMNS": "120", "NO_COLOR": "1"}


def kvplan(env: dict, *args, cwd=None, **extra) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kvplan", *map(str, args)], capture_output=True, text=True,
                          timeout=300, check=False, cwd=cwd, env={**env, **extra})


def test_probe_quick_to_a_file_then_check_with_it(env, tmp_path):
    out = tmp_path / "me.yaml"
    done = kvplan(env, "profiles", "probe", "--quick", "-o", out, "--name", "me")
    assert done.returncode == 0, done.stderr
    for step in ("probe: measuring memory bandwidth: copy", "probe: measuring memory bandwidth: triad",
                 "probe: measuring compute"):
        assert step in done.stderr  # progress on stderr
    assert "writing a 512 MiB" not in done.stderr  # --quick skips the disk
    data = yaml.safe_load(out.read_text())
    assert data["name"] == "me" and {"ram", "memory_bandwidth", "compute", "flash_read"} <= set(data["sources"])
    assert data["compute_efficiency"] == 1
    assert kvplan(env, "profiles", "validate", out).returncode == 0
    check = kvplan(env, "check", "--device", out, "--model", "7b", "--ctx", "4k")
    assert check.returncode in (0, 1), check.stderr
    assert "time to first token" in check.stdout  # compute is measured, so prefill is priced
    # an existing file is not overwritten without --force
    again = kvplan(env, "profiles", "probe", "--quick", "-o", out)
    assert again.returncode == 2 and "--force" in again.stderr
    assert kvplan(env, "profiles", "probe", "--quick", "-o", out, "--force").returncode == 0


def _shown(env, **extra) -> tuple[dict, str]:
    done = kvplan(env, "profiles", "show", "this", "--format", "json", **extra)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), done.stderr


def test_device_this_probes_once_then_reads_the_cache(env):
    first, note = _shown(env)
    assert "probed now" in note and "kept in kvplan's probe cache" in note
    second, note = _shown(env)
    assert "from kvplan's probe cache" in note and "probed now" not in note
    assert second == first  # the same measurement, not a new one
    check = kvplan(env, "check", "--device", "this", "--model", "7b", "--ctx", "4k")
    assert check.returncode in (0, 1), check.stderr
    assert "from kvplan's probe cache" in check.stderr and first["name"] in check.stdout


def test_profiles_probe_refreshes_this(env, tmp_path):
    before, _ = _shown(env)
    out = tmp_path / "me.yaml"
    done = kvplan(env, "profiles", "probe", "--quick", "-o", out, "--name", "mine")
    assert done.returncode == 0 and "'--device this' now uses it" in done.stderr, done.stderr
    after, note = _shown(env)
    assert "from kvplan's probe cache" in note
    written = yaml.safe_load(out.read_text())
    # 'this' is now exactly the profile just written, under the default name
    assert after["name"] == before["name"] != "mine"
    assert after["sources"] == written["sources"] and after["sources"]["probe"] != before["sources"]["probe"]
    from kvplan.units import parse_rate_bytes_per_s

    assert after["memory_bandwidth_bytes_per_s"] == parse_rate_bytes_per_s(written["memory_bandwidth"])


def test_no_cache_means_this_probes_every_run(env):
    first, note = _shown(env, KVPLAN_NO_CACHE="1")
    assert "KVPLAN_NO_CACHE is set" in note
    _second, note = _shown(env, KVPLAN_NO_CACHE="1")
    assert "probed now" in note
    assert not os.path.exists(os.path.join(env["KVPLAN_CACHE_DIR"], "probe"))


def test_probe_to_stdout_and_device_this(env):
    done = kvplan(env, "profiles", "probe", "--quick")
    assert done.returncode == 0 and yaml.safe_load(done.stdout)["platform"] in ("linux", "macos", "windows")
    check = kvplan(env, "check", "--device", "this", "--model", "7b", "--ctx", "4k")
    assert check.returncode in (0, 1), check.stderr
    assert "device 'this'" in check.stderr
