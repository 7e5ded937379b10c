"""Every bad input gets exit code 2 and clear `file:line: field: message` lines — never a traceback.

Each file in tests/data/bad/<kind>/ starts with `# expect: <fragment>`; it is fed to every command that
reads a profile of that kind.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import REF_7B, REF_PHONE

BAD = Path(__file__).parents[1] / "data" / "bad"


def _cases(kind: str):
    for path in sorted((BAD / kind).glob("*.yaml")):
        first = path.read_bytes().split(b"\n", 1)[0].decode("ascii")
        assert first.startswith("# expect: "), path
        yield pytest.param(path, first[len("# expect: "):], id=path.stem)


def _commands(kind: str, path: Path, out: Path) -> list[list[str]]:
    """Every command that reads a profile of ``kind``, each pointed at the bad file."""
    device, model = (path, REF_7B) if kind == "device" else (REF_PHONE, path)
    common = ["--device", str(device), "--model", str(model)]
    return [
        ["check", *common, "--ctx", "4096"],
        ["profiles", "validate", "--kind", kind, str(path)],
        ["plot", "memory", *common, "-o", str(out / "memory.png")],
        ["plot", "decode", *common, "-o", str(out / "decode.png")],
        ["plot", "fitmap", *common, "-o", str(out / "fitmap.png")],
    ] + ([["plot", "attention", "--model", str(path), "-o", str(out / "attention.png")]] if kind == "model" else [])


def _assert_clean_failure(result, path: Path, fragment: str, argv: list[str]) -> None:
    assert result.exit_code == 2, (argv, result.stdout + result.stderr)
    assert "Traceback" not in result.stderr + result.stdout
    if argv[:2] == ["profiles", "validate"]:
        lines = result.stdout.strip().splitlines()  # the problems are validate's report, on stdout
    else:
        lines = [line for line in result.stderr.strip().splitlines() if not line.startswith("kvplan: note: ")]
        assert lines and all(line.startswith("kvplan: error: ") for line in lines), lines
    assert any(str(path) in line and fragment in line for line in lines), (argv, fragment, lines)


@pytest.mark.parametrize("path, fragment", list(_cases("device")))
def test_bad_device_files(run, path, fragment, tmp_path):
    for argv in _commands("device", path, tmp_path):
        _assert_clean_failure(run(*argv), path, fragment, argv)
    assert not list(tmp_path.iterdir()), "a failed command left an output file"


@pytest.mark.parametrize("path, fragment", list(_cases("model")))
def test_bad_model_files(run, path, fragment, tmp_path):
    for argv in _commands("model", path, tmp_path):
        _assert_clean_failure(run(*argv), path, fragment, argv)
    assert not list(tmp_path.iterdir()), "a failed command left an output file"


def test_python_tag_runs_nothing(run, tmp_path):
    marker = tmp_path / "pwned"
    evil = tmp_path / "evil.yaml"
    evil.write_text(f"name: x\nram: !!python/object/apply:os.system ['touch {marker}']\n")
    result = run("check", "--device", str(evil), "--model", str(REF_7B), "--ctx", "1k")
    assert result.exit_code == 2
    assert not marker.exists()
    from kvplan.errors import ProfileError
    from kvplan.files.yamlio import parse_yaml

    for tag in ("!!python/object/apply:os.system ['true']", "!!python/name:os.system", "!!binary aGk="):
        try:
            parse_yaml(f"a: {tag}\n")
        except ProfileError:
            pass


@pytest.mark.parametrize("argv, fragment", [
    (["--device", "no/such/file.yaml"], "no/such/file.yaml: no such file"),
    (["--device", "."], "unknown device"),
    (["--device", "tests"], "unknown device 'tests'"),
    (["--model", "llama-9b"], "unknown model 'llama-9b'"),
    (["--ctx", "-5"], "--ctx"),
    (["--ctx", "1.3k"], "--ctx"),  # 1.3 · 1024 = 1331.2 tokens
    (["--ctx", ""], "--ctx"),
])
def test_bad_names_paths_and_options(run, argv, fragment):
    base = {"--device": str(REF_PHONE), "--model": str(REF_7B), "--ctx": "4096"}
    base.update(dict(zip(argv[::2], argv[1::2])))
    result = run("check", *[x for kv in base.items() for x in kv])
    assert result.exit_code == 2
    assert fragment in result.stderr
    assert "Traceback" not in result.stderr


def test_directory_as_profile(run, tmp_path):
    result = run("check", "--device", f"{tmp_path}/", "--model", str(REF_7B), "--ctx", "1k")
    assert result.exit_code == 2
    assert "is a directory" in result.stderr


def test_unreadable_file(run, tmp_path, monkeypatch):
    # root reads every file whatever its mode, so the refusal is simulated where the file is read
    import builtins

    from kvplan.files import yamlio

    path = tmp_path / "locked.yaml"
    path.write_text(REF_PHONE.read_text())

    def refuse(file, *args, **kwargs):
        if Path(file) == path:
            raise PermissionError(13, "Permission denied", str(file))
        return builtins.open(file, *args, **kwargs)

    monkeypatch.setattr(yamlio, "open", refuse, raising=False)
    monkeypatch.setenv("KVPLAN_NO_CACHE", "1")
    result = run("check", "--device", str(path), "--model", str(REF_7B), "--ctx", "1k")
    assert result.exit_code == 2 and f"{path}: permission denied" in result.stderr


def test_internal_errors_exit_3_and_debug_shows_the_traceback(run, monkeypatch):
    import kvplan.plan

    def boom(*_args, **_kwargs):
        raise ZeroDivisionError("simulated bug")

    monkeypatch.setattr(kvplan.plan, "evaluate", boom)
    result = run("check", "--device", str(REF_PHONE), "--model", str(REF_7B), "--ctx", "1k")
    assert result.exit_code == 3
    assert "internal error: ZeroDivisionError: simulated bug" in result.stderr
    assert "KVPLAN_DEBUG=1" in result.stderr
    monkeypatch.setenv("KVPLAN_DEBUG", "1")
    with pytest.raises(ZeroDivisionError):
        run("check", "--device", str(REF_PHONE), "--model", str(REF_7B), "--ctx", "1k")


@pytest.mark.parametrize("argv, fragment", [
    (["check", "-d", "pixel8", "-m", "7b", "--ctx", "4k", "-n", "0"], "--sequences' / '-n': must be greater than"),
    (["check", "-d", "pixel8", "-m", "7b", "--ctx", "4k", "--units", "foo"], "'foo' is not one of 'si', 'iec'"),
    (["check", "-d", "pixel8", "-m", "7b"], "Missing option '--ctx'"),
    (["chek"], "No such command 'chek'. Did you mean 'check'?"),
    (["check", "-d", "pixel8", "-m", "7b", "--ctx", "4k", "--bogus"], "No such option: --bogus"),
])
def test_usage_errors_are_one_line(run, argv, fragment):
    result = run(*argv)
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kvplan: error: ") and fragment in lines[0], lines
    assert "help" in lines[0]


def test_a_full_disk_on_stdout_is_exit_2_not_a_bug():
    import subprocess
    import sys

    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full here")
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "kvplan", "check", "-d", "pixel8", "-m", "7b", "--ctx", "4k",
                               "--format", "json"], stdout=full, stderr=subprocess.PIPE, text=True)
    assert done.returncode == 2
    assert done.stderr.strip() == "kvplan: error: cannot write output: No space left on device"


def test_library_refuses_what_the_cli_refuses():
    from kvplan import Catalog
    from kvplan import Scenario
    from kvplan.errors import UsageError

    cat = Catalog()
    device, model = cat.device(str(REF_PHONE)).profile, cat.model(str(REF_7B)).profile
    for bad in ({"ctx": -5}, {"ctx": 4.5}, {"ctx": 4, "sequences": 0}, {"ctx": 4, "weight_bits": 0},
                {"ctx": 4, "margin_fraction": 1.5}, {"ctx": 4, "os_reserve_bytes": 9 * 10**9}):
        with pytest.raises(UsageError):
            Scenario(device, model, **bad)


def test_library_takes_names_where_the_cli_does_and_refuses_the_rest():
    from kvplan import Catalog
    from kvplan import Scenario
    from kvplan import evaluate
    from kvplan.errors import UsageError

    cat = Catalog()
    device, model = cat.device(str(REF_PHONE)).profile, cat.model("qwen2.5-0.5b").profile
    # qwen2.5-0.5b, q8_0, llama.cpp -c 5000 -np 3: 24 layers × 2 rows × (128 / 32 × 34 B) = 6,528 B per cell;
    # n_ctx = pad(5000, 256) = 5,120; per stream pad(5120 / 3 → 1,706, 256) = 1,792 cells × 3 = 5,376 cells
    by_name = evaluate(Scenario(device, model, 5000, sequences=3, runtime="llama.cpp", k_format="q8_0",
                                v_format="q8_0"))
    by_mapping = evaluate(Scenario(device, model, 5000, runtime={"name": "llama.cpp", "parallel": 3},
                                   k_format="q8_0", v_format="q8_0"))
    assert by_name.kv_bytes == by_mapping.kv_bytes == 5_376 * 6_528
    for bad in ({"device": "pixel8"}, {"model": None}, {"kv_policy": "examples/kv-policy.yaml"},
                {"k_format": 3.5}, {"runtime": "vllm"}, {"target_tokens_per_s": 0}):
        with pytest.raises(UsageError):
            Scenario(**{"device": device, "model": model, "ctx": 100, **bad})


def test_oversized_device_file_is_refused(run, tmp_path):
    """A profile over the loader's size bound (1.2 MB of comments), written here rather than committed."""
    path = tmp_path / "large.yaml"
    path.write_text("# expect: file is too large\n" + "# padding\n" * 120_000, encoding="utf-8")
    assert path.stat().st_size > 1_100_000
    out = tmp_path / "out"
    out.mkdir()
    for argv in _commands("device", path, out):
        _assert_clean_failure(run(*argv), path, "file is too large", argv)
    assert not list(out.iterdir()), "a failed command left an output file"
