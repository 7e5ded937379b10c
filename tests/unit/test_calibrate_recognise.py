"""kvplan.calibrate.recognise: the library model and device a llama-bench file names (pure rules, no files)."""

from __future__ import annotations

import pytest

from kvplan.calibrate.recognise import (DeviceCandidate, ModelCandidate, family, model_arch, recognise_device,
                                        recognise_model)

# The counts of the library profiles (model_profiles/*.yaml): GGUF tensor count, then the params field.
LLAMA_2_7B = ModelCandidate("llama-2-7b", "llama", 6_738_415_616, 6_740_000_000)  # params: 6.74B (card figure)
MISTRAL_01 = ModelCandidate("mistral-7b-v0.1", "llama", 7_241_732_096, 7_241_732_096)
MISTRAL_03 = ModelCandidate("mistral-7b-v0.3", "llama", 7_248_023_552, 7_248_023_552)
# Phi-3.5's GGUF carries rope_factors_long/short (2 × 48 values): 3,821,079,552 + 96 = 3,821,079,648
PHI_3_MINI = ModelCandidate("phi-3-mini-4k", "phi3", 3_821_079_552, 3_821_079_552)
PHI_35_MINI = ModelCandidate("phi-3.5-mini", "phi3", 3_821_079_648, 3_821_079_552)
QWEN25_7B = ModelCandidate("qwen2.5-7b", "qwen2", 7_615_616_512, 7_615_616_512)
MODELS = [LLAMA_2_7B, MISTRAL_01, MISTRAL_03, PHI_3_MINI, PHI_35_MINI, QWEN25_7B]


@pytest.mark.parametrize("model_type, arch", [("llama 7B Q4_0", "llama"), ("LLaMA 7B mostly F16", "llama"),
                                              ("qwen2 7B Q8_0", "qwen2"), ("", "")])
def test_arch_is_the_first_word(model_type, arch):
    assert model_arch(model_type) == arch


def test_exact_gguf_count():
    found = recognise_model("llama 7B Q4_0", 6_738_415_616, MODELS)
    assert found.name == "llama-2-7b"
    assert "= llama-2-7b's GGUF tensor count (architecture llama)" in found.reason


def test_gguf_count_comes_before_the_params_field():
    # 3,821,079,552 is phi-3-mini-4k's GGUF count and phi-3.5-mini's params field: the GGUF count decides
    assert recognise_model("phi3 3B Q4_0", 3_821_079_552, MODELS).name == "phi-3-mini-4k"
    assert recognise_model("phi3 3B Q4_0", 3_821_079_648, MODELS).name == "phi-3.5-mini"


def test_params_field_when_no_gguf_layout():
    # an architecture without a tensor layout has no GGUF count: the params field is compared
    other = ModelCandidate("some-model", "rwkv6", None, 1_600_000_000)
    found = recognise_model("rwkv6 1.6B Q8_0", 1_600_000_000, [other])
    assert found.name == "some-model" and "params field" in found.reason


def test_architecture_must_agree():
    # llama-2-7b's exact count written under another architecture is not llama-2-7b
    found = recognise_model("qwen2 7B Q4_0", 6_738_415_616, MODELS)
    assert found.name is None and "no qwen2 profile has" in found.reason
    found = recognise_model("gpt2 124M F16", 124_439_808, MODELS)
    assert found.name is None and "no library model profile has llama.cpp architecture 'gpt2'" in found.reason


def test_markdown_rounded_count_is_near():
    # Markdown prints "6.74 B": (6,738,415,616 − 6,740,000,000) / 6,740,000,000 = −0.0235 %, within 1 %; the next
    # llama profile, mistral-7b-v0.1, is (7,241,732,096 − 6.74e9) / 6.74e9 = +7.4 % off
    # (llama-2-7b's params field is that same 6.74B card figure: equal, so the exact step takes it; without it the
    # near step must)
    assert recognise_model("llama 7B Q4_0", 6_740_000_000, MODELS).name == "llama-2-7b"
    gguf_only = ModelCandidate("llama-2-7b", "llama", 6_738_415_616, None)
    found = recognise_model("llama 7B Q4_0", 6_740_000_000, [gguf_only, MISTRAL_01])
    assert found.name == "llama-2-7b"
    assert "is -0.02 % from llama-2-7b's 6,738,415,616" in found.reason


def test_near_to_several_is_none():
    # "7.24 B": mistral-7b-v0.1 is +0.02 % and mistral-7b-v0.3 +0.11 % off: both within 1 %, neither chosen
    found = recognise_model("llama 7B Q4_0", 7_240_000_000, MODELS)
    assert found.name is None
    assert found.candidates == ("mistral-7b-v0.1", "mistral-7b-v0.3")


def test_several_exact_is_none():
    twin = ModelCandidate("llama-2-7b-chat", "llama", 6_738_415_616, 6_738_415_616)
    found = recognise_model("llama 7B Q4_0", 6_738_415_616, [LLAMA_2_7B, twin])
    assert found.name is None and found.candidates == ("llama-2-7b", "llama-2-7b-chat")


def test_too_far_names_the_nearest():
    # 6,900,000,000: llama-2-7b is (6,738,415,616 − 6.9e9) / 6.9e9 = −2.3 % off, mistral-7b-v0.1 +5.0 %
    found = recognise_model("llama 7B Q4_0", 6_900_000_000, MODELS)
    assert found.name is None
    assert "nearest: llama-2-7b 6,738,415,616, -2.3 %" in found.reason


GIB = 2**30
M2_8 = DeviceCandidate("macbook-air-m2-8gb", "Apple MacBook Air (M2, 2022) 8 GB — Apple M2 (8-core GPU), 8 GB",
                       "macos", 8 * GIB, "8 GiB")
M2_16 = DeviceCandidate("macbook-air-m2-16gb", "Apple MacBook Air (M2, 2022) 16 GB — Apple M2, 16 GB LPDDR5",
                        "macos", 16 * GIB, "16 GiB")
M4_PRO = DeviceCandidate("macbook-pro-m4-pro-24gb", "MacBook Pro 14-inch (M4 Pro, 2024) 24 GB — Apple M4 Pro (base "
                         "12-core CPU)", "macos", 24 * GIB, "24 GiB")
S24U = DeviceCandidate("galaxy-s24-ultra", "Samsung Galaxy S24 Ultra — Snapdragon 8 Gen 3 for Galaxy", "android",
                       12 * 10**9, "12 GB")
OP12 = DeviceCandidate("oneplus-12", "OnePlus 12 — Snapdragon 8 Gen 3, 12 GB LPDDR5X", "android", 12 * 10**9,
                       "12 GB")
# a Linux box whose description happens to name the M2 (Asahi Linux on a Mac)
ASAHI = DeviceCandidate("asahi-m2-8gb", "Asahi Linux on an Apple M2 Mac mini", "linux", 8 * GIB, "8 GiB")
DEVICES = [M2_16, M2_8, M4_PRO, S24U, OP12]


@pytest.mark.parametrize("name, stem", [
    ("macbook-air-m2-8gb", "macbook-air-m2"), ("pixel8", "pixel8"), ("snapdragon-x-elite-16gb", "snapdragon-x-elite"),
    ("galaxy-s24", "galaxy-s24"),
])
def test_family_drops_the_ram_size(name, stem):
    assert family(name) == stem


def test_one_family_takes_the_smallest_ram():
    found = recognise_device(["Apple M2", "Apple M2"], ["Metal,BLAS"], DEVICES)
    assert found.name == "macbook-air-m2-8gb"
    assert found.candidates == ("macbook-air-m2-8gb", "macbook-air-m2-16gb")
    assert "the smallest RAM (8 GiB)" in found.reason


def test_tier_word_names_another_chip():
    # "Apple M4" is not the "Apple M4 Pro" of the description, and "Apple M2 Max" is in no description
    assert recognise_device(["Apple M4"], [], DEVICES).name is None
    assert recognise_device(["Apple M4 Pro"], [], DEVICES).name == "macbook-pro-m4-pro-24gb"
    found = recognise_device(["Apple M2 Max"], [], DEVICES)
    assert found.name is None and "no library device's description names 'Apple M2 Max'" in found.reason


def test_metal_keeps_apple_platforms():
    assert recognise_device(["Apple M2"], [], [M2_8, ASAHI]).name is None  # two families
    assert recognise_device(["Apple M2"], ["Metal"], [M2_8, ASAHI]).name == "macbook-air-m2-8gb"


def test_several_families_list_the_candidates():
    found = recognise_device(["Snapdragon(R) 8 Gen 3"], [], DEVICES)
    assert found.name is None
    assert found.candidates == ("galaxy-s24-ultra", "oneplus-12")  # both 12 GB; then by name
    assert "several families (galaxy-s24-ultra, oneplus-12)" in found.reason


def test_no_hardware_strings():
    found = recognise_device([None, ""], [], DEVICES)
    assert found.name is None and "no cpu_info/gpu_info" in found.reason
