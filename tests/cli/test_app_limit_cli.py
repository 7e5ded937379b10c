"""`--app-limit` and the per-app memory limits of the iOS profiles: the budget, check's JSON and table, sweep and a
gate file. Figures derived by hand in the comments."""

from __future__ import annotations

import json


def _json(run, *args):
    result = run("check", *args, "--format", "json")
    assert result.exit_code in (0, 1), result.stderr
    return json.loads(result.stdout)


def test_iphone_budget_with_and_without_the_entitlement(run):
    base = ("-d", "iphone-15-pro", "-m", "qwen3-0.6b", "-c", "8k")
    m = _json(run, *base)["memory"]
    # default: the increased limit, 6 GB = 8 GB − 2 GB reserve
    assert (m["app_limit_bytes"], m["budget_bytes"]) == (6_000_000_000, 6_000_000_000)
    m = _json(run, *base, "--app-limit", "standard")["memory"]
    # min(6e9, 3e9)
    assert (m["app_limit_bytes"], m["budget_bytes"]) == (3_000_000_000, 3_000_000_000)
    assert m["headroom_bytes"] == 3_000_000_000 - m["total_bytes"]


def test_the_table_says_when_the_app_limit_sets_the_budget(run):
    out = run("check", "-d", "iphone-15-pro", "-m", "qwen3-0.6b", "-c", "8k", "--app-limit", "standard").stdout
    assert ("budget (the per-app memory limit without the increased-memory-limit entitlement; 8.00 GB RAM − "
            "2.00 GB OS reserve would be 6.00 GB)") in out
    out = run("check", "-d", "iphone-15-pro", "-m", "qwen3-0.6b", "-c", "8k").stdout
    assert "budget (8.00 GB RAM − 2.00 GB OS reserve)" in out  # equal: the reserve's wording stays


def test_a_phone_without_a_per_app_limit_ignores_the_choice(run):
    m = _json(run, "-d", "pixel8", "-m", "qwen3-0.6b", "-c", "8k", "--app-limit", "standard")["memory"]
    assert (m["app_limit_bytes"], m["budget_bytes"]) == (None, 6_000_000_000)


def test_a_bad_choice_is_exit_2_naming_the_flag(run):
    result = run("check", "-d", "iphone-15-pro", "-m", "qwen3-0.6b", "-c", "8k", "--app-limit", "huge")
    assert result.exit_code == 2
    assert "--app-limit" in result.stderr and "standard, increased" in result.stderr
    assert "Traceback" not in result.stderr


def test_max_ctx_follows_the_smaller_budget(run):
    base = ("-d", "iphone-15-pro", "-m", "qwen3-4b", "-c", "8k")
    with_entitlement = _json(run, *base)["max_ctx"]
    without = _json(run, *base, "--app-limit", "standard")["max_ctx"]
    # qwen3-4b: 36 layers · 8 KV heads · 128 · 2 (K, V) · 2 B = 147,456 B/token, 4-bit weights 2,011,234,048 B
    # → (6e9 − 2,011,234,048) // 147,456 = 27,050 and (3e9 − 2,011,234,048) // 147,456 = 6,705 tokens
    assert (with_entitlement, without) == (27_050, 6_705)


def test_sweep_applies_it_to_the_iphone_only(run):
    result = run("sweep", "-d", "pixel8,iphone-15-pro", "-m", "qwen3-4b", "-c", "8k", "--app-limit", "standard",
                 "--format", "json")
    assert result.exit_code in (0, 1), result.stderr
    rows = json.loads(result.stdout)["rows"]
    budgets = {r["device"]: r["budget_bytes"] for r in rows}
    assert budgets == {"pixel8": 6_000_000_000, "iphone-15-pro": 3_000_000_000}


def test_a_gate_file_takes_app_limit(run, tmp_path):
    gate = tmp_path / "gate.yaml"
    gate.write_text("configurations:\n  - name: no-entitlement\n    device: iphone-15-pro\n    model: qwen3-4b\n"
                    "    ctx: 8k\n    app_limit: standard\n", encoding="utf-8")
    result = run("gate", str(gate), "--format", "json")
    assert result.exit_code in (0, 1), result.stderr + result.stdout
    assert "3000000000" in result.stdout.replace(",", "").replace("_", "") or "3.00 GB" in result.stdout
    bad = tmp_path / "bad.yaml"
    bad.write_text(gate.read_text(encoding="utf-8").replace("standard", "huge"), encoding="utf-8")
    result = run("gate", str(bad))
    assert result.exit_code == 2 and "app_limit" in (result.stdout + result.stderr)


def test_fit_suggests_the_entitlement_when_the_standard_limit_binds(run):
    result = run("fit", "--device", "iphone-15-pro", "--model", "qwen3-4b", "--ctx", "16k", "--app-limit", "standard",
                 "--format", "json")
    assert result.exit_code in (0, 1), result.stderr
    doc = json.loads(result.stdout)
    change = next(c for c in doc["changes_to_fit"] if c["change"] == "app_limit")
    # weights 2,011,234,048 + KV 16,384 × 147,456 = 2,415,919,104 → 4,427,153,152 B; 6e9 − that = 1,572,846,848
    assert (change["value"], change["verdict"], change["headroom_bytes"]) == ("increased", "fit", 1_572_846_848)
    assert change["check_command"][-2:] == ["--app-limit", "increased"]
    # with the entitlement already in force there is nothing to suggest
    result = run("fit", "--device", "iphone-15-pro", "--model", "qwen3-4b", "--ctx", "32k", "--format", "json")
    assert not any(c["change"] == "app_limit" for c in json.loads(result.stdout)["changes_to_fit"])
