"""LiteRT-LM's KV buffers (kvplan.caches.litertlm, kvplan.engine.litert_cache at 767d74f9): hand-derived figures,
arithmetic in comments. Not measured: no LiteRT-LM run backs these (docs/runtimes.md)."""

from __future__ import annotations

import numpy as np
import pytest

from kvplan.caches.litertlm import litertlm_cache
from kvplan.engine import NO_CONTEXT_FITS
from kvplan.engine.formats import NAMED_FORMATS
from kvplan.engine.litert_cache import static_kv_bytes
from kvplan.errors import FieldError, KvplanError
from kvplan.profiles.catalog import Catalog
from kvplan.profiles.runtime import LiteRtLmSpec, parse_runtime, runtime_spec

# gemma-3-1b exported in f16: 26 layers · 2 (K, V) · 1 head · 256 · 2 B = 26,624 B per token, on every layer (no
# window applied)
GEMMA_1B_BPT = 26 * 2 * 1 * 256 * 2


def cache(name="gemma-3-1b", fmt="f16", **spec):
    f = NAMED_FORMATS[fmt] if fmt else None
    return litertlm_cache(runtime_spec("litert-lm", **spec), Catalog().model(name).profile, f, f)


def test_default_is_4096_slots_on_the_cpu():
    c = cache()
    assert c.bytes_per_token == GEMMA_1B_BPT == 26_624
    # 4,096 slots · 26,624 B = 109,051,904 B, at 10 tokens as at 4,096
    assert c.kv_bytes(10) == c.kv_bytes(4096) == c.kv_peak_bytes(4096) == 109_051_904
    assert c.kv_bytes(0) == 0
    assert c.ctx_limit == (4096, "max_num_tokens")


def test_without_a_cache_type_the_export_is_float32():
    # ai-edge-torch's default: 26 · 2 · 1 · 256 · 4 B = 53,248 B/token, whatever the profile's f16 says
    c = cache(fmt=None)
    assert c.k_format.name == "f32" and c.bytes_per_token == 53_248
    assert c.kv_bytes(100) == 4096 * 53_248 == 218_103_808
    assert ("exporter_default", True) in next(r for r in c.rules if r.kind == "litert_kv_dtype").values


def test_exported_length_and_gpu_buffer_sets():
    # exported with 1,280 slots on the GPU: 1,280 · 26,624 · 2 sets = 68,157,440 B
    c = cache(kv_cache_tokens=1280, litert_backend="gpu")
    assert c.kv_bytes(1000) == 68_157_440
    assert c.ctx_limit == (1280, "kv_cache_tokens")
    with pytest.raises(FieldError) as err:
        c.kv_bytes(1281)
    assert "runtime.kv_cache_tokens" in err.value.mentions
    assert static_kv_bytes(10, 3, 2) == 60


def test_max_ctx_is_the_limit_when_the_buffers_fit():
    c = cache(max_num_tokens=8192)
    # 8,192 · 26,624 = 218,103,808 B
    assert c.max_ctx(218_103_808) == 8192
    assert c.max_ctx(218_103_807) == NO_CONTEXT_FITS
    assert c.max_ctx(np.array([218_103_808, 1])).tolist() == [8192, NO_CONTEXT_FITS]


def test_reads_the_whole_buffer_every_step():
    c = cache(max_num_tokens=1024)
    # 3 steps · 1,024 · 26,624 = 81,788,928 B (one set read, on either backend)
    assert c.kv_bytes_read_over_generation(3) == 81_788_928
    assert cache(max_num_tokens=1024, litert_backend="gpu").kv_bytes_read_over_generation(3) == 81_788_928


def test_element_type_of_the_export():
    # llama-3.2-1b, f32 export: 16 · 2 · 8 · 64 · 4 B = 65,536 B/token; int8: 16,384
    assert cache("llama-3.2-1b", "f32").bytes_per_token == 65_536
    assert cache("llama-3.2-1b", "int8").bytes_per_token == 16_384
    with pytest.raises(KvplanError):
        cache(fmt="q4_0")


def test_refusals():
    with pytest.raises(FieldError) as err:
        cache().kv_bytes(100, 2)
    assert err.value.fields == ("sequences",)
    with pytest.raises(FieldError):
        runtime_spec("litert", litert_backend="npu")
    with pytest.raises(FieldError):
        runtime_spec("litert", max_num_tokens=0)
    with pytest.raises(FieldError):
        cache("deepseek-v2-lite")
    with pytest.raises(FieldError):
        litertlm_cache(LiteRtLmSpec(), Catalog().model("gemma-3-1b").profile, sliding_window=256)


def test_names_and_file_form():
    assert runtime_spec("litertlm") == runtime_spec("litert") == LiteRtLmSpec()
    spec = parse_runtime({"name": "litert-lm", "max_num_tokens": "8k", "litert_backend": "GPU"})
    assert spec == LiteRtLmSpec(max_num_tokens=8192, litert_backend="gpu")


def test_file_errors_name_the_key():
    from kvplan.profiles.runtime import file_runtime

    with pytest.raises(ValueError, match="litert_backend"):
        file_runtime({"name": "litert-lm", "litert_backend": "npu"})
    with pytest.raises(ValueError, match="max_num_tokens"):
        file_runtime({"name": "litert-lm", "max_num_tokens": "lots"})
