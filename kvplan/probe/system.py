"""What the OS says about this machine: RAM, CPU, GPU, caches — read, never measured.

Every reader returns its answer with how it was read, for the profile's ``sources``; a missing
tool or file is never an error (the reader falls back, or says "not reported").
"""

from __future__ import annotations

import datetime as _dt
import os
import platform as _platform
import re
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable

GiB = 2**30
MiB = 2**20

Progress = Callable[[str], None] | None


def say(progress: Progress, text: str) -> None:
    if progress is not None:
        progress(text)


def today() -> str:
    return _dt.datetime.now().astimezone().replace(microsecond=0).isoformat()


def platform_name() -> str:
    if sys.platform.startswith("linux"):
        return "linux"
    if sys.platform == "darwin":
        return "macos"
    if sys.platform in ("win32", "cygwin"):
        return "windows"
    return "linux"  # other Unixes: the closest rule


def run(cmd: list[str], timeout: float = 5.0) -> str | None:
    """A command's stdout, or None when it is absent or fails (a probe never fails for a missing tool)."""
    if shutil.which(cmd[0]) is None:
        return None
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


# --- RAM ---------------------------------------------------------------------------------------------

def installed_ram() -> tuple[int, str]:
    """(bytes, how it was read)."""
    plat = platform_name()
    if plat == "macos":
        from kvplan.probe.limits import parse_sysctl_int

        memsize = parse_sysctl_int(run(["sysctl", "-n", "hw.memsize"]), "hw.memsize")
        if memsize:
            return memsize, "sysctl hw.memsize"
    if plat == "windows":
        import ctypes

        class _Status(ctypes.Structure):
            _fields_ = [("dwLength", ctypes.c_ulong), ("dwMemoryLoad", ctypes.c_ulong),
                        ("ullTotalPhys", ctypes.c_ulonglong), ("ullAvailPhys", ctypes.c_ulonglong),
                        ("ullTotalPageFile", ctypes.c_ulonglong), ("ullAvailPageFile", ctypes.c_ulonglong),
                        ("ullTotalVirtual", ctypes.c_ulonglong), ("ullAvailVirtual", ctypes.c_ulonglong),
                        ("ullAvailExtendedVirtual", ctypes.c_ulonglong)]

        status = _Status()
        status.dwLength = ctypes.sizeof(_Status)
        ctypes.windll.kernel32.GlobalMemoryStatusEx(ctypes.byref(status))  # type: ignore[attr-defined]
        return int(status.ullTotalPhys), "GlobalMemoryStatusEx ullTotalPhys"
    pages, size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
    return int(pages) * int(size), f"sysconf: SC_PHYS_PAGES {pages:,} × SC_PAGE_SIZE {size} (= /proc/meminfo MemTotal)"


def available_ram() -> int | None:
    """Memory available to a new program now (Linux MemAvailable), or None."""
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


# --- CPU and GPU -----------------------------------------------------------------------------------

def cpu_model() -> tuple[str | None, str]:
    plat = platform_name()
    if plat == "linux":
        try:
            with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as handle:
                for line in handle:
                    key, _, value = line.partition(":")
                    if key.strip() in ("model name", "Hardware", "Model", "cpu model") and value.strip():
                        return value.strip(), f"/proc/cpuinfo {key.strip()!r}"
        except OSError:
            pass
    if plat == "macos":
        out = run(["sysctl", "-n", "machdep.cpu.brand_string"])
        if out:
            return out, "sysctl machdep.cpu.brand_string"
    name = _platform.processor() or _platform.machine()
    return (name or None), "platform.processor()"


def gpus() -> tuple[list[str], str | None]:
    """GPU names and memory from nvidia-smi when it is installed; ([], None) otherwise (never an error)."""
    out = run(["nvidia-smi", "--query-gpu=name,memory.total", "--format=csv,noheader"])
    if out:
        return [line.strip() for line in out.splitlines() if line.strip()], "nvidia-smi --query-gpu=name,memory.total"
    if platform_name() == "macos":
        cpu, _ = cpu_model()
        if cpu and cpu.startswith("Apple"):
            return [f"{cpu} integrated GPU (unified memory)"], "sysctl machdep.cpu.brand_string (Apple silicon)"
    return [], None


def cpu_count() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def last_level_cache() -> tuple[int, str]:
    """(bytes, source) of the largest CPU cache; 32 MiB assumed when nothing reports it."""
    best = 0
    root = "/sys/devices/system/cpu/cpu0/cache"
    try:
        for entry in os.listdir(root):
            try:
                with open(os.path.join(root, entry, "size"), encoding="ascii") as handle:
                    text = handle.read().strip()
            except OSError:
                continue
            m = re.fullmatch(r"(\d+)([KMG]?)", text)
            if m:
                best = max(best, int(m.group(1)) * {"": 1, "K": 1024, "M": MiB, "G": GiB}[m.group(2)])
    except OSError:
        pass
    if best:
        return best, f"{root}/index*/size"
    if platform_name() == "macos":
        for key in ("hw.l3cachesize", "hw.l2cachesize"):
            out = run(["sysctl", "-n", key])
            if out and out.isdigit() and int(out) > 0:
                return int(out), f"sysctl {key}"
    return 32 * MiB, "not reported; 32 MiB assumed"




def machine_id() -> str | None:
    """The OS's stable machine identifier (systemd/D-Bus ``machine-id``), or None where there is none.

    It tells two machines apart that share a host name and a home folder (a cluster, a cloned VM
    image aside), so a cached probe is never reused on the wrong one.
    """
    for path in ("/etc/machine-id", "/var/lib/dbus/machine-id"):
        try:
            with open(path, encoding="ascii") as handle:
                value = handle.read().strip()
        except (OSError, UnicodeDecodeError):
            continue
        if value:
            return value
    return None


def host_name() -> str:
    return socket.gethostname() or _platform.node() or "unknown"


def os_description() -> str:
    return f"{_platform.platform()}, Python {_platform.python_version()}"
