"""``kvplan calibrate`` without --model or --base: the model and the device recognised from the bench file."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

ROOT = Path(__file__).parents[2]
EXAMPLE = ROOT / "examples" / "llama-bench-m2.json"
MEASURED_Q4_0_TG = 21.91  # the example's LLaMA-7B Q4_0 tg128 row


def _with_hardware(tmp_path, name: str, backends: str = "Metal,BLAS") -> Path:
    bench = tmp_path / "bench.json"
    text = EXAMPLE.read_text().replace('"Apple M2"', json.dumps(name))
    bench.write_text(text.replace('"Metal,BLAS"', json.dumps(backends)))
    return bench


def test_done_when_as_written(run, tmp_path):
    out = tmp_path / "m2.yaml"
    result = run("calibrate", EXAMPLE, "--bandwidth", "100GB/s", "-o", out)
    assert result.exit_code == 0, result.stderr
    # gpu_info/cpu_info "Apple M2" names the two MacBook Air M2 profiles; the 8 GB one has the smaller RAM
    assert ("device recognised: 'Apple M2' names macbook-air-m2-8gb and macbook-air-m2-16gb (one family); "
            "macbook-air-m2-8gb taken, the smallest RAM (8 GiB)") in result.stderr
    assert ("model recognised: llama 7B F16, llama 7B Q4_0, llama 7B Q8_0 → llama-2-7b: model_n_params "
            "6,738,415,616 = llama-2-7b's GGUF tensor count (architecture llama)") in result.stderr
    text = out.read_text()
    assert "ram: 8 GiB" in text and "os_reserve: 2.67 GiB" in text and "flash_read: 1.48 GB/s" in text
    sources = yaml.safe_load(text)["sources"]
    for field in ("ram", "os_reserve", "flash_read"):
        assert "(from macbook-air-m2-8gb, recognised from the bench file: 'Apple M2' names" in sources[field]
    # the -m 7b fit (tests/acceptance/cases.txt, #16): 91.84 GB/s effective of 100 GB/s and 4.69 ms
    assert "bandwidth_efficiency: 0.918" in text and "decode_latency: 4.69 ms" in text
    assert run("profiles", "validate", out).exit_code == 0

    check = run("check", "--device", out, "--model", "7b", "--weight-type", "q4_0", "--ctx", "64", "--format", "json")
    assert check.exit_code == 0, check.stderr
    # 3,825,065,984 − 73,728,000 + 64 × 524,288 = 3,784,892,416 B / 91.8e9 B/s = 41.230 ms; + 4.69 ms = 45.920 ms
    # → 21.78 t/s, measured 21.91: −0.6 %
    predicted = json.loads(check.stdout)["decode_tokens_per_s"]
    assert abs(predicted - 1 / (3_784_892_416 / 91.8e9 + 0.00469)) < 0.01
    assert abs(predicted - MEASURED_Q4_0_TG) / MEASURED_Q4_0_TG < 0.01


def test_model_option_overrides_recognition(run, tmp_path):
    result = run("calibrate", EXAMPLE, "--base", "macbook-air-m2-16gb", "-m", "mistral-7b-v0.1", "-o",
                 tmp_path / "m2.yaml")
    assert result.exit_code == 0, result.stderr
    assert "model recognised" not in result.stderr
    # mistral's GQA cache: 32 layers × 2 × 8 KV heads × 128 × 2 B = 131,072 bytes/token
    assert "llama 7B Q4_0: KV cache 131,072 bytes/token and layer shape from model mistral-7b-v0.1" in result.stderr


def test_model_types_not_named_are_recognised(run, tmp_path):
    result = run("calibrate", EXAMPLE, "--base", "macbook-air-m2-16gb", "-m", "llama 7B F16=mistral-7b-v0.1",
                 "-o", tmp_path / "m2.yaml")
    assert result.exit_code == 0, result.stderr
    assert "llama 7B F16: KV cache 131,072 bytes/token and layer shape from model mistral-7b-v0.1" in result.stderr
    assert "model recognised: llama 7B Q4_0, llama 7B Q8_0 → llama-2-7b" in result.stderr


def test_unknown_chip_keeps_the_error(run, tmp_path):
    out = tmp_path / "x.yaml"
    result = run("calibrate", _with_hardware(tmp_path, "Apple M2 Max"), "--bandwidth", "400GB/s", "-o", out)
    assert result.exit_code == 2
    assert result.stderr.startswith("kvplan: error: a device profile needs RAM, OS reserve and flash read: give "
                                    "--base DEVICE or --ram, --os-reserve, --flash-read")
    assert "no library device's description names 'Apple M2 Max'" in result.stderr
    assert not out.exists()


def test_several_families_list_the_candidates(run, tmp_path):
    # gpu_info of a Snapdragon 8 Gen 3 phone: three phones of three families carry that chip
    result = run("calibrate", _with_hardware(tmp_path, "Snapdragon 8 Gen 3", "CPU"), "--bandwidth", "77GB/s", "-o",
                 tmp_path / "x.yaml")
    assert result.exit_code == 2
    assert "names devices of several families (galaxy-s24, galaxy-s24-ultra, oneplus-12)" in result.stderr
    # with the example's Metal backend no phone is a candidate: Metal runs on Apple platforms only
    result = run("calibrate", _with_hardware(tmp_path, "Snapdragon 8 Gen 3"), "--bandwidth", "77GB/s", "-o",
                 tmp_path / "x.yaml")
    assert result.exit_code == 2
    assert "no library device's description names 'Snapdragon 8 Gen 3'" in result.stderr


def test_some_options_given_no_recognition(run, tmp_path):
    # --ram alone: the other figures are not taken from a recognised device (its reserve belongs to its own RAM)
    result = run("calibrate", EXAMPLE, "--ram", "24 GiB", "-o", tmp_path / "x.yaml")
    assert result.exit_code == 2
    assert "give --base DEVICE or --os-reserve, --flash-read" in result.stderr
    assert "recognised" not in result.stderr
