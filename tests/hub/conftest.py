"""Fixtures of the hub tests: a fake Hub on 127.0.0.1 (``hub``) and the environment of a kvplan subprocess
that uses it (``hub_env``). The server and the file builders are in hubfake.py."""

from __future__ import annotations

import os

import pytest
from hubfake import FakeHub


@pytest.fixture
def hub():
    server = FakeHub()
    server.thread.start()
    yield server
    server.server.shutdown()
    server.server.server_close()


@pytest.fixture
def hub_env(tmp_path, hub):
    """Environment for a kvplan subprocess: the fake Hub, a fresh HF cache and kvplan cache, no token."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGINGFACE_", "KVPLAN_"))
           and k not in ("TRANSFORMERS_OFFLINE",)}
    env.update({"HF_ENDPOINT": hub.url, "HF_HOME": str(tmp_path / "hf-home"), "HF_HUB_CACHE": str(tmp_path / "hf-cache"),
                "KVPLAN_CACHE_DIR": str(tmp_path / "kvplan-cache"), "HF_HUB_DISABLE_TELEMETRY": "1",
                "HF_HUB_DISABLE_PROGRESS_BARS": "1", "HF_HUB_DISABLE_XET": "1", "NO_PROXY": "127.0.0.1,localhost",
                "no_proxy": "127.0.0.1,localhost"})
    return env
