"""The per-profile memo behind cache_layout and llamacpp_cache: same profile object → same result object,
another object (even an equal one) → its own entry, errors never stored."""

import subprocess
import sys

import pytest

from kvplan.caches.ideal import cache_layout
from kvplan.caches.llamacpp import llamacpp_cache
from kvplan.profiles.memo import PerModel
from kvplan.engine.formats import format_from_name
from kvplan.errors import FieldError
from kvplan.profiles.catalog import Catalog
from kvplan.profiles.runtime import runtime_spec


class _Profile:
    pass


def test_one_build_per_profile_object_and_key():
    memo, builds = PerModel(), []
    a, b = _Profile(), _Profile()
    for model, key in [(a, 1), (a, 1), (a, 2), (b, 1), (a, 1)]:
        memo.get(model, key, lambda: builds.append((model, key)) or len(builds))
    assert builds == [(a, 1), (a, 2), (b, 1)]
    assert memo.get(a, 1, lambda: pytest.fail("rebuilt")) == 1


def test_errors_are_not_memoized():
    memo, calls = PerModel(), []

    def failing():
        calls.append(1)
        raise ValueError("no")

    model = _Profile()
    for _ in range(2):
        with pytest.raises(ValueError):
            memo.get(model, "k", failing)
    assert len(calls) == 2


def test_full_table_starts_over():
    memo = PerModel(limit=2)
    models = [_Profile() for _ in range(3)]
    for i, m in enumerate(models):
        memo.get(m, None, lambda i=i: i)
    rebuilt = []
    memo.get(models[0], None, lambda: rebuilt.append(0) or 0)  # cleared when the third entry came in
    assert rebuilt == [0]
    assert memo.get(models[2], None, lambda: pytest.fail("rebuilt")) == 2


def test_cache_models_return_the_same_immutable_object_for_the_same_profile():
    model = Catalog().model("llama-2-7b").profile
    spec = runtime_spec("llama.cpp")
    q8 = format_from_name("q8_0")
    assert llamacpp_cache(spec, model) is llamacpp_cache(spec, model)
    assert llamacpp_cache(spec, model, q8, q8) is not llamacpp_cache(spec, model)
    # 32 layers × (K + V rows of 32 heads × 128 values): f16 2 B → 2 × 32 × 4,096 × 2 = 524,288 B per cell;
    # q8_0 34 B per 32 values → 2 × 32 × 4,096 / 32 × 34 = 278,528 B
    assert llamacpp_cache(spec, model).global_bytes_per_cell == 524_288
    assert llamacpp_cache(spec, model, q8, q8).global_bytes_per_cell == 278_528
    assert cache_layout(model) is cache_layout(model)
    assert cache_layout(model, sliding_window=1024) is not cache_layout(model)


def test_a_refused_cache_type_raises_every_time():
    model = Catalog().model("llama-2-7b").profile
    spec = runtime_spec("llama.cpp", flash_attn="off")
    q4 = format_from_name("q4_0")
    for _ in range(2):  # llama.cpp refuses a quantized V cache without flash attention
        with pytest.raises(FieldError, match="without flash attention"):
            llamacpp_cache(spec, model, q4, q4)


def test_importing_the_gate_schema_builds_no_profile_or_policy_validators():
    # pydantic builds a model's validator on first use (defer_build): a gate file of profile names never
    # pays for the Device, Model and policy schemas.
    code = ("import kvplan.gate.spec, kvplan.profiles.spec as p, kvplan.profiles.policy as q\n"
            "print(p.Device.__pydantic_complete__, p.Model.__pydantic_complete__, q.PolicySpec.__pydantic_complete__)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "False", "False"]
