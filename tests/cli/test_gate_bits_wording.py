"""Issue #14 point 6: a bit width out of range in a gate file reads as on the command line (kvplan's words, not
pydantic's), at the file's line and key."""

from __future__ import annotations

GATE = """defaults:
  device: pixel8
  model: 7b
configurations:
  - name: a
    ctx: 4k
    kv_bits: 64
  - name: b
    ctx: 4k
    k_bits: 0
    weight_bits: 40
  - name: c
    ctx: 4k
    v_bits: 4.5
"""


def test_gate_bit_widths_in_kvplans_words(run, tmp_path):
    path = tmp_path / "gate.yaml"
    path.write_text(GATE)
    result = run("gate", path)
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        f"kvplan: error: {path}:7: configurations.0.kv_bits: must be a whole number from 1 to 32, got 64",
        f"kvplan: error: {path}:10: configurations.1.k_bits: must be a whole number from 1 to 32, got 0",
        f"kvplan: error: {path}:11: configurations.1.weight_bits: must be above 0 and at most 32, got 40",
        # a fraction is not a width at all: the schema's own words
        f"kvplan: error: {path}:14: configurations.2.v_bits: expected a whole number, got 4.5",
    ]
    assert "less than or equal" not in result.stderr


def test_gate_bit_widths_in_range_pass(run, tmp_path):
    path = tmp_path / "gate.yaml"
    path.write_text("defaults:\n  device: pixel8\n  model: 7b\nconfigurations:\n  - name: a\n    ctx: 4k\n"
                    "    kv_bits: 32\n    k_bits: 4.0\n")
    assert run("gate", path).exit_code in (0, 1)
