"""ExecuTorch's static Llama cache (v1.4.1): hand-derived figures, the arithmetic written beside each."""

from __future__ import annotations

import numpy as np
import pytest

from kvplan.caches.executorch import executorch_cache
from kvplan.engine import NO_CONTEXT_FITS
from kvplan.engine.executorch_cache import head_slot_bytes, layer_slot_bytes, ring_layer_bytes, static_cache_bytes
from kvplan.engine.formats import format_from_name
from kvplan.errors import FieldError
from kvplan.profiles.catalog import Catalog
from kvplan.profiles.runtime import ExecuTorchSpec, runtime_spec


def cache(name="llama-3.2-1b", sliding_window=None, **spec):
    return executorch_cache(ExecuTorchSpec(**spec), Catalog().model(name).profile, sliding_window=sliding_window)


def test_engine_slot_bytes():
    # fp32: 64 values × 4 B = 256 B a head; K+V of 8 kv heads: 2 × 8 × 256 = 4,096 B a slot
    assert head_slot_bytes(64, 4) == 256
    assert layer_slot_bytes(8, 64, 4) == 4_096
    # int8 cache: 64 × 1 B + a float32 scale 4 B + an int8 zero point 1 B = 69 B a head, whatever the dtype given
    assert head_slot_bytes(64, 4, quantized=True) == head_slot_bytes(64, 2, quantized=True) == 69
    # ring of window 40: 80 slots × 4,096 B + 80 int64 positions × 8 B = 327,680 + 640 = 328,320 B
    assert ring_layer_bytes(40, 4_096) == 328_320
    # 2,048 slots × 65,536 B (16 layers) + 1,000 B of rings
    assert static_cache_bytes(2_048, 65_536, 1_000) == 134_218_728


def test_llama_3_2_1b_fp32_default_is_the_context():
    # 16 layers · 2 · 8 kv heads · 64 · 4 B (fp32, --dtype-override's default) = 65,536 B a slot;
    # max_context_length not given: the export's length is the context, 2,048 slots → 134,217,728 B
    c = cache()
    assert c.bytes_per_token == 65_536
    assert c.kv_bytes(2_048) == c.kv_peak_bytes(2_048) == 134_217_728
    assert c.ctx_limit is None


def test_static_whatever_the_prompt():
    # --max-context-length 4096 at fp16: 16 · 2 · 8 · 64 · 2 B = 32,768 B a slot × 4,096 = 134,217,728 B,
    # the same for a 10-token prompt and a 4,096-token one
    c = cache(max_context_length=4_096, dtype_override="fp16")
    assert c.kv_bytes(10) == c.kv_bytes(4_096) == 134_217_728
    assert c.kv_bytes(0) == 0  # no request, no cache (the protocol's zero)
    assert list(c.kv_bytes(np.array([0, 1, 4_096]))) == [0, 134_217_728, 134_217_728]
    assert c.ctx_limit == (4_096, "max_context_length")


def test_beyond_max_context_length_is_refused():
    c = cache(max_context_length=4_096)
    with pytest.raises(FieldError) as exc:
        c.kv_bytes(4_097)
    assert "runtime.max_context_length" in exc.value.mentions
    with pytest.raises(FieldError):
        c.kv_bytes(np.array([1_000, 8_192]))


def test_quantized_kv_cache():
    # --quantize_kv_cache (fp32): per token, layer, head: 64 int8 + 4 B scale + 1 B zero point = 69 B, K and V:
    # 16 layers · 2 · 8 heads · 69 B = 17,664 B a slot; 4,096 slots → 72,351,744 B
    c = cache(max_context_length=4_096, quantize_kv_cache=True)
    assert c.bytes_per_token == 17_664
    assert c.kv_bytes(100) == 72_351_744


def test_quantized_needs_fp32():
    # ExecuTorch 1.4.1's export fails for fp16/bf16 with a quantized cache (measured): refused, naming both options
    with pytest.raises(FieldError) as exc:
        cache(quantize_kv_cache=True, dtype_override="bf16")
    assert exc.value.fields == ("runtime.quantize_kv_cache", "runtime.dtype_override")


def test_sliding_window_is_a_ring_of_twice_the_window():
    # --sliding-window 1024: every layer a RingKVCache of 2 · 1,024 = 2,048 slots at 4,096 B (fp32, one layer)
    # plus 2,048 int64 positions: 8,388,608 + 16,384 = 8,404,992 B a layer × 16 = 134,479,872 B, constant
    c = cache(sliding_window=1_024)
    assert c.kv_bytes(10) == c.kv_bytes(100_000) == 134_479_872
    assert c.bytes_per_token == 0 and c.unbounded
    assert c.local_global_attention == (1_024,)


def test_gemma3_pattern_rings_the_local_layers():
    # gemma-3-1b: 26 layers, 5 local (window 512) : 1 global, 1 kv head × 256, fp32: a slot 2 · 256 · 4 = 2,048 B
    # 4 global layers × 4,096 slots × 2,048 B = 33,554,432 B
    # 22 local layers × (1,024 slots × 2,048 B + 1,024 × 8 B) = 22 × 2,105,344 = 46,317,568 B → 79,872,000 B
    c = cache("gemma-3-1b")
    assert c.kv_bytes(4_096) == 79_872_000
    assert c.local_global_attention.count(0) == 4 and len(c.local_global_attention) == 26


def test_max_ctx():
    c = cache()
    # 1 GB: floor(1,000,000,000 / 65,536) = 15,258 tokens
    assert c.max_ctx(1_000_000_000) == 15_258
    fixed = cache(max_context_length=8_192)
    # 8,192 × 65,536 = 536,870,912 B: fits in 1 GB (the whole length), not in 500 MB
    assert fixed.max_ctx(1_000_000_000) == 8_192
    assert fixed.max_ctx(500_000_000) == NO_CONTEXT_FITS
    assert list(fixed.max_ctx(np.array([1e9, 5e8]))) == [8_192, NO_CONTEXT_FITS]


def test_read_over_generation():
    # full layers read positions 1..n: 65,536 · n(n+1)/2; 3 tokens → 65,536 · 6 = 393,216 B
    assert cache().kv_bytes_read_over_generation(3) == 393_216


def test_cache_type_other_than_the_dtype_is_refused():
    fmt = format_from_name("q8_0")
    with pytest.raises(FieldError):
        executorch_cache(ExecuTorchSpec(), Catalog().model("llama-3.2-1b").profile, fmt, fmt)


def test_spec_options():
    assert runtime_spec("et", dtype_override="BF16") == ExecuTorchSpec(dtype_override="bf16")
    with pytest.raises(FieldError):
        runtime_spec("executorch", dtype_override="fp8")
    with pytest.raises(FieldError):
        runtime_spec("executorch", max_context_length=0)
    with pytest.raises(FieldError):  # another runtime's option
        runtime_spec("transformers", quantize_kv_cache=True)


def test_file_runtime_mapping():
    from kvplan.profiles.runtime import parse_runtime, runtime_value

    spec = parse_runtime({"name": "executorch", "max_context_length": "4k", "quantize_kv_cache": True})
    assert spec == ExecuTorchSpec(max_context_length=4_096, quantize_kv_cache=True)  # 4k = 4,096 tokens
    assert parse_runtime(runtime_value(spec)) == spec
    with pytest.raises(FieldError):
        parse_runtime({"name": "executorch", "quantize_kv_cache": "yes"})


def test_runtime_label():
    from kvplan.render.labels import runtime_label

    assert runtime_label(ExecuTorchSpec()) == "executorch"
    assert runtime_label(ExecuTorchSpec(max_context_length=4_096, dtype_override="bf16")) == "executorch ctx 4096 bf16"
    assert runtime_label(ExecuTorchSpec(quantize_kv_cache=True)) == "executorch int8-kv"
