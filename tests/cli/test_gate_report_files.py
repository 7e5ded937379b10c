"""Gate and report files: a duplicated name found with the file's other errors, weight_type end to end,
report over several files."""

from __future__ import annotations

import json

from tests.conftest import REF_7B, REF_PHONE


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text.format(phone=REF_PHONE, model=REF_7B))
    return path


DUPLICATE_WITH_OTHER_ERRORS = """configurations:
  - name: ref
    device: {phone}
    model: {model}
    ctx: 4k
    must_fit: "yes"
  - name: ref
    device: {phone}
    model: {model}
    ctx: lots
  - name: other
    device: {phone}
    model: {model}
    ctx: 4k
  - name: " other "
    device: {phone}
    model: {model}
    ctx: 4k
"""


def test_duplicate_names_come_with_the_other_errors(run, tmp_path):
    path = _write(tmp_path, "dup.yaml", DUPLICATE_WITH_OTHER_ERRORS)
    result = run("gate", path)
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    # both configurations named 'ref' have a schema error of their own; the names clash all the same
    assert any(":6: configurations.0.must_fit:" in line for line in lines)
    assert any(":10: configurations.1.ctx:" in line for line in lines)
    assert sum("is already the name of" in line for line in lines) == 2
    assert any(":7: configurations.1.name: 'ref' is already the name of configurations.0" in line for line in lines)
    # names are compared as the schema keeps them (stripped)
    assert any(":15: configurations.3.name: 'other' is already the name of configurations.2" in line
               for line in lines)
    # in file order
    numbers = [int(line.split(":")[3]) for line in lines if line.startswith("kvplan: error: ")]
    assert numbers == sorted(numbers)


def test_duplicate_names_in_a_valid_file_are_reported_once(run, tmp_path):
    path = _write(tmp_path, "dup.yaml", "configurations:\n" + "".join(
        f"  - name: same\n    device: {{phone}}\n    model: {{model}}\n    ctx: {ctx}\n" for ctx in ("1k", "2k", "4k")))
    result = run("gate", path)
    assert result.exit_code == 2
    assert result.stderr.count("is already the name of configurations.0") == 2


WEIGHT_TYPE = """configurations:
  - name: q4km
    device: pixel8
    model: llama-3.2-1b
    ctx: 4k
    weight_type: q4_k_m
    max_weights: {limit}
"""


def test_weight_type_is_priced_like_check_and_judged(run, tmp_path):
    check = json.loads(run("check", "-d", "pixel8", "-m", "llama-3.2-1b", "-c", "4k", "--weight-type", "q4_k_m",
                           "-f", "json").stdout)
    weights = check["memory"]["weights_bytes"]
    assert check["weights"]["type"] == "q4_k_m"
    # a limit one byte under the priced weights fails by exactly one byte; at the weights it passes
    for limit, code in ((f"{weights - 1} B", 1), (f"{weights} B", 0)):
        path = tmp_path / "wt.yaml"
        path.write_text(WEIGHT_TYPE.replace("{limit}", limit))
        result = run("gate", path, "--format", "json")
        assert result.exit_code == code, result.stderr
        (cfg,) = json.loads(result.stdout)["configurations"]
        (threshold,) = [t for t in cfg["thresholds"] if t["name"] == "max_weights"]
        assert threshold["actual"] == weights and threshold["miss"] == (1 if code else None)
        assert cfg["check"]["weights"]["type"] == "q4_k_m" and cfg["check"]["memory"] == check["memory"]


def test_weight_type_errors_point_at_the_key(run, tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("configurations:\n  - name: a\n    device: pixel8\n    model: llama-3.2-1b\n    ctx: 4k\n"
                    "    weight_type: q9_z\n  - name: b\n    device: pixel8\n    model: llama-3.2-1b\n    ctx: 4k\n"
                    "    weight_type: q4_0\n    weight_bits: 4\n")
    result = run("gate", path)
    assert result.exit_code == 2
    assert "bad.yaml:6: configurations.0.weight_type: unknown weight format 'q9_z'" in result.stderr
    assert "bad.yaml:12: configurations.1.weight_bits: weight_bits and weight_type" in result.stderr


SEQUENCES = """configurations:
  - name: two
    device: {phone}
    model: {model}
    ctx: 4k
    sequences: 2
    min_decode_tok_s: 9
"""


def test_a_missed_rate_threshold_says_per_sequence(run, tmp_path):
    path = _write(tmp_path, "seq.yaml", SEQUENCES)
    result = run("gate", path)
    # 50e9 / (1.75e9 + 2 × 2,147,483,648) = 8.27 tok/s per sequence < 9: 0.73 short
    assert result.exit_code == 1
    assert "≥ 9.0 tok/s per sequence" in result.stdout and "8.3 tok/s per sequence" in result.stdout
    assert "0.7 tok/s per sequence short" in result.stdout


ONE = """title: first file
configurations:
  - name: a
    device: {phone}
    model: {model}
    ctx: 4k
"""
TWO = """configurations:
  - name: a
    device: {phone}
    model: {model}
    ctx: 8k
"""


def test_report_takes_several_files(run, tmp_path):
    one, two = _write(tmp_path, "one.yaml", ONE), _write(tmp_path, "two.yaml", TWO)
    result = run("report", one, two)
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert out.startswith("# Design review: one.yaml, two.yaml")
    assert "2 configurations from `one.yaml` and `two.yaml`" in out
    assert "one.yaml: first file" in out
    assert "## Configuration: a (one.yaml)" in out and "## Configuration: a (two.yaml)" in out
    # 8k is over: 1.75e9 + 4,294,967,296 = 6,044,967,296 B, and its changes are laid out
    assert "ref-phone × ref-7b at 8,192 tokens (line 2): **over**" in out and "what would make it fit" in out


def test_report_lists_every_problem_of_every_file(run, tmp_path):
    bad_one = _write(tmp_path, "bad1.yaml", "configurations:\n  - name: a\n    device: {phone}\n    model: {model}\n"
                                            "    ctx: 4k\n    margin: 150%\n")
    bad_two = _write(tmp_path, "bad2.yaml", "configurations:\n  - name: b\n    device: nowhere-phone\n"
                                            "    model: {model}\n    ctx: 4k\n")
    out = tmp_path / "review.md"
    result = run("report", bad_one, bad_two, "-o", out)
    assert result.exit_code == 2 and not out.exists()
    assert "bad1.yaml:6: configurations.0.margin" in result.stderr
    assert "bad2.yaml:3: configurations.0.device" in result.stderr


def test_report_output_may_not_be_any_input(run, tmp_path):
    one, two = _write(tmp_path, "one.yaml", ONE), _write(tmp_path, "two.yaml", TWO)
    result = run("report", one, two, "-o", two)
    assert result.exit_code == 2
