"""``probe_device``: this machine's profile — RAM as the OS reports it, measured bandwidth and flash, valid YAML."""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys

import pytest
import yaml

from kvplan.probe import probe_device
from kvplan.probe.compute import Compute
from kvplan.probe.device import COMPUTE_EFFICIENCY, DEFAULT_FLASH_READ, os_reserve_rule
from kvplan.probe.memory import Bandwidth, array_bytes_for, triad_block

GiB, MiB = 2**30, 2**20


def _load_device(path):
    from kvplan.profiles.catalog import load_profile

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
    assert math.isfinite(device.compute) and device.compute > 0
    assert device.compute_efficiency == COMPUTE_EFFICIENCY == 1.0 and profile["sources"]["compute_efficiency"]
    steps = " | ".join(messages)  # progress was reported, step by step
    for step in ("memory bandwidth: copy", "memory bandwidth: triad", "compute: float32", "writing a 512 MiB"):
        assert step in steps, step


def test_bandwidth_is_the_larger_of_copy_and_triad(full):
    profile, _ = full
    how = profile["sources"]["memory_bandwidth"]
    copy, triad = (float(re.search(rf"{k} ([0-9.]+) GB/s", how).group(1)) for k in ("copy", "triad"))
    assert copy > 0 and triad > 0
    used = "triad" if triad >= copy else "copy"
    assert f"the profile uses the {used} figure" in how and "lower bound" in how
    assert _load_rate(profile["memory_bandwidth"]) == pytest.approx(max(copy, triad) * 1e9, abs=0.005e9)


def test_compute_says_what_was_measured(full):
    profile, _ = full
    how = profile["sources"]["compute"]
    n = int(re.search(r"numpy\.matmul of two (\d+) × \1 float32", how).group(1))
    assert 512 <= n <= 4096 and f"2 × {n}³ = {2 * n**3:,} FLOP per product" in how
    assert "float16 not used" in how and "probed " in how
    gflops = float(re.search(r"after a warm-up: ([0-9.,]+) GFLOP/s", how).group(1).replace(",", ""))
    from kvplan.units import parse_flop_per_s

    assert parse_flop_per_s(profile["compute"]) == pytest.approx(gflops * 1e9, rel=1e-3)


def test_array_and_block_sizing_rules():
    # ≥ 8 × LLC and ≥ 256 MiB: 8 × 32 MiB = 256 MiB; 8 × 64 MiB = 512 MiB; 8 × 256 MiB = 2 GiB, capped at 1 GiB
    assert array_bytes_for(32 * MiB, 22 * GiB) == 256 * MiB
    assert array_bytes_for(64 * MiB, None) == 512 * MiB
    assert array_bytes_for(256 * MiB, None) == GiB
    # three arrays ≤ 1/4 of the free memory: 1,200 MiB free → 1,200 MiB / 12 = 100 MiB each
    assert array_bytes_for(32 * MiB, 1200 * MiB) == 100 * MiB
    # never below 64 MiB: 600 MiB / 12 = 50 MiB → 64 MiB
    assert array_bytes_for(32 * MiB, 600 * MiB) == 64 * MiB
    # triad blocks: LLC / (2 halves × 3 arrays × 8 B × threads), within 16,384 … 262,144 elements
    assert triad_block(32 * MiB, 16) == 33_554_432 // 768 == 43_690
    assert triad_block(32 * MiB, 2) == 262_144  # 33,554,432 / 96 = 349,525 → the cap
    assert triad_block(8 * MiB, 16) == 16_384  # 8,388,608 / 768 = 10,922 → the floor


def test_bandwidth_result_names_the_kernel_it_uses():
    both = dict(threads=4, array_bytes=256 * MiB, block_elements=65_536, llc_bytes=32 * MiB, llc_source="test",
                repeats=5)
    triad_wins = Bandwidth(copy_bytes_per_s=10e9, triad_bytes_per_s=12e9, **both)
    assert triad_wins.kernel == "triad" and triad_wins.bytes_per_s == 12e9
    how = triad_wins.how()
    assert "copy 10.00 GB/s, triad 12.00 GB/s" in how and "uses the triad figure" in how
    # 256 MiB / 8 B = 33,554,432 elements: copy counts 2 × that × 8 B, triad 3 ×
    assert "copy 2 × 33,554,432 × 8 B, triad 3 × 33,554,432 × 8 B" in how and "8 × the 32 MiB" in how
    copy_wins = Bandwidth(copy_bytes_per_s=12e9, triad_bytes_per_s=10e9, **both)
    assert copy_wins.kernel == "copy" and copy_wins.bytes_per_s == 12e9


def test_compute_result_text():
    c = Compute(float32_flop_per_s=123.4e9, n=1024, repeats=5, float16_flop_per_s=0.5e9, float16_n=128,
                blas="scipy-openblas 0.3.27")
    # 2 × 1024³ = 2,147,483,648
    assert "2 × 1024³ = 2,147,483,648 FLOP per product, best of 5" in c.how() and "123.4 GFLOP/s" in c.how()
    assert "(scipy-openblas 0.3.27, its default threads)" in c.how()
    assert "128 × 128 float16 matrices ran at 0.50 GFLOP/s" in c.float16_how()


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
    assert device.memory_bandwidth > 0 and device.compute > 0  # quick skips the disk only


def test_os_reserve_rules():
    GiB = 2**30
    assert os_reserve_rule("linux", 8 * GiB)[0] == GiB  # the 1 GiB floor
    assert os_reserve_rule("linux", 64 * GiB)[0] == 64 * GiB // 10
    assert os_reserve_rule("macos", 16 * GiB)[0] == 16 * GiB // 3
    assert os_reserve_rule("macos", 128 * GiB)[0] == 32 * GiB
    assert os_reserve_rule("windows", 32 * GiB)[0] == 4 * GiB


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    from kvplan.profiles import cache as profile_cache

    monkeypatch.setenv("KVPLAN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("KVPLAN_NO_CACHE", raising=False)
    profile_cache.cache_dir.cache_clear()  # it is read once a process
    yield tmp_path / "cache"
    profile_cache.cache_dir.cache_clear()


def test_probe_cache_is_keyed_by_the_machine(cache_dir, monkeypatch):
    from kvplan.probe import cache as probe_cache
    from kvplan.probe.system import cpu_count, installed_ram

    key = probe_cache.machine_key()
    assert key["ram_bytes"] == installed_ram()[0] and key["cpus"] == cpu_count()
    path = probe_cache.store({"yaml_text": "x", "n": 1}, key)
    assert path is not None and path.parent == cache_dir / "probe"
    assert probe_cache.load(key) == {"yaml_text": "x", "n": 1}
    assert probe_cache.load() == {"yaml_text": "x", "n": 1}  # the key of this machine, now
    # 1 byte more RAM, another CPU count, a new probe code: the entry is not this machine's probe any more
    for change in ({"ram_bytes": key["ram_bytes"] + 1}, {"cpus": key["cpus"] + 1}, {"code": "other"}):
        assert probe_cache.load({**key, **change}) is None, change
    # a probe under a changed key replaces the file rather than piling up beside it
    probe_cache.store({"n": 2}, {**key, "ram_bytes": key["ram_bytes"] + 1})
    assert list((cache_dir / "probe").iterdir()) == [path] and probe_cache.load(key) is None
    # another machine (another host name) has its own file
    probe_cache.store({"n": 3}, {**key, "host": "elsewhere"})
    assert len(list((cache_dir / "probe").iterdir())) == 2
    monkeypatch.setenv("KVPLAN_NO_CACHE", "1")
    assert probe_cache.folder() is None and probe_cache.store({"n": 4}) is None and probe_cache.load() is None


def test_kvplan_check_runs_with_the_probed_device(quick, tmp_path):
    path = _write(tmp_path, quick)
    env = {**os.environ, "KVPLAN_CACHE_DIR": str(tmp_path / "cache"), "COLUMNS": "120", "NO_COLOR": "1"}
    proc = subprocess.run([sys.executable, "-m", "kvplan", "check", "--device", str(path), "--model", "7b",
                           "--ctx", "4k"], capture_output=True, text=True, env=env, timeout=120, check=False)
    assert proc.returncode in (0, 1), proc.stderr
    assert "llama-2-7b" in proc.stdout and quick["name"] in proc.stdout
