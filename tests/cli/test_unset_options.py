"""Options left unset skip typer's coercion (kvplan.cli.options.unset); given ones are still checked by it."""

from __future__ import annotations

import json

import typer.main
from typer.testing import CliRunner

from kvplan.cli.app import app
from kvplan.cli.options.unset import _UnsetFirst

runner = CliRunner()


def _check_command():
    return typer.main.get_command(app).commands["check"]


def test_every_option_of_check_answers_unset_values_itself():
    params = [p for p in _check_command().params if hasattr(p, "type_descriptor")]
    assert params and all(isinstance(p._runtime_param, _UnsetFirst) for p in params)


def test_unset_options_build_no_validator_and_given_ones_do():
    command = _check_command()
    ctx = command.make_context("check", ["--device", "pixel8", "--model", "7b", "--ctx", "8192", "--sequences", "2"])
    built = {p.name for p in command.params if getattr(p._runtime_param, "_built", None) is not None}
    assert {"device", "model", "ctx", "sequences"} <= built
    assert "n_gpu_layers" not in built and "draft" not in built
    assert ctx.params["sequences"] == 2 and ctx.params["n_gpu_layers"] is None


def test_a_given_value_is_still_validated_by_typer():
    result = runner.invoke(app, ["check", "--device", "pixel8", "--model", "7b", "--sequences", "two"])
    assert result.exit_code == 2
    assert "--sequences" in result.output and "Traceback" not in result.output


def test_multi_valued_option_left_unset_is_an_empty_tuple():
    command = typer.main.get_command(app).commands["sweep"]
    multi = [p for p in command.params if getattr(p, "multiple", False) and p.name not in ("device", "model", "ctx")]
    assert multi
    ctx = command.make_context("sweep", ["--device", "pixel8", "--model", "7b", "--ctx", "1024"])
    assert ctx.params["device"] == ["pixel8"] or ctx.params["device"] == ("pixel8",)
    assert [ctx.params[p.name] for p in multi] == [() for _ in multi]


def test_a_check_reads_the_same_with_and_without_the_lazy_coercion():
    result = runner.invoke(app, ["check", "--device", "pixel8", "--model", "7b", "--ctx", "8192", "--format", "json"])
    assert result.exit_code == 1  # 7B at 8k does not fit pixel8's budget
    assert json.loads(result.output)["ctx"] == 8192


def test_a_plain_check_imports_no_draft_mtp_or_encoder_code():
    # kvplan.plan.parts.NEEDS: a source whose scenario field is unset is not imported
    import subprocess
    import sys

    code = ("import sys; from kvplan.cli.app import main; sys.argv=['kvplan','check','--device','pixel8','--model',"
            "'7b','--ctx','8192','--format','json']\ntry: main()\nexcept SystemExit: pass\n"
            "print(sorted(m for m in sys.modules if m in ('kvplan.plan.draft','kvplan.plan.mtp',"
            "'kvplan.plan.encoder_parts','kvplan.plan.audio_parts')), file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stderr.strip().splitlines()[-1] == "[]"
