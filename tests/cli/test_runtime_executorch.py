"""``kvplan check --runtime executorch``: the JSON figures, the export command priced, and the errors."""

from __future__ import annotations

CHECK = ("check", "--device", "pixel8", "--model", "llama-3.2-1b")


def test_default_prices_the_context_at_fp32(run_json):
    code, out = run_json(*CHECK, "--ctx", "2048", "--runtime", "executorch")
    assert code == 0
    # 16 layers · 2 · 8 kv heads · 64 · 2,048 slots · 4 B (fp32) = 134,217,728 B
    assert out["memory"]["kv_bytes"] == out["memory"]["kv_peak_bytes"] == 134_217_728
    rt = out["runtime"]
    assert rt["name"] == "executorch" and rt["version"] == "1.4.1" and rt["dtype"] == "float32"
    assert rt["options"]["max_context_length"] == 2048 and rt["cells"]["slots"] == 2048
    assert "export.max_context_length=2048" in rt["command"]
    assert "model.dtype_override=fp32" in rt["command"]


def test_static_length_and_quantized_cache(run_json):
    code, out = run_json(*CHECK, "--ctx", "1000", "--runtime", "et", "--max-context-length", "4k",
                         "--quantize-kv-cache")
    assert code == 0
    # int8: 16 · 2 · 8 · (64 + 4 B scale + 1 B zero point) = 17,664 B a slot × 4,096 slots = 72,351,744 B,
    # whatever the 1,000-token request
    assert out["memory"]["kv_bytes"] == 72_351_744
    assert "model.quantize_kv_cache=True" in out["runtime"]["command"]
    assert "export.max_context_length=4096" in out["runtime"]["command"]


def test_fp16(run_json):
    code, out = run_json(*CHECK, "--ctx", "64", "--runtime", "executorch", "--et-dtype", "fp16")
    assert code == 0
    # 16 · 2 · 8 · 64 · 2 B = 32,768 B a slot × 64 = 2,097,152 B; below 128 the command sets max_seq_length too
    assert out["memory"]["kv_bytes"] == 2_097_152
    assert "export.max_seq_length=64" in out["runtime"]["command"]


def test_ctx_beyond_max_context_length_is_one_line_exit_2(run):
    r = run(*CHECK, "--ctx", "8192", "--runtime", "executorch", "--max-context-length", "4096")
    assert r.exit_code == 2
    assert "--max-context-length" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_bad_dtype_exits_2(run):
    r = run(*CHECK, "--ctx", "2048", "--runtime", "executorch", "--et-dtype", "fp8")
    assert r.exit_code == 2
    assert "--et-dtype" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_quantized_fp16_refused(run):
    r = run(*CHECK, "--ctx", "2048", "--runtime", "executorch", "--et-dtype", "fp16", "--quantize-kv-cache")
    assert r.exit_code == 2
    assert "--quantize-kv-cache" in r.stderr and "--et-dtype" in r.stderr


def test_option_refused_under_another_runtime(run):
    r = run(*CHECK, "--ctx", "2048", "--runtime", "llama.cpp", "--max-context-length", "4096")
    assert r.exit_code == 2
    assert "--max-context-length" in r.stderr and "--runtime executorch" in r.stderr


def test_more_than_one_sequence_refused(run):
    r = run(*CHECK, "--ctx", "2048", "--runtime", "executorch", "--sequences", "2")
    assert r.exit_code == 2
    assert "--sequences" in r.stderr


def test_max_ctx_is_the_export_length(run_json):
    code, out = run_json(*CHECK, "--ctx", "2048", "--runtime", "executorch", "--max-context-length", "8192")
    assert code == 0
    assert out["memory"]["kv_bytes"] == 8192 * 65_536  # 536,870,912 B from load
    assert out["max_ctx"] == 8192 and out["max_ctx_limited_by"] == "max_context_length"
