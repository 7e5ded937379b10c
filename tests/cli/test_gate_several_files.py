"""Several gate files: one file written two ways is checked once; two files of one name are told apart by their
paths in titles, JUnit suites and report headings (file names alone where they differ)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

RELEASE = "configurations:\n  - {name: c1, device: pixel8, model: qwen3-0.6b, ctx: 1k}\n"


@pytest.fixture
def folder(tmp_path, monkeypatch):
    for sub in ("a", "b"):
        (tmp_path / sub).mkdir()
        (tmp_path / sub / "release.yaml").write_text(RELEASE)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_one_file_written_two_ways_is_checked_once(run, folder):
    out = run("gate", "a/release.yaml", "./a/release.yaml", "a/../a/release.yaml").stdout
    assert out.count("kvplan gate release.yaml: PASSED") == 1


def test_files_of_one_name_are_told_apart_by_path(run, folder):
    out = run("gate", "a/release.yaml", "b/release.yaml").stdout
    assert "kvplan gate a/release.yaml: PASSED" in out and "kvplan gate b/release.yaml: PASSED" in out
    assert run("gate", "a/release.yaml", "b/release.yaml", "--junit", "j.xml").exit_code == 0
    suites = ET.parse(folder / "j.xml").getroot().findall("testsuite")
    assert [s.get("name") for s in suites] == ["kvplan gate a/release.yaml", "kvplan gate b/release.yaml"]
    assert [s.find("testcase").get("classname") for s in suites] == ["kvplan.gate.a.release", "kvplan.gate.b.release"]
    report = run("report", "a/release.yaml", "b/release.yaml").stdout
    assert "# Design review: a/release.yaml, b/release.yaml" in report


def test_different_names_keep_the_file_name(run, folder):
    (folder / "b" / "other.yaml").write_text(RELEASE)
    out = run("gate", "a/release.yaml", "b/other.yaml").stdout
    assert "kvplan gate release.yaml: PASSED" in out and "kvplan gate other.yaml: PASSED" in out
