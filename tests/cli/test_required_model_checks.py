"""The issue's two checks on built-in models: Qwen3-0.6B's head_dim and Gemma 3 1B's local window."""

from __future__ import annotations

from tests.conftest import REF_PHONE


def test_qwen3_0_6b_uses_head_dim_128(run_json):
    code, doc = run_json("check", "--device", REF_PHONE, "--model", "qwen3-0.6b", "--ctx", "4096")
    assert code == 0
    # 28 layers × 2 (K, V) × 8 KV heads × head_dim 128 × 2 bytes = 114,688 (head_dim 64 = 1024/16 would halve it)
    assert doc["kv_bytes_per_token"] == 28 * 2 * 8 * 128 * 2 == 114_688
    assert doc["memory"]["kv_bytes"] == 114_688 * 4096 == 469_762_048


def test_gemma_3_1b_caps_local_layers_at_the_window(run_json):
    code, doc = run_json("check", "--device", REF_PHONE, "--model", "gemma-3-1b", "--ctx", "32768")
    assert code == 0
    # 26 layers, 1 KV head, head_dim 256, fp16: 2 × 1 × 256 × 2 = 1,024 bytes per token per layer.
    # Pattern 5:1 → global layers are i % 6 == 5: 5, 11, 17, 23 (4 layers); the other 22 keep 512 tokens.
    # kv = 4 × 1,024 × 32,768 + 22 × 1,024 × 512 = 134,217,728 + 11,534,336 = 145,752,064
    assert doc["kv_bytes_per_token"] == 26 * 1024 == 26_624
    assert doc["memory"]["kv_bytes"] == 4 * 1024 * 32768 + 22 * 1024 * 512 == 145_752_064
