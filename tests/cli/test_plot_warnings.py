"""``kvplan plot KIND`` prints check's warnings about what it draws: on stderr, each once, never in the image."""

from __future__ import annotations

import json

import pytest

from tests.conftest import DATA

IMPLAUSIBLE = DATA / "acceptance" / "implausible.yaml"
# mistral-7b-v0.1: 32 layers × 8 KV heads × 128 × 2 (K, V) × 2 B = 131,072 B per token, a 4,096-token window
# llama.cpp does not keep (GGUF architecture llama). At 8,192 tokens llama.cpp keeps 8,192 × 131,072 =
# 1,073,741,824 B; the ideal formula's window 4,096 × 131,072 = 536,870,912 B.
MISTRAL_WINDOW_AT_8K = ("kvplan: warning: llama.cpp ignores mistral-7b-v0.1's 4,096-token sliding window (Mistral "
                        "is converted to GGUF as architecture llama, which has no window): it allocates 1.07 GB of "
                        "KV cache here, not 536.87 MB")


def _warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("kvplan: warning: ")]


def _check_warnings(run, *args) -> list[str]:
    result = run("check", *args, "--format", "json")
    return [f"kvplan: warning: {w}" for w in json.loads(result.stdout)["warnings"]]


@pytest.mark.parametrize("kind", ["memory", "decode"])
def test_without_ctx_the_axis_end_is_judged(run, tmp_path, kind):
    # the default axis of an unbounded windowed model ends at 2 × the window = 8,192 tokens
    path = tmp_path / f"{kind}.svg"
    result = run("plot", kind, "-d", "pixel8", "-m", "mistral-7b-v0.1", "-o", path)
    assert result.exit_code == 0, result.stderr
    assert result.stderr.splitlines() == [MISTRAL_WINDOW_AT_8K, f"kvplan: note: wrote {path}"]
    assert "llama.cpp ignores" not in path.read_text()  # on stderr, never inside the image
    assert _check_warnings(run, "-d", "pixel8", "-m", "mistral-7b-v0.1", "-c", "8k") == [MISTRAL_WINDOW_AT_8K]


@pytest.mark.parametrize("kind", ["memory", "decode", "fitmap"])
def test_with_ctx_the_warnings_are_checks_at_that_ctx(run, tmp_path, kind):
    args = ("-d", "pixel8", "-m", "mistral-7b-v0.1", "-c", "16k")
    result = run("plot", kind, *args, "-o", tmp_path / f"{kind}.png")
    assert result.exit_code == 0, result.stderr
    expected = _check_warnings(run, *args)
    # 16,384 × 131,072 = 2,147,483,648 B: "2.15 GB … not 536.87 MB", word for word what check says
    assert len(expected) == 1 and "it allocates 2.15 GB of KV cache here, not 536.87 MB" in expected[0]
    assert _warnings(result.stderr) == expected


def test_attention_judges_the_context_it_quotes(run, tmp_path):
    # no --ctx: the legend quotes the trained 32,768 tokens: 32,768 × 131,072 = 4,294,967,296 B
    result = run("plot", "attention", "-m", "mistral-7b-v0.1", "-o", tmp_path / "a.png")
    assert result.exit_code == 0, result.stderr
    assert _warnings(result.stderr) == [MISTRAL_WINDOW_AT_8K.replace("1.07 GB", "4.29 GB")]


def test_implausible_device_each_warning_once(run, tmp_path):
    # two models on the same device: the device's three warnings are printed once each, as sweep does
    result = run("plot", "memory", "-d", IMPLAUSIBLE, "-m", "qwen2.5-0.5b,llama-3.2-1b", "-c", "1k",
                 "-o", tmp_path / "m.png")
    assert result.exit_code == 0, result.stderr
    assert _warnings(result.stderr) == [
        "kvplan: warning: device tiny-board: ram 200,000,000 B is under 256 MB — is a unit missing?",
        "kvplan: warning: device tiny-board: memory_bandwidth 500,000,000 B/s is under 1 GB/s — is a unit missing?",
        "kvplan: warning: device tiny-board: flash_read 5,000,000 B/s is under 10 MB/s — is a unit missing?"]


def test_context_far_past_the_trained_one(run, tmp_path):
    # llama-2-7b is trained to 4,096 tokens: 65,536 / 4,096 = 16.0×, past the 8× threshold
    result = run("plot", "decode", "-d", "pixel8", "-m", "7b", "-c", "64k", "-o", tmp_path / "d.png")
    assert result.exit_code == 0, result.stderr
    assert _warnings(result.stderr) == [
        "kvplan: warning: context 65,536 tokens: 16.0× llama-2-7b's trained 4,096 per sequence (more than 8×) — "
        "is that the context you meant? Quality there depends on a context extension (RoPE scaling) the model "
        "may not support"]


def test_nothing_to_say_prints_no_warning(run, tmp_path):
    path = tmp_path / "m.png"
    result = run("plot", "memory", "-d", "pixel8", "-m", "7b", "-c", "4k", "-o", path)
    assert result.exit_code == 0
    assert result.stderr == f"kvplan: note: wrote {path}\n"
