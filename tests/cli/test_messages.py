"""Message wording: one ASCII minus sign, `kvplan: note: wrote FILE` on stderr, formats a command supports."""

from __future__ import annotations

import re

from kvplan.render import fmt
from tests.conftest import REF_7B, REF_PHONE


def test_negative_sizes_use_the_ascii_minus_like_exact_bytes_and_percentages():
    # 6,000,000,000 − 7,664,967,296 = −1,664,967,296 B = −1.66 GB (SI) = −1.55 GiB (÷ 2^30 = 1.5506…)
    assert fmt.bytes_(-1_664_967_296) == "-1.66 GB"
    assert fmt.bytes_(-1_664_967_296, "iec") == "-1.55 GiB"
    assert fmt.bytes_(-500) == "-500 B"


def test_check_over_budget_prints_one_kind_of_minus(run):
    # ref-7b at 16k: 524,288 B/token × 16,384 = 8,589,934,592 B of cache + 1,750,000,000 B weights
    # = 10,339,934,592 B; headroom 6,000,000,000 − that = −4,339,934,592 B = −4.34 GB = −72.3 % of the budget
    result = run("check", "-d", REF_PHONE, "-m", REF_7B, "--ctx", "16k")
    assert result.exit_code == 1
    # negative figures (exact bytes, size, percentage) all start with "-"; "−" stays only as the operator in
    # the label "budget (RAM − OS reserve)", never in front of a number
    assert re.search(r"−\d", result.stdout) is None
    assert re.search(r"headroom → OVER +-4,339,934,592 B +-4\.34 GB +-72\.3 %", result.stdout)
    assert "mean decode over a generation of 16,384 tokens" in result.stdout


def test_gate_report_files_are_announced_on_stderr(run, tmp_path):
    config = tmp_path / "g.yaml"
    config.write_text(f"configurations:\n  - name: a\n    device: {REF_PHONE}\n    model: {REF_7B}\n    ctx: 1k\n")
    out = tmp_path / "gate.json"
    result = run("gate", config, "--json", out)
    assert result.exit_code == 0 and out.exists()
    assert f"kvplan: note: wrote {out}" in result.stderr and "wrote" not in result.stdout


def test_profiles_validate_offers_only_table_and_json(run):
    result = run("profiles", "validate", REF_PHONE, "--format", "markdown")
    assert result.exit_code == 2
    assert run("profiles", "validate", REF_PHONE, "--format", "json").exit_code == 0
