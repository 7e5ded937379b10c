"""Platform memory limits: the per-app cap on the budget (iOS with and without the increased-memory-limit
entitlement, a cgroup limit), Metal's working set rule and what llama.cpp puts in Metal buffers. Figures derived
by hand in the comments."""

from __future__ import annotations

import numpy as np
import pytest

from kvplan import engine
from kvplan.engine.apple_gpu import default_working_set_bytes, metal_bytes, wired_limit_bytes
from kvplan.errors import FieldError

GiB, MiB = 2**30, 2**20


def test_budget_is_capped_by_the_app_limit_on_a_scalar_and_an_array():
    assert engine.budget_bytes(8_000_000_000, 2_000_000_000) == 6_000_000_000
    # min(8e9 − 2e9, 3e9) = 3e9; a limit above RAM − reserve changes nothing
    assert engine.budget_bytes(8_000_000_000, 2_000_000_000, 3_000_000_000) == 3_000_000_000
    assert engine.budget_bytes(8_000_000_000, 2_000_000_000, 7_000_000_000) == 6_000_000_000
    got = engine.budget_bytes(np.array([8e9, 16e9]), 2e9, 7e9)
    assert got.tolist() == [6e9, 7e9]


@pytest.mark.parametrize("ram_gib, logged_mib", [
    (8, 5461.34),     # li-plus/chatglm.cpp#76: (3351.95 / 5461.34)
    (16, 10922.67),   # ise-uiuc/magicoder#19: 10922.67 MiB
    (32, 21845.34),   # ollama/ollama#434: 21845.34 (MiB, labelled MB)
    (64, 49152.00),   # ggml-org/llama.cpp#1870: 49152.00 MiB
    (96, 73728.00),   # ggml-org/llama.cpp#3213: 73728,00 (MiB, labelled MB)
])
def test_the_working_set_rule_gives_the_logged_figures_to_the_logs_rounding(ram_gib, logged_mib):
    # 2/3 of RAM below 64 GiB, 3/4 from it; the logs print MiB to 0.01 (the 8 GB and 32 GB ones sit 0.01 above
    # 2/3: 8 GiB · 2/3 = 5461.33 MiB, 32 GiB · 2/3 = 21845.33 MiB)
    got = default_working_set_bytes(ram_gib * GiB) / MiB
    assert abs(got - logged_mib) <= 0.011


def test_the_working_set_rule_over_an_array_and_at_its_step():
    rams = np.array([16 * GiB, 64 * GiB - 3, 64 * GiB])
    # (64 GiB − 3) · 2 // 3 = 45,812,984,488; 64 GiB · 3 // 4 = 51,539,607,552
    assert default_working_set_bytes(rams).tolist() == [11_453_246_122, 45_812_984_488, 51_539_607_552]


def test_wired_limit_is_mib():
    # iogpu.wired_limit_mb = 114688 → 112 GiB (antirez/ds4#893 logged 112.00 GiB)
    assert wired_limit_bytes(114_688) == 112 * GiB
    assert wired_limit_bytes(0) == 0


def test_metal_bytes_leave_the_output_buffer_out():
    # 1,606,374,912 weights + 469,762,048 KV + 79,704,096 compute = 2,155,841,056
    assert metal_bytes(1_606_374_912, 469_762_048, 79_704_096) == 2_155_841_056


def _scenario(device_name: str, **knobs):
    from kvplan.plan import Knobs, build_scenario
    from kvplan.profiles.catalog import Catalog

    catalog = Catalog()
    return build_scenario(catalog.device(device_name).profile, catalog.model("qwen3-0.6b").profile, 4096,
                          Knobs(**knobs))


def test_iphone_budget_is_the_increased_limit_by_default_and_the_standard_one_when_asked():
    s = _scenario("iphone-15-pro")
    # min(8e9 − 2e9, 6e9) = 6e9: the entitlement's limit equals RAM − reserve
    assert (s.app_limit_field_in_force, s.app_limit_in_force_bytes, s.budget_bytes) == (
        "app_memory_limit_increased", 6_000_000_000, 6_000_000_000)
    s = _scenario("iphone-15-pro", app_limit="standard")
    assert (s.app_limit_field_in_force, s.budget_bytes) == ("app_memory_limit", 3_000_000_000)
    assert _scenario("iphone-16-pro", app_limit="increased").budget_bytes == 6_000_000_000


def test_a_device_without_a_per_app_limit_is_unaffected():
    for choice in (None, "standard", "increased"):
        s = _scenario("pixel8", app_limit=choice)
        assert (s.app_limit_in_force_bytes, s.budget_bytes) == (None, 6_000_000_000)


def test_a_device_with_one_limit_uses_it_whichever_is_asked(tmp_path):
    from kvplan.plan import Knobs, build_scenario
    from kvplan.profiles.catalog import Catalog

    path = tmp_path / "box.yaml"
    path.write_text("name: box\nplatform: linux\nram: 16 GiB\nos_reserve: 1.6 GiB\nmemory_bandwidth: 50 GB/s\n"
                    "flash_read: 1 GB/s\napp_memory_limit: 4 GiB\n", encoding="utf-8")
    catalog = Catalog()
    device, model = catalog.device(str(path)).profile, catalog.model("qwen3-0.6b").profile
    for choice in (None, "standard", "increased"):
        s = build_scenario(device, model, 4096, Knobs(app_limit=choice))
        assert s.budget_bytes == 4 * GiB  # min(16 − 1.6 GiB, 4 GiB)


def test_an_unknown_choice_is_a_field_error():
    with pytest.raises(FieldError, match="app_limit.*standard, increased"):
        _scenario("iphone-15-pro", app_limit="big")


def test_calibrate_writes_the_limit_fields_of_a_probed_base_with_their_unit():
    # a probe held as a record in base units ('--base this'): a bare number would be refused when re-read
    from kvplan.calibrate.profile import ORDER, with_unit

    for field in ("gpu_working_set", "app_memory_limit", "app_memory_limit_increased"):
        assert with_unit(field, 5_726_630_052) == "5726630052 B" and field in ORDER
