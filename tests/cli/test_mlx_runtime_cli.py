"""`--runtime mlx-lm` on the command line: the figures, the mlx_lm command it priced, its refusals."""

from __future__ import annotations

import json


def test_issue_command_llama_3b_16k_4bit(run):
    # the issue's command: llama-3.2-3b, 16k prompt, --kv-bits 4 (group 64): 16,384 slots × 32,256 B = 528,482,304
    # after the prompt; the chunk ending at 6,144 tokens holds 6,144 plain slots × 114,688 B = 704,643,072 first
    result = run("check", "--device", "macbook-air-m2-16gb", "--model", "llama-3.2-3b", "--ctx", "16k",
                 "--runtime", "mlx-lm", "--kv-bits", "4", "--format", "json")
    assert result.exit_code == 0, result.stderr
    d = json.loads(result.stdout)
    assert d["memory"]["kv_bytes"] == 528_482_304 and d["memory"]["kv_peak_bytes"] == 704_643_072
    assert d["runtime"]["name"] == "mlx-lm"
    assert d["runtime"]["command"] == "mlx_lm.generate --model MODEL --prompt - --kv-bits 4"
    assert d["runtime"]["cells"]["kv_cache_capacity"] == 16_384 and d["runtime"]["cells"]["quantized"] is True


def test_table_prints_the_command_and_the_rules(run):
    result = run("check", "-d", "macbook-air-m2-16gb", "-m", "qwen3-4b", "-c", "10k", "--runtime", "mlx-lm",
                 "--max-kv-size", "4k", "--prefill-step-size", "1024")
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert "mlx_lm.generate --model MODEL --prompt - --max-kv-size 4096 --prefill-step-size 1024" in out
    assert "RotatingKVCache(max_size=4,096, keep=4) on every layer" in out
    # qwen3-4b 147,456 B a slot: peak 4,095 + 1,024 = 5,119 slots → 754,827,264 B; steady 4,096 → 603,979,776
    assert "754,827,264 B" in out and "603,979,776 B" in out


def test_options_of_mlx_need_its_runtime(run):
    result = run("check", "-d", "macbook-air-m2-16gb", "-m", "qwen3-4b", "-c", "4k", "--max-kv-size", "4k")
    assert result.exit_code == 2
    assert "--runtime mlx-lm" in result.stderr and "Traceback" not in result.stderr


def test_quantized_rotating_cache_is_refused(run):
    result = run("check", "-d", "macbook-air-m2-16gb", "-m", "gemma-3-1b", "-c", "8k", "--runtime", "mlx-lm",
                 "--kv-bits", "8")
    assert result.exit_code == 2
    assert "RotatingKVCache.to_quantized raises NotImplementedError" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
