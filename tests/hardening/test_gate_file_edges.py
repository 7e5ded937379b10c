"""Gate files: x- keys hold anchors, thresholds take units, names and booleans are refused in kvplan's words.

ref-phone × ref-7b at 4k (tests/data/gate/pass/ref-4k.yaml): swap-in 2,147,483,648 B / 2e9 B/s = 1.073741824 s,
decode 12.83 tok/s; at 8k it is over (6,044,967,296 B > 6e9 B).
"""

from __future__ import annotations

import json

import pytest

from tests.conftest import REF_7B, REF_PHONE

PAIR = f"device: {REF_PHONE}\n    model: {REF_7B}"


def _gate(run, tmp_path, text: str, *args: str):
    path = tmp_path / "gate.yaml"
    path.write_text(text, encoding="utf-8")
    return path, run("gate", path, *args)


def test_x_keys_hold_anchors_at_the_top_in_defaults_and_in_configurations(run, tmp_path):
    text = (f"x-pair: &pair\n  device: {REF_PHONE}\n  model: {REF_7B}\n"
            "defaults:\n  x-note: anything\n  ctx: 4k\n"
            "configurations:\n  - name: a\n    <<: *pair\n    x-owner: me\n    must_fit: true\n")
    _, result = _gate(run, tmp_path, text, "--format", "json")
    assert result.exit_code == 0, result.stderr
    assert [c["name"] for c in json.loads(result.stdout)["configurations"]] == ["a"]


def test_other_unknown_keys_are_still_refused(run, tmp_path):
    path, result = _gate(run, tmp_path, f"y-pair: 1\nconfigurations:\n  - name: a\n    {PAIR}\n    ctx: 4k\n")
    assert result.exit_code == 2
    assert f"{path}:1: y-pair: unknown field" in result.stderr


@pytest.mark.parametrize("written, seconds", [("500 ms", 0.5), ("0.5 s", 0.5), ("1.1", 1.1), ("'1.1'", 1.1),
                                              ("250000 us", 0.25)])
def test_max_swap_in_s_takes_a_duration_with_its_unit(run, tmp_path, written, seconds):
    _, result = _gate(run, tmp_path, f"configurations:\n  - name: a\n    {PAIR}\n    ctx: 4k\n"
                                     f"    max_swap_in_s: {written}\n", "--format", "json")
    # 1.073741824 s of swap-in: within 1.1 s, over 0.5 s and 0.25 s.
    assert result.exit_code == (0 if seconds > 1.073741824 else 1), result.stderr
    checks = json.loads(result.stdout)["configurations"][0]["thresholds"]
    assert [c["limit"] for c in checks if c["name"] == "max_swap_in_s"] == [seconds]


@pytest.mark.parametrize("written", ["12 tok/s", "12 tokens/s", "12"])
def test_min_decode_tok_s_may_say_its_unit(run, tmp_path, written):
    _, result = _gate(run, tmp_path, f"configurations:\n  - name: a\n    {PAIR}\n    ctx: 4k\n"
                                     f"    min_decode_tok_s: {written}\n", "--format", "json")
    assert result.exit_code == 0, result.stderr  # 12.83 tok/s ≥ 12
    checks = json.loads(result.stdout)["configurations"][0]["thresholds"]
    assert [c["limit"] for c in checks if c["name"] == "min_decode_tok_s"] == [12.0]


@pytest.mark.parametrize("written, message", [
    ("max_swap_in_s: 500 parsecs", "max_swap_in_s: expected a duration like '4.69 ms'"),
    ("min_decode_tok_s: 5 GB/s", "min_decode_tok_s: expected a decode rate like '12.8 tok/s'"),
])
def test_thresholds_with_a_wrong_unit_are_refused(run, tmp_path, written, message):
    path, result = _gate(run, tmp_path, f"configurations:\n  - name: a\n    {PAIR}\n    ctx: 4k\n    {written}\n")
    assert result.exit_code == 2
    assert f"{path}:6: configurations.0.{message}" in result.stderr


@pytest.mark.parametrize("name, message", [
    ('""', "must not be empty"), ('"   "', "must not be empty"),
    ("x" * 201, "must be at most 200 characters long, got 201"),
    ("12", "expected text, got 12 (quote it to make it text)"),
    ('"a\\nb"', "must be on one line"),
])
def test_a_bad_configuration_name_is_worded_as_the_other_errors(run, tmp_path, name, message):
    path, result = _gate(run, tmp_path, f"configurations:\n  - name: {name}\n    {PAIR}\n    ctx: 4k\n")
    assert result.exit_code == 2
    assert result.stderr == f"kvplan: error: {path}:2: configurations.0.name: {message}\n"


def test_must_fit_no_is_refused_with_the_yaml_1_2_reading(run, tmp_path):
    path, result = _gate(run, tmp_path, f"configurations:\n  - name: a\n    {PAIR}\n    ctx: 8k\n    must_fit: no\n")
    assert result.exit_code == 2
    assert result.stderr == (f"kvplan: error: {path}:6: configurations.0.must_fit: expected true or false, got 'no' "
                             "(YAML 1.2 reads no as text, not a boolean: write false)\n")


def test_must_fit_false_alone_says_that_nothing_is_checked(run, tmp_path):
    path, result = _gate(run, tmp_path, f"configurations:\n  - name: a\n    {PAIR}\n    ctx: 8k\n    must_fit: false\n")
    assert result.exit_code == 0  # over, but nothing is asked of it
    assert (f"kvplan: note: {path}:2: a: must_fit is false and no other threshold is set: nothing is checked, "
            "so it passes whatever its figures") in result.stderr


def test_must_fit_false_with_another_threshold_has_no_such_note(run, tmp_path):
    _, result = _gate(run, tmp_path, f"configurations:\n  - name: a\n    {PAIR}\n    ctx: 8k\n    must_fit: false\n"
                                     "    min_decode_tok_s: 5\n")
    assert result.exit_code == 0  # 8.3 tok/s ≥ 5
    assert "nothing is checked" not in result.stderr
