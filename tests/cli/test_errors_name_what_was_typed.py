"""Issue #14 point 6: an error names what the user typed. The core raises :class:`FieldError` about a field
(the library and a file see the field); the CLI words the same error with the flag (kvplan/cli/options/fieldnames.py).
No field is worded by its name on the command line any more."""

from __future__ import annotations

import pytest

from kvplan.cli.options.fieldnames import FLAGS, cli_message
from kvplan.errors import FieldError, UsageError
from tests.conftest import DATA, REF_7B, REF_PHONE


def _profiles():
    from kvplan.profiles.catalog import Catalog

    catalog = Catalog()
    return catalog.device(str(REF_PHONE)).profile, catalog.model(str(REF_7B)).profile


@pytest.mark.parametrize("knobs, field, message", [
    ({"kv_bits": 64}, "kv_bits", "must be a whole number from 1 to 32, got 64"),
    ({"k_bits": 0}, "k_bits", "must be a whole number from 1 to 32, got 0"),
    ({"weight_bits": 40.0}, "weight_bits", "must be above 0 and at most 32, got 40"),
    ({"kv_type": "q9_0"}, "kv_type", "unknown cache type 'q9_0'"),
    ({"v_type": "q9_0"}, "v_type", "unknown cache type 'q9_0'"),
    # ref-phone: ram 8,000,000,000 B; a reserve of the whole RAM leaves no budget
    ({"os_reserve_bytes": 8_000_000_000}, "os_reserve_bytes", "must be less than the device's RAM (8,000,000,000 bytes)"),
    ({"runtime": "vllm"}, "runtime", "unknown runtime 'vllm'; known: ideal, llama.cpp, transformers"),
    # llama.cpp's -np is at most 256 (LLAMA_MAX_SEQ)
    ({"runtime": "llama.cpp", "sequences": 300}, "sequences", "llama.cpp allows at most 256 sequences, got 300"),
])
def test_a_knob_error_names_the_field_for_the_library_and_the_flag_for_the_cli(knobs, field, message):
    from kvplan.plan.knobs import Knobs, build_scenario

    device, model = _profiles()
    with pytest.raises(FieldError) as caught:
        build_scenario(device, model, 4096, Knobs(**knobs))
    assert caught.value.fields == (field,)
    assert str(caught.value).startswith(f"{field}: {message}")
    assert cli_message(caught.value).startswith(f"{FLAGS[field]}: {message}")


def test_both_bits_and_type_name_both_flags():
    from kvplan.plan.knobs import Knobs, build_scenario

    device, model = _profiles()
    with pytest.raises(FieldError) as caught:
        build_scenario(device, model, 4096, Knobs(kv_bits=4, kv_type="q8_0"))
    assert str(caught.value) == "give kv_bits or kv_type, not both"
    assert cli_message(caught.value) == "give --kv-bits or --kv-type, not both"


@pytest.mark.parametrize("bits", [0, 33, True, 4.0])
def test_check_bit_width_is_one_rule(bits):
    from kvplan.plan.knobs import check_bit_width

    with pytest.raises(FieldError) as caught:
        check_bit_width("kv_policy.history.bits", bits)
    assert cli_message(caught.value) == f"--kv-history-bits: must be a whole number from 1 to 32, got {bits!r}"


def test_check_bit_width_accepts_1_to_32():
    from kvplan.plan.knobs import check_bit_width

    for bits in (1, 4, 32):
        check_bit_width("kv_bits", bits)  # no error


@pytest.mark.parametrize("changes, field, cli", [
    ({"ctx": -1}, "ctx", "--ctx: must be a whole number ≥ 0, got -1"),
    ({"sequences": 0}, "sequences", "--sequences: must be a whole number ≥ 1, got 0"),
    ({"k_format": "q9_0"}, "k_format", "k_format: unknown cache type 'q9_0'"),
    ({"weight_bits": 40}, "weight_bits", "--weight-bits: must be above 0 and at most 32, got 40"),
    ({"target_tokens_per_s": 0}, "target_tokens_per_s", "--target-tok-s: must be a positive"),
    ({"os_reserve_bytes": -1}, "os_reserve_bytes", "--os-reserve: must be a whole number ≥ 0, got -1"),
])
def test_scenario_checks_are_field_errors(changes, field, cli):
    from kvplan import Scenario

    device, model = _profiles()
    with pytest.raises(FieldError) as caught:
        Scenario(device, model, **{"ctx": 4096, **changes})
    assert caught.value.fields == (field,)
    assert cli_message(caught.value).startswith(cli)


def test_history_bits_flag_uses_the_bit_width_rule_not_pydantic():
    from kvplan.cli.options.policy import policy_from_options

    with pytest.raises(FieldError) as caught:
        policy_from_options(recent_window=1024, history_ratio="50%", history_bits="4/99")
    assert caught.value.fields == ("kv_policy.history.bits",)
    assert cli_message(caught.value) == "--kv-history-bits: must be a whole number from 1 to 32, got 99"


@pytest.mark.parametrize("option, parser, text, message", [
    ("--ram", "parse_size_bytes", "8", "--ram: 8 has no unit: did you mean 8 GB?"),
    ("--bandwidth", "parse_rate_bytes_per_s", "100", "--bandwidth: 100 has no unit: did you mean 100 GB/s?"),
    ("--latency", "parse_duration_s", "4", "--latency: a duration needs a unit, got '4': did you mean '4 ms'?"),
])
def test_parse_option_names_the_option(option, parser, text, message):
    import kvplan.units
    from kvplan.cli.options.declarations import parse_option

    with pytest.raises(UsageError) as caught:
        parse_option(option, getattr(kvplan.units, parser), text)
    assert str(caught.value) == message


def test_parse_option_returns_the_parsed_value():
    from kvplan.cli.options.declarations import parse_option
    from kvplan.units import parse_size_bytes

    assert parse_option("--ram", parse_size_bytes, "8 GiB") == 8 * 2**30  # 8,589,934,592 B


def test_calibrate_refuses_a_bare_option_before_reading_anything(run, tmp_path):
    # the bench file does not exist: the option is refused first, as typed, and no profile is written
    out = tmp_path / "z.yaml"
    result = run("calibrate", tmp_path / "missing.json", "--ram", "8", "--os-reserve", "2GB", "--flash-read",
                 "2GB/s", "-o", out)
    assert result.exit_code == 2
    assert result.stderr.strip() == "kvplan: error: --ram: 8 has no unit: did you mean 8 GB?"
    assert not out.exists()


def test_a_bad_gguf_model_names_its_file():
    from kvplan.errors import ProfileError
    from kvplan.hub.catalog import local_gguf_model

    path = str(DATA / "acceptance" / "gguf" / "bad-type.gguf")
    with pytest.raises(ProfileError) as caught:
        local_gguf_model(path)
    # the wording of `import gguf` (one parser, one message; issue #27)
    assert caught.value.problems == [f"{path}: not a readable GGUF file: a tensor has storage type id 999, which "
                                     "kvplan does not know (a damaged file, or a type newer than this kvplan)"]


def test_a_gate_file_still_names_its_keys(run, tmp_path):
    config = tmp_path / "g.yaml"
    config.write_text(f"configurations:\n  - name: a\n    device: {REF_PHONE}\n    model: {REF_7B}\n    ctx: 4k\n"
                      "    kv_type: q9_0\n")
    result = run("gate", config)
    assert result.exit_code == 2
    assert f"{config}:6: configurations.0.kv_type: unknown cache type 'q9_0'" in result.stderr
    assert "--kv-type" not in result.stderr
