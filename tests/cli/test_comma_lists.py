"""``--device`` / ``--model`` of sweep, compare and plot take comma-separated names as well as repeats."""

from __future__ import annotations

import shutil

import pytest

from kvplan.cli.options.planning import split_refs
from kvplan.errors import UsageError
from tests.conftest import DATA, REF_7B, REF_PHONE

TINY = DATA / "gate" / "models" / "tiny-llama.yaml"


def test_split_refs_strips_and_drops_empties():
    assert split_refs(["a,b", " c , ,d ", "e"], "--device") == ["a", "b", "c", "d", "e"]
    assert split_refs(None, "--device") is None and split_refs([], "--device") == []
    with pytest.raises(UsageError, match="--model: no name in ' , '"):
        split_refs([" , "], "--model")


def test_an_existing_path_with_a_comma_is_kept_whole(tmp_path):
    path = tmp_path / "phone,8gb.yaml"
    path.write_text("x")
    assert split_refs([str(path), "a,b"], "--device") == [str(path), "a", "b"]


def test_sweep_takes_comma_lists(run):
    result = run("sweep", "-d", f"{REF_PHONE},{REF_PHONE.parent / 'ref-phone.yaml'}", "-m", f"{REF_7B}, {TINY}",
                 "--ctx", "1000", "--format", "csv")
    assert result.exit_code == 0, result.stderr
    rows = [r.split(",")[:2] for r in result.stdout.splitlines()[1:]]
    assert rows == [["ref-phone", "ref-7b"], ["ref-phone", "tiny-llama"]]  # the same device twice is one


def test_sweep_comma_list_equals_repeated_options(run):
    listed = run("sweep", "-d", REF_PHONE, "-m", f"{REF_7B},{TINY}", "--ctx", "1k,2k", "--format", "csv")
    repeated = run("sweep", "-d", REF_PHONE, "-m", REF_7B, "-m", TINY, "--ctx", "1k,2k", "--format", "csv")
    assert listed.exit_code == 0 and listed.stdout == repeated.stdout
    assert len(listed.stdout.splitlines()) == 1 + 2 * 2  # header + 2 models × 2 contexts


def test_sweep_with_only_commas_is_a_usage_error(run):
    result = run("sweep", "-d", ",", "-m", REF_7B, "--ctx", "1k")
    assert result.exit_code == 2 and result.stderr == "kvplan: error: --device: no name in ','\n"


def test_compare_takes_comma_lists(run_json):
    code, doc = run_json("compare", "-d", REF_PHONE, "-m", f"{REF_7B},{TINY}", "--ctx", "1000")
    assert code == 0
    # ref-7b: 32 layers × 2 × 32 × 128 × 2 B = 524,288 B/token × 1000; tiny-llama: 16,384 B/token × 1000
    assert {r["model"]: r["kv_bytes"] for r in doc["rows"]} == {"ref-7b": 524_288_000, "tiny-llama": 16_384_000}


def test_plot_fitmap_takes_comma_lists(run, tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    from kvplan import curves as data

    seen = []
    original = data.fit_map
    monkeypatch.setattr(data, "fit_map", lambda grid, ctx: seen.append(grid) or original(grid, ctx))
    phone2 = tmp_path / "phone2.yaml"
    shutil.copy(REF_PHONE, phone2)
    text = phone2.read_text().replace("name: ref-phone", "name: ref-phone-2")
    phone2.write_text(text.replace("aliases: [refphone]", ""))
    out = tmp_path / "fit.png"
    result = run("plot", "fitmap", "-d", f"{REF_PHONE},{phone2}", "-m", f"{REF_7B},{TINY}", "-o", out)
    assert result.exit_code == 0, result.stderr
    assert out.stat().st_size > 0
    grid = seen[0]
    assert [[(s.device.name, s.model.name) for s in row] for row in grid] == [
        [("ref-phone", "ref-7b"), ("ref-phone", "tiny-llama")],
        [("ref-phone-2", "ref-7b"), ("ref-phone-2", "tiny-llama")]]


@pytest.mark.parametrize("command", [("sweep",), ("compare",), ("plot", "fitmap")])
def test_help_mentions_commas(run, command):
    assert "comma-separated" in run(*command, "--help").stdout
