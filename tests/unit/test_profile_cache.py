"""The profile cache returns exactly what pydantic validated, and notices every change."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from kvplan.profiles import cache as profile_cache
from kvplan.profiles.catalog import Catalog, builtin_dir, load_profile
from kvplan.plan import Scenario, evaluate
from kvplan.profiles.records import DeviceRecord, ModelRecord

DEVICES = sorted(p.stem for p in builtin_dir("device").glob("*.yaml"))
MODELS = sorted(p.stem for p in builtin_dir("model").glob("*.yaml"))
assert len(DEVICES) >= 12 and len(MODELS) >= 20, "built-in profiles not found: these tests would check nothing"


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KVPLAN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("KVPLAN_NO_CACHE", raising=False)
    profile_cache.cache_dir.cache_clear()
    yield tmp_path / "cache"
    profile_cache.cache_dir.cache_clear()


@pytest.mark.parametrize("name", MODELS)
def test_cached_model_equals_validated_model(cache, name):
    path = builtin_dir("model") / f"{name}.yaml"
    validated = load_profile("model", path, fast=True)  # miss: pydantic, then stored
    record = load_profile("model", path, fast=True)  # hit: a record
    assert isinstance(record, ModelRecord) and not isinstance(validated, ModelRecord)
    assert record.model_dump() == validated.model_dump(mode="json")
    device = Catalog(fast=False).device("pixel8").profile
    for ctx in (1, 512, 4096, 32768):
        assert evaluate(Scenario(device, record, ctx)) .kv_bytes == evaluate(Scenario(device, validated, ctx)).kv_bytes
    assert record.k_format() == validated.k_format() and record.v_format() == validated.v_format()
    assert record.schedule == validated.schedule  # the cached record derives the same layers


@pytest.mark.parametrize("name", DEVICES)
def test_cached_device_equals_validated_device(cache, name):
    path = builtin_dir("device") / f"{name}.yaml"
    validated = load_profile("device", path, fast=True)
    record = load_profile("device", path, fast=True)
    assert isinstance(record, DeviceRecord)
    assert record.model_dump() == validated.model_dump(mode="json")
    model = Catalog(fast=False).model("7b").profile
    a, b = evaluate(Scenario(record, model, 4096)), evaluate(Scenario(validated, model, 4096))
    assert (a.total_bytes, a.headroom_bytes, a.decode_tokens_per_s, a.max_ctx) == \
        (b.total_bytes, b.headroom_bytes, b.decode_tokens_per_s, b.max_ctx)


def test_an_edited_file_is_validated_again(cache, tmp_path):
    path = tmp_path / "phone.yaml"
    shutil.copy(Path(__file__).parents[1] / "data" / "profiles" / "ref-phone.yaml", path)
    assert load_profile("device", path, fast=True).ram == 8_000_000_000
    assert isinstance(load_profile("device", path, fast=True), DeviceRecord)
    path.write_text(path.read_text().replace("ram: 8 GB", "ram: 12 GB"))
    os.utime(path, ns=(1, 1))  # even with an old mtime, the size changed
    fresh = load_profile("device", path, fast=True)
    assert fresh.ram == 12_000_000_000 and not isinstance(fresh, DeviceRecord)
    path.write_text(path.read_text().replace("ram: 12 GB", "ram: x GB"))
    from kvplan.errors import ProfileError

    with pytest.raises(ProfileError, match="ram: expected a size"):
        load_profile("device", path, fast=True)


def test_a_corrupt_cache_entry_is_ignored(cache):
    path = builtin_dir("device") / "pixel8.yaml"
    load_profile("device", path, fast=True)
    for entry in cache.glob("device-*.json"):
        entry.write_text("{not json")
    assert load_profile("device", path, fast=True).ram == 8_000_000_000


def test_no_cache_switch(cache, monkeypatch):
    monkeypatch.setenv("KVPLAN_NO_CACHE", "1")
    path = builtin_dir("device") / "pixel8.yaml"
    load_profile("device", path, fast=True)
    assert not isinstance(load_profile("device", path, fast=True), DeviceRecord)
    assert not cache.exists()


def test_alias_index_is_cached_and_follows_the_folder(cache, tmp_path):
    folder = tmp_path / "profiles"
    folder.mkdir()
    shutil.copy(Path(__file__).parents[1] / "data" / "profiles" / "ref-phone.yaml", folder / "ref-phone.yaml")
    assert Catalog([str(folder)]).device("refphone").profile.name == "ref-phone"
    assert Catalog([str(folder)]).device("refphone").profile.name == "ref-phone"  # from the cached index
    (folder / "other.yaml").write_text((folder / "ref-phone.yaml").read_text()
                                       .replace("ref-phone", "other").replace("refphone", "otherphone"))
    assert Catalog([str(folder)]).device("otherphone").profile.name == "other"


def test_a_damaged_entry_is_a_miss_not_trusted(tmp_path, monkeypatch):
    import json as _json

    from kvplan.profiles import cache
    from kvplan.profiles.catalog import builtin_dir, load_profile

    monkeypatch.setenv("KVPLAN_CACHE_DIR", str(tmp_path))
    path = builtin_dir("device") / "pixel8.yaml"
    load_profile("device", path, fast=True)  # validates and stores the entry
    assert cache.load_record("device", path) is not None
    (entry,) = tmp_path.glob("device-*.json")
    stored = _json.loads(entry.read_text())
    stored["data"]["ram"] = "garbage"  # the key still matches; the data does not
    entry.write_text(_json.dumps(stored))
    assert cache.load_record("device", path) is None
    assert load_profile("device", path, fast=True).ram == 8_000_000_000  # validated again from the YAML
