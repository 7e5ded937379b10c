"""Shared fixtures: the contract's reference profiles and a CLI runner with a fixed terminal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"
REF_PHONE = DATA / "profiles" / "ref-phone.yaml"
REF_7B = DATA / "profiles" / "ref-7b.yaml"


def pytest_configure(config):
    # The profile cache (kvplan.profiles.cache) goes to a fresh folder per run, never the user's home:
    # the first use of each profile in a run takes the pydantic path, later ones the cached path.
    import os
    import tempfile

    os.environ["KVPLAN_CACHE_DIR"] = tempfile.mkdtemp(prefix="kvplan-test-cache-")


@pytest.fixture
def run(monkeypatch):
    """Run the CLI in-process: ``run("check", "--device", …)`` → result with .exit_code, .stdout, .stderr."""
    from typer.testing import CliRunner

    from kvplan.cli.app import app

    monkeypatch.setenv("COLUMNS", "120")
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.delenv("KVPLAN_DEBUG", raising=False)
    monkeypatch.delenv("KVPLAN_PROFILES", raising=False)
    runner = CliRunner()

    def invoke(*args: str):
        return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)

    return invoke


@pytest.fixture
def run_json(run):
    def invoke(*args: str):
        result = run(*args, "--format", "json")
        return result.exit_code, json.loads(result.stdout)

    return invoke
