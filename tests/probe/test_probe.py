"""``probe_device``: this machine's profile — RAM as the OS reports it, measured bandwidth and flash, valid YAML."""

from __future__ import annotations

import math
import os
import subprocess
import sys

import pytest
import yaml

from kvplan.probe import probe_device
from kvplan.probe.device import DEFAULT_FLASH_READ, os_reserve_rule


def _load_device(path):
    try:
        from kvplan.profiles.catalog import load_profile
    except ImportError:  # the layout before kvplan.profiles became a package
        from kvplan.catalog import load_profile
    return load_profile("device", path)


def _os_ram() -> int:
    if sys.platform.startswith("linux"):
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


@pytest.fixture(scope="module")
def full():
    messages: list[str] = []
    return probe_device(quick=False, progress=messages.append), messages


@pytest.fixture(scope="module")
def quick():
    return probe_device(quick=True, progress=None)


def _write(tmp_path, profile, name="this.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(profile, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path


def test_full_probe_is_a_valid_device_profile(full, tmp_path):
    profile, messages = full
    device = _load_device(_write(tmp_path, profile))
    assert abs(device.ram - _os_ram()) <= 0.10 * _os_ram()
    assert device.os_reserve == os_reserve_rule(profile["platform"], device.ram)[0] or \
        abs(device.os_reserve - os_reserve_rule(profile["platform"], device.ram)[0]) < 0.01 * device.ram
    for rate in (device.memory_bandwidth, device.flash_read):
        assert math.isfinite(rate) and rate > 0
    assert device.platform in ("linux", "macos", "windows")
    for field in ("ram", "os_reserve", "memory_bandwidth", "flash_read"):
        assert profile["sources"][field], field
    assert "measured" in profile["sources"]["memory_bandwidth"] and "best of" in profile["sources"]["memory_bandwidth"]
    assert any("memory bandwidth" in m for m in messages)  # progress was reported


def test_flash_is_measured_past_the_page_cache_or_says_why_not(full):
    profile, _ = full
    how = profile["sources"]["flash_read"]
    if how.startswith("measured"):
        assert "O_DIRECT" in how or "POSIX_FADV_DONTNEED" in how
        # page-cache speed would be near memory speed; the probe refuses anything above half of it
        assert _load_rate(profile["flash_read"]) <= _load_rate(profile["memory_bandwidth"]) / 2
        assert "flash_write" in profile
    else:
        assert "default" in how


def _load_rate(text: str) -> float:
    from kvplan.units import parse_rate_bytes_per_s

    return parse_rate_bytes_per_s(text)


def test_quick_probe_skips_the_disk(quick, tmp_path):
    device = _load_device(_write(tmp_path, quick))
    assert device.flash_read == DEFAULT_FLASH_READ
    assert "not measured (quick probe)" in quick["sources"]["flash_read"]
    assert "flash_write" not in quick
    assert device.memory_bandwidth > 0


def test_os_reserve_rules():
    GiB = 2**30
    assert os_reserve_rule("linux", 8 * GiB)[0] == GiB  # the 1 GiB floor
    assert os_reserve_rule("linux", 64 * GiB)[0] == 64 * GiB // 10
    assert os_reserve_rule("macos", 16 * GiB)[0] == 16 * GiB // 3
    assert os_reserve_rule("macos", 128 * GiB)[0] == 32 * GiB
    assert os_reserve_rule("windows", 32 * GiB)[0] == 4 * GiB


def test_kvplan_check_runs_with_the_probed_device(quick, tmp_path):
    path = _write(tmp_path, quick)
    env = {**os.environ, "KVPLAN_CACHE_DIR": str(tmp_path / "cache"), "COLUMNS": "120", "NO_COLOR": "1"}
    proc = subprocess.run([sys.executable, "-m", "kvplan", "check", "--device", str(path), "--model", "7b",
                           "--ctx", "4k"], capture_output=True, text=True, env=env, timeout=120, check=False)
    assert proc.returncode in (0, 1), proc.stderr
    assert "llama-2-7b" in proc.stdout and quick["name"] in proc.stdout
