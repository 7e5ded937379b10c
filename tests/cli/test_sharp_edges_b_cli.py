"""Issue #27, sharp edges found by exploratory testing: inputs that were silently misread (the CLI side)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LLAMA_2_7B_CONFIG = ROOT / "tests/data/hf_configs/llama-2-7b.json"
SHAPE = "layers: 32\nattention_heads: 32\nkv_heads: 32\nhead_dim: 128\n"


def _model(tmp_path, params: str) -> Path:
    path = tmp_path / "m.yaml"
    path.write_text(f"name: m\nparams: {params}\n{SHAPE}")
    return path


# --- params: 7 read as 7 parameters --------------------------------------------------------------------------------
# 32 layers × (32 heads × 128) × 4,096 = 536,870,912 parameters of output projections: a floor no 7 can reach.

def test_a_bare_params_7_is_refused_with_7b(run, tmp_path):
    result = run("check", "--device", "pixel8", "--model", str(_model(tmp_path, "7")), "--ctx", "4k")
    assert result.exit_code == 2
    assert "params: 7 is fewer parameters than the attention output projections of this shape alone " \
           "(32 layers × 4,096 × 4,096 = 536,870,912): did you mean 7B (7,000,000,000)?" in result.stderr


def test_profiles_validate_refuses_params_7(run, tmp_path):
    result = run("profiles", "validate", str(_model(tmp_path, "7")))
    assert result.exit_code == 2 and "did you mean 7B" in result.stdout + result.stderr


def test_a_fraction_of_a_parameter_suggests_billions(run, tmp_path):
    result = run("profiles", "validate", str(_model(tmp_path, "6.74")))
    assert "a count must be a whole number, got 6.74: did you mean 6.74B (6,740,000,000)?" in \
        result.stdout + result.stderr


@pytest.mark.parametrize("params, suffix", [("7", "7B"), ("600", "600M")])
def test_import_refuses_a_params_option_the_shape_cannot_hold(run, tmp_path, params, suffix):
    out = tmp_path / "x.yaml"
    result = run("import", "hf", str(LLAMA_2_7B_CONFIG), "--params", params, "-o", str(out))
    assert result.exit_code == 2 and not out.exists()
    assert f"did you mean {suffix} " in result.stderr


def test_params_at_the_floor_stands(run, tmp_path):
    # exactly 536,870,912 is the floor: accepted (kvplan refuses only what no model of this shape can have)
    result = run("profiles", "validate", str(_model(tmp_path, "536870912")))
    assert result.exit_code == 0, result.stdout + result.stderr


# --- fit with a real GGUF format suggested uniform widths no file has ---------------------------------------------

def test_fit_in_a_gguf_type_suggests_the_smaller_gguf_types(run_json):
    # qwen2.5-7b in q4_k_m at 32k is over on a Pixel 8; the smaller llama.cpp presets are priced per tensor
    code, doc = run_json("fit", "--device", "pixel8", "--model", "qwen2.5-7b", "--ctx", "32k",
                         "--weight-type", "q4_k_m")
    kinds = {(c["change"], c["value"]) for c in doc["changes_to_fit"]}
    assert not any(kind == "weight_bits" for kind, _ in kinds)  # no "weights at 3 bits"
    assert ("weight_type", "q3_k_m") in kinds
    q3 = next(c for c in doc["changes_to_fit"] if c["value"] == "q3_k_m")
    # the same figure kvplan check gives for that format: budget − total
    _, checked = run_json("check", "--device", "pixel8", "--model", "qwen2.5-7b", "--ctx", "32k",
                          "--weight-type", "q3_k_m")
    assert q3["headroom_bytes"] == checked["memory"]["headroom_bytes"]
    assert q3["headroom_bytes"] == checked["memory"]["budget_bytes"] - checked["memory"]["total_bytes"]
    # the least lossy first among the types: q3_k_l (larger) ranks before q3_k_m, q3_k_m before q2_k
    order = [c["value"] for c in doc["changes_to_fit"] if c["change"] == "weight_type"]
    assert order.index("q3_k_m") < order.index("q2_k")


def test_fit_at_a_uniform_width_still_suggests_widths(run_json):
    code, doc = run_json("fit", "--device", "pixel8", "--model", "qwen2.5-7b", "--ctx", "32k", "--weight-bits", "5")
    assert any(c["change"] == "weight_bits" for c in doc["changes_to_fit"])
    assert not any(c["change"] == "weight_type" for c in doc["changes_to_fit"])


# --- --sliding-window changing the figures in silence ----------------------------------------------------------------

def _window_warnings(doc):
    return [w for w in doc["warnings"] if w.startswith("sliding_window ")]


def test_check_warns_when_a_window_replaces_the_trained_one(run_json):
    # gemma-3-4b: 5 local layers (1,024-token window) : 1 global. 100k on every layer widens the local layers' window
    code, doc = run_json("check", "--device", "pixel8", "--model", "gemma-3-4b", "--ctx", "8k",
                         "--sliding-window", "100k")
    assert _window_warnings(doc) == ["sliding_window 102,400 puts every layer behind one window: it widens the "
                                     "1,024-token window gemma-3-4b's local layers were trained with (quality untested)"]


def test_check_warns_when_a_window_is_added_to_a_model_without_one(run, run_json):
    code, doc = run_json("check", "--device", "pixel8", "--model", "7b", "--ctx", "8k", "--sliding-window", "2048")
    assert len(_window_warnings(doc)) == 1 and "llama-2-7b was trained with full attention" in doc["warnings"][0]
    text = run("check", "--device", "pixel8", "--model", "7b", "--ctx", "8k", "--sliding-window", "2048").stdout
    assert "warning: sliding_window 2,048 puts every layer behind one window" in text


@pytest.mark.parametrize("args", [
    ("--model", "7b", "--ctx", "2k", "--sliding-window", "4096"),  # a window wider than the context: no change
    ("--model", "7b", "--ctx", "8k"),  # no window asked for
])
def test_no_window_warning_when_the_figures_are_the_models_own(run_json, args):
    code, doc = run_json("check", "--device", "pixel8", *args)
    assert _window_warnings(doc) == []


@pytest.mark.parametrize("command", [["sweep"], ["compare", "--model", "8b"]])
def test_sweep_and_compare_warn_too(run_json, command):
    code, doc = run_json(command[0], "--device", "pixel8", "--model", "7b", *command[1:], "--ctx", "8k",
                         "--sliding-window", "2048")
    assert any(w.startswith("sliding_window 2,048") for w in doc["warnings"])


def test_gate_warns_for_a_window_key(run, tmp_path):
    gate = tmp_path / "g.yaml"
    gate.write_text("configurations:\n  - name: a\n    device: pixel8\n    model: 7b\n    ctx: 8k\n"
                    "    sliding_window: 2048\n")
    result = run("gate", str(gate))
    assert "a: warning: sliding_window 2,048 puts every layer behind one window" in result.stdout + result.stderr


# --- llama.cpp -n 3: a rate labelled with the context asked for, not the tokens a sequence holds ------------------

def test_decode_label_says_the_tokens_one_sequence_holds(run):
    # -c 8,192 over 3 unshared streams: pad(8,192 / 3, 256) = ⌈2,730.7 / 256⌉ × 256 = 11 × 256 = 2,816 cells each
    out = run("check", "--device", "pixel8", "--model", "7b", "--ctx", "8k", "--runtime", "llama.cpp", "-n", "3").stdout
    assert "decode per sequence at 2,816 tokens (one sequence's share of 8,192)" in out
    assert "decode per sequence at 8,192 tokens" not in out


def test_decode_label_without_a_shared_context_is_the_context(run):
    # the ideal formula: each of the 3 sequences holds the whole 8,192
    out = run("check", "--device", "pixel8", "--model", "7b", "--ctx", "8k", "-n", "3").stdout
    assert "decode per sequence at 8,192 tokens from RAM" in out


def test_report_quotes_the_rate_at_the_tokens_a_sequence_holds(run, tmp_path):
    gate = tmp_path / "g.yaml"
    gate.write_text("configurations:\n  - name: a\n    device: pixel8\n    model: 7b\n    ctx: 8k\n    sequences: 3\n"
                    "    runtime: llama.cpp\n")
    out = tmp_path / "r.md"
    run("report", str(gate), "-o", str(out))
    text = out.read_text()
    assert "tok/s over 3 sequences at 2,816 tokens (one sequence's share of 8,192)." in text


# --- implausible inputs without a warning --------------------------------------------------------------------------

DEVICE = "name: slow\nram: 8 GB\nos_reserve: 2 GB\nmemory_bandwidth: 50 GB/s\nflash_read: 2 GB/s\n"


def test_a_decode_latency_of_seconds_and_an_overhead_past_half_the_ram_warn(run_json, tmp_path):
    device = tmp_path / "d.yaml"
    device.write_text(DEVICE + "decode_latency: 5 s\nruntime_overhead: 10 GB\n")
    code, doc = run_json("check", "--device", str(device), "--model", "7b", "--ctx", "4k")
    assert "device slow: decode_latency 5 s per decode step is over 100 ms; measured ones are a few ms — is the " \
           "unit right?" in doc["warnings"]
    # 10 GB > 0.5 × 8 GB
    assert "device slow: runtime_overhead 10.00 GB is over half of its 8.00 GB of RAM — is the unit right?" in \
        doc["warnings"]


def test_plausible_device_figures_do_not_warn(run_json, tmp_path):
    device = tmp_path / "d.yaml"
    device.write_text(DEVICE + "decode_latency: 4.39 ms\nruntime_overhead: 300 MB\n")
    code, doc = run_json("check", "--device", str(device), "--model", "7b", "--ctx", "4k")
    assert doc["warnings"] == []


def test_weight_bits_below_one_warns(run_json):
    code, doc = run_json("check", "--device", "pixel8", "--model", "7b", "--ctx", "4k", "--weight-bits", "1e-3")
    assert any(w.startswith("weight_bits 0.001 is under 1 bit per weight") for w in doc["warnings"])


def test_a_gate_context_of_8_tokens_warns(run, tmp_path):
    gate = tmp_path / "g.yaml"
    gate.write_text("configurations:\n  - name: a\n    device: pixel8\n    model: 7b\n    ctx: 8\n")
    result = run("gate", str(gate))
    assert "a: warning: context 8 tokens is under 64 — is a k missing (8k = 8,192 tokens)?" in \
        result.stdout + result.stderr


def test_devices_are_listed_in_natural_order(run):
    out = run("profiles", "list", "--kind", "device").stdout
    assert out.index("galaxy-s24 ") < out.index("galaxy-s24-ultra")
    assert out.index("macbook-air-m2-8gb") < out.index("macbook-air-m2-16gb")


# --- one GGUF parser, one message -----------------------------------------------------------------------------------

@pytest.mark.parametrize("content, message", [
    (b"", "not a readable GGUF file: the file is empty"),
    (b"GGUF\x03\x00\x00\x00" + b"\x00" * 4, "not a readable GGUF file: damaged or truncated (12 bytes; the file ends "
                                            "inside the GGUF header)"),
    (b"GGML" + b"\x00" * 20, "not a readable GGUF file: it starts with b'GGML', a GGUF file with b'GGUF'"),
])
def test_check_and_import_refuse_a_bad_gguf_alike(run, tmp_path, content, message):
    path = tmp_path / "m.gguf"
    path.write_bytes(content)
    checked = run("check", "--device", "pixel8", "--model", str(path), "--ctx", "4k")
    imported = run("import", "gguf", str(path))
    assert checked.exit_code == imported.exit_code == 2
    assert checked.stderr == imported.stderr == f"kvplan: error: {path}: {message}\n"


# --- one letter-case rule for every enumerated value ---------------------------------------------------------------

@pytest.mark.parametrize("upper, lower", [
    (("-f", "JSON"), ("-f", "json")),
    (("--units", "IEC", "-f", "json"), ("--units", "iec", "-f", "json")),
    (("-d", "PIXEL8", "-f", "json"), ("-d", "pixel8", "-f", "json")),
    (("--runtime", "LLAMA.CPP", "-f", "json"), ("--runtime", "llama.cpp", "-f", "json")),
])
def test_enumerated_values_are_read_in_any_case(run, upper, lower):
    base = ["check", "-m", "7b", "-c", "4k"]
    d = [] if "-d" in upper else ["-d", "pixel8"]
    a, b = run(*base, *d, *upper), run(*base, *d, *lower)
    assert a.exit_code == b.exit_code == 0
    docs = [json.loads(r.stdout) for r in (a, b)]
    for doc in docs:  # the llama.cpp command line repeats the device as typed
        doc.pop("llamacpp_command", None)
    assert docs[0] == docs[1]


def test_profiles_list_kind_in_any_case(run):
    assert run("profiles", "list", "--kind", "DEVICE").stdout == run("profiles", "list", "--kind", "device").stdout


def test_a_platform_in_any_case(run, tmp_path):
    device = tmp_path / "d.yaml"
    device.write_text(DEVICE + "platform: Android\n")
    result = run("profiles", "validate", str(device))
    assert result.exit_code == 0, result.stdout + result.stderr


def test_units_stay_case_sensitive(run, tmp_path):
    result = run("check", "-d", "pixel8", "-m", "7b", "-c", "4k", "--os-reserve", "2gb")
    assert result.exit_code == 2 and "units are case-sensitive: did you mean '2 GB'?" in result.stderr


# --- sweep rows that cannot be told apart ---------------------------------------------------------------------------

def test_sweep_lists_one_format_given_twice_once_with_a_note(run):
    result = run("sweep", "-d", "pixel8", "-m", "7b", "-c", "4k", "--kv-bits", "16", "--kv-type", "f16",
                 "--format", "json")
    doc = json.loads(result.stdout)
    assert doc["rows_count"] == 1  # was 2 identical rows
    assert "kvplan: note: --kv-type f16 is the cache format of --kv-bits 16 (f16): swept once" in result.stderr


def test_sweep_keeps_formats_that_differ(run):
    # 8 bits is int8 (1 byte per value), q8_0 is 34 bytes per 32 values: two formats, two rows each of 16 and 8
    doc = json.loads(run("sweep", "-d", "pixel8", "-m", "7b", "-c", "4k", "--kv-bits", "16,8", "--kv-type",
                         "f16,q8_0", "--format", "json").stdout)
    assert doc["rows_count"] == 3  # f16 (bits 16 = type f16), int8, q8_0
