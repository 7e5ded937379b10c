"""The platform-limit readers of kvplan/probe/limits.py on fixture files (tests/data/probe/README.md): macOS sysctl
output, Linux cgroup v1/v2 trees, Android getprop output. None of them needs the platform it reads."""

from __future__ import annotations

from pathlib import Path

from kvplan.probe.limits import (
    android_lmk_properties,
    apple_gpu_working_set,
    cgroup_memory_limit,
    parse_getprop,
    parse_limit_in_bytes,
    parse_memory_max,
    parse_proc_cgroup,
    parse_sysctl_int,
)

DATA = Path(__file__).resolve().parents[1] / "data" / "probe"
GiB, MiB = 2**30, 2**20


def _text(name: str) -> str:
    return (DATA / name).read_text(encoding="ascii")


def test_sysctl_both_output_forms():
    assert parse_sysctl_int(_text("sysctl_wired_limit_default.txt"), "iogpu.wired_limit_mb") == 0
    assert parse_sysctl_int(_text("sysctl_wired_limit_14000.txt"), "iogpu.wired_limit_mb") == 14_000
    assert parse_sysctl_int(_text("sysctl_hw_memsize_16gib.txt"), "hw.memsize") == 16 * GiB
    # an unknown key (older macOS) prints an error on stderr and nothing usable on stdout
    assert parse_sysctl_int(None, "iogpu.wired_limit_mb") is None
    assert parse_sysctl_int("hw.memsize: 17179869184\n", "iogpu.wired_limit_mb") is None


def _runner(outputs: dict[str, str | None]):
    return lambda cmd: outputs.get(" ".join(cmd))


def test_a_set_wired_limit_is_the_working_set():
    run = _runner({"sysctl -n iogpu.wired_limit_mb": _text("sysctl_wired_limit_14000.txt")})
    figure, how = apple_gpu_working_set(16 * GiB, run)
    assert figure == 14_000 * MiB == 14_680_064_000
    assert how.startswith("read: sysctl iogpu.wired_limit_mb = 14000 MiB")


def test_an_unset_wired_limit_gives_the_rule_and_says_so():
    run = _runner({"sysctl -n iogpu.wired_limit_mb": _text("sysctl_wired_limit_default.txt")})
    figure, how = apple_gpu_working_set(16 * GiB, run)
    assert figure == 16 * GiB * 2 // 3 == 11_453_246_122  # 10922.67 MiB, as 16 GB Macs log
    assert how.startswith("rule, not measured: iogpu.wired_limit_mb = 0") and "2/3 of hw.memsize" in how
    figure, how = apple_gpu_working_set(64 * GiB, _runner({}))
    assert figure == 48 * GiB and "not readable" in how and "3/4 of hw.memsize" in how  # 49152 MiB


def test_proc_self_cgroup_lines():
    assert parse_proc_cgroup(_text("cgroup_v1/proc_self_cgroup")) == [
        ("12", ("pids",), "/docker/abc"), ("4", ("memory",), "/docker/abc"), ("0", (), "/")]


def test_cgroup_values():
    assert parse_memory_max("max\n") is None
    assert parse_memory_max("4294967296\n") == 4 * GiB
    assert parse_limit_in_bytes("9223372036854771712\n") is None  # v1's "unlimited"
    assert parse_limit_in_bytes("2147483648\n") == 2 * GiB
    assert parse_limit_in_bytes("") is None


def _limit(tree: str):
    root = DATA / tree
    return cgroup_memory_limit(str(root / "sys" / "fs" / "cgroup"), str(root / "proc_self_cgroup"))


def test_cgroup_v2_takes_the_smallest_limit_of_the_group_and_its_parents():
    limit, how = _limit("cgroup_v2")
    # app.scope 4 GiB under user.slice 8 GiB → 4 GiB
    assert limit == 4 * GiB and how.startswith("cgroup v2 ") and "app.scope/memory.max" in how


def test_cgroup_v1_memory_group():
    limit, how = _limit("cgroup_v1")
    assert limit == 2 * GiB and "docker/abc/memory.limit_in_bytes" in how


def test_no_limit_and_no_file():
    assert _limit("cgroup_v2_none")[0] is None
    limit, how = cgroup_memory_limit(str(DATA / "absent"), str(DATA / "absent" / "proc_self_cgroup"))
    assert limit is None and "not readable" in how


def test_getprop_keeps_the_low_memory_killer_properties():
    props = parse_getprop(_text("getprop_lmkd_defaults.txt"))
    assert props["ro.product.model"] == "fixture" and len(props) == 8
    lmk = android_lmk_properties(_runner({"getprop": _text("getprop_lmkd_defaults.txt")}))
    assert lmk == {"ro.config.low_ram": "false", "ro.lmk.critical": "0", "ro.lmk.kill_heaviest_task": "false",
                   "ro.lmk.medium": "800", "ro.lmk.use_psi": "true"}
    assert android_lmk_properties(_runner({})) is None  # no getprop: not Android


def test_the_probe_writes_a_cgroup_limit_as_the_budget(monkeypatch, tmp_path):
    """probe_device with the slow measurements stubbed: a 2 GiB cgroup limit on a 16 GiB Linux box becomes
    app_memory_limit, and the profile's budget is that limit."""
    import kvplan.probe.limits as limits
    from kvplan.probe import compute, device, flash, memory

    monkeypatch.setattr(device, "installed_ram", lambda: (16 * GiB, "fixture"))
    monkeypatch.setattr(device, "platform_name", lambda: "linux")
    monkeypatch.setattr(device, "gpus", lambda: ([], None))
    monkeypatch.setattr(limits, "_run", lambda cmd: None)  # no getprop
    monkeypatch.setattr(limits, "cgroup_memory_limit", lambda: (2 * GiB, "cgroup v1 fixture = 2,147,483,648 B"))

    class _Bw:
        bytes_per_s = 20e9

        def how(self):
            return "stub"

    class _Compute:
        float32_flop_per_s = 1e11

        def how(self):
            return "stub"

        def float16_how(self):
            return "stub"

    monkeypatch.setattr(memory, "measure_memory_bandwidth", lambda progress=None: _Bw())
    monkeypatch.setattr(compute, "measure_compute", lambda progress=None: _Compute())
    monkeypatch.setattr(flash, "measure_flash", lambda *a, **k: (None, None, "stub", "stub"))
    profile = device.probe_device(quick=True, name="box")
    assert profile["app_memory_limit"] == f"{2 * GiB} B"
    assert "below RAM − os_reserve" in profile["sources"]["app_memory_limit"]
    # through the real validation: budget = min(16 GiB − 1.6 GiB, 2 GiB) = 2 GiB
    from kvplan.hub.catalog import _render_probe, _validated
    from kvplan.plan.profile_figures import device_figures

    d = _validated("device", _render_probe(profile, True), "probe")
    assert device_figures(d)["budget_bytes"] == 2 * GiB


def test_the_probe_on_android_records_the_lmk_properties_and_keeps_the_android_reserve(monkeypatch):
    import kvplan.probe.limits as limits
    from kvplan.probe import compute, device, flash, memory

    monkeypatch.setattr(device, "installed_ram", lambda: (8 * GiB, "fixture"))
    monkeypatch.setattr(device, "platform_name", lambda: "linux")  # Python on Android (Termux) says linux
    monkeypatch.setattr(device, "gpus", lambda: ([], None))
    monkeypatch.setattr(limits, "_run", _runner({"getprop": _text("getprop_lmkd_defaults.txt")}))
    monkeypatch.setattr(limits, "cgroup_memory_limit", lambda: (None, "none"))
    monkeypatch.setattr(memory, "measure_memory_bandwidth", lambda progress=None: type(
        "B", (), {"bytes_per_s": 30e9, "how": lambda self: "stub"})())
    monkeypatch.setattr(compute, "measure_compute", lambda progress=None: type(
        "C", (), {"float32_flop_per_s": 1e11, "how": lambda self: "stub", "float16_how": lambda self: "stub"})())
    monkeypatch.setattr(flash, "measure_flash", lambda *a, **k: (None, None, "stub", "stub"))
    profile = device.probe_device(quick=True, name="phone")
    assert profile["platform"] == "android" and profile["os_reserve"] == "2000000000 B"
    assert "app_memory_limit" not in profile
    assert "ro.lmk.medium=800" in profile["sources"]["lmk"] and "no fixed per-app cap" in profile["sources"]["lmk"]
