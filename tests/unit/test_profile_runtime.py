"""A model profile may name its runtime: the default when no --runtime / runtime: is given (issue #8).

Fixtures: tests/data/profile_runtime/ (tiny-llama's shape, 16,384 B per token at f16; arithmetic in the files).
"""

from __future__ import annotations

import pytest

from kvplan.profiles import cache as profile_cache
from kvplan.profiles.catalog import load_profile
from kvplan.plan import Knobs, build_scenario
from kvplan.errors import ProfileError, UsageError
from kvplan.plan import evaluate
from kvplan.profiles.records import ModelRecord
from kvplan.profiles.runtime import LlamaCppSpec
from tests.conftest import DATA, REF_PHONE

HERE = DATA / "profile_runtime"
LLAMACPP = HERE / "tiny-llama-llamacpp.yaml"
UNIFIED = HERE / "tiny-llama-unified.yaml"
SHAPE = "name: x\nparams: 1e9\nlayers: 2\nattention_heads: 2\nkv_heads: 2\nhead_dim: 8\n"


def _model(path, fast=False):
    return load_profile("model", path, fast=fast)


def _kv(model, knobs=Knobs(), ctx=1000):
    return evaluate(build_scenario(load_profile("device", REF_PHONE), model, ctx, knobs)).kv_bytes


def test_the_field_is_kept_in_its_canonical_form():
    assert _model(LLAMACPP).runtime == "llama.cpp"
    assert _model(UNIFIED).runtime == {"name": "llama.cpp", "parallel": 3, "kv_unified": True}


def test_profile_runtime_is_the_default():
    model = _model(LLAMACPP)
    s = build_scenario(load_profile("device", REF_PHONE), model, 1000)
    assert isinstance(s.runtime, LlamaCppSpec) and s.runtime_from_profile
    # llama.cpp: -c 1000 padded to 1024 cells × 16,384 B = 16,777,216 B
    assert _kv(model) == 16_777_216


def test_explicit_ideal_overrides_the_profile():
    model = _model(LLAMACPP)
    s = build_scenario(load_profile("device", REF_PHONE), model, 1000, Knobs(runtime="ideal"))
    assert s.runtime is None and not s.runtime_from_profile
    assert _kv(model, Knobs(runtime="ideal")) == 16_384_000  # 1000 × 16,384


def test_an_explicit_runtime_replaces_the_profile_mapping_whole():
    model = _model(UNIFIED)
    s = build_scenario(load_profile("device", REF_PHONE), model, 1000)
    assert s.sequences == 3 and s.runtime.kv_unified  # the profile's parallel: 3 is -np 3
    assert _kv(model) == 16_777_216  # unified: one stream of pad(1000) = 1024 cells × 16,384 B
    explicit = Knobs(runtime={"name": "llama.cpp", "parallel": 3}, sequences=3)
    s = build_scenario(load_profile("device", REF_PHONE), model, 1000, explicit)
    assert not s.runtime.kv_unified and not s.runtime_from_profile
    # not unified: pad(1024 // 3 = 341) = 512 cells × 3 streams = 1536 cells × 16,384 B = 25,165,824 B
    assert _kv(model, explicit) == 25_165_824


def test_sequences_disagreeing_with_the_profile_name_it():
    with pytest.raises(UsageError, match=r"disagree.*model profile 'tiny-llama-unified' names runtime llama\.cpp"):
        build_scenario(load_profile("device", REF_PHONE), _model(UNIFIED), 1000, Knobs(sequences=2))


def test_a_policy_with_the_profile_runtime_asks_for_runtime_ideal():
    policy = {"recent_window": 256, "history": {"ratio": 0.5}}
    with pytest.raises(UsageError, match=r"kv_policy: the model profile 'tiny-llama-llamacpp'.*runtime=ideal"):
        build_scenario(load_profile("device", REF_PHONE), _model(LLAMACPP), 1000, Knobs(kv_policy=policy))
    # with --runtime ideal the half-history policy applies: 256 + ⌈0.5 × 744⌉ = 628 tokens × 16,384 = 10,289,152 B
    assert _kv(_model(LLAMACPP), Knobs(kv_policy=policy, runtime="ideal")) == 10_289_152
    # "none" (the plain cache) is no policy: the profile's runtime stays
    assert _kv(_model(LLAMACPP), Knobs(kv_policy="none")) == 16_777_216


@pytest.mark.parametrize("text, message", [
    ("runtime: vllm\n", ":7: runtime: unknown runtime 'vllm'; known: ideal, llama.cpp, transformers"),
    ("runtime:\n  name: llama.cpp\n  parallel: two\n", ":7: runtime: parallel: expected a whole number, got 'two'"),
    ("runtime: {name: llama.cpp, cache: static}\n", ":7: runtime: cache: transformers options"),
    ("runtime: {name: llama.cpp, threads: 4}\n", ":7: runtime: unknown option 'threads'"),
    ("runtime: 3\n", ":7: runtime: expected a name or a mapping, got int"),
    ("kv_policy: {recent_window: 256, history: {ratio: 0.5}}\nruntime: transformers\n",
     ":8: runtime: a runtime's allocation does not model a compression policy (kv_policy); give one of them"),
])
def test_bad_runtime_is_a_load_error_with_file_and_line(tmp_path, text, message):
    path = tmp_path / "x.yaml"
    path.write_text(SHAPE + text)
    with pytest.raises(ProfileError) as info:
        _model(path)
    assert any(f"{path}{message}" in p for p in info.value.problems), info.value.problems


def test_runtime_ideal_and_options_are_accepted(tmp_path):
    path = tmp_path / "x.yaml"
    path.write_text(SHAPE + "runtime: {name: transformers, cache: static, max_cache_len: 8k}\n")
    assert _model(path).runtime == {"name": "transformers", "cache": "static", "max_cache_len": 8192}
    path.write_text(SHAPE + "runtime: ideal\n")
    model = _model(path)
    assert model.runtime == "ideal"
    assert build_scenario(load_profile("device", REF_PHONE), model, 10).runtime is None


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KVPLAN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("KVPLAN_NO_CACHE", raising=False)
    profile_cache.cache_dir.cache_clear()
    yield tmp_path / "cache"
    profile_cache.cache_dir.cache_clear()


@pytest.mark.parametrize("path", [LLAMACPP, UNIFIED], ids=lambda p: p.stem)
def test_profile_runtime_round_trips_through_the_cache(cache, path):
    validated = _model(path, fast=True)  # miss: pydantic, then stored
    record = _model(path, fast=True)  # hit: a record
    assert isinstance(record, ModelRecord) and not isinstance(validated, ModelRecord)
    assert record.runtime == validated.runtime
    assert record.model_dump() == validated.model_dump(mode="json")
    device = load_profile("device", REF_PHONE)
    for ctx in (1, 1000, 4096):
        a, b = build_scenario(device, record, ctx), build_scenario(device, validated, ctx)
        assert a.runtime == b.runtime and a.sequences == b.sequences and a.runtime_from_profile
        assert evaluate(a).kv_bytes == evaluate(b).kv_bytes
