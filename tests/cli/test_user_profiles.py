"""User profile folders: --profiles-dir and $KVPLAN_PROFILES, searched before the built-ins."""

from __future__ import annotations

import shutil

import pytest

from tests.conftest import REF_7B, REF_PHONE


@pytest.fixture
def user_dir(tmp_path):
    """A folder with a device shadowing the built-in pixel8 and a new model, in the kind sub-folders."""
    (tmp_path / "device_profiles").mkdir()
    (tmp_path / "model_profiles").mkdir()
    text = REF_PHONE.read_text().replace("name: ref-phone", "name: pixel8").replace("[refphone]", "[my-phone]") \
        .replace("ram: 8 GB", "ram: 12 GB")
    (tmp_path / "device_profiles" / "pixel8.yaml").write_text(text)
    (tmp_path / "model_profiles" / "my-7b.yaml").write_text(REF_7B.read_text().replace("name: ref-7b", "name: my-7b"))
    return tmp_path


def test_profiles_dir_shadows_a_builtin_in_check(run_json, user_dir):
    code, doc = run_json("check", "--device", "pixel8", "--model", "my-7b", "--ctx", "4096",
                         "--profiles-dir", str(user_dir))
    assert code == 0
    # the user pixel8 has 12 GB − 2 GB = 10 GB budget (the built-in pixel8 has 6 GB)
    assert doc["memory"]["budget_bytes"] == 10_000_000_000
    assert doc["model"] == "my-7b" and doc["kv_bytes_per_token"] == 524_288


def test_shadowing_is_noted_on_stderr(run, user_dir):
    result = run("check", "-d", "pixel8", "-m", "my-7b", "-c", "4096", "--profiles-dir", str(user_dir))
    assert f"kvplan: note: using user device profile {user_dir / 'device_profiles' / 'pixel8.yaml'} " \
           "(shadows the built-in 'pixel8')" in result.stderr


def test_environment_variable_works_like_the_option(run_json, user_dir, monkeypatch):
    monkeypatch.setenv("KVPLAN_PROFILES", str(user_dir))
    code, doc = run_json("check", "--device", "my-phone", "--model", "my-7b", "--ctx", "4096")
    assert code == 0 and doc["device"] == "pixel8" and doc["memory"]["ram_bytes"] == 12_000_000_000


def test_profiles_list_shows_user_profiles_first_and_marks_the_shadowed(run_json, user_dir):
    code, doc = run_json("profiles", "list", "--profiles-dir", str(user_dir))
    assert code == 0
    pixels = [(r["origin"], r["shadowed"]) for r in doc["profiles"] if r["name"] == "pixel8"]
    assert pixels == [("user", False), ("builtin", True)]
    mine = [r for r in doc["profiles"] if r["name"] == "my-7b"]
    assert len(mine) == 1 and mine[0]["origin"] == "user"


def test_profiles_list_from_the_environment(run_json, user_dir, monkeypatch):
    monkeypatch.setenv("KVPLAN_PROFILES", str(user_dir))
    _, doc = run_json("profiles", "list", "--kind", "model", "--name", "my-7b")
    assert [(r["name"], r["origin"]) for r in doc["profiles"]] == [("my-7b", "user")]


def test_profiles_show_user_profile(run_json, user_dir):
    code, doc = run_json("profiles", "show", "my-phone", "--profiles-dir", str(user_dir))
    assert code == 0 and doc["origin"] == "user" and doc["name"] == "pixel8"


def test_flat_user_folder_is_searched_too(run_json, tmp_path):
    shutil.copy(REF_PHONE, tmp_path / "ref-phone.yaml")
    code, doc = run_json("profiles", "list", "--kind", "device", "--name", "ref-phone", "--profiles-dir", str(tmp_path))
    assert code == 0 and [r["origin"] for r in doc["profiles"]] == ["user"]


def test_invalid_user_profile_is_listed_as_invalid(run, tmp_path):
    (tmp_path / "bad.yaml").write_text("name: bad\nram: 8 GB\nos_reserve: 9 GB\nmemory_bandwidth: 1 GB/s\n"
                                       "flash_read: 1 GB/s\n")
    result = run("profiles", "list", "--kind", "device", "--name", "bad", "--profiles-dir", str(tmp_path))
    assert result.exit_code == 0
    assert "bad" in result.stdout and "user: INVALID" in result.stdout
    assert f"kvplan: note: invalid device profile {tmp_path / 'bad.yaml'}" in result.stderr


def test_missing_profiles_dir_is_an_error(run, tmp_path):
    result = run("profiles", "list", "--profiles-dir", str(tmp_path / "nope"))
    assert result.exit_code == 2
    assert "profiles folder" in result.stderr and "does not exist" in result.stderr
