"""The one table of knobs (kvplan/knob_table.py) and every place that lists knobs agree: the CLI options and their
help, ``Knobs``, ``Scenario``, the flag table, the gate file's keys (and older aliases), the JSON echo of
``kvplan check``, and the ``kvplan check`` command line written back from a scenario. A knob added to the table and
missing in one place, or a knob in one place and not in the table, fails here."""

from __future__ import annotations

import dataclasses
import json

import pytest

from kvplan.knob_table import BY_NAME, CACHE_KNOBS, GATE_KEYS, KINDS, KNOBS
from tests.conftest import REF_7B, REF_PHONE

# Options of `kvplan check` that are not knobs: what is planned and how the answer is shown.
NOT_KNOBS = {"--device", "--model", "--ctx", "--num-ctx", "--format", "--units", "--profiles-dir", "--plot", "--plot-dir",
             "--output", "--help"}
# Scenario fields that are not knobs of the table: what is planned, and what the cache-format knobs become.
SCENARIO_ONLY = {"device", "model", "ctx", "k_format", "v_format", "runtime_from_profile"}


def _check_command():
    import typer

    from kvplan.cli.app import build_app

    return typer.main.get_command(build_app("check")).commands["check"]


def _subfield_flags() -> set[str]:
    """The flags of the fields inside the runtime and policy knobs (their groups' own options)."""
    from kvplan.cli.options.fieldnames import FLAGS

    return {flag for field, flag in FLAGS.items() if field.startswith(("runtime.", "kv_policy."))}


def test_the_table_is_well_formed():
    from kvplan.cli.options.declarations import _CLI_TYPES
    from kvplan.knob_table import VALUE_TYPES

    assert set(KINDS) == set(_CLI_TYPES) == set(VALUE_TYPES)  # every kind has a Python type and a CLI type
    assert len({k.name for k in KNOBS}) == len({k.flag for k in KNOBS}) == len(KNOBS)
    for k in KNOBS:
        assert k.kind in KINDS, k.name
        assert k.help and k.help.endswith("."), k.name  # the knob's documentation, shown by --help
        assert k.flag == "--" + k.flag[2:].lower() and " " not in k.flag, k.name


def test_every_knob_is_an_option_of_check_with_the_tables_help_and_nothing_else_is():
    params = {max(p.opts, key=len): p for p in _check_command().params}
    knob_flags = {k.flag for k in KNOBS}
    assert knob_flags <= set(params), knob_flags - set(params)
    others = set(params) - knob_flags - NOT_KNOBS - _subfield_flags()
    assert not others, f"options of check that are neither knobs of the table nor known non-knobs: {others}"
    for k in KNOBS:
        param = params[k.flag]
        assert param.help == k.option_help, k.name
        assert (k.short in param.opts) if k.short else len(param.opts) == 1, k.name
        # the typed default reads back as the knob's default
        from kvplan.cli.options.declarations import parse_knob

        assert (parse_knob(k.name, param.default) if param.default is not None else None) == k.default, k.name


def test_the_cli_cache_group_is_the_table_in_its_order():
    from kvplan.cli.options.knob_groups import CACHE

    assert [p.name for p in CACHE.parameters] == [k.name for k in CACHE_KNOBS]


def test_the_flag_table_names_every_knob_by_its_one_name():
    from kvplan.cli.options.fieldnames import FLAGS

    for k in KNOBS:
        assert FLAGS[k.name] == k.flag
    # the fields of one command each (a profile's name, profiles --kind, import --params) are no knobs
    top = {field for field in FLAGS if "." not in field} - {"name", "ctx", "kind", "params"}
    assert top == set(BY_NAME), top ^ set(BY_NAME)  # no second name for a concept (os_reserve, margin)


def test_knobs_has_one_field_per_knob_with_its_default():
    from kvplan.plan import Knobs

    fields = dataclasses.fields(Knobs)
    assert [f.name for f in fields] == [k.name for k in KNOBS]
    assert all(f.default == BY_NAME[f.name].default for f in fields)


def test_scenario_holds_every_knob_it_takes_by_the_same_name_and_default():
    from kvplan.plan import Scenario

    fields = {f.name: f for f in dataclasses.fields(Scenario)}
    taken = {k.name for k in KNOBS if k.in_scenario}
    assert set(fields) - SCENARIO_ONLY == taken, (set(fields) - SCENARIO_ONLY) ^ taken
    for name in taken:
        assert fields[name].default == BY_NAME[name].default, name
    # the knobs the Scenario does not hold are the cache formats, echoed as the formats they make
    assert {k.json_key for k in KNOBS if not k.in_scenario} == {"k_format", "v_format"}


def test_the_gate_file_takes_every_knob_by_its_name_and_its_older_keys():
    from kvplan.gate.spec import KNOB_NAMES, KnobSpec, Settings

    assert set(KnobSpec.model_fields) == set(KNOB_NAMES) == {k.name for k in KNOBS if k.in_gate}
    # the one knob a gate file does not take: a speed requirement is the threshold min_decode_tok_s
    assert [k.name for k in KNOBS if not k.in_gate] == ["target_tokens_per_s"]
    assert "min_decode_tok_s" in Settings.model_fields
    samples = {"pinned_prefix_tokens": (512, 512), "os_reserve_bytes": ("3 GB", 3_000_000_000),
               "margin_fraction": ("20%", 0.2)}
    for key, name in GATE_KEYS.items():
        if key != name:  # an older key fills the knob
            given, read = samples[name]
            assert getattr(Settings.model_validate({key: given}), name) == read, key
    assert {name for key, name in GATE_KEYS.items() if key != name} == set(samples)


def test_a_gate_file_giving_a_knob_under_both_names_is_refused():
    from pydantic import ValidationError

    from kvplan.gate.spec import Settings

    with pytest.raises(ValidationError, match="pinned_prefix_tokens and pinned_prefix are one knob"):
        Settings.model_validate({"pinned_prefix_tokens": 1, "pinned_prefix": 2})


def _json_at(document: dict, path: str):
    value = document
    for part in path.split("."):
        assert isinstance(value, dict) and part in value, path
        value = value[part]
    return value


# Every knob set away from its default, in two runs (a weight type and weight bits exclude each other; so do the
# cache bits and types), on pixel8 and llama-2-7b (its profile prices a weight type tensor by tensor).
RUNS = [
    ["--sequences", "2", "--pinned-prefix", "1k", "--weight-bits", "4.5", "--kv-bits", "4", "--kv-group-size", "32",
     "--os-reserve", "2.5 GB", "--gpu-limit", "5 GiB", "--app-limit", "standard", "--margin", "20%", "--target-tok-s", "3", "--sliding-window", "2k"],
    ["--weight-type", "mlx-4bit", "--weight-group-size", "32", "--kv-type", "q8_0", "--k-type", "q4_0",
     "--v-type", "q8_0", "--runtime", "ideal", "--kv-policy", "none"],
]
# Knobs check's JSON does not echo, and why; knobs the check command line written back from a scenario leaves out.
NOT_ECHOED: dict[str, str] = {
    # the draft knobs are echoed under `speculative`, a key only with a draft (outputs without one stay as they were)
    **{name: "speculative.<name>, only with --draft" for name in
       ("draft", "draft_max_tokens", "acceptance_rate", "draft_kv_type")},
    "images": "echoed with the encoder's parts (memory.parts.encoder_weights.images) when above 0",
    "image_size": "echoed with the encoder's parts (memory.parts.encoder_weights.image_size) when images are set",
    "audio": "echoed with the audio encoder's parts (memory.parts.audio_encoder_weights.audio) when above 0",
    "audio_seconds": "echoed with the audio encoder's parts (memory.parts.audio_kv.audio_seconds) when audio is set",
    "mmproj": "a file: its encoder(s) echoed through the parts (memory.parts.encoder_weights, audio_encoder_weights)",
    **{name: "echoed in the placement object, present only when the configuration offloads"
       for name in ("n_gpu_layers", "n_cpu_moe", "override_tensor", "stream_experts", "expert_cache_hit")},
}
NOT_WRITTEN_BACK: dict[str, str] = {}


@pytest.mark.parametrize("extra", RUNS, ids=["bits", "types"])
def test_check_json_echoes_every_knob_the_table_says_it_does(run, extra):
    args = ["check", "-d", "pixel8", "-m", "7b", "-c", "4k", "--format", "json", *extra]
    result = run(*args)
    assert result.exit_code in (0, 1), result.stderr
    document = json.loads(result.stdout)
    for k in KNOBS:
        if k.json_key is None:
            assert k.name in NOT_ECHOED, f"{k.name}: no json_key in the table"
            assert k.name not in document
            continue
        value = _json_at(document, k.json_key)
        if k.json_plain and k.flag in args:
            typed = args[args.index(k.flag) + 1]
            from kvplan.cli.options.declarations import parse_knob

            expected = parse_knob(k.name, typed)
            assert value == (float(expected) if k.kind == "rate" else int(expected) if k.kind == "count" else expected)
    # the other way round: a top-level key named like a knob is that knob's echo
    assert {key for key in document if key in BY_NAME} <= {k.json_key for k in KNOBS}


def _argv_round_trip(s):
    """``s`` → check_argv → the check command's own parsing → the scenario it builds."""
    from kvplan.cli.check.argv import check_argv
    from kvplan.cli.options.declarations import knobs
    from kvplan.plan import build_scenario

    argv = check_argv(s, str(REF_PHONE), str(REF_7B))
    assert argv[:2] == ["kvplan", "check"]
    ctx = _check_command().make_context("check", argv[2:])
    back = knobs(**{k.name: ctx.params[k.name] for k in CACHE_KNOBS})
    return argv, build_scenario(s.device, s.model, s.ctx, back)


@pytest.mark.parametrize("settings", [
    dict(sequences=2, pinned_prefix_tokens=1024, weight_bits=4.5, kv_bits=4, kv_group_size=32,
         os_reserve_bytes=2_500_000_000, gpu_working_set_bytes=5 * 2**30, app_limit="standard", margin_fraction=0.2, target_tokens_per_s=3.0, sliding_window=2048),
    dict(weight_type="mlx-4bit", weight_group_size=32, k_type="q4_0", v_type="q8_0"),
    dict(k_bits=8, v_bits=4),
    dict(kv_type="q8_0"),
], ids=["plain", "types", "k-v-bits", "kv-type"])
def test_check_argv_writes_back_every_knob_it_takes(settings):
    from kvplan.plan import Knobs, build_scenario
    from kvplan.profiles.catalog import Catalog

    catalog = Catalog()
    device, model = catalog.device(str(REF_PHONE)).profile, catalog.model(str(REF_7B)).profile
    s = build_scenario(device, model, 4096, Knobs(**settings))
    argv, back = _argv_round_trip(s)
    for k in KNOBS:
        if not k.argv and k.in_scenario and k.kind not in ("runtime", "policy"):
            assert k.name in NOT_WRITTEN_BACK, f"{k.name}: the table writes it back nowhere"
            continue
        if k.in_scenario and k.name not in NOT_WRITTEN_BACK:
            assert getattr(back, k.name) == getattr(s, k.name), (k.name, argv)
    assert (back.k_format, back.v_format) == (s.k_format, s.v_format), argv
