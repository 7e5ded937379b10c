"""Issue #14 point 6: `import hf|gguf`, `calibrate` and `profiles probe` check the options that fill profile
fields as typed, before any work, and name the flag — not a field at an invented line of the generated profile."""

from __future__ import annotations

import pytest

from tests.conftest import DATA

CONFIG = DATA / "hf_configs" / "gemma-3-1b.json"
NAME_ERROR = ("kvplan: error: --name: 'My Model' is not a valid profile name: use lowercase letters, digits, '.', "
              "'_' and '-' (e.g. 'my-model')\n")


@pytest.mark.parametrize("kind, source", [("hf", CONFIG), ("hf", "org/never-asked"), ("gguf", "missing.gguf")])
def test_import_name_is_checked_before_the_source_is_read(run, kind, source):
    # a Hub id never reaches the network and a missing file is never opened: the name is refused first
    result = run("import", kind, source, "--name", "My Model")
    assert result.exit_code == 2 and result.stderr == NAME_ERROR


@pytest.mark.parametrize("bits, shown", [("40", "40"), ("0", "0"), ("-1", "-1"), ("32.5", "32.5")])
def test_import_weight_bits_out_of_range_names_the_flag(run, bits, shown):
    for kind, source in (("hf", CONFIG), ("gguf", "missing.gguf")):
        result = run("import", kind, source, "--weight-bits", bits)
        assert result.exit_code == 2
        assert result.stderr == f"kvplan: error: --weight-bits: must be above 0 and at most 32, got {shown}\n"


def test_import_weight_bits_32_and_a_valid_name_still_import(run):
    result = run("import", "hf", CONFIG, "--weight-bits", "32", "--name", "my.model_1")
    assert result.exit_code == 0 and "weight_bits: 32" in result.stdout and "name: my.model_1" in result.stdout


def test_import_params_and_weight_type_are_checked_first(run):
    result = run("import", "gguf", "missing.gguf", "--params", "1 GB")
    assert result.exit_code == 2 and result.stderr.startswith("kvplan: error: --params: ")
    result = run("import", "gguf", "missing.gguf", "--weight-type", "q9")
    assert result.exit_code == 2 and result.stderr.startswith("kvplan: error: --weight-type: unknown weight format 'q9'")


def test_calibrate_name_is_checked_before_the_bench_files_are_read(run, tmp_path):
    out = tmp_path / "dev.yaml"
    result = run("calibrate", tmp_path / "missing.json", "-o", out, "--name", "My Model")
    assert result.exit_code == 2 and result.stderr == NAME_ERROR and not out.exists()


def test_probe_name_is_checked_before_measuring(run, monkeypatch):
    import kvplan.probe as probe

    def measured(*args, **kwargs):
        raise AssertionError("the probe measured before refusing the name")

    monkeypatch.setattr(probe, "probe_device", measured)
    result = run("profiles", "probe", "--quick", "--name", "My Model")
    assert result.exit_code == 2 and result.stderr == NAME_ERROR
