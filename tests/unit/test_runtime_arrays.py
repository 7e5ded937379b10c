"""The runtime caches over numpy arrays (sweeps, plots) equal their scalar figures, element by element."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import DATA

TINY = DATA / "gate" / "models" / "tiny-llama.yaml"  # 16 layers × 4 KV heads × 64 dims, f16: 16,384 B/token
WINDOWED = DATA / "runtimes" / "gemma4-12b-shape.yaml"


def _model(path):
    from kvplan.profiles.catalog import Catalog

    return Catalog().model(str(path)).profile


def test_llamacpp_arrays_hand_figures():
    from kvplan.profiles.runtime import runtime_spec
    from kvplan.caches.llamacpp import llamacpp_cache

    cache = llamacpp_cache(runtime_spec("llama.cpp"), _model(TINY))
    ctx = np.array([0, 1000, 1024, 1025, 1025])
    seq = np.array([1, 1, 1, 1, 2])
    # 0 → no cache; 1000 and 1024 → 1024 cells; 1025 → 1280 cells;
    # 1025 over 2 streams: pad(1280 // 2 = 640, 256) = 768 cells × 2 = 1536 cells; × 16,384 B per cell
    assert cache.kv_bytes(ctx, seq).tolist() == [0, 16_777_216, 16_777_216, 20_971_520, 25_165_824]


@pytest.mark.parametrize("options", [{}, {"kv_unified": True}, {"swa_full": True}, {"ubatch": 64},
                                     {"batch": 128, "ubatch": 4096}])
@pytest.mark.parametrize("path", [TINY, WINDOWED])
def test_llamacpp_arrays_equal_scalars(path, options):
    from kvplan.profiles.runtime import runtime_spec
    from kvplan.caches.llamacpp import llamacpp_cache

    model = _model(path)
    cache = llamacpp_cache(runtime_spec("llama.cpp", **options), model)
    ctx = np.tile(np.array([0, 1, 63, 255, 256, 257, 700, 1000, 4096, 5000, 32768, 100_001]), 5)
    seq = np.repeat(np.array([1, 2, 3, 7, 256]), 12)
    expected = [cache.kv_bytes(int(c), int(n)) for c, n in zip(ctx, seq)]
    assert cache.kv_bytes(ctx, seq).tolist() == expected
    assert cache.kv_bytes(ctx[:12], 3).tolist() == [cache.kv_bytes(int(c), 3) for c in ctx[:12]]


def test_llamacpp_arrays_refuse_what_a_scenario_refuses():
    from kvplan.errors import UsageError
    from kvplan.profiles.runtime import runtime_spec
    from kvplan.caches.llamacpp import llamacpp_cache

    cache = llamacpp_cache(runtime_spec("llama.cpp"), _model(TINY))
    with pytest.raises(UsageError, match="1 to 256 sequences, got 257"):
        cache.kv_bytes(np.array([1000]), np.array([257]))


def test_transformers_static_array_refuses_ctx_above_max_cache_len():
    from kvplan.errors import UsageError
    from kvplan.profiles.runtime import runtime_spec
    from kvplan.caches.transformers import transformers_cache

    cache = transformers_cache(runtime_spec("transformers", cache="static", max_cache_len=2048), _model(TINY))
    # 2,048 preallocated tokens × 16,384 B = 33,554,432 B whatever the context up to it
    assert cache.kv_bytes(np.array([1, 2048])).tolist() == [33_554_432, 33_554_432]
    with pytest.raises(UsageError, match="exceeds runtime.max_cache_len"):
        cache.kv_bytes(np.array([1, 2049]))
