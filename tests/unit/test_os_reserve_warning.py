"""An OS reserve under 100 MB on a device of more than 1 GB of RAM is almost surely MB typed for GB: a warning."""

from __future__ import annotations

import json

import pytest

from kvplan.plan import Knobs, build_scenario, evaluate
from kvplan.plan.warnings import implausible_device, implausible_inputs
from kvplan.profiles.catalog import Catalog
from kvplan.render.warnings import word


@pytest.fixture(scope="module")
def catalog():
    return Catalog()


def _warnings(catalog, reserve_bytes, ram_bytes=None):
    device = catalog.device("pixel8").profile  # 8,000,000,000 B of RAM, a 2,000,000,000 B reserve of its own
    if ram_bytes is not None:
        device = device.model_copy(update={"ram": ram_bytes})
    s = build_scenario(device, catalog.model("llama-3.2-1b").profile, 1024, Knobs(os_reserve_bytes=reserve_bytes))
    return [word(w) for w in implausible_inputs(s, 1024) if "under 100 MB" in word(w)]


def test_a_2_mb_reserve_on_an_8_gb_phone_warns(catalog):
    # --os-reserve 2MB: 2,000,000 B < 100,000,000 B, on 8,000,000,000 B > 1,000,000,000 B of RAM
    assert _warnings(catalog, 2_000_000) == [
        "an OS reserve of 2,000,000 B is under 100 MB on pixel8's 8.00 GB of RAM, less than any OS keeps for "
        "itself — is the unit right?"]  # a reserve typed as a flag or gate key: not the profile's os_reserve field
    assert _warnings(catalog, 0) and _warnings(catalog, 99_999_999)


def test_the_limits_are_exclusive(catalog):
    assert _warnings(catalog, 100_000_000) == []  # 100 MB itself is plausible
    assert _warnings(catalog, 0, ram_bytes=1_000_000_000) == []  # a 1 GB board: no more than 1 GB, no warning
    assert _warnings(catalog, 0, ram_bytes=1_000_000_001)


def test_the_reserve_in_force_is_judged_not_the_profiles(catalog):
    device = catalog.device("pixel8").profile
    assert implausible_device(device) == []  # its own 2 GB reserve
    assert implausible_device(device, 2_000_000) and implausible_device(device.model_copy(update={"os_reserve": 0}))
    # --os-reserve 3 GB over a profile's implausible 0: the figures use 3 GB, so no warning
    zero = device.model_copy(update={"os_reserve": 0})
    s = build_scenario(zero, catalog.model("llama-3.2-1b").profile, 1024, Knobs(os_reserve_bytes=3 * 10**9))
    assert not [w for w in implausible_inputs(s, 1024) if w.kind in ("device_os_reserve", "os_reserve_asked")]


def test_the_warning_reaches_the_evaluation(catalog):
    s = build_scenario(catalog.device("pixel8").profile, catalog.model("7b").profile, 4096,
                       Knobs(os_reserve_bytes=2_000_000))
    ev = evaluate(s)
    # the budget is what was typed all the same: 8,000,000,000 − 2,000,000 = 7,998,000,000 B
    assert ev.budget_bytes == 7_998_000_000
    assert any(word(w).startswith("an OS reserve of 2,000,000 B is under 100 MB") for w in ev.warnings)


def test_check_prints_it_and_puts_it_in_json(run):
    table = run("check", "-d", "pixel8", "-m", "7b", "-c", "4k", "--os-reserve", "2MB")
    assert table.exit_code == 0 and "warning: an OS reserve of 2,000,000 B is under 100 MB" in table.stdout
    doc = json.loads(run("check", "-d", "pixel8", "-m", "7b", "-c", "4k", "--os-reserve", "2MB", "-f", "json").stdout)
    assert any("OS reserve of 2,000,000 B is under 100 MB" in w for w in doc["warnings"])
    ok = run("check", "-d", "pixel8", "-m", "7b", "-c", "4k", "--os-reserve", "100MB")
    assert "under 100 MB" not in ok.stdout
