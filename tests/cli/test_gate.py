"""kvplan gate through the CLI: folders of passing, failing and bad gate files; JUnit, JSON, Markdown outputs."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.conftest import DATA

GATE = DATA / "gate"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _files(folder: str) -> list[Path]:
    return sorted((GATE / folder).glob("*.yaml"))


def _expected_fragments(path: Path) -> list[str]:
    return [line.split("# expect:", 1)[1].strip() for line in path.read_text().splitlines()
            if line.startswith("# expect:")]


@pytest.mark.parametrize("path", _files("pass"), ids=lambda p: p.stem)
def test_passing_files_exit_0(run, path):
    result = run("gate", path)
    assert result.exit_code == 0, result.stdout + result.stderr
    assert "FAIL" not in result.stdout.replace("FAILED", "")


@pytest.mark.parametrize("path", _files("fail"), ids=lambda p: p.stem)
def test_failing_files_exit_1(run, path):
    result = run("gate", path)
    assert result.exit_code == 1, result.stdout + result.stderr
    assert "failing thresholds" in result.stdout


@pytest.mark.parametrize("path", _files("bad"), ids=lambda p: p.stem)
def test_bad_files_exit_2_naming_file_and_line(run, path, tmp_path):
    fragments = _expected_fragments(path)
    assert fragments, f"{path.name} has no '# expect:' line"
    junit = tmp_path / "out.xml"
    result = run("gate", path, "--junit", junit)
    assert result.exit_code == 2
    assert result.stdout == ""
    for fragment in fragments:
        assert fragment in result.stderr, result.stderr
    assert all(line.startswith("kvplan: error: ") for line in result.stderr.splitlines())
    assert "Traceback" not in result.stderr
    assert not junit.exists()  # nothing written for a bad file


def test_folders_are_not_empty():
    assert len(_files("pass")) >= 3 and len(_files("fail")) >= 3 and len(_files("bad")) >= 8


def test_example_release_passes_with_ci_outputs(run, tmp_path):
    junit, markdown, js = tmp_path / "out.xml", tmp_path / "out.md", tmp_path / "out.json"
    result = run("gate", EXAMPLES / "release.yaml", "--junit", junit, "--markdown", markdown, "--json", js)
    assert result.exit_code == 0, result.stdout + result.stderr
    doc = json.loads(js.read_text())
    root = ET.parse(junit).getroot()
    assert root.tag == "testsuites"
    cases = root.findall("./testsuite/testcase")
    assert len(cases) == doc["configurations_total"] >= 5
    assert root.findall(".//failure") == []
    assert markdown.read_text().startswith("## ✅ kvplan gate: passed")


def test_example_release_failing_junit_counts(run, tmp_path):
    junit, js = tmp_path / "out.xml", tmp_path / "out.json"
    result = run("gate", EXAMPLES / "release-failing.yaml", "--junit", junit, "--json", js)
    assert result.exit_code == 1
    doc = json.loads(js.read_text())
    failing = [c["name"] for c in doc["configurations"] if not c["passed"]]
    assert 0 < len(failing) < doc["configurations_total"]  # some pass, some fail: every one was evaluated
    suite = ET.parse(junit).getroot().find("testsuite")
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == [c["name"] for c in doc["configurations"]]
    assert int(suite.get("tests")) == len(cases) == doc["configurations_total"]
    assert int(suite.get("failures")) == len(failing) == doc["configurations_failed"]
    failed_cases = [c.get("name") for c in cases if c.find("failure") is not None]
    assert failed_cases == failing
    for case in cases:
        assert len(case.findall("failure")) <= 1
        assert float(case.get("time")) >= 0 and case.get("classname") == "kvplan.gate.release-failing"
        failure = case.find("failure")
        if failure is not None:
            assert failure.get("message") and failure.text.strip()


def test_json_keys(run_json):
    code, doc = run_json("gate", GATE / "fail" / "one-of-three.yaml")
    assert code == 1
    assert {"schema_version", "files", "passed", "configurations_total", "configurations_failed",
            "configurations"} <= doc.keys()
    assert doc["files"] == [{"file": str(GATE / "fail" / "one-of-three.yaml"), "title": None, "passed": False}]
    assert doc["passed"] is False and doc["configurations_total"] == 3 and doc["configurations_failed"] == 1
    last = doc["configurations"][-1]
    assert {"file", "name", "line", "passed", "failures", "thresholds", "check"} <= last.keys()
    assert last["failures"] == ["max_weights"] and last["line"] == 10
    (weights,) = [t for t in last["thresholds"] if t["name"] == "max_weights"]
    assert {"name", "kind", "unit", "limit", "limit_fraction", "actual", "passed", "miss"} == weights.keys()
    # 1,750,000,000 B of weights against a 1,700,000,000 B limit: missed by 50,000,000 B
    assert (weights["limit"], weights["actual"], weights["miss"]) == (1_700_000_000, 1_750_000_000, 50_000_000)
    assert {"verdict", "memory", "decode_tokens_per_s", "max_ctx"} <= last["check"].keys()


def test_markdown_format_on_stdout_lists_failures(run):
    result = run("gate", GATE / "fail" / "ref-8k-over.yaml", "--format", "markdown")
    assert result.exit_code == 1
    assert result.stdout.startswith("## ❌ kvplan gate: failed — 0 of 1 configurations pass")
    assert "| ref-8k | must_fit | fit (headroom ≥ 0) | over (headroom -44.97 MB) | 44.97 MB over budget |" \
        in result.stdout


def test_table_shows_each_miss(run):
    result = run("gate", GATE / "fail" / "speed-only.yaml")
    assert result.exit_code == 1
    # 50e9 / 3,897,483,648 B = 12.83 tok/s against 13: 0.17 → "0.2 tok/s short"
    assert "min_decode_tok_s" in result.stdout and "0.2 tok/s short" in result.stdout


def test_output_paths_checked_before_evaluating(run, tmp_path):
    junit = tmp_path / "ok.xml"
    result = run("gate", GATE / "pass" / "ref-4k.yaml", "--junit", junit, "--markdown",
                 tmp_path / "missing" / "out.md")
    assert result.exit_code == 2
    assert "does not exist" in result.stderr and result.stdout == ""
    assert not junit.exists()


def test_output_may_not_overwrite_the_gate_file(run, tmp_path):
    gate = tmp_path / "release.yaml"
    gate.write_text((GATE / "pass" / "ref-tight.yaml").read_text().replace("../../profiles/", f"{DATA}/profiles/"))
    before = gate.read_text()
    result = run("gate", gate, "--json", gate)
    assert result.exit_code == 2 and "would overwrite an input file of this command" in result.stderr
    assert gate.read_text() == before


def test_missing_file_is_exit_2(run, tmp_path):
    result = run("gate", tmp_path / "nope.yaml")
    assert result.exit_code == 2 and "nope.yaml: no such file" in result.stderr


def test_several_files_one_testsuite_each(run, tmp_path):
    junit = tmp_path / "out.xml"
    files = [GATE / "pass" / "ref-4k.yaml", GATE / "fail" / "one-of-three.yaml", GATE / "pass" / "defaults.yaml"]
    result = run("gate", *files, "--junit", junit)
    assert result.exit_code == 1  # any file failing fails the run
    suites = ET.parse(junit).getroot().findall("testsuite")
    assert [len(s.findall("testcase")) for s in suites] == [1, 3, 3]
    assert [int(s.get("failures")) for s in suites] == [0, 1, 0]
    assert ET.parse(junit).getroot().get("tests") == "7"


def test_bad_files_are_all_reported(run):
    bad = GATE / "bad"
    result = run("gate", bad / "bad-ctx.yaml", GATE / "pass" / "ref-4k.yaml", bad / "bad-kv-type.yaml")
    assert result.exit_code == 2
    assert "bad-ctx.yaml:6:" in result.stderr and "bad-kv-type.yaml:7:" in result.stderr


def test_schema_and_build_errors_come_in_one_run_in_file_order(run):
    path = GATE / "bad" / "mixed-schema-and-build.yaml"
    result = run("gate", path)
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    # one line per problem: 2 schema errors (parallel 257, ctx 0) + 5 found by building and evaluating
    assert len(lines) == len(_expected_fragments(path)) == 7, result.stderr
    for line, fragment in zip(lines, _expected_fragments(path)):
        assert fragment in line
    assert "--" not in result.stderr  # the file's keys, never the CLI's options
    assert "fine" not in result.stderr  # the valid configuration is not mentioned


def test_a_bad_default_skips_only_the_configurations_inheriting_it(run, tmp_path):
    from tests.conftest import REF_PHONE

    path = tmp_path / "gate.yaml"
    path.write_text(f"defaults:\n  device: {REF_PHONE}\n  model: {DATA / 'profiles' / 'ref-7b.yaml'}\n"
                    "  runtime: {name: transformers, cache: static, max_cache_len: 16k}\n  margin: 300%\n"
                    "configurations:\n  - name: inherits-margin\n    ctx: 20k\n"
                    "  - name: own-margin\n    margin: 5%\n    ctx: 20k\n")
    result = run("gate", path)
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 2, result.stderr
    assert "gate.yaml:5: defaults.margin: must be at least 0 and below 100 %" in lines[0]
    # configurations.0 inherits the bad margin: not built; configurations.1 overrides it: built, its ctx refused
    assert "gate.yaml:11: configurations.1.ctx: ctx 20,480 exceeds runtime.max_cache_len 16,384" in lines[1]


def test_key_in_defaults_points_at_the_defaults_line(run, tmp_path):
    from tests.conftest import REF_PHONE

    path = tmp_path / "gate.yaml"
    path.write_text(f"defaults:\n  device: {REF_PHONE}\n  model: {DATA / 'profiles' / 'ref-7b.yaml'}\n"
                    "  pinned_prefix: 512\nconfigurations:\n  - name: ideal\n    ctx: 4k\n"
                    "  - name: llama\n    ctx: 4k\n    runtime: llama.cpp\n")
    result = run("gate", path)
    assert result.exit_code == 2
    assert result.stderr.count("kvplan: error:") == 1, result.stderr
    assert "gate.yaml:4: configurations.1.pinned_prefix: llama.cpp allocates" in result.stderr


@pytest.mark.parametrize("error, expected", [
    (("ctx", "ctx 20,480 exceeds {runtime.max_cache_len} 16,384: StaticCache cannot hold it",
      dict(lead=None, mentions=("runtime.max_cache_len",))),
     "ctx 20,480 exceeds runtime.max_cache_len 16,384: StaticCache cannot hold it"),
    (("pinned_prefix_tokens", "drop {pinned_prefix_tokens} with {runtime=llama.cpp}", dict(mentions=("runtime",))),
     "pinned_prefix_tokens: drop pinned_prefix_tokens with runtime: llama.cpp"),
    (("runtime.parallel", "{runtime.parallel} 2 and {sequences} 3 disagree", dict(lead=None, mentions=("sequences",))),
     "runtime.parallel 2 and sequences 3 disagree"),
    (("kv_policy", "add {runtime=ideal} to use the policy", dict(lead=None, mentions=("runtime",))),
     "add runtime: ideal to use the policy"),
    (("v_type", "use {runtime.flash_attn=on} or an f16 V cache", dict(lead=None, mentions=("runtime.flash_attn",))),
     "use runtime.flash_attn: on or an f16 V cache"),
    (("k_type", "transformers' caches", {}), "k_type: transformers' caches"),
])
def test_field_errors_name_file_keys(error, expected):
    from kvplan.errors import FieldError
    from kvplan.gate.spec import _placed_wording

    field, message, options = error
    assert _placed_wording(FieldError(field, message, **options), None) == expected


def test_field_errors_name_a_knob_by_the_key_the_file_wrote():
    """A file that writes the older key ``pinned_prefix`` reads its errors with that key, not the knob's name."""
    from kvplan.errors import FieldError
    from kvplan.gate.spec import _placed_wording

    error = FieldError("pinned_prefix_tokens", "drop {pinned_prefix_tokens} with {runtime=llama.cpp}",
                       mentions=("runtime",))
    written = {"pinned_prefix_tokens": "pinned_prefix"}
    assert _placed_wording(error, None, written) == "pinned_prefix: drop pinned_prefix with runtime: llama.cpp"
    assert _placed_wording(error, "pinned_prefix_tokens", written) == "drop pinned_prefix with runtime: llama.cpp"


def test_pre_commit_hook_entry():
    import re

    import yaml

    root = Path(__file__).resolve().parents[2]
    (hook,) = yaml.safe_load((root / ".pre-commit-hooks.yaml").read_text())
    assert (hook["id"], hook["entry"]) == ("kvplan-gate", "kvplan gate")
    pattern = re.compile(hook["files"])
    assert pattern.search("release.yaml") and pattern.search("ci/release-android.yml")
    assert not pattern.search("device_profiles/pixel8.yaml")


def test_ci_gate_doc_names_every_key():
    from kvplan.gate.spec import KNOB_NAMES, THRESHOLD_NAMES

    doc = (Path(__file__).resolve().parents[2] / "docs" / "ci-gate.md").read_text()
    for key in (*KNOB_NAMES, *THRESHOLD_NAMES, "name", "device", "model", "ctx", "defaults", "title"):
        assert f"`{key}`" in doc, key
    for option in ("--junit", "--json", "--markdown", "--format"):
        assert option in doc
