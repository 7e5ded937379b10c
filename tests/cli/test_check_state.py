"""`kvplan check` on a hybrid model: the state on a row of its own, in the total, in the JSON."""

from __future__ import annotations


def test_lfm2_on_pixel8_under_llama_cpp_prints_the_state_rows(run):
    result = run("check", "--device", "pixel8", "--model", "lfm2-1.2b", "--ctx", "32k", "--runtime", "llama.cpp")
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    # KV: 6 attention layers × 2 × 8 heads × 64 × 2 B = 12,288 B/token × 32,768 cells = 402,653,184 B
    assert "KV cache (f16, 32,768 tokens)" in out and "402,653,184 B" in out
    # state: 10 conv layers × 2,048 × (3 − 1) × 4 B (f32) = 163,840 B, one cell
    assert "state of 10 state layers (163.84 kB per sequence × 1, constant in the context)" in out
    assert "163,840 B" in out
    assert "llama_memory_recurrent: 1 cells, 10 layers, R (f32) 0.16 MiB, S (f32) 0.00 MiB" in out
    # compute buffer: llama.cpp build 11434's own figure for -c 32768 -ub 512 -fa on -np 1 with one output row
    # (tests/data/llamacpp/buffers/lfm2-1.2b.json)
    assert "104,876,096 B" in out and "not modelled" not in out


def test_state_bytes_in_the_json_and_linear_in_sequences(run_json):
    for n, state in ((1, 163_840), (4, 4 * 163_840)):
        code, doc = run_json("check", "--device", "pixel8", "--model", "lfm2", "--ctx", "32k", "--runtime",
                             "llama.cpp", "--sequences", str(n))
        assert code == 0
        memory = doc["memory"]
        assert memory["state_bytes"] == state
        assert memory["kv_bytes"] == 402_653_184 + state  # -c is shared: 4 streams of 8,192 cells hold the same KV


def test_a_model_without_state_layers_has_no_state_key(run_json):
    code, doc = run_json("check", "--device", "pixel8", "--model", "qwen3-0.6b", "--ctx", "4k")
    assert code == 0 and "state_bytes" not in doc["memory"]


def test_falcon_h1_every_layer_holds_kv_and_a_state(run, run_json):
    # 36 parallel layers: KV 36 × 2 × 2 heads × 64 × 2 B = 18,432 B/token × 16,384 cells = 301,989,888 B; state
    # 36 × (3 × 1,792 × 4 + 196,608 × 4) = 29,085,696 B per cell, f32 whatever the cache type
    for config in ("falcon-h1", "tests/data/hf_configs/falcon-h1-0.5b.json"):
        code, doc = run_json("check", "--device", "pixel8", "--model", config, "--ctx", "16k", "--runtime", "llama.cpp",
                             "--kv-type", "q8_0")
        assert code == 0
        # q8_0: 36 × 2 × 2 heads × 64 values at 34 B per 32 = 9,792 B/token × 16,384 = 160,432,128 B
        assert doc["kv_bytes_per_token"] == 9_792
        assert doc["memory"]["state_bytes"] == 29_085_696
        assert doc["memory"]["kv_bytes"] == 160_432_128 + 29_085_696
    out = run("check", "--device", "pixel8", "--model", "falcon-h1", "--ctx", "16k", "--runtime", "llama.cpp").stdout
    assert "parallel layers: each of 36 layers attends and keeps a state side by side, K/V in llama_kv_cache and " \
           "a state in llama_memory_recurrent" in out
    shown = run("profiles", "show", "falcon-h1").stdout
    assert "attention + state (mamba2): conv 1,792 channels × 4 taps + recurrent 196,608 values per sequence" in shown
