"""Errors about files in the file's words: no pydantic class names, the full key path of a duplicate key, and a
profiles folder that is a file or comes from $KVPLAN_PROFILES said as such."""

from __future__ import annotations


def test_an_empty_section_is_a_mapping_error_not_a_class_name(run, tmp_path):
    gate = tmp_path / "g.yaml"
    gate.write_text("defaults:\nconfigurations:\n  - null\n")
    err = run("gate", gate).stderr
    assert f"{gate}:1: defaults: must be a mapping of fields (key: value lines), got nothing" in err
    assert f"{gate}:3: configurations.0: must be a mapping of fields (key: value lines), got nothing" in err
    assert "instance of" not in err


def test_a_duplicate_key_names_its_whole_path(run, tmp_path):
    gate = tmp_path / "g.yaml"
    gate.write_text("configurations:\n  - name: a\n    device: pixel8\n    device: pixel8\n    model: 7b\n    ctx: 1k\n")
    assert f"{gate}:4: configurations.0.device: duplicate key (first given on line 3)" in run("gate", gate).stderr


def test_a_profiles_folder_that_is_a_file_or_from_the_environment_says_so(run, tmp_path, monkeypatch):
    file = tmp_path / "ok.yaml"
    file.write_text("name: x\n")
    result = run("check", "-d", "pixel8", "-m", "7b", "-c", "1k", "--profiles-dir", file)
    assert result.exit_code == 2 and f"profiles folder '{file}' is a file, not a folder" in result.stderr
    monkeypatch.setenv("KVPLAN_PROFILES", str(tmp_path / "nope"))
    result = run("check", "-d", "pixel8", "-m", "7b", "-c", "1k")
    assert f"profiles folder '{tmp_path / 'nope'}' (in $KVPLAN_PROFILES) does not exist" in result.stderr
