"""Offload through the one evaluation core: max context with each memory's own budget, mean decode and prefill's
memory floor reading each part from its memory, sweep rows equal to check, the gate judging the speculative rate,
and the built-in discrete-GPU laptop. Figures derived by hand in the comments."""

from __future__ import annotations

import json

import pytest

LAPTOP = "laptop-rtx-4060-16gb"
# qwen3-30b-a3b at 4 bits (tests/cli/test_offload_cli.py): the 48 layers' expert stacks 14,495,514,624 B, the
# layers' other tensors 459,380,736 B, the output layer 155,583,488 B, the input embedding 155,582,464 B
STACKS, OTHER, OUTPUT, EMBEDDING = 14_495_514_624, 459_380_736, 155_583_488, 155_582_464
QWEN_KV_PER_TOKEN = 48 * 2 * 4 * 128 * 2  # 98,304 B: every layer's K and V, 4 KV heads × 128, f16
# llama-3.1-8b in F16 (tests/cli/test_offload_cli.py): one layer, the output layer, one layer's KV per token
LAYER = 2 * 33_554_432 + 2 * 8_388_608 + 3 * 117_440_512 + 2 * 16_384  # 436,240,384 B
LLAMA_OUTPUT = 4_096 * 128_256 * 2 + 4_096 * 4  # 1,050,689,536 B
LLAMA_KV_LAYER = 2 * 8 * 128 * 2  # 4,096 B per token


def _json(run, command, *args):
    result = run(command, *args, "--format", "json")
    assert result.exit_code in (0, 1), result.stderr
    return json.loads(result.stdout)


def _memories(d):
    return {m["memory"]: m for m in d["placement"]["memories"]}


def _dgpu(tmp_path, compute="", gpu="8 GB"):
    dev = tmp_path / "laptop.yaml"
    dev.write_text("name: laptop-dgpu\nram: 32 GB\nos_reserve: 4 GB\nmemory_bandwidth: 80 GB/s\nflash_read: 3 GB/s\n"
                   f"gpu_memory: {gpu}\ngpu_memory_bandwidth: 400 GB/s\n{compute}")
    return str(dev)


def test_the_laptop_with_experts_in_ram_is_limited_by_its_gpu_memory(run):
    d = _json(run, "check", "--device", LAPTOP, "--model", "qwen3-30b-a3b", "--n-cpu-moe", "24", "--ctx", "32k")
    mem = _memories(d)
    # 24 of 48 layers' stacks in host RAM: half of them on the GPU with every other weight but the input embedding
    gpu_weights = OTHER + STACKS // 2 + OUTPUT  # 7,862,721,536 B
    assert mem["gpu"]["budget_bytes"] == 8 * 2**30 and mem["gpu"]["budget_source"] == "gpu_memory"
    assert mem["gpu"]["total_bytes"] == gpu_weights + 32_768 * QWEN_KV_PER_TOKEN == 11_083_947_008
    assert mem["gpu"]["headroom_bytes"] == 8 * 2**30 - 11_083_947_008 == d["memory"]["headroom_bytes"]
    # RAM (16 GiB − 4 GB = 13,179,869,184 B) holds the embedding and 24 layers' stacks: it fits
    assert mem["ram"]["total_bytes"] == EMBEDDING + STACKS // 2 == 7_403_339_776
    assert mem["ram"]["verdict"] == "fit" and d["verdict"] == "over"
    # the largest context: the GPU's KV (every layer is on it) in what its weights leave of 8 GiB,
    # (8,589,934,592 − 7,862,721,536) // 98,304 = 727,213,056 // 98,304 = 7,397 (RAM, 7.40 GB, still fits)
    assert d["max_ctx"] == (8 * 2**30 - gpu_weights) // QWEN_KV_PER_TOKEN == 7_397
    assert d["max_ctx_limited_by"] == "memory"
    # decode: the GPU's reads at 256 GB/s, the 24 host layers' active experts (1/16 of them) at 76.8 GB/s, both at
    # the profile's bandwidth efficiency 0.84
    gpu_read = OTHER + STACKS // 2 // 16 + OUTPUT + 32_768 * QWEN_KV_PER_TOKEN
    assert mem["gpu"]["read_bytes_per_step"] == gpu_read == 4_289_174_528
    gpu_bw, ram_bw = 256e9 * 0.84, 76.8e9 * 0.84
    t = gpu_read / gpu_bw + STACKS // 2 // 16 / ram_bw
    assert d["decode_tokens_per_s"] == pytest.approx(1 / t, rel=1e-12)
    # mean over 32,768 steps from an empty cache: step k reads k tokens of KV, all on the GPU (Σ k = n(n+1)/2)
    n = 32_768
    kv_read = QWEN_KV_PER_TOKEN * n * (n + 1) // 2
    mean_t = n * ((OTHER + STACKS // 2 // 16 + OUTPUT) / gpu_bw + STACKS // 2 // 16 / ram_bw) + kv_read / gpu_bw
    assert d["mean_decode_tokens"] == n
    assert d["mean_decode_tokens_per_s"] == pytest.approx(n / mean_t, rel=1e-9)


def test_the_laptop_with_layers_on_the_gpu_prints_each_memory(run):
    result = run("check", "--device", LAPTOP, "--model", "qwen3-30b-a3b", "--n-gpu-layers", "20", "--ctx", "32k")
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert "where each part lives (-ngl 20: 19/48 layers on the GPU, output layer GPU) — FIT" in out
    assert "GPU: budget 8.59 GB (the device's gpu_memory) → headroom FIT" in out
    assert "RAM: budget 13.18 GB (RAM − OS reserve) → headroom FIT" in out
    assert "max context that fits (every memory within its budget)" in out
    assert "(flash at its rate)" not in out  # nothing streamed


def test_unified_memory_max_context_is_the_ram_budget(run):
    # M4 Pro 24 GiB: RAM holds every part, budget 24 GiB − 8 GiB = 17,179,869,184 B; the GPU's share (16 GiB
    # working set) holds 7.86 GB of weights and the KV, so it is RAM that decides:
    # (17,179,869,184 − 15,266,061,312) // 98,304 = 1,913,807,872 // 98,304 = 19,468
    d = _json(run, "check", "--device", "macbook-pro-m4-pro-24gb", "--model", "qwen3-30b-a3b", "--n-cpu-moe", "24",
              "--ctx", "32k")
    assert d["max_ctx"] == (17_179_869_184 - 15_266_061_312) // QWEN_KV_PER_TOKEN == 19_468


def test_n_gpu_layers_max_context_mean_decode_and_prefill_floor(run, tmp_path):
    # compute so large that the prefill is memory-bound: its floor is each memory's weights per micro-batch
    dev = _dgpu(tmp_path, "compute: 1000 PFLOP/s\n")
    d = _json(run, "check", "-d", dev, "-m", "llama-3.1-8b", "-c", "8k", "--weight-type", "f16",
              "--n-gpu-layers", "16")
    # -ngl 16: layers 17–31 (15) and the output on the GPU (8 GB); rope_freqs 256 B once per memory
    gpu_weights = 15 * LAYER + 256 + LLAMA_OUTPUT  # 7,594,295,552 B
    # (8,000,000,000 − 7,594,295,552) // (15 · 4,096) = 405,704,448 // 61,440 = 6,603
    assert d["max_ctx"] == (8_000_000_000 - gpu_weights) // (15 * LLAMA_KV_LAYER) == 6_603
    ram_weights_read = 17 * LAYER + 256  # the input embedding is not read (one row)
    # mean decode over 8,192 steps: KV read Σ_k 32 layers · 4,096 · k, 15/32 of it on the GPU
    n = 8_192
    kv_read = 32 * LLAMA_KV_LAYER * n * (n + 1) // 2
    kv_gpu = kv_read * 15 // 32
    mean_t = n * (gpu_weights / 400e9 + ram_weights_read / 80e9) + kv_gpu / 400e9 + (kv_read - kv_gpu) / 80e9
    assert d["mean_decode_tokens_per_s"] == pytest.approx(n / mean_t, rel=1e-9)
    # prefill's memory floor: 8,192 / 512 = 16 micro-batches, each reading each memory's weights at its rate
    assert d["prefill_bound"] == "memory"
    assert d["prefill_memory_s"] == pytest.approx(16 * (gpu_weights / 400e9 + ram_weights_read / 80e9), rel=1e-12)
    assert any("its compute bound is the device's one compute figure" in w for w in d["warnings"])


def test_sweep_takes_the_offload_options_and_its_rows_are_checks(run):
    args = ("--device", LAPTOP, "--model", "qwen3-30b-a3b", "--n-cpu-moe", "24")
    rows = _json(run, "sweep", *args, "--ctx", "1k,8k,32k")["rows"]
    for row in rows:
        d = _json(run, "check", *args, "--ctx", str(row["ctx"]))
        mem = _memories(d)
        for name in ("gpu", "ram"):
            assert row[f"{name}_total_bytes"] == mem[name]["total_bytes"]
            assert row[f"{name}_headroom_bytes"] == mem[name]["headroom_bytes"]
            assert row[f"{name}_verdict"] == mem[name]["verdict"]
        assert row["gpu_budget_bytes"] == mem["gpu"]["budget_bytes"] and row["budget_bytes"] == mem["ram"]["budget_bytes"]
        assert row["flash_bytes"] == 0
        assert row["verdict"] == d["verdict"] and row["headroom_bytes"] == d["memory"]["headroom_bytes"]
        # the resident total, as compare and gate have it: GPU + RAM on a discrete GPU
        assert row["total_bytes"] == mem["gpu"]["total_bytes"] + mem["ram"]["total_bytes"]
        assert row["decode_tokens_per_s"] == d["decode_tokens_per_s"]
        assert row["max_ctx"] == d["max_ctx"] == 7_397
    # 1k fits: the GPU holds 7,862,721,536 + 1,024 · 98,304 = 7,963,384,832 B of 8 GiB, headroom 626,550,016 B
    # under the 10 % margin (858,993,459 B): tight
    assert rows[0]["gpu_total_bytes"] == 7_963_384_832 and rows[0]["gpu_verdict"] == "tight"
    assert [r["verdict"] for r in rows] == ["tight", "over", "over"]


def test_a_sweep_without_offload_has_no_memory_columns(run):
    d = _json(run, "sweep", "--device", "pixel8", "--model", "llama-3.2-1b", "--ctx", "1k")
    assert "gpu_total_bytes" not in d["columns"] and "gpu_total_bytes" not in d["rows"][0]


def test_gate_min_decode_judges_the_speculative_rate(run, tmp_path):
    common = "    device: macbook-pro-m4-pro-24gb\n    model: llama-3.1-8b\n    ctx: 8k\n    min_decode_tok_s: 45\n"
    gate = tmp_path / "gate.yaml"
    gate.write_text("configurations:\n  - name: plain\n" + common + "  - name: speculative\n" + common
                    + "    draft: llama-3.2-1b\n    acceptance_rate: 0.7\n")
    result = run("gate", str(gate), "--format", "json")
    d = json.loads(result.stdout)
    judged = {c["name"]: next(t for t in c["thresholds"] if t["name"] == "min_decode_tok_s")
              for c in d["configurations"]}
    plain = _json(run, "check", "-d", "macbook-pro-m4-pro-24gb", "-m", "llama-3.1-8b", "-c", "8k")
    spec = _json(run, "check", "-d", "macbook-pro-m4-pro-24gb", "-m", "llama-3.1-8b", "-c", "8k",
                 "--draft", "llama-3.2-1b", "--acceptance", "0.7")["speculative"]
    # E = (1 − 0.7^4) / (1 − 0.7) = 0.7599 / 0.3 = 2.533 tokens per step of 3 draft steps and one verification
    assert spec["expected_tokens_per_step"] == pytest.approx(0.7599 / 0.3, rel=1e-12)
    rate = spec["expected_tokens_per_step"] / (3 * spec["draft_step_s"] + spec["verify_step_s"])
    assert judged["speculative"]["actual"] == pytest.approx(rate, rel=1e-12)
    assert judged["speculative"]["actual"] == spec["speculative_decode_tokens_per_s"]
    assert judged["plain"]["actual"] == plain["decode_tokens_per_s"] < 45 < judged["speculative"]["actual"]
    assert (judged["plain"]["passed"], judged["speculative"]["passed"]) == (False, True)
    assert result.exit_code == 1


def test_fit_suggests_the_most_gpu_layers_that_fit(run):
    # llama-3.1-8b q4_k_m at 32k, every layer on the 8 GiB GPU: over; -ngl 31 moves the first two layers and
    # their KV to RAM (i_gpu_start = 33 − 31 = 2) and fits, -ngl 32 does not
    d = _json(run, "check", "--device", LAPTOP, "--model", "llama-3.1-8b", "--weight-type", "q4_k_m",
              "--n-gpu-layers", "99", "--ctx", "32k")
    assert d["verdict"] == "over"
    ngl = [c for c in d["changes_to_fit"] if c["change"] == "n_gpu_layers"]
    assert [c["value"] for c in ngl] == [31]
    assert _json(run, "check", "--device", LAPTOP, "--model", "llama-3.1-8b", "--weight-type", "q4_k_m",
                 "--n-gpu-layers", "32", "--ctx", "32k")["verdict"] == "over"


def test_max_context_at_a_decode_target_reads_each_part_from_its_memory(run, tmp_path):
    # -ngl 16 on a 32 GB / 400 GB/s GPU beside 80 GB/s RAM (no latency, efficiency 1): a step takes
    # (GPU weights + 15/32 of the KV) / 400e9 + (RAM weights + 17/32 of the KV) / 80e9, the KV 32 · 4,096 B per token,
    # so 8 tok/s holds while ctx · (15 · 4,096 / 400e9 + 17 · 4,096 / 80e9) ≤ 1/8 − 7,594,295,552 / 400e9
    # − 7,416,086,784 / 80e9: (0.125 − 0.111687) / (1.536e-7 + 8.704e-7) = 0.0133132 / 1.024e-6 = 13,001 tokens
    # (memory holds far more: the GPU to (32e9 − 7.59e9) / 61,440 ≈ 397k, RAM, with the 1,050,673,152 B input
    # embedding, to (28e9 − 7,416,086,784 − 1,050,673,152) // (17 · 4,096) = 280,521); 10 tok/s is out of reach
    # (0.1 s is less than the weights' 0.111687 s alone)
    dev = _dgpu(tmp_path, gpu="32 GB")
    gpu_weights, ram_weights = 15 * LAYER + 256 + LLAMA_OUTPUT, 17 * LAYER + 256
    per_token_s = 15 * LLAMA_KV_LAYER / 400e9 + 17 * LLAMA_KV_LAYER / 80e9
    expected = int((1 / 8 - gpu_weights / 400e9 - ram_weights / 80e9) / per_token_s)
    assert expected == 13_001
    args = ("-d", dev, "-m", "llama-3.1-8b", "--weight-type", "f16", "--n-gpu-layers", "16")
    d = _json(run, "check", *args, "-c", "4k", "--target-tok-s", "8")
    assert d["max_ctx"] == (28_000_000_000 - ram_weights - 1_050_673_152) // (17 * LLAMA_KV_LAYER) == 280_521
    assert d["max_ctx_at_target"] == expected
    at = _json(run, "check", *args, "-c", str(expected))["decode_tokens_per_s"]
    past = _json(run, "check", *args, "-c", str(expected + 1))["decode_tokens_per_s"]
    assert at >= 8 > past
    none = _json(run, "check", *args, "-c", "4k", "--target-tok-s", "10")
    assert none["max_ctx_at_target"] is None


def test_memory_curves_carry_each_memory():
    from kvplan import Catalog
    from kvplan.curves import memory_curves
    from kvplan.plan import Knobs, build_scenario

    catalog = Catalog()
    s = build_scenario(catalog.device(LAPTOP).profile, catalog.model("qwen3-30b-a3b").profile, 16_384,
                       Knobs(n_cpu_moe=24))
    curves = memory_curves(s, ctx_max_tokens=16_384)
    ctx = curves.ctx_tokens
    # the GPU: its weights and every layer's KV at each context; host RAM: the embedding and 24 layers' stacks
    assert list(curves.gpu_total_bytes) == [OTHER + STACKS // 2 + OUTPUT + int(c) * QWEN_KV_PER_TOKEN for c in ctx]
    assert set(int(v) for v in curves.ram_total_bytes) == {EMBEDDING + STACKS // 2}
    assert curves.gpu_budget_bytes == 8 * 2**30
    unified = build_scenario(catalog.device("macbook-pro-m4-pro-24gb").profile, catalog.model("qwen3-30b-a3b").profile,
                             16_384, Knobs(n_cpu_moe=24))
    assert memory_curves(unified, ctx_max_tokens=16_384).ram_total_bytes is None  # RAM is the whole stack there
    plain = build_scenario(catalog.device("pixel8").profile, catalog.model("llama-3.2-1b").profile, 4_096, Knobs())
    assert memory_curves(plain, ctx_max_tokens=4_096).gpu_total_bytes is None
