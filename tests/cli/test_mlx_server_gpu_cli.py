"""`--prompt-cache-size` (mlx_lm.server), the device's GPU working set and `--gpu-limit`, and the warnings near or
past it: figures derived by hand in the comments."""

from __future__ import annotations

import json

PLAIN_SLOT = 28 * 2 * 8 * 128 * 2  # llama-3.2-3b: 28 layers · K,V · 8 KV heads · 128 · 2 B = 114,688 B
# llama-3.2-3b as mlx-4bit (group 64): embedding 221,626,368 + linear 1,585,446,912 + norms 350,208 B
MLX_4BIT_WEIGHTS = 221_626_368 + 1_585_446_912 + 350_208  # 1,807,423,488 B


def _json(run, *args):
    result = run("check", *args, "--format", "json")
    assert result.exit_code in (0, 1), result.stderr
    return json.loads(result.stdout)


def test_server_prices_ten_stored_caches_in_the_total_and_the_flash_figures(run):
    d = _json(run, "-d", "macbook-air-m2-16gb", "-m", "llama-3.2-3b", "-c", "16k", "--runtime", "mlx-lm",
              "--prompt-cache-size", "10")
    m = d["memory"]
    live = 16_384 * PLAIN_SLOT  # 1,879,048,192 B: plain f16 KVCache of 16,384 slots (its peak too)
    assert m["kv_bytes"] == live == 1_879_048_192
    assert d["runtime"]["cells"]["prompt_cache_bytes"] == 10 * live == 18_790_481_920
    assert m["kv_peak_bytes"] == 11 * live == 20_669_530_112
    # weights 4-bit 1,606,374,912 B + 11 caches = 22,275,905,024 B
    assert m["total_bytes"] == 1_606_374_912 + 11 * live == 22_275_905_024
    # budget: 16 GiB − 5.33 GiB = 17,179,869,184 − 5,723,043,922 = 11,456,825,262 B; over by 10,819,079,762 B
    assert m["budget_bytes"] == 11_456_825_262
    # the stored caches stay between requests: the steady overflow keeps them (no transient part here)
    assert d["flash"]["overflow_bytes"] == d["flash"]["steady_overflow_bytes"] == 10_819_079_762
    # decode reads the live cache only: 1,606,374,912 + 1,879,048,192 B
    assert d["bytes_per_step"] == 1_606_374_912 + live
    assert d["runtime"]["command"] == "mlx_lm.server --model MODEL --prompt-cache-size 10"
    assert d["runtime"]["options"]["prompt_cache_size"] == 10


def test_server_table_shows_the_prompt_cache_row(run):
    result = run("check", "-d", "macbook-air-m2-16gb", "-m", "llama-3.2-3b", "-c", "16k", "--runtime", "mlx-lm",
                 "--prompt-cache-size", "10", "--kv-bits", "4")
    out = result.stdout
    # 10 × 16,384 slots × 32,256 B = 5,284,823,040 B; the live peak's overhang 704,643,072 − 528,482,304
    assert "+ mlx_lm.server prompt cache: 10 earlier prompts' caches" in out and "5,284,823,040 B" in out
    assert "176,160,768 B" in out


def test_server_refuses_max_kv_size(run):
    result = run("check", "-d", "macbook-air-m2-16gb", "-m", "qwen3-4b", "-c", "8k", "--runtime", "mlx-lm",
                 "--prompt-cache-size", "2", "--max-kv-size", "4k")
    assert result.exit_code == 2
    assert "--max-kv-size with --prompt-cache-size" in result.stderr and "Traceback" not in result.stderr


def test_the_working_set_is_the_profiles_or_the_one_asked_for(run):
    # the 8 GB M2 Air's profile: 5461.34 MiB = 5,726,630,051.8 → 5,726,630,052 B
    d = _json(run, "-d", "macbook-air-m2-8gb", "-m", "llama-3.2-3b", "-c", "4k")
    assert d["memory"]["gpu_working_set_bytes"] == 5_726_630_052
    assert _json(run, "-d", "pixel8", "-m", "7b", "-c", "4k")["memory"]["gpu_working_set_bytes"] is None
    d = _json(run, "-d", "pixel8", "-m", "7b", "-c", "4k", "--gpu-limit", "6 GiB")
    assert d["memory"]["gpu_working_set_bytes"] == 6 * 2**30
    bad = run("check", "-d", "pixel8", "-m", "7b", "-c", "4k", "--gpu-limit", "6")
    assert bad.exit_code == 2 and "--gpu-limit" in bad.stderr


def _warnings(run, *args):
    return _json(run, "-d", "macbook-air-m2-16gb", "-m", "llama-3.2-3b", *args)["warnings"]


def test_mlx_lm_warns_past_ninety_percent_of_the_working_set(run):
    # 1,807,423,488 / 0.9 = 2,008,248,320 B: a working set 1,000 B below it warns, 1,000 B above does not
    args = ("-c", "4k", "--runtime", "mlx-lm", "--weight-type", "mlx-4bit")
    below = _warnings(run, *args, "--gpu-limit", "2008247320B")
    said = [w for w in below if w.startswith("MLX-LM will print its warning")]
    # 1,807,423,488 // 2^20 = 1,723 MiB; 2,008,247,320 // 2^20 = 1,915 MiB
    assert said and "requires 1723 MB which is close to the maximum recommended size of 1915 MB" in said[0]
    assert not any("MLX-LM will print" in w for w in _warnings(run, *args, "--gpu-limit", "2008249320B"))
    # the 16 GB Air's own working set, 10922.67 MiB = 11,453,249,618 B, is far above 1,807,423,488 / 0.9
    assert not any("MLX-LM will print" in w for w in _warnings(run, *args))
    # the ideal formula says nothing about a runtime's GPU
    assert not any("MLX-LM will print" in w for w in _warnings(run, "-c", "4k", "--weight-type", "mlx-4bit",
                                                               "--gpu-limit", "2008247320B"))


def test_llama_cpp_warns_when_weights_kv_and_compute_buffer_pass_the_working_set(run):
    # llama.cpp -c 4096 of llama-3.2-3b (f16): 4,096 cells × 114,688 B = 469,762,048 B; weights 4-bit
    # 1,606,374,912 B; the compute buffer as kvplan prices it (checked against llama.cpp in the buffer tests);
    # the output buffer is a CPU buffer (Metal has no host buffer type) and does not count
    args = ("-c", "4k", "--runtime", "llama.cpp")
    d = _json(run, "-d", "macbook-air-m2-16gb", "-m", "llama-3.2-3b", *args)
    compute = d["runtime"]["compute_buffer_bytes"]
    assert compute > 0 and d["runtime"]["output_buffer_bytes"] > 0
    metal = 1_606_374_912 + 4_096 * PLAIN_SLOT + compute
    assert metal == 2_076_136_960 + compute
    # the profile's own working set (11,453,249,618 B) is far above: no warning
    assert not any(w.startswith("llama.cpp on Metal") for w in d["warnings"])
    at = _warnings(run, *args, "--gpu-limit", f"{metal}B")  # equal: ggml's test is strictly greater
    assert not any(w.startswith("llama.cpp on Metal") for w in at)
    past = [w for w in _warnings(run, *args, "--gpu-limit", f"{metal - 1}B") if w.startswith("llama.cpp on Metal")]
    assert past and "llama.cpp prints no warning for it" in past[0]
    assert "the weights, the KV cache and the compute buffer" in past[0]
    # weights alone past it (1,606,374,911 B): ggml's own warning as it maps them
    past = [w for w in _warnings(run, *args, "--gpu-limit", "1606374911B") if w.startswith("llama.cpp on Metal")]
    assert past and "ggml warns" in past[0]
    # --no-mmap: the weights are no mapped buffer, which is all ggml checks
    past = [w for w in _warnings(run, *args, "--no-mmap", "--gpu-limit", "1606374911B")
            if w.startswith("llama.cpp on Metal")]
    assert past and "llama.cpp prints no warning for it" in past[0]


def test_sweep_takes_the_limit_and_reports_the_warning_of_its_largest_point(run):
    # as in check: 1,807,423,488 B of mlx-4bit weights against 2,008,247,320 B (1,723 and 1,915 MiB)
    result = run("sweep", "-d", "macbook-air-m2-16gb", "-m", "llama-3.2-3b", "--ctx", "4k,8k", "--runtime", "mlx-lm",
                 "--weight-type", "mlx-4bit", "--gpu-limit", "2008247320B")
    assert result.exit_code in (0, 1), result.stderr
    assert "requires 1723 MB which is close to the maximum recommended size of 1915 MB" in result.stdout + result.stderr
