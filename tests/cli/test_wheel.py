"""The built wheel carries the profiles: installed outside the checkout, built-in names still resolve."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_wheel_ships_the_profiles(tmp_path):
    isolation = [] if importlib.util.find_spec("hatchling") is None else ["--no-build-isolation"]
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", *isolation, "-w", str(tmp_path / "dist"),
                    str(ROOT)], check=True, capture_output=True)
    wheel = next((tmp_path / "dist").glob("kvplan-*.whl"))
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(wheel)],
                   check=True, capture_output=True)
    code = ("import kvplan.profiles.catalog as c, json; from kvplan.cli.app import main; "
            "print(c.builtin_dir('device')); print(c.builtin_dir('model'))")
    env = {**os.environ, "PYTHONPATH": str(target)}
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                         check=True).stdout.split()
    assert out[0].startswith(str(target)) and out[0].endswith("kvplan/_data/device_profiles")
    assert (Path(out[0]) / "pixel8.yaml").is_file()
    assert (Path(out[1]) / "llama-2-7b.yaml").is_file()
    check = subprocess.run([sys.executable, "-m", "kvplan", "check", "--device", "pixel8", "--model", "7b", "--ctx",
                            "8192", "--format", "json"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert check.returncode == 1, check.stderr
    assert '"kv_bytes": 4294967296' in check.stdout
