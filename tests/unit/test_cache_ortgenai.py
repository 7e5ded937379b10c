"""ONNX Runtime GenAI's cache (kvplan.caches.ortgenai, kvplan.engine.ortgenai_cache v0.15.2): hand-derived figures,
arithmetic in comments. The unshared figures are also checked against onnxruntime-genai 0.15.2 itself in
test_runtime_ortgenai_measured.py; the shared buffer and the quantized caches are not measured (docs/runtimes.md)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kvplan.caches.ortgenai import ortgenai_cache
from kvplan.engine import NO_CONTEXT_FITS
from kvplan.engine import ortgenai_cache as o
from kvplan.engine.formats import NAMED_FORMATS
from kvplan.errors import FieldError, KvplanError
from kvplan.profiles.catalog import Catalog
from kvplan.profiles.runtime import OrtGenAiSpec, parse_runtime, runtime_spec

# llama-3.2-1b: 16 layers · 2 (key, value) · 8 heads · 64 · 2 B (fp16) = 32,768 B per token
LLAMA_1B_BPT = 16 * 2 * 8 * 64 * 2


def cache(name="llama-3.2-1b", fmt=None, **spec):
    f = NAMED_FORMATS[fmt] if fmt else None
    return ortgenai_cache(runtime_spec("onnxruntime-genai", **spec), Catalog().model(name).profile, f, f)


def test_bytes_per_token_is_every_layers_key_and_value_row():
    assert LLAMA_1B_BPT == 32_768
    assert cache().bytes_per_token == LLAMA_1B_BPT


def test_unshared_steady_is_the_present_and_the_peak_past_plus_present():
    c = cache()
    # between steps the presents of 4,096 rows: 4,096 · 32,768 = 134,217,728 B
    assert c.kv_bytes(4096) == 134_217_728
    # during the step reaching 4,096: past 4,095 + present 4,096 = 8,191 rows · 32,768 = 268,402,688 B
    assert c.kv_peak_bytes(4096) == 8_191 * 32_768 == 268_402_688
    # batch 3: three times each
    assert c.kv_peak_bytes(4096, 3) == 3 * 268_402_688
    assert not c.peak_is_transient  # it recurs at every decode step
    assert c.kv_bytes(0) == c.kv_peak_bytes(0) == 0


def test_unshared_arrays_agree_with_scalars():
    c = cache()
    ctx = np.array([1, 2, 1000, 4096])
    assert c.kv_peak_bytes(ctx).tolist() == [c.kv_peak_bytes(int(x)) for x in ctx]
    assert c.kv_bytes(ctx, 2).tolist() == [c.kv_bytes(int(x), 2) for x in ctx]


def test_unshared_max_ctx_is_exact_against_the_peak():
    c = cache()
    # 1 GB for one sequence: ⌊1e9 / 32,768⌋ = 30,517 rows; (30,517 + 1) // 2 = 15,259 tokens
    # check: (2 · 15,259 − 1) · 32,768 = 999,981,056 ≤ 1e9 < (2 · 15,260 − 1) · 32,768 = 1,000,046,592
    assert c.max_ctx(1_000_000_000) == 15_259
    assert c.kv_peak_bytes(15_259) <= 1_000_000_000 < c.kv_peak_bytes(15_260)
    # two sequences share the allowance: ⌊5e8 / 32,768⌋ = 15,258; (15,258 + 1) // 2 = 7,629
    assert c.max_ctx(1_000_000_000, 2) == 7_629
    assert c.max_ctx(32_767) == NO_CONTEXT_FITS  # not one row
    assert c.max_ctx(32_768) == 1  # one token: past 0 + present 1
    # max_length caps it: 1,000 < 15,259
    assert cache(max_length=1000).max_ctx(1_000_000_000) == 1000


def test_shared_buffer_is_max_length_rows_whatever_the_context():
    c = cache(past_present_share_buffer=True, max_length=8192)
    # 8,192 · 32,768 = 268,435,456 B at 100 tokens as at 8,192, steady and peak alike
    assert c.kv_bytes(100) == c.kv_peak_bytes(100) == c.kv_bytes(8192) == 268_435_456
    with pytest.raises(FieldError) as err:
        c.kv_bytes(8193)
    assert "runtime.max_length" in err.value.mentions
    assert c.ctx_limit == (8192, "max_length")
    # fits or not: 268,435,456 B
    assert c.max_ctx(268_435_456) == 8192
    assert c.max_ctx(268_435_455) == NO_CONTEXT_FITS


def test_shared_buffer_without_max_length_is_the_context():
    c = cache(past_present_share_buffer=True)
    assert c.kv_bytes(4096) == c.kv_peak_bytes(4096) == 4096 * 32_768
    # 1e9 // 32,768 = 30,517 tokens
    assert c.max_ctx(1_000_000_000) == 30_517


def test_quantized_caches_of_the_model_builder():
    # int8 / fp8: 16 · 2 · 8 · 64 · 1 B = 16,384 B/token; int4: (64 + 1) // 2 = 32 B a head → 16 · 2 · 8 · 32 = 8,192
    assert cache(fmt="int8").bytes_per_token == 16_384
    assert cache(fmt="fp8").bytes_per_token == 16_384
    assert cache(fmt="int4").bytes_per_token == 8_192
    assert o.packed_int4_row_bytes(96) == 48 and o.packed_int4_row_bytes(7) == 4


def test_windows_are_not_capped():
    # gemma-3-1b: 26 layers · 2 · 1 head · 256 · 2 B = 26,624 B/token on every layer, the 512 window ignored
    c = cache("gemma-3-1b")
    assert c.bytes_per_token == 26 * 2 * 1 * 256 * 2 == 26_624
    assert c.kv_bytes(4096) == 4096 * 26_624
    assert "ortgenai_window_not_capped" in {r.kind for r in c.rules}


def test_refusals():
    with pytest.raises(KvplanError):
        cache(fmt="q8_0")
    with pytest.raises(FieldError):
        cache("deepseek-v2-lite")  # MLA
    with pytest.raises(FieldError) as err:
        ortgenai_cache(OrtGenAiSpec(), Catalog().model("llama-3.2-1b").profile, sliding_window=1024)
    assert err.value.fields == ("sliding_window",)
    with pytest.raises(FieldError):
        runtime_spec("ort-genai", max_length=0)


def test_names_and_file_form():
    assert runtime_spec("ortgenai") == runtime_spec("onnxruntime_genai") == OrtGenAiSpec()
    spec = parse_runtime({"name": "ort-genai", "max_length": "8k", "past_present_share_buffer": True})
    assert spec == OrtGenAiSpec(max_length=8192, past_present_share_buffer=True)
    with pytest.raises(FieldError):
        runtime_spec("transformers", max_length=8192)


def test_engine_unshared_helpers():
    # peak rows 2c − 1; the inverse at 10 rows of allowance: (10 + 1) // 2 = 5 (9 rows ≤ 10 < 11)
    assert o.unshared_peak_tokens(5) == 9
    assert o.unshared_max_total_tokens(10 * 7, 7) == 5
    assert o.unshared_max_total_tokens(6, 7) == -1
    assert math.isclose(o.unshared_max_total_tokens(np.array([70, 6]), 7).tolist()[0], 5)


def test_file_errors_name_the_key():
    from kvplan.profiles.runtime import file_runtime

    with pytest.raises(ValueError, match="past_present_share_buffer"):
        file_runtime({"name": "onnxruntime-genai", "past_present_share_buffer": "yes"})
    with pytest.raises(ValueError, match="max_length"):
        file_runtime({"name": "llama.cpp", "max_length": 4096})  # another runtime's key
