"""Realistic decode speed: a device's bandwidth_efficiency scales the roofline; both are reported."""

from __future__ import annotations

import pytest

from tests.conftest import DATA, REF_7B

HALF_PHONE = DATA / "profiles_cmd" / "half-phone.yaml"


def test_json_gives_both_rates(run_json):
    code, doc = run_json("check", "--device", HALF_PHONE, "--model", REF_7B, "--ctx", "4096")
    assert code == 0
    # bytes per step = 1.75 GB weights + 4,096 × 524,288 = 1,750,000,000 + 2,147,483,648 = 3,897,483,648
    assert doc["bytes_per_step"] == 3_897_483_648
    # roofline: 50e9 / 3,897,483,648 = 12.8288 tok/s (the contract's 78 ms per token)
    assert doc["decode_tokens_per_s_roofline"] == pytest.approx(50e9 / 3_897_483_648, rel=1e-12)
    assert doc["decode_tokens_per_s_roofline"] == pytest.approx(12.8288, abs=1e-4)
    # at efficiency 0.5: 25e9 / 3,897,483,648 = 6.4144 tok/s, half the roofline
    assert doc["decode_tokens_per_s"] == pytest.approx(25e9 / 3_897_483_648, rel=1e-12)
    assert doc["decode_tokens_per_s"] == pytest.approx(6.4144, abs=1e-4)


def test_check_table_shows_both_rates(run):
    result = run("check", "--device", HALF_PHONE, "--model", REF_7B, "--ctx", "4096")
    out = result.stdout
    assert "decode at 4,096 tokens (50.0 % of 50.00 GB/s)" in out
    assert "6.4 tok/s" in out  # 6.4144 at half the bandwidth
    assert "decode at roofline (100 % bandwidth, no latency)" in out
    assert "unknown: pure bandwidth model (0 ms)" in out  # the profile gives no decode_latency
    assert "12.8 tok/s" in out  # 12.8288 at the roofline


def test_default_efficiency_is_the_roofline(run_json):
    _, doc = run_json("check", "--device", DATA / "profiles" / "ref-phone.yaml", "--model", REF_7B, "--ctx", "4096")
    assert doc["decode_tokens_per_s"] == doc["decode_tokens_per_s_roofline"]
