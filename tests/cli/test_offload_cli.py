"""Offload on the command line: each part in its memory, each memory's verdict, decode with each part read from
where it lives, streamed experts (docs/concepts.md, "Offload"): figures derived by hand in the comments."""

from __future__ import annotations

import json

import pytest


def _json(run, *args):
    result = run("check", *args, "--format", "json")
    assert result.exit_code in (0, 1), result.stderr
    return json.loads(result.stdout)


def _parts(d):
    return {(p["part"], p["memory"]): p for p in d["placement"]["parts"]}


def test_streamed_experts_worked_example(run):
    # docs/concepts.md: qwen3-30b-a3b at 4 bits, pixel8, 4k, every expert stack streamed, half of the reads cached
    d = _json(run, "-d", "pixel8", "-m", "qwen3-30b-a3b", "-c", "4k", "--stream-experts", "48",
              "--expert-cache-hit", "50%")
    parts = _parts(d)
    # the stacks are 48 · 3 · 128 · 2,048 · 768 = 28,991,029,248 of 30,532,122,624 values: that share of
    # 15,266,061,312 B (30,532,122,624 · 4 / 8) is 14,495,514,624 B; a token picks 8 of 128: 1/16 of it
    assert parts[("experts", "flash")]["bytes"] == 15_266_061_312 * 28_991_029_248 // 30_532_122_624 == 14_495_514_624
    assert parts[("experts", "flash")]["read_bytes_per_step"] == 14_495_514_624 // 16 == 905_969_664
    # KV 48 · 2 · 4 · 128 · 2 B · 4,096 = 402,653,184 B, with its layers on the GPU (all: -ngl defaults to all)
    assert parts[("kv_cache", "gpu")]["bytes"] == 402_653_184
    mem = {m["memory"]: m for m in d["placement"]["memories"]}
    assert mem["flash"]["read_bytes_per_step"] == 452_984_832 == mem["ram"]["read_bytes_per_step"]
    assert mem["gpu"]["read_bytes_per_step"] == 459_380_736 + 155_583_488 + 402_653_184
    # unified memory: RAM holds every resident part = the main total less the streamed stacks
    assert mem["ram"]["total_bytes"] == d["memory"]["total_bytes"] - 14_495_514_624 == 1_173_199_872
    # (1,017,617,408 + 452,984,832) / (68.3e9 · 0.5) + 452,984,832 / 2.1e9 + 2.37 ms = 261.14 ms
    t = (1_017_617_408 + 452_984_832) / 34.15e9 + 452_984_832 / 2.1e9 + 0.00237
    assert d["placement"]["seconds_per_step"] == pytest.approx(t, rel=1e-12)
    assert d["placement"]["decode_tokens_per_s"] == pytest.approx(1 / t, rel=1e-12)
    # all experts resident would be over the 6 GB budget; streamed, every memory fits: the verdict is the worst one
    assert d["verdict"] == d["placement"]["verdict"] == "fit"


def test_a_discrete_gpu_has_its_own_budget_and_bandwidth(run, tmp_path):
    dev = tmp_path / "laptop.yaml"
    dev.write_text("name: laptop-dgpu\nram: 32 GB\nos_reserve: 4 GB\nmemory_bandwidth: 80 GB/s\nflash_read: 3 GB/s\n"
                   "gpu_memory: 8 GB\ngpu_memory_bandwidth: 400 GB/s\n")
    d = _json(run, "-d", str(dev), "-m", "llama-3.1-8b", "-c", "8k", "--weight-type", "f16", "--n-gpu-layers", "16")
    p = d["placement"]
    assert p["layers_on_gpu"] == 15 and p["output_on_gpu"] is True  # i_gpu_start = 33 − 16 = 17
    assert p["unified_memory"] is False
    mem = {m["memory"]: m for m in p["memories"]}
    assert mem["gpu"]["budget_bytes"] == 8_000_000_000 and mem["gpu"]["budget_source"] == "gpu_memory"
    # F16 layer: q, o 4,096² · 2 = 33,554,432 each; k, v 4,096 · 1,024 · 2 = 8,388,608 each; gate/up/down
    # 4,096 · 14,336 · 2 = 117,440,512 each; 2 norms 16,384 each; rope_freqs 64 · 4 = 256 B once per memory
    layer = 2 * 33_554_432 + 2 * 8_388_608 + 3 * 117_440_512 + 2 * 16_384  # 436,240,384
    output = 4_096 * 128_256 * 2 + 4_096 * 4  # 1,050,689,536
    kv_layer = 2 * 8 * 128 * 2 * 8_192  # 33,554,432
    assert mem["gpu"]["total_bytes"] == 15 * layer + 256 + output + 15 * kv_layer
    # decode: the GPU part at 400 GB/s, the host part (17 layers, their KV) at 80 GB/s
    gpu_read, ram_read = 15 * layer + 256 + output + 15 * kv_layer, 17 * layer + 256 + 17 * kv_layer
    assert mem["gpu"]["read_bytes_per_step"] == gpu_read and mem["ram"]["read_bytes_per_step"] == ram_read
    assert p["seconds_per_step"] == pytest.approx(gpu_read / 400e9 + ram_read / 80e9, rel=1e-12)


def test_the_table_shows_each_part_and_its_memory(run):
    result = run("check", "-d", "macbook-pro-m4-pro-24gb", "-m", "qwen3-30b-a3b", "--n-cpu-moe", "24", "-c", "32k")
    assert result.exit_code == 1, result.stderr  # 15.27 GB of 4-bit weights + 3.22 GB of KV: over the 17.18 GB
    out = result.stdout
    assert "where each part lives (all, --n-cpu-moe 24: 48/48 layers on the GPU, output layer GPU) — OVER" in out
    assert "weights: expert stacks" in out and "RAM: budget 17.18 GB (RAM − OS reserve) → headroom OVER" in out
    assert "decode, each part read from its memory:" in out


@pytest.mark.parametrize("args, message", [
    (["-m", "llama-3.1-8b", "--n-cpu-moe", "4"], "--n-cpu-moe: 'llama-3.1-8b' has no experts"),
    (["-m", "qwen3-30b-a3b", "--expert-cache-hit", "0.3"], "--expert-cache-hit without --stream-experts"),
    (["-m", "qwen3-30b-a3b", "--override-tensor", "exps"], "--override-tensor"),
])
def test_bad_offload_options_are_one_line_errors(run, args, message):
    result = run("check", "-d", "pixel8", "-c", "4k", *args)
    assert result.exit_code == 2
    assert message in result.stderr and "Traceback" not in result.stderr


def test_no_offload_option_no_placement_key(run):
    assert "placement" not in _json(run, "-d", "pixel8", "-m", "7b", "-c", "4k")


def test_done_when_command_equals_the_measured_buffers(run):
    # the command, with the weights in the measured GGUF's type (F16): llama.cpp build 11434 with an RPC
    # device, qwen3-30b-a3b -ngl 99 --n-cpu-moe 24 -c 32768 (tests/data/llamacpp/offload/offload.json) holds
    # RPC0 model 31,476,473,856 + KV 3,221,225,472 and CPU model 29,613,359,104
    d = _json(run, "--device", "macbook-pro-m4-pro-24gb", "--model", "qwen3-30b-a3b", "--n-cpu-moe", "24",
              "--ctx", "32k", "--weight-type", "f16")
    parts = d["placement"]["parts"]
    weights = ("embedding", "layers", "experts", "output")
    assert sum(p["bytes"] for p in parts if p["memory"] == "gpu" and p["part"] in weights) == 31_476_473_856
    assert sum(p["bytes"] for p in parts if p["memory"] == "ram" and p["part"] in weights) == 29_613_359_104
    assert sum(p["bytes"] for p in parts if p["part"] == "kv_cache" and p["memory"] == "gpu") == 3_221_225_472


def test_a_gate_file_takes_the_offload_keys(run, tmp_path):
    gate = tmp_path / "gate.yaml"
    gate.write_text("configurations:\n"
                    "  - name: streamed\n    device: pixel8\n    model: qwen3-30b-a3b\n    ctx: 4k\n"
                    "    stream_experts: 48\n    expert_cache_hit: 50%\n    must_fit: true\n"
                    "  - name: resident\n    device: pixel8\n    model: qwen3-30b-a3b\n    ctx: 4k\n"
                    "    must_fit: true\n")
    result = run("gate", str(gate), "--format", "json")
    assert result.exit_code == 1, result.stderr  # the resident one is over
    d = json.loads(result.stdout)
    verdicts = {c["name"]: c["passed"] for c in d["configurations"]}
    assert verdicts == {"streamed": True, "resident": False}
