"""Cache entries read back only under their own key, written whole."""

from __future__ import annotations

from kvplan.files.keyed_json import load_entry, store_entry


def test_an_entry_is_read_back_only_under_its_key(tmp_path):
    path = tmp_path / "sub" / "e.json"
    assert store_entry(path, ["a", 1], {"x": 2})
    assert load_entry(path, ["a", 1]) == {"x": 2}
    assert load_entry(path, ["a", 2]) is None  # another machine, commit or code version: a miss
    assert [p.name for p in path.parent.iterdir()] == ["e.json"]  # no temporary file left behind


def test_a_broken_or_unwritable_cache_is_a_miss(tmp_path):
    path = tmp_path / "e.json"
    path.write_text("{not json")
    assert load_entry(path, "k") is None
    assert load_entry(tmp_path / "missing.json", "k") is None
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert store_entry(blocker / "e.json", "k", 1) is False  # its folder is a file
