"""A device profile of the machine kvplan runs on: RAM read, memory, compute and disk measured.

Method (each figure's ``sources`` entry repeats it with the date and the numbers):

- **ram**: installed memory as the OS reports it — Linux ``sysconf(_SC_PHYS_PAGES) × _SC_PAGE_SIZE``
  (= ``MemTotal`` of /proc/meminfo: installed RAM less what firmware and the kernel image keep, so a
  little below the DIMMs' size), macOS ``sysctl hw.memsize``, Windows ``GlobalMemoryStatusEx``
  (:mod:`kvplan.probe.system`).
- **os_reserve**: a rule per OS (:func:`os_reserve_rule`), in line with docs/profiles.md —
  Linux max(1 GiB, 10 % of RAM): the 1 GiB headless floor of the shipped Linux boards, and 10 % on
  bigger machines for the kernel's own memory (page tables, slab), a login session and page-cache
  headroom; macOS 1/3 of RAM below 64 GiB, 1/4 from 64 GiB (RAM − Metal's
  ``recommendedMaxWorkingSetSize``, the GPU working-set limit llama.cpp and MLX respect); Windows
  4 GiB (Windows 11's minimum RAM). What the OS and other programs hold right now is recorded in
  ``sources`` for comparison, not used: it changes from minute to minute.
- **gpu_working_set** (macOS, Apple silicon) and **app_memory_limit** (Linux: a cgroup limit below RAM − os_reserve):
  read where the platform exposes them (:mod:`kvplan.probe.limits`); on Android (``getprop`` answers) the
  low-memory killer's ``ro.lmk.*`` properties go into ``sources``.
- **memory_bandwidth**: STREAM's copy and triad with numpy threads on arrays far larger than the
  caches (:mod:`kvplan.probe.memory`); the larger rate — both are lower bounds — is the profile's.
- **compute** / **compute_efficiency**: the float32 GEMM rate of numpy's BLAS on this CPU
  (:mod:`kvplan.probe.compute`), and efficiency 1.0 — see :data:`COMPUTE_EFFICIENCY_RULE`.
- **flash_read** / **flash_write**: a fresh 512 MiB file in the temp folder, written and read back
  past the page cache (:mod:`kvplan.probe.flash`). A read faster than half the memory bandwidth is
  page-cache or RAM speed, not flash: then the conservative default is used and ``sources`` says
  why. ``quick=True`` skips the disk and uses the default (:data:`DEFAULT_FLASH_READ`: a
  SATA-SSD-class 500 MB/s, a safe floor for any SSD or UFS 3.x).
"""

from __future__ import annotations

import platform as _platform
import re

from kvplan.probe.system import (
    GiB,
    Progress,
    available_ram,
    cpu_count,
    cpu_model,
    gpus,
    host_name,
    installed_ram,
    os_description,
    platform_name,
    say,
    today,
)

ANDROID_RESERVE = 2_000_000_000  # bytes: docs/profiles.md, "os_reserve: per-platform defaults"
DEFAULT_FLASH_READ = 500e6  # bytes/s: SATA-SSD class; a safe floor for NVMe, UFS 3.x and most eMMC-free boards
COMPUTE_EFFICIENCY = 1.0
# Why 1.0: kvplan's compute_efficiency is "the share of compute prefill sustains", 1.0 meaning compute is already
# a sustained rate (the kvplan calibrate convention when no peak is given). The probe's compute is such a rate —
# measured, not a datasheet peak — so no discount is invented; the figure is the CPU's best case instead.
COMPUTE_EFFICIENCY_RULE = (
    "rule, not measured: 1.0 because compute is itself a measured sustained rate (dense float32 GEMM), not a "
    "datasheet peak. It is the best case of prefill on this CPU: a runtime's prefill (quantized weights, "
    "attention, 512-token batches) reaches it or less, so prefill times from this profile are lower bounds; a "
    "GPU runtime is not covered. Fit compute and compute_efficiency from llama-bench pp rows with 'kvplan "
    "calibrate' for a runtime's real figure")


def os_reserve_rule(platform: str, ram: int) -> tuple[int, str]:
    """(bytes, the rule in words) — the per-OS reserve documented in the module docstring."""
    if platform == "macos":
        if ram < 64 * GiB:
            return ram // 3, ("macOS: 1/3 of RAM — RAM − Metal recommendedMaxWorkingSetSize (about 2/3 of RAM "
                              "below 64 GiB), the GPU working-set limit llama.cpp and MLX respect; docs/profiles.md")
        return ram // 4, ("macOS: 1/4 of RAM — RAM − Metal recommendedMaxWorkingSetSize (about 3/4 of RAM from "
                          "64 GiB); docs/profiles.md")
    if platform == "windows":
        return 4 * GiB, "Windows: fixed 4 GiB, Windows 11's minimum RAM as OS plus background apps; docs/profiles.md"
    if platform == "android":
        return ANDROID_RESERVE, ("Android: fixed 2 GB, the planning reserve of every Android profile for the system "
                                 "and the cached apps the low-memory killer would kill first; docs/profiles.md")
    reserve = max(GiB, ram // 10)
    return reserve, ("Linux: max(1 GiB, 10 % of RAM) — the 1 GiB headless floor of docs/profiles.md, and 10 % on "
                     "larger machines for kernel memory (page tables, slab), a session and page-cache headroom")


# --- the profile ---------------------------------------------------------------------------------------

def _size_text(n: int) -> str:
    return f"{n} B"  # exact: the GiB figure a reader wants goes in the file's comment


def _rate_text(r: float) -> str:
    return f"{r / 1e9:.2f} GB/s" if r >= 1e9 else f"{r / 1e6:.0f} MB/s"


def _flops_text(r: float) -> str:
    return f"{r / 1e12:.3f} TFLOP/s" if r >= 1e12 else f"{r / 1e9:.1f} GFLOP/s"


def default_name() -> str:
    """``this-<hostname>`` (slugged), or ``this``."""
    host = re.sub(r"[^a-z0-9._-]+", "-", host_name().split(".")[0].lower()).strip("-._")
    return f"this-{host}" if host and host != "unknown" else "this"


def probe_device(quick: bool = False, progress: Progress = None, *, name: str | None = None,
                 flash_dir: str | None = None) -> dict:
    """A kvplan device-profile mapping of this machine (module docstring): a few seconds; ``quick`` skips the disk."""
    from kvplan.probe.compute import measure_compute
    from kvplan.probe.flash import measure_flash
    from kvplan.probe.memory import measure_memory_bandwidth

    from kvplan.probe.limits import android_lmk_properties, apple_gpu_working_set, cgroup_memory_limit

    when = today()
    plat = platform_name()
    say(progress, "reading RAM, CPU and GPU")
    ram, ram_how = installed_ram()
    lmk = android_lmk_properties() if plat == "linux" else None  # getprop answers: Android (adb shell, Termux)
    if lmk is not None:
        plat = "android"
    reserve, reserve_rule = os_reserve_rule(plat, ram)
    if reserve >= ram:
        reserve = ram // 2
        reserve_rule += f"; capped at half of RAM ({ram:,} B is small)"
    avail = available_ram()
    in_use = f"; in use by the OS and other programs at probe time: {(ram - avail) / GiB:.2f} GiB" if avail else ""
    cpu, cpu_how = cpu_model()
    gpu_list, gpu_how = gpus()
    threads = cpu_count()

    limits: dict[str, tuple[int, str]] = {}  # field → (bytes, how)
    if plat == "macos" and any(g.startswith("Apple") for g in gpu_list):
        limits["gpu_working_set"] = apple_gpu_working_set(ram)
    if plat in ("linux", "android"):
        limit, limit_how = cgroup_memory_limit()
        if limit is not None and limit < ram - reserve:
            limits["app_memory_limit"] = (limit, f"{limit_how}: a per-process limit below RAM − os_reserve, so "
                                                 "the budget is this limit (the OOM killer ends the process past it)")

    bandwidth = measure_memory_bandwidth(progress=progress)
    compute = measure_compute(progress=progress)
    flash_read = flash_write = None
    if quick:
        flash_how = (f"not measured (quick probe): conservative default {_rate_text(DEFAULT_FLASH_READ)}, "
                     "SATA-SSD class — a floor for NVMe SSDs and UFS 3.x; run the full probe to measure")
    else:
        flash_read, flash_write, flash_how, write_how = measure_flash(flash_dir, progress=progress)
        if flash_read is not None and flash_read > bandwidth.bytes_per_s / 2:
            flash_how = (f"{flash_how} — faster than half the measured memory bandwidth "
                         f"({_rate_text(bandwidth.bytes_per_s)}): page-cache speed, not flash, so not used; "
                         f"conservative default {_rate_text(DEFAULT_FLASH_READ)}")
            flash_read = flash_write = None
        elif flash_read is None:
            flash_how = (f"not measured ({flash_how}): conservative default {_rate_text(DEFAULT_FLASH_READ)}, "
                         "SATA-SSD class")
    parts = [cpu or _platform.machine() or "unknown CPU", f"{threads} CPU(s)", f"{ram / GiB:.1f} GiB RAM"]
    if gpu_list:
        parts.append("GPU " + "; ".join(gpu_list))
    gpu_note = (f"; the GPU ({'; '.join(gpu_list)}) is not measured: a runtime prefilling there is faster"
                if gpu_list else "")
    sources = {
        "ram": f"read {when}: {ram_how} = {ram:,} B",
        "os_reserve": f"rule, not measured: {reserve_rule} = {reserve:,} B{in_use}",
        "memory_bandwidth": f"{bandwidth.how()}; probed {when}",
        "compute": f"{compute.how()}; {compute.float16_how()}{gpu_note}; probed {when}",
        "compute_efficiency": COMPUTE_EFFICIENCY_RULE,
        "flash_read": flash_how if flash_read is not None else flash_how + f"; {when}",
        "probe": (f"kvplan probe on {host_name()} ({os_description()}) {when}"
                  f"{' (quick: disk not measured)' if quick else ''}"),
    }
    for field, (_, how) in limits.items():
        sources[field] = f"{how}; {when}"
    if lmk is not None:
        listed = ", ".join(f"{k}={v}" for k, v in lmk.items()) or "none set (lmkd's defaults apply)"
        sources["lmk"] = (f"read: getprop, the low-memory killer's properties: {listed}. lmkd sets no fixed per-app "
                          "cap, so no app_memory_limit (docs/concepts.md, 'Android: the low-memory killer'); "
                          f"{when}")
    if cpu:
        sources["cpu"] = f"{cpu} ({cpu_how})"
    if gpu_list:
        sources["gpu"] = f"{'; '.join(gpu_list)} ({gpu_how})"
    profile = {
        "name": name or default_name(),
        "description": f"this machine, probed {when[:10]}: " + ", ".join(parts),
        "platform": plat,
        "ram": _size_text(ram),
        "os_reserve": _size_text(reserve),
        "memory_bandwidth": _rate_text(bandwidth.bytes_per_s),
        "flash_read": _rate_text(flash_read if flash_read is not None else DEFAULT_FLASH_READ),
    }
    if flash_write is not None:
        profile["flash_write"] = _rate_text(flash_write)
        sources["flash_write"] = write_how
    for field, (value, _) in limits.items():
        profile[field] = _size_text(value)
    profile["compute"] = _flops_text(compute.float32_flop_per_s)
    profile["compute_efficiency"] = COMPUTE_EFFICIENCY
    profile["sources"] = sources
    return profile
