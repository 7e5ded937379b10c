"""`--runtime onnxruntime-genai` on the command line: JSON figures, the past + present peak deciding the verdict,
the genai_config options it priced, its refusals. Figures derived by hand (no onnxruntime-genai run)."""

from __future__ import annotations

import json

from tests.conftest import REF_7B, REF_PHONE

# ref-7b: 32 layers · 2 (key, value) · 32 heads · 128 · 2 B = 524,288 B per token; weights 1.75 GB; budget 6 GB
BPT = 32 * 2 * 32 * 128 * 2


def check(run, *args):
    return run("check", "-d", str(REF_PHONE), "-m", str(REF_7B), *args)


def test_peak_of_past_and_present_decides_the_verdict(run):
    result = check(run, "-c", "6000", "--runtime", "onnxruntime-genai", "--format", "json")
    d = json.loads(result.stdout)
    # steady: 6,000 · 524,288 = 3,145,728,000 B (with the weights 4.9 GB: would fit)
    assert d["memory"]["kv_bytes"] == 6000 * BPT == 3_145_728_000
    # peak: past 5,999 + present 6,000 = 11,999 rows · 524,288 = 6,290,931,712 B; + 1.75 GB = 8,040,931,712 > 6 GB
    assert d["memory"]["kv_peak_bytes"] == 11_999 * BPT == 6_290_931_712
    assert d["memory"]["total_bytes"] == 1_750_000_000 + 6_290_931_712
    assert d["verdict"] == "over" and result.exit_code == 1
    assert d["flash"]["transient"] is False  # the peak comes back at every step
    # max ctx: ⌊4.25e9 / 524,288⌋ = 8,106 rows → (8,106 + 1) // 2 = 4,053 tokens
    assert d["max_ctx"] == 4053 and d["max_ctx_limited_by"] == "memory"
    assert d["runtime"]["name"] == "onnxruntime-genai"
    assert d["runtime"]["cells"] == {"rows": 6000, "peak_rows": 11_999}
    assert d["runtime"]["command"] == ("genai_config.json search: max_length the context, past_present_share_buffer "
                                       "false, batch_size 1, num_beams 1")


def test_shared_buffer_holds_max_length(run):
    result = check(run, "-c", "1000", "--runtime", "ort-genai", "--past-present-share-buffer", "--max-length", "4k",
                   "--format", "json")
    assert result.exit_code == 0, result.stderr
    d = json.loads(result.stdout)
    # 4,096 · 524,288 = 2,147,483,648 B at 1,000 tokens, steady and peak alike
    assert d["memory"]["kv_bytes"] == d["memory"]["kv_peak_bytes"] == 4096 * BPT == 2_147_483_648
    assert d["max_ctx"] == 4096 and d["max_ctx_limited_by"] == "max_length"
    assert "past_present_share_buffer: one key and one value tensor per layer of 4,096 tokens" in d["runtime"]["rules"][-1]


def test_unshared_max_length_caps_only_where_memory_allows(run):
    # max_length 2,000 < the memory answer 4,053: capped there, and said so
    d = json.loads(check(run, "-c", "1000", "--runtime", "ortgenai", "--max-length", "2000", "--format", "json").stdout)
    assert d["max_ctx"] == 2000 and d["max_ctx_limited_by"] == "max_length"
    # max_length 8,000 > 4,053: memory decides
    d = json.loads(check(run, "-c", "1000", "--runtime", "ortgenai", "--max-length", "8000", "--format", "json").stdout)
    assert d["max_ctx"] == 4053 and d["max_ctx_limited_by"] == "memory"


def test_table_words_the_peak(run):
    result = check(run, "-c", "2000", "--runtime", "onnxruntime-genai")
    assert result.exit_code == 0, result.stderr
    # peak 3,999 rows · 524,288 = 2,096,627,712 B
    assert "KV held at every decode step (past + present)" in result.stdout and "2,096,627,712 B" in result.stdout


def test_bad_values_exit_2_in_one_line(run):
    for args in (("--max-length", "0"), ("--max-length", "lots"), ("--kv-type", "q8_0"),
                 ("--max-length", "500")):  # ctx 1,000 > max_length 500
        result = check(run, "-c", "1000", "--runtime", "onnxruntime-genai", *args)
        assert result.exit_code == 2, args
        assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr


def test_options_refused_under_another_runtime(run):
    for runtime in ((), ("--runtime", "llama.cpp"), ("--runtime", "litert-lm")):
        result = check(run, "-c", "1000", *runtime, "--max-length", "4k")
        assert result.exit_code == 2
        assert "--max-length" in result.stderr and "--runtime onnxruntime-genai" in result.stderr
    result = check(run, "-c", "1000", "--runtime", "transformers", "--past-present-share-buffer")
    assert result.exit_code == 2 and "--past-present-share-buffer" in result.stderr
