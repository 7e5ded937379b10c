"""One reading of kvplan's on/off environment variables."""

import pytest

from kvplan.files.env import env_flag


@pytest.mark.parametrize("value, on", [("1", True), ("yes", True), ("TRUE", True), ("on", True), ("0", False),
                                       ("false", False), ("No", False), ("OFF", False), ("", False), (" 0 ", False)])
def test_env_flag(monkeypatch, value, on):
    monkeypatch.setenv("KVPLAN_PLAIN", value)
    assert env_flag("KVPLAN_PLAIN") is on


def test_unset_is_off(monkeypatch):
    monkeypatch.delenv("KVPLAN_PLAIN", raising=False)
    assert env_flag("KVPLAN_PLAIN") is False
