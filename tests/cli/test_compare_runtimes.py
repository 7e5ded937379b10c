"""`kvplan compare --runtime a,b,…`: runtimes side by side for the same device, model and context."""

from __future__ import annotations

import json


def _rows(run, *args):
    result = run("compare", "--device", "pixel8", "--model", "llama-3.2-3b", "--ctx", "16k", *args,
                 "--format", "json")
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_each_runtime_is_a_row_in_the_order_named(run):
    d = _rows(run, "--runtime", "mlx-lm,llama.cpp,ideal")
    assert d["runtimes"] == ["mlx-lm", "llama.cpp", "ideal"] and d["models"] == ["llama-3.2-3b"]
    assert [r["runtime"] for r in d["rows"]] == ["mlx-lm", "llama.cpp", "ideal"]
    # llama-3.2-3b: 28 layers × 2 (K, V) × 8 KV heads × 128 × 2 B (f16) = 114,688 B a token; × 16,384 tokens
    # = 1,879,048,192 B in all three (16,384 is a whole number of llama.cpp's 256-cell pads and MLX's 256-slot steps)
    assert {r["kv_bytes"] for r in d["rows"]} == {1_879_048_192}
    # only llama.cpp adds its compute/output buffers and its process to the total
    ideal, llama = d["rows"][2], d["rows"][1]
    assert ideal["buffers_bytes"] == 0 and llama["buffers_bytes"] > 0
    assert llama["total_bytes"] == ideal["total_bytes"] + llama["buffers_bytes"] + llama["process_bytes"]


def test_each_runtime_takes_its_own_options(run):
    # qwen3-4b: 36 layers × 2 × 8 KV heads × 128 × 2 B = 147,456 B a token. --parallel 2 is llama.cpp's -np: its
    # 16,384 cells (2,415,919,104 B) are shared by 2 sequences; mlx-lm keeps one sequence and takes --max-kv-size 4k:
    # a RotatingKVCache of 4,096 slots a layer once the prompt passed it → 4,096 × 147,456 = 603,979,776 B
    result = run("compare", "--device", "pixel8", "--model", "qwen3-4b", "--ctx", "16k", "--runtime",
                 "llama.cpp,mlx-lm", "--parallel", "2", "--max-kv-size", "4k", "--format", "json")
    assert result.exit_code == 0, result.stderr
    llama, mlx = json.loads(result.stdout)["rows"]
    assert llama["sequences"] == 2 and llama["kv_bytes"] == 2_415_919_104
    assert mlx["sequences"] == 1 and mlx["kv_bytes"] == 603_979_776


def test_an_option_no_named_runtime_takes_is_refused(run):
    result = run("compare", "-d", "pixel8", "-m", "llama-3.2-3b", "-c", "4k", "--runtime", "llama.cpp,mlx-lm",
                 "--cache", "static")
    assert result.exit_code == 2
    assert "--cache: transformers options; they need --runtime transformers" in result.stderr


def test_a_runtime_named_twice_or_unknown_is_refused(run):
    twice = run("compare", "-d", "pixel8", "-m", "llama-3.2-3b", "-c", "4k", "--runtime", "llama.cpp,llamacpp")
    assert twice.exit_code == 2 and "llama.cpp is named twice" in twice.stderr
    unknown = run("compare", "-d", "pixel8", "-m", "llama-3.2-3b", "-c", "4k", "--runtime", "llama.cpp,vllm")
    assert unknown.exit_code == 2 and "unknown runtime 'vllm'" in unknown.stderr


def test_a_refusal_names_the_runtime_of_the_cell(run):
    result = run("compare", "-d", "pixel8", "-m", "llama-3.2-3b", "-c", "4k", "--runtime", "llama.cpp,transformers",
                 "--kv-bits", "8")
    assert result.exit_code == 2
    assert result.stderr.startswith("kvplan: error: pixel8 × llama-3.2-3b × transformers: --kv-bits")


def test_the_matrix_labels_model_and_runtime(run):
    result = run("compare", "-d", "pixel8", "-d", "macbook-air-m2-16gb", "-m", "llama-3.2-3b", "-c", "16k",
                 "--runtime", "llama.cpp,mlx-lm")
    assert result.exit_code == 0, result.stderr
    assert "devices × models · runtimes" in result.stdout
    assert "llama-3.2-3b · llama.cpp" in result.stdout and "llama-3.2-3b · mlx-lm" in result.stdout


def test_every_runtime_side_by_side_for_one_model(run):
    """The issue's done-when: the runtimes of a laptop and a phone side by side, one row each, for qwen3-4b at 4k."""
    names = ["ideal", "llama.cpp", "ollama", "mlx-lm", "transformers", "executorch", "onnxruntime-genai", "litert-lm"]
    result = run("compare", "--device", "macbook-air-m2-16gb", "--model", "qwen3-4b", "--ctx", "4k",
                 "--runtime", ",".join(names), "--format", "json")
    assert result.exit_code == 0, result.stderr
    rows = json.loads(result.stdout)["rows"]
    assert [r["runtime"] for r in rows] == names
    by = {r["runtime"]: r for r in rows}
    # f16: 36 layers · 2 · 8 KV heads · 128 · 2 B = 147,456 B a token × 4,096 = 603,979,776 B
    for name in ("ideal", "llama.cpp", "ollama", "mlx-lm", "transformers", "onnxruntime-genai"):
        assert by[name]["kv_bytes"] == 603_979_776, name
    # ExecuTorch's and LiteRT-LM's exports hold the cache in float32 unless told otherwise: twice the bytes
    assert by["executorch"]["kv_bytes"] == by["litert-lm"]["kv_bytes"] == 2 * 603_979_776
    # ONNX Runtime GenAI without a shared buffer: past (4,095 rows) and present (4,096) at once at the last step
    assert by["onnxruntime-genai"]["kv_peak_bytes"] == (4095 + 4096) * 147_456
