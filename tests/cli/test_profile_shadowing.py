"""A name or alias found in an earlier profile folder hides the later profile that also uses it: `check` says so
in a note (a built-in or another user folder), and `profiles list` marks the hidden profile and which of its names
no longer reach it."""

from __future__ import annotations

import json

import pytest

DEVICE = """name: {name}
aliases: [{aliases}]
ram: 8 GB
os_reserve: 2 GB
memory_bandwidth: 50 GB/s
flash_read: 2 GB/s
"""
MODEL = """name: my7b
aliases: [7b]
params: 7e9
layers: 32
attention_heads: 32
kv_heads: 32
head_dim: 128
weight_bits: 4
"""


@pytest.fixture
def folders(tmp_path, monkeypatch):
    monkeypatch.setenv("KVPLAN_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "up").mkdir()
    (tmp_path / "up2").mkdir()
    (tmp_path / "up" / "clash.yaml").write_text(DEVICE.format(name="clash", aliases="iphone-15-pro"))
    (tmp_path / "up" / "my7b.yaml").write_text(MODEL)
    (tmp_path / "up2" / "other.yaml").write_text(DEVICE.format(name="other", aliases="clash"))
    return tmp_path


def test_an_alias_taking_a_builtin_name_is_noted_and_listed(run, folders):
    result = run("check", "-d", "iphone-15-pro", "-m", "qwen3-0.6b", "-c", "1k", "--profiles-dir", folders / "up")
    assert f"using user device profile {folders / 'up' / 'clash.yaml'} (shadows the built-in 'iphone-15-pro')" \
        in result.stderr
    rows = {r["name"]: r for r in json.loads(run("profiles", "list", "--kind", "device", "--profiles-dir",
                                                 folders / "up", "-f", "json").stdout)["profiles"]}
    assert (rows["iphone-15-pro"]["shadowed"], rows["iphone-15-pro"]["shadowed_names"]) == (True, ["iphone-15-pro"])
    assert rows["clash"]["shadowed"] is False
    table = run("profiles", "list", "--kind", "device", "--profiles-dir", folders / "up").stdout
    assert [line for line in table.splitlines() if line.startswith("iphone-15-pro ")][0].endswith("builtin (shadowed)")


def test_an_alias_of_a_builtin_taken_shows_which_names_are_hidden(run, folders):
    doc = json.loads(run("profiles", "list", "--kind", "model", "--profiles-dir", folders / "up", "-f", "json").stdout)
    llama = [r for r in doc["profiles"] if r["name"] == "llama-2-7b"][0]
    assert (llama["shadowed"], llama["shadowed_names"]) == (True, ["7b"])  # still found as llama-2-7b
    table = run("profiles", "list", "--kind", "model", "--profiles-dir", folders / "up").stdout
    assert [line for line in table.splitlines() if line.startswith("llama-2-7b ")][0].endswith(
        "builtin (shadowed: 7b)")


def test_a_name_in_two_user_folders_resolves_to_the_first_with_a_note(run, folders):
    result = run("check", "-d", "clash", "-m", "qwen3-0.6b", "-c", "1k", "--profiles-dir", folders / "up",
                 "--profiles-dir", folders / "up2")
    assert result.exit_code == 0, result.stderr
    assert f"using user device profile {folders / 'up' / 'clash.yaml'} (shadows {folders / 'up2' / 'other.yaml'})" \
        in result.stderr
    doc = json.loads(run("profiles", "list", "--kind", "device", "--profiles-dir", folders / "up",
                         "--profiles-dir", folders / "up2", "-f", "json").stdout)
    other = [r for r in doc["profiles"] if r["name"] == "other"][0]
    assert other["shadowed_names"] == ["clash"]


def test_yml_files_are_profiles_too(run, tmp_path, monkeypatch):
    monkeypatch.setenv("KVPLAN_CACHE_DIR", str(tmp_path / "cache"))
    folder = tmp_path / "profiles"
    folder.mkdir()
    (folder / "ymlphone.yml").write_text(DEVICE.format(name="ymlphone", aliases=""))
    result = run("check", "-d", "ymlphone", "-m", "qwen3-0.6b", "-c", "1k", "--profiles-dir", folder)
    assert result.exit_code == 0 and result.stdout.startswith("ymlphone × qwen3-0.6b")
