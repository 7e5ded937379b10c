"""``kvplan check`` with a KV cache compression policy (issue #7)."""

from __future__ import annotations

import re

from pathlib import Path

from tests.conftest import REF_7B, REF_PHONE

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = str(ROOT / "examples" / "kv-policy.yaml")
DATA = Path(__file__).resolve().parents[1] / "data" / "kv_policies"


def test_example_policy_on_llama_3_1_8b_at_128k(run_json):
    code, doc = run_json("check", "--device", "pixel8", "--model", "llama-3.1-8b", "--ctx", "131072",
                         "--kv-policy", EXAMPLE)
    m = doc["memory"]
    # 4,096 recent · 131,072 B + ⌈0.2 · 126,976⌉ = 25,396 kept · 30,720 B (32 × (544 K4 + 416 V3)) = 1,317,036,032
    assert m["kv_bytes"] == 1_317_036_032
    # peak: 511 tokens awaiting eviction at fp16: 4,607 · 131,072 + 25,293 · 30,720 = 1,380,849,664
    assert m["kv_peak_bytes"] == 1_380_849_664
    assert m["kv_bytes"] < 17_179_869_184 / 13  # the plain cache is 131,072 · 131,072 = 17,179,869,184
    # weights 8,030,261,248 · 4 / 8 = 4,015,130,624; total = weights + peak = 5,395,980,288 ≤ 6,000,000,000
    assert m["total_bytes"] == 4_015_130_624 + 1_380_849_664
    assert m["headroom_bytes"] == 604_019_712 and doc["verdict"] == "fit" and code == 0
    p = doc["kv_policy"]
    assert p["name"] == "window4k-fp16-history20-k4v3"
    assert p["effective_bytes_per_token"] == 1_317_036_032 / 131_072  # 10,048.19 B
    assert p["compression_ratio_vs_fp16"] == 17_179_869_184 / 1_317_036_032  # 13.04×
    assert p["fp16_kv_bytes_per_sequence"] == 17_179_869_184
    (tier,) = p["tiers"]
    assert (tier["recent_tokens"], tier["history_tokens"], tier["awaiting_eviction_tokens"]) == (4096, 25_396, 511)
    assert tier["history_k_format"] == "int4/g128+z" and tier["history_v_format"] == "int3/g128+z"
    # max context: exact to the token against the 6,000,000,000 − 4,015,130,624 = 1,984,869,376 B left
    assert doc["max_ctx"] > 131_072


def test_example_policy_table_shows_the_policy_and_the_budget(run):
    result = run("check", "--device", "pixel8", "--model", "llama-3.1-8b", "--ctx", "128k", "--kv-policy", EXAMPLE)
    assert result.exit_code == 0
    out = result.stdout
    assert re.search(r"KV cache \(policy window4k-fp16-history20-k4v3, 131,072 tokens\) +1,317,036,032 B", out)
    assert "+ KV tokens awaiting eviction (peak between passes" in out and "63,813,632 B" in out
    assert "effective bytes per token (kv / ctx)" in out and "10,048.2 B" in out
    assert "compression vs fp16 (17.18 GB)" in out and "13.04×" in out
    assert "headroom → FIT" in out


def test_flags_give_the_same_bytes_as_a_file(run_json, tmp_path):
    policy = tmp_path / "p.yaml"
    policy.write_text("recent_window: 1k\nhistory: {ratio: 0.25, k: {bits: 4, group_size: 128}, "
                      "v: {bits: 4, group_size: 128}}\nevict_every: 64\n")
    args = ("check", "--device", str(REF_PHONE), "--model", str(REF_7B), "--ctx", "8192")
    _, from_file = run_json(*args, "--kv-policy", str(policy))
    _, from_flags = run_json(*args, "--kv-recent-window", "1k", "--kv-history-ratio", "25%", "--kv-history-bits", "4",
                             "--kv-evict-every", "64")
    # ref-7b: 524,288 B/token fp16; int4/g128: 32 × 2 × (2,048 + 32 × 2) = 135,168 B/token
    # 1,024 · 524,288 + ⌈0.25 · 7,168⌉ = 1,792 · 135,168 = 536,870,912 + 242,221,056 = 779,091,968
    assert from_file["memory"]["kv_bytes"] == from_flags["memory"]["kv_bytes"] == 779_091_968
    assert from_file["memory"]["kv_peak_bytes"] == from_flags["memory"]["kv_peak_bytes"]


def test_plain_check_has_null_policy_and_peak_equal_to_cache(run_json):
    _, doc = run_json("check", "--device", str(REF_PHONE), "--model", str(REF_7B), "--ctx", "4096")
    assert doc["kv_policy"] is None
    assert doc["memory"]["kv_peak_bytes"] == doc["memory"]["kv_bytes"] == 2_147_483_648


def test_model_profile_policy_and_none(run_json):
    args = ("check", "--device", str(REF_PHONE), "--model", str(DATA / "tiny-with-policy.yaml"), "--ctx", "100")
    _, doc = run_json(*args)
    # 10 · 512 + 45 · 256 = 16,640 (see the unit test)
    assert doc["kv_policy"]["name"] == "keep-half" and doc["memory"]["kv_bytes"] == 16_640
    _, plain = run_json(*args, "--kv-policy", "none")
    assert plain["kv_policy"] is None and plain["memory"]["kv_bytes"] == 51_200  # 100 · 512


def test_bad_policy_file_is_exit_2_with_file_line_field(run):
    result = run("check", "-d", str(REF_PHONE), "-m", str(REF_7B), "-c", "8k", "--kv-policy",
                 str(DATA / "bad-policy.yaml"))
    assert result.exit_code == 2
    assert "bad-policy.yaml:4: history.ratio:" in result.stderr
    assert "bad-policy.yaml:6: history.k.bitz: unknown field" in result.stderr


def test_policy_and_flags_together_is_a_usage_error(run):
    result = run("check", "-d", str(REF_PHONE), "-m", str(REF_7B), "-c", "8k", "--kv-policy", EXAMPLE,
                 "--kv-history-ratio", "0.5")
    assert result.exit_code == 2 and "not both" in result.stderr
    result = run("check", "-d", str(REF_PHONE), "-m", str(REF_7B), "-c", "8k", "--kv-recent-window", "4k")
    assert result.exit_code == 2 and "--kv-history-ratio is needed" in result.stderr
