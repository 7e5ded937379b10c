"""`--runtime litert-lm` on the command line: JSON figures of the static KV buffers, the verdict on them, the
options, its refusals. Figures derived by hand (no LiteRT-LM run)."""

from __future__ import annotations

import json

from tests.conftest import REF_7B, REF_PHONE

# ref-7b exported in f16: 32 layers · 2 (K, V) · 32 heads · 128 · 2 B = 524,288 B per token; weights 1.75 GB;
# budget 6 GB
BPT = 32 * 2 * 32 * 128 * 2


def check(run, *args):
    return run("check", "-d", str(REF_PHONE), "-m", str(REF_7B), *args)


def test_default_export_is_float32(run):
    # no --kv-type: ai-edge-torch's float32 KV, 32 · 2 · 32 · 128 · 4 B = 1,048,576 B/token; 4,096 of them =
    # 4,294,967,296 B; + 1.75 GB = 6,044,967,296 B > 6 GB → over, whatever the profile's f16 cache says
    result = check(run, "-c", "100", "--runtime", "litert-lm", "--format", "json")
    d = json.loads(result.stdout)
    assert d["memory"]["kv_bytes"] == 4096 * 2 * BPT == 4_294_967_296
    assert d["runtime"]["dtype"] == "float32" and d["verdict"] == "over" and result.exit_code == 1


def test_default_allocates_4096_tokens_whatever_the_prompt(run):
    result = check(run, "-c", "100", "--runtime", "litert-lm", "--kv-type", "f16", "--format", "json")
    assert result.exit_code == 0, result.stderr
    d = json.loads(result.stdout)
    # 4,096 · 524,288 = 2,147,483,648 B for a 100-token prompt
    assert d["memory"]["kv_bytes"] == d["memory"]["kv_peak_bytes"] == 4096 * BPT == 2_147_483_648
    assert d["max_ctx"] == 4096 and d["max_ctx_limited_by"] == "max_num_tokens"
    assert d["runtime"]["options"] == {"max_num_tokens": 4096, "kv_cache_tokens": None, "backend": "cpu"}
    assert d["runtime"]["cells"] == {"kv_cache_tokens": 4096, "buffer_sets": 1}


def test_gpu_holds_two_sets_and_the_verdict_follows(run):
    # exported with 4,096 slots, max_num_tokens 8k, GPU: 4,096 · 524,288 · 2 = 4,294,967,296 B; + 1.75 GB =
    # 6,044,967,296 B > 6 GB → over
    result = check(run, "-c", "1000", "--runtime", "litert", "--litert-backend", "gpu", "--max-num-tokens", "8k",
                   "--kv-cache-tokens", "4k", "--kv-type", "f16", "--format", "json")
    d = json.loads(result.stdout)
    assert d["memory"]["kv_bytes"] == 2 * 4096 * BPT == 4_294_967_296
    assert d["memory"]["total_bytes"] == 6_044_967_296
    assert d["verdict"] == "over" and result.exit_code == 1
    # on the CPU the same export holds one set (2,147,483,648 B) and fits
    cpu = json.loads(check(run, "-c", "1000", "--runtime", "litert", "--max-num-tokens", "8k",
                           "--kv-cache-tokens", "4k", "--kv-type", "f16", "--format", "json").stdout)
    assert cpu["memory"]["kv_bytes"] == 2_147_483_648 and cpu["verdict"] != "over"
    assert cpu["max_ctx"] == 4096 and cpu["max_ctx_limited_by"] == "kv_cache_tokens"


def test_buffers_that_cannot_fit_leave_no_context(run):
    # 16,384 slots · 524,288 = 8,589,934,592 B > 4.25 GB left beside the weights
    d = json.loads(check(run, "-c", "100", "--runtime", "litert-lm", "--max-num-tokens", "16k", "--kv-type", "f16",
                         "--format", "json").stdout)
    assert d["memory"]["kv_bytes"] == 16_384 * BPT == 8_589_934_592
    assert d["verdict"] == "over" and d["max_ctx"] is None


def test_bad_values_exit_2_in_one_line(run):
    for args in (("--max-num-tokens", "0"), ("--kv-cache-tokens", "x"), ("--litert-backend", "npu"),
                 ("--kv-type", "q8_0"), ("--sequences", "2"), ("-c", "5000"), ("--pinned-prefix", "512")):  # 5,000 > max_num_tokens 4,096
        result = check(run, "-c", "1000", "--runtime", "litert-lm", *args)
        assert result.exit_code == 2, args
        assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr


def test_options_refused_under_another_runtime(run):
    for runtime in ((), ("--runtime", "transformers"), ("--runtime", "onnxruntime-genai")):
        result = check(run, "-c", "1000", *runtime, "--max-num-tokens", "4k")
        assert result.exit_code == 2
        assert "--max-num-tokens" in result.stderr and "--runtime litert-lm" in result.stderr
    result = check(run, "-c", "1000", "--runtime", "mlx-lm", "--litert-backend", "gpu")
    assert result.exit_code == 2 and "--litert-backend" in result.stderr
