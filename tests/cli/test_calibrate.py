"""``kvplan calibrate``: llama-bench results in, a valid device profile out (tests/data/calibration/bench/)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
EXAMPLE = ROOT / "examples" / "llama-bench-m2.json"
BENCH = ROOT / "tests" / "data" / "calibration" / "bench"
BAD = sorted((BENCH / "bad").iterdir())
# The example file's measured LLaMA-7B Q4_0 tg128 rate on the M2 (10-core GPU).
MEASURED_Q4_0_TG = 21.91


def test_done_criterion_profile_validates_and_plans(run, tmp_path):
    out = tmp_path / "m2.yaml"
    result = run("calibrate", EXAMPLE, "--bandwidth", "100GB/s", "--base", "macbook-air-m2-16gb", "-o", out)
    assert result.exit_code == 0, result.stderr
    assert "Measured vs fitted" in result.stdout and "residual" in result.stdout
    assert run("profiles", "validate", out).exit_code == 0
    text = out.read_text()
    for field in ("memory_bandwidth", "bandwidth_efficiency", "decode_latency", "compute", "compute_efficiency"):
        assert f"\n  {field}:" in text, f"no source for {field}"
    # the rows' model is recognised as llama-2-7b (tests/cli/test_calibrate_recognition.py): the fit of -m 7b
    assert "decode_latency: 4.69 ms" in text and "bandwidth_efficiency: 0.918" in text

    check = run("check", "--device", out, "--model", "7b", "--ctx", "64", "--weight-type", "q4_0",
                "--format", "json")
    assert check.exit_code in (0, 1), check.stderr
    predicted = json.loads(check.stdout)["decode_tokens_per_s"]
    error = (predicted - MEASURED_Q4_0_TG) / MEASURED_Q4_0_TG
    # Measured 21.91 t/s. Predicted: Q4_0 weights 3,825,065,984 B less the embedding 32000 × 4096 / 32 × 18 =
    # 73,728,000 B, plus 64 tokens of cache 64 × 524,288 = 33,554,432 B → 3,784,892,416 B read per step at
    # 0.918 × 100 GB/s = 41.230 ms, plus 4.69 ms → 45.920 ms → 21.78 t/s (−0.6 %).
    # (The fit saw this row too: an in-sample check; held-out accuracy is tests/unit/test_calibration.py.)
    assert abs(error) < 0.01, f"predicted {predicted:.2f} t/s vs measured {MEASURED_Q4_0_TG}: {error:+.1%}"


def test_json_format_lists_every_row(run, tmp_path):
    result = run("calibrate", EXAMPLE, "--base", "macbook-air-m2-16gb", "-o", tmp_path / "m2.yaml",
                 "--format", "json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert len(doc["rows"]) == 6
    assert all(abs(r["residual"]) < 0.1 for r in doc["rows"])
    assert doc["device"]["name"] == "m2"


@pytest.mark.parametrize("name", ["m2.md", "m2_q4_0.csv", "m2_q4_0.jsonl", "dgx_spark_qwen2_7b_q8_0.md",
                                  "m2_ultra_2023.md"])
def test_every_format(run, tmp_path, name):
    out = tmp_path / "dev.yaml"
    result = run("calibrate", BENCH / name, "--ram", "16 GiB", "--os-reserve", "4 GiB", "--flash-read", "2 GB/s",
                 "--bandwidth", "800 GB/s", "-o", out)
    assert result.exit_code == 0, result.stderr
    assert run("profiles", "validate", out).exit_code == 0


def test_several_files_and_plot(run, tmp_path):
    plot = tmp_path / "fit.png"
    result = run("calibrate", BENCH / "m2_q4_0.csv", EXAMPLE, "--base", "macbook-air-m2-16gb", "--model", "7b",
                 "-o", tmp_path / "m2.yaml", "--plot", plot)
    assert result.exit_code == 0, result.stderr
    assert plot.read_bytes()[:4] == b"\x89PNG"
    assert "KV cache 524,288 bytes/token" in result.stderr


def test_one_decode_row_states_the_missing_unknown(run, tmp_path):
    single = tmp_path / "one.jsonl"
    lines = [line for line in (BENCH / "m2_q4_0.jsonl").read_text().splitlines() if '"n_gen": 128' in line
             and '"n_prompt": 0' in line]
    single.write_text(lines[0] + "\n")
    # the base device's decode_latency (macbook-air-m2-16gb: 4.39 ms) fixes the second unknown
    result = run("calibrate", single, "--base", "macbook-air-m2-16gb", "-o", tmp_path / "d.yaml")
    assert result.exit_code == 0, result.stderr
    assert "one unknown too many" in result.stderr
    assert "latency fixed at 4.39 ms from macbook-air-m2-16gb's decode_latency" in result.stderr
    assert "decode_latency: 4.39 ms" in (tmp_path / "d.yaml").read_text()
    # without a base (nor --latency) it is 0, the pure bandwidth model, and the note says so
    result = run("calibrate", single, "--ram", "16 GiB", "--os-reserve", "5.33 GiB", "--flash-read", "2.78 GB/s",
                 "--bandwidth", "100 GB/s", "-o", tmp_path / "e.yaml")
    assert result.exit_code == 0, result.stderr
    assert "one unknown too many" in result.stderr and "0 (pure bandwidth)" in result.stderr
    assert "decode_latency: 0.00 ms" in (tmp_path / "e.yaml").read_text()


@pytest.mark.parametrize("bad", BAD, ids=[p.name for p in BAD])
def test_bad_bench_file_exit_2(run, tmp_path, bad):
    result = run("calibrate", bad, "--base", "macbook-air-m2-16gb", "-o", tmp_path / "x.yaml")
    assert result.exit_code == 2
    assert result.stderr.startswith("kvplan: error:")
    assert not (tmp_path / "x.yaml").exists()


def test_existing_output_needs_force(run, tmp_path):
    out = tmp_path / "m2.yaml"
    out.write_text("keep me\n")
    result = run("calibrate", EXAMPLE, "--base", "macbook-air-m2-16gb", "-o", out)
    assert result.exit_code == 2 and "--force" in result.stderr
    assert out.read_text() == "keep me\n"
    assert run("calibrate", EXAMPLE, "--base", "macbook-air-m2-16gb", "-o", out, "--force").exit_code == 0
    assert "decode_latency" in out.read_text()


def test_no_ram_source_refused(run, tmp_path):
    # the Markdown table has no cpu_info/gpu_info: nothing to recognise the device from
    result = run("calibrate", BENCH / "m2.md", "-o", tmp_path / "x.yaml")
    assert result.exit_code == 2
    assert "--base" in result.stderr and "--ram" in result.stderr
    assert "carry no cpu_info/gpu_info" in result.stderr
    assert not (tmp_path / "x.yaml").exists()


def test_bare_latency_number_refused(run, tmp_path):
    result = run("calibrate", EXAMPLE, "--base", "macbook-air-m2-16gb", "--latency", "4", "-o", tmp_path / "x.yaml")
    assert result.exit_code == 2 and "'4 ms'" in result.stderr


def test_prefill_only_needs_a_bandwidth(run, tmp_path):
    result = run("calibrate", BENCH / "m2_ultra_2023.md", "--ram", "192 GB", "--os-reserve", "30 GB",
                 "--flash-read", "6 GB/s", "-o", tmp_path / "x.yaml")
    assert result.exit_code == 2 and "--bandwidth" in result.stderr


def test_json_has_schema_version_warnings_and_base_unit_keys(run, tmp_path):
    result = run("calibrate", EXAMPLE, "--bandwidth", "100GB/s", "--base", "macbook-air-m2-8gb",
                 "-o", tmp_path / "m2.yaml", "--format", "json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert list(doc)[:2] == ["schema_version", "warnings"] and doc["schema_version"] == 1
    assert doc["warnings"] == [] and doc["notes"]  # notes: how the inputs were read, as on stderr
    device = doc["device"]
    # the keys and units of `profiles show --format json` of the written file: 8 GiB = 8 × 2^30 = 8,589,934,592 B
    assert device["ram_bytes"] == 8_589_934_592 and "ram" not in device
    assert device["memory_bandwidth_bytes_per_s"] == 100e9  # the peak given
    assert device["decode_latency_s"] == pytest.approx(0.00469)  # the profile's "4.69 ms"
    shown = json.loads(run("profiles", "show", tmp_path / "m2.yaml", "--format", "json").stdout)
    assert {k: shown[k] for k in device} == device
    decode = [r for r in doc["rows"] if r["kind"] == "decode"]
    prefill = [r for r in doc["rows"] if r["kind"] == "prefill"]
    assert len(decode) == len(prefill) == 3 and all("work" not in r for r in doc["rows"])
    # the Q4_0 tg row reads 3,784,892,416 B per token (test_done_criterion_profile_validates_and_plans)
    q4 = next(r for r in decode if r["model_type"] == "llama 7B Q4_0")
    assert q4["work_bytes_per_token"] == 3_784_892_416 and q4["work_flops"] is None
    assert all(r["work_bytes_per_token"] is None and r["work_flops"] > 0 for r in prefill)


def test_implausible_figures_are_warnings(run, tmp_path):
    args = (EXAMPLE, "--bandwidth", "100GB/s", "--ram", "200 MB", "--os-reserve", "0 GB", "--flash-read", "5 MB/s")
    warnings = ["device tiny: ram 200,000,000 B is under 256 MB — is a unit missing?",
                "device tiny: flash_read 5,000,000 B/s is under 10 MB/s — is a unit missing?"]
    result = run("calibrate", *args, "-o", tmp_path / "tiny.yaml", "--format", "json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["warnings"] == warnings
    table = run("calibrate", *args, "-o", tmp_path / "tiny.yaml", "--force")
    assert table.exit_code == 0
    assert [line for line in table.stderr.splitlines() if "warning" in line] == [f"kvplan: warning: {w}"
                                                                                 for w in warnings]
