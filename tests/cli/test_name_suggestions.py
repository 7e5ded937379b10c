"""A misspelt weight format, cache type or KV policy gets the close names ("did you mean …?"), as a misspelt
device or model does, in every command that takes it and in gate files."""

from __future__ import annotations

import pytest

from kvplan.engine.names import close_names, did_you_mean

POINT = ("-d", "pixel8", "-m", "7b")
COMMANDS = {
    "check": ("check", "-c", "4k"),
    "sweep": ("sweep", "-c", "4k"),
    "compare": ("compare", "-c", "4k"),
    "fit": ("fit", "-c", "4k"),
    "plot": ("plot", "memory", "-c", "4k"),
}
# (option, typed, the guesses in the message)
TYPOS = [
    ("--weight-type", "q4_k_n", "did you mean q4_k_m, q4_k_s, q5_k_m?"),
    ("--kv-type", "q8_1", "did you mean q8_0, q4_1, q5_1?"),
    ("--k-type", "fp61", "did you mean f16"),
    ("--kv-policy", "nonee", "--kv-policy: nonee: no such file; did you mean none?"),
]


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("option, typed, guess", TYPOS)
def test_every_command_suggests_the_close_name(run, tmp_path, command, option, typed, guess):
    extra = ("-o", str(tmp_path / "m.png")) if command == "plot" else ()
    result = run(*COMMANDS[command], *POINT, option, typed, *extra)
    assert result.exit_code == 2 and guess in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    assert not (tmp_path / "m.png").exists()


def test_a_near_miss_keeps_the_whole_list_and_a_far_one_only_the_list(run):
    near = run("check", "-c", "4k", *POINT, "--kv-type", "q8_1").stderr
    assert "unknown cache type 'q8_1'; did you mean q8_0, q4_1, q5_1? (known: f32, f16," in near
    far = run("check", "-c", "4k", *POINT, "--kv-type", "zz").stderr
    assert "unknown cache type 'zz'; known: f32, f16," in far and "did you mean" not in far


def test_a_misspelt_policy_path_suggests_the_files_beside_it(run, tmp_path):
    (tmp_path / "kv-policy.yaml").write_text("name: p\nrecent_window: 1k\nhistory: {ratio: 50%}\n")
    (tmp_path / "notes.txt").write_text("not a policy")
    result = run("check", "-c", "4k", *POINT, "--kv-policy", str(tmp_path / "kv-polcy.yaml"))
    assert result.exit_code == 2
    assert f"no such file; did you mean {tmp_path / 'kv-policy.yaml'}?" in result.stderr


def test_gate_files_get_the_same_suggestions(run, tmp_path):
    gate = tmp_path / "gate.yaml"
    gate.write_text("configurations:\n"
                    "  - {name: a, device: pixel8, model: 7b, ctx: 4k, kv_policy: nonee}\n"
                    "  - {name: b, device: pixel8, model: 7b, ctx: 4k, kv_type: q8_1}\n"
                    "  - {name: c, device: pixel8, model: 7b, ctx: 4k, weight_type: q4_k_n}\n")
    err = run("gate", str(gate)).stderr
    assert f"{tmp_path / 'nonee'}: no such file; did you mean none?" in err
    assert "gate.yaml:3: configurations.1.kv_type: unknown cache type 'q8_1'; did you mean q8_0, q4_1, q5_1?" in err
    assert "gate.yaml:4: configurations.2.weight_type: unknown weight format 'q4_k_n'; did you mean q4_k_m" in err


def test_close_names_ranks_dedupes_and_keeps_the_given_order_on_ties():
    # q4_k_m and q4_k_s are equally close to q4_k_n (5 of 6 characters: ratio 2·5/12 = 0.83): the given order
    assert close_names("q4_k_n", ["q4_k_s", "q4_k_m"]) == ["q4_k_s", "q4_k_m"]
    assert close_names("q4_k_n", ["q4_k_m", "q4_k_s"]) == ["q4_k_m", "q4_k_s"]
    # two spellings of one name are one guess, shown by its name; case is ignored
    assert close_names("FLOAT61", {"float16": "f16", "f16": "f16", "fp16": "f16"}) == ["f16"]
    # below difflib's 0.6: 'zz' shares nothing with 'q8_0'
    assert close_names("zz", ["q8_0"]) == [] and did_you_mean("zz", ["q8_0"]) == ""
    assert did_you_mean("nonee", ["none"]) == "; did you mean none?"
    assert len(close_names("q", [f"q{i}" for i in range(10)])) == 3  # at most three guesses
