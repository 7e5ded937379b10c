"""Properties of the runtime-exact caches over random requests (hypothesis)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kvplan.profiles.catalog import Catalog
from kvplan.engine.formats import format_from_name
from kvplan.profiles.runtime import LlamaCppSpec, TransformersSpec
from kvplan.caches.llamacpp import llamacpp_cache
from kvplan.caches.transformers import transformers_cache

MODELS = ("qwen3-1.7b", "gemma-3-1b", "gemma-2-2b", "deepseek-v2-lite", "mistral-7b-v0.1")
_catalog = Catalog()


def _llamacpp(name, kv_type, unified, ubatch):
    fmt = format_from_name(kv_type)
    return llamacpp_cache(LlamaCppSpec(kv_unified=unified, ubatch=ubatch), _catalog.model(name).profile, fmt, fmt)


@settings(max_examples=150, deadline=None)
@given(name=st.sampled_from(MODELS), kv_type=st.sampled_from(["f16", "q8_0", "q4_0"]), unified=st.booleans(),
       ubatch=st.integers(1, 4096), ctx=st.integers(1, 200_000), n=st.integers(1, 8))
def test_llamacpp_is_monotone_and_cell_aligned(name, kv_type, unified, ubatch, ctx, n):
    c = _llamacpp(name, kv_type, unified, ubatch)
    cells = c.cells(ctx, n)
    assert cells.n_ctx_seq % 256 == 0 and (cells.swa_cells or 0) % 256 == 0
    assert cells.n_ctx_seq * cells.streams >= ctx  # never fewer cells than the -c asked for
    assert c.kv_bytes(ctx, n) <= c.kv_bytes(ctx + 1, n)


@settings(max_examples=100, deadline=None)
@given(name=st.sampled_from(MODELS), n=st.integers(1, 4), allowance=st.integers(0, 20 * 10**9))
def test_llamacpp_max_ctx_exact(name, n, allowance):
    c = _llamacpp(name, "f16", False, 512)
    best = c.max_ctx(allowance, n)
    if best == -1:
        assert c.kv_bytes(1, n) > allowance
    else:
        assert c.kv_bytes(best, n) <= allowance < c.kv_bytes(best + 1, n)


@settings(max_examples=100, deadline=None)
@given(name=st.sampled_from(MODELS), ctx=st.integers(1, 200_000), n=st.integers(1, 4))
def test_transformers_steady_never_above_peak(name, ctx, n):
    fmt = format_from_name("f16")
    c = transformers_cache(TransformersSpec(), _catalog.model(name).profile, fmt, fmt)
    assert c.kv_bytes(ctx, n) <= c.kv_peak_bytes(ctx, n) == c.bytes_per_token * ctx * n
