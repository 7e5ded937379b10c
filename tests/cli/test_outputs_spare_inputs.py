"""No output replaces a file the command read (profiles, policy files, gate files), on a cold or a warm
profile cache; a symlinked output keeps its link; a named pipe is written into, not replaced."""

from __future__ import annotations

import os
import stat
import threading

import pytest

DEVICE = """name: phone
ram: 8 GB
os_reserve: 2 GB
memory_bandwidth: 50 GB/s
flash_read: 2 GB/s
"""
POLICY = """recent_window: 4k
history: {ratio: 0.25, k: 4, v: 4}
"""


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.setenv("KVPLAN_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "phone.yaml").write_text(DEVICE)
    (tmp_path / "policy.yaml").write_text(POLICY)
    (tmp_path / "release.yaml").write_text(
        "configurations:\n  - {name: a, device: phone.yaml, model: qwen3-0.6b, ctx: 8k, kv_policy: policy.yaml}\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("option, path", [("--json", "phone.yaml"), ("--junit", "policy.yaml"),
                                          ("--markdown", "phone.yaml")])
def test_gate_refuses_an_output_onto_a_profile_or_policy_file_it_read(run, folder, option, path):
    before = {p.name: p.read_text() for p in folder.glob("*.yaml")}
    # another output, valid on its own, must not be written either: the refusal comes before any output
    result = run("gate", "release.yaml", option, path, "--json" if option != "--json" else "--junit",
                 "other.out")
    assert result.exit_code == 2, result.stderr
    assert f"{path}: would overwrite an input file of this command" in result.stderr
    assert {p.name: p.read_text() for p in folder.glob("*.yaml")} == before
    assert not (folder / "other.out").exists()


@pytest.mark.parametrize("warm", [False, True], ids=["cold-cache", "warm-cache"])
def test_check_refuses_its_output_onto_the_device_profile(run, folder, warm):
    if warm:  # the profile's fields now come from the cache, not the YAML: still an input
        assert run("check", "-d", "phone.yaml", "-m", "7b", "-c", "1k").exit_code == 0
    result = run("check", "-d", "phone.yaml", "-m", "7b", "-c", "1k", "--format", "json", "-o", "phone.yaml")
    assert result.exit_code == 2
    assert "phone.yaml: would overwrite an input file of this command" in result.stderr
    assert (folder / "phone.yaml").read_text() == DEVICE


def test_a_symlink_to_an_input_is_refused_too(run, folder):
    (folder / "link.json").symlink_to(folder / "phone.yaml")
    result = run("check", "-d", "phone.yaml", "-m", "7b", "-c", "1k", "-o", "link.json")
    assert result.exit_code == 2 and "would overwrite an input file" in result.stderr
    assert (folder / "phone.yaml").read_text() == DEVICE


def test_inputs_are_those_of_the_current_command_only(run, folder):
    # one process, two commands: the second may write the file the first one read
    assert run("check", "-d", "phone.yaml", "-m", "7b", "-c", "1k").exit_code == 0
    (folder / "phone.json").write_text("{}")
    result = run("check", "-d", "pixel8", "-m", "7b", "-c", "1k", "-o", "phone.json")
    assert result.exit_code == 0, result.stderr
    assert '"device": "pixel8"' in (folder / "phone.json").read_text()


def test_a_symlinked_output_keeps_its_link_and_replaces_its_target(run, folder):
    (folder / "real.json").write_text("old")
    (folder / "link.json").symlink_to("real.json")
    result = run("check", "-d", "pixel8", "-m", "7b", "-c", "1k", "-o", "link.json")
    assert result.exit_code == 0, result.stderr
    assert (folder / "link.json").is_symlink()
    assert '"device": "pixel8"' in (folder / "real.json").read_text()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_a_named_pipe_is_written_into_not_replaced(run, folder):
    fifo = folder / "pipe.json"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_text()))
    reader.start()
    result = run("check", "-d", "pixel8", "-m", "7b", "-c", "1k", "-o", fifo)
    reader.join(timeout=10)
    assert result.exit_code == 0, result.stderr
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    assert received and '"device": "pixel8"' in received[0]


@pytest.mark.skipif(not hasattr(os, "chmod") or os.name != "posix", reason="POSIX modes")
def test_a_replaced_output_keeps_its_mode(run, folder):
    out = folder / "out.json"
    out.write_text("{}")
    out.chmod(0o640)
    assert run("check", "-d", "pixel8", "-m", "7b", "-c", "1k", "-o", out).exit_code == 0
    assert stat.S_IMODE(out.stat().st_mode) == 0o640 and '"device": "pixel8"' in out.read_text()
