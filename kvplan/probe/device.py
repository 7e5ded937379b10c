"""A device profile of the machine kvplan runs on: installed RAM, measured memory and flash speed.

Method (each figure's ``sources`` entry repeats it with the date and the numbers):

- **ram**: installed memory as the OS reports it — Linux ``sysconf(_SC_PHYS_PAGES) × _SC_PAGE_SIZE``
  (= ``MemTotal`` of /proc/meminfo: installed RAM less what firmware and the kernel image keep, so a
  little below the DIMMs' size), macOS ``sysctl hw.memsize``, Windows ``GlobalMemoryStatusEx``.
- **os_reserve**: a rule per OS (:func:`os_reserve_rule`), in line with docs/profiles.md —
  Linux max(1 GiB, 10 % of RAM): the 1 GiB headless floor of the shipped Linux boards, and 10 % on
  bigger machines for the kernel's own memory (page tables, slab), a login session and page-cache
  headroom; macOS 1/3 of RAM below 64 GiB, 1/4 from 64 GiB (RAM − Metal's
  ``recommendedMaxWorkingSetSize``, the GPU working-set limit llama.cpp and MLX respect); Windows
  4 GiB (Windows 11's minimum RAM). What the OS and other programs hold right now is recorded in
  ``sources`` for comparison, not used: it changes from minute to minute.
- **memory_bandwidth**: a STREAM-style copy with numpy, one thread per CPU this process may run on
  (numpy releases the GIL in large copies, so the threads copy in parallel), on two arrays of at
  least 8 × the last-level cache (and ≥ 256 MiB) each, so the caches cannot hold them; bytes counted
  as STREAM counts a copy (read + write = 2 × array), best of N repetitions. A measured *lower bound*
  of the DRAM bandwidth: the write-allocate traffic a copy also causes is not counted, and numpy
  reaches less than hand-tuned code. Use the spec sheet's bus width × transfer rate if you know it.
- **flash_read** / **flash_write**: a fresh temporary file of 512 MiB (incompressible data) in the
  temp folder, written and ``fsync``-ed (flash_write), then read sequentially in 8 MiB blocks with
  ``O_DIRECT`` where the file system allows it, else after ``posix_fadvise(POSIX_FADV_DONTNEED)`` so
  the page cache does not serve the reads. A read faster than half the memory bandwidth, or a temp
  folder on tmpfs/ramfs, is page-cache or RAM speed, not flash: then the conservative default is
  used and ``sources`` says why. ``quick=True`` skips the disk and uses the default
  (:data:`DEFAULT_FLASH_READ`: a SATA-SSD-class 500 MB/s, a safe floor for any SSD or UFS 3.x).
"""

from __future__ import annotations

import datetime as _dt
import mmap
import os
import platform as _platform
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable

GiB = 2**30
MiB = 2**20
DEFAULT_FLASH_READ = 500e6  # bytes/s: SATA-SSD class; a safe floor for NVMe, UFS 3.x and most eMMC-free boards
FLASH_FILE_BYTES = 512 * MiB
FLASH_BLOCK = 8 * MiB
MIN_ARRAY_BYTES = 256 * MiB
BANDWIDTH_REPEATS = 5

Progress = Callable[[str], None] | None


def _say(progress: Progress, text: str) -> None:
    if progress is not None:
        progress(text)


def _today() -> str:
    return _dt.datetime.now().astimezone().replace(microsecond=0).isoformat()


def _platform_name() -> str:
    if sys.platform.startswith("linux"):
        return "linux"
    if sys.platform == "darwin":
        return "macos"
    if sys.platform in ("win32", "cygwin"):
        return "windows"
    return "linux"  # other Unixes: the closest rule


def _run(cmd: list[str], timeout: float = 5.0) -> str | None:
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
    plat = _platform_name()
    if plat == "macos":
        out = _run(["sysctl", "-n", "hw.memsize"])
        if out and out.isdigit():
            return int(out), "sysctl hw.memsize"
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
    reserve = max(GiB, ram // 10)
    return reserve, ("Linux: max(1 GiB, 10 % of RAM) — the 1 GiB headless floor of docs/profiles.md, and 10 % on "
                     "larger machines for kernel memory (page tables, slab), a session and page-cache headroom")


# --- CPU and GPU -----------------------------------------------------------------------------------

def cpu_model() -> tuple[str | None, str]:
    plat = _platform_name()
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
        out = _run(["sysctl", "-n", "machdep.cpu.brand_string"])
        if out:
            return out, "sysctl machdep.cpu.brand_string"
    name = _platform.processor() or _platform.machine()
    return (name or None), "platform.processor()"


def gpus() -> tuple[list[str], str | None]:
    """GPU names and memory from nvidia-smi when it is installed; ([], None) otherwise (never an error)."""
    out = _run(["nvidia-smi", "--query-gpu=name,memory.total", "--format=csv,noheader"])
    if out:
        return [line.strip() for line in out.splitlines() if line.strip()], "nvidia-smi --query-gpu=name,memory.total"
    if _platform_name() == "macos":
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
    if _platform_name() == "macos":
        for key in ("hw.l3cachesize", "hw.l2cachesize"):
            out = _run(["sysctl", "-n", key])
            if out and out.isdigit() and int(out) > 0:
                return int(out), f"sysctl {key}"
    return 32 * MiB, "not reported; 32 MiB assumed"


# --- memory bandwidth ---------------------------------------------------------------------------------

def measure_memory_bandwidth(repeats: int = BANDWIDTH_REPEATS, array_bytes: int | None = None) -> tuple[float, str]:
    """(bytes/s, how): multi-threaded numpy copy, best of ``repeats`` (module docstring)."""
    import numpy as np

    llc, llc_source = last_level_cache()
    threads = cpu_count()
    if array_bytes is None:
        array_bytes = max(MIN_ARRAY_BYTES, 8 * llc)
        avail = available_ram()
        if avail:
            array_bytes = min(array_bytes, max(64 * MiB, avail // 8))  # two arrays: at most 1/4 of what is free
        array_bytes = min(array_bytes, 2 * GiB)
    n = array_bytes // 8 // threads * threads
    src = np.ones(n, dtype=np.float64)  # written once: every page is really there before timing
    dst = np.zeros(n, dtype=np.float64)
    chunks = [(i * n // threads, (i + 1) * n // threads) for i in range(threads)]
    barrier = threading.Barrier(threads, timeout=120)
    rounds = repeats + 1  # the first round is a warm-up
    stamps = [[(0.0, 0.0)] * rounds for _ in range(threads)]  # per thread and round: (start, end)
    errors: list[BaseException] = []

    def worker(k: int, lo: int, hi: int):
        try:
            for r in range(rounds):
                barrier.wait()
                start = time.perf_counter()  # each thread times itself: no GIL hand-off inside the interval
                np.copyto(dst[lo:hi], src[lo:hi])
                stamps[k][r] = (start, time.perf_counter())
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
            barrier.abort()

    pool = [threading.Thread(target=worker, args=(k, *c), daemon=True) for k, c in enumerate(chunks)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    if errors:
        raise RuntimeError(f"memory bandwidth probe failed: {errors[0]}")
    # a round lasts from the first thread's start to the last thread's end
    times = [max(stamps[k][r][1] for k in range(threads)) - min(stamps[k][r][0] for k in range(threads))
             for r in range(rounds)]
    best = min(times[1:]) if len(times) > 1 else times[0]
    moved = 2 * n * 8  # STREAM's count for a copy: read the source, write the destination
    rate = moved / best
    how = (f"measured: numpy copy of two {n * 8 / MiB:,.0f} MiB float64 arrays (≥ 8 × the {llc / MiB:g} MiB "
           f"last-level cache from {llc_source}) by {threads} thread(s), one per CPU this process may use; "
           f"bytes counted as STREAM counts a copy (2 × {n * 8:,}), best of {repeats} after a warm-up: "
           f"{rate / 1e9:.2f} GB/s — a lower bound of the DRAM bandwidth (write-allocate traffic not counted)")
    return rate, how


# --- flash ---------------------------------------------------------------------------------------------

def _fs_type(path: str) -> str | None:
    """The file system type of the mount holding ``path`` (Linux /proc/mounts), or None."""
    try:
        real = os.path.realpath(path)
        best, kind = "", None
        with open("/proc/mounts", encoding="utf-8") as handle:
            for line in handle:
                parts = line.split()
                if len(parts) >= 3:
                    mount = parts[1].replace("\\040", " ")
                    if (real == mount or real.startswith(mount.rstrip("/") + "/")) and len(mount) >= len(best):
                        best, kind = mount, parts[2]
        return kind
    except OSError:
        return None


def measure_flash(folder: str | None = None, size: int = FLASH_FILE_BYTES,
                  progress: Progress = None) -> tuple[float | None, float | None, str, str]:
    """(read bytes/s or None, write bytes/s or None, how read, how written) of a fresh file in ``folder``."""
    folder = folder or tempfile.gettempdir()
    fstype = _fs_type(folder)
    if fstype in ("tmpfs", "ramfs"):
        why = f"the temp folder {folder} is on {fstype} (RAM), not flash"
        return None, None, why, why
    free = shutil.disk_usage(folder).free
    if free < size * 2:
        why = f"{free / MiB:,.0f} MiB free in {folder}, fewer than the 2 × {size / MiB:,.0f} MiB a fair test needs"
        return None, None, why, why
    block = mmap.mmap(-1, FLASH_BLOCK)  # page-aligned, as O_DIRECT needs
    block.write(os.urandom(FLASH_BLOCK))  # incompressible: a compressing file system cannot shortcut it
    fd, path = tempfile.mkstemp(prefix="kvplan-probe-", suffix=".bin", dir=folder)
    try:
        _say(progress, f"writing a {size / MiB:,.0f} MiB test file in {folder}")
        start = time.perf_counter()
        written = 0
        while written < size:
            written += os.write(fd, block)
        os.fsync(fd)
        write_s = time.perf_counter() - start
        write_rate = written / write_s
        os.close(fd)
        fd = -1
        _say(progress, "reading it back past the page cache")
        method = None
        direct = getattr(os, "O_DIRECT", 0)
        rfd = -1
        if direct:
            try:
                rfd = os.open(path, os.O_RDONLY | direct)
                method = "O_DIRECT"
            except OSError:
                rfd = -1
        if rfd < 0:
            rfd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
            if hasattr(os, "posix_fadvise"):
                os.posix_fadvise(rfd, 0, 0, os.POSIX_FADV_DONTNEED)
                method = "posix_fadvise(POSIX_FADV_DONTNEED) after fsync"
            else:
                method = "plain reads (no O_DIRECT or fadvise here: the page cache may serve part of it)"
        try:
            start = time.perf_counter()
            got = 0
            while True:
                try:
                    n = os.preadv(rfd, [block], got) if hasattr(os, "preadv") else len(os.read(rfd, FLASH_BLOCK))
                except OSError:
                    if method != "O_DIRECT":
                        raise
                    # the file system refused direct reads of this block: start again with fadvise
                    os.close(rfd)
                    rfd = os.open(path, os.O_RDONLY)
                    os.posix_fadvise(rfd, 0, 0, os.POSIX_FADV_DONTNEED)
                    method = "posix_fadvise(POSIX_FADV_DONTNEED) after fsync (O_DIRECT refused)"
                    start, got = time.perf_counter(), 0
                    continue
                if n <= 0:
                    break
                got += n
            read_s = time.perf_counter() - start
        finally:
            os.close(rfd)
        read_rate = got / read_s
        when = _today()
        how_read = (f"measured {when}: sequential read of a fresh {got / MiB:,.0f} MiB file in {folder} "
                    f"({fstype or 'file system unknown'}) in {FLASH_BLOCK // MiB} MiB blocks with {method}: "
                    f"{got:,} B / {read_s:.3f} s = {read_rate / 1e6:,.0f} MB/s")
        how_write = (f"measured {when}: sequential write of {written:,} B of random data to {folder} plus fsync: "
                     f"{write_s:.3f} s = {write_rate / 1e6:,.0f} MB/s")
        return read_rate, write_rate, how_read, how_write
    finally:
        if fd >= 0:
            os.close(fd)
        try:
            os.unlink(path)
        except OSError:
            pass
        block.close()


# --- the profile ---------------------------------------------------------------------------------------

def _size_text(n: int) -> str:
    return f"{n / GiB:.2f} GiB"


def _rate_text(r: float) -> str:
    return f"{r / 1e9:.2f} GB/s" if r >= 1e9 else f"{r / 1e6:.0f} MB/s"


def _slug(text: str) -> str:
    text = re.sub(r"[^a-z0-9._-]+", "-", text.lower()).strip("-._")
    return text


def probe_device(quick: bool = False, progress: Progress = None, *, name: str | None = None,
                 flash_dir: str | None = None) -> dict:
    """A kvplan device-profile mapping of this machine (module docstring): a few seconds, ~1 s with ``quick``."""
    when = _today()
    plat = _platform_name()
    _say(progress, "reading RAM, CPU and GPU")
    ram, ram_how = installed_ram()
    reserve, reserve_rule = os_reserve_rule(plat, ram)
    if reserve >= ram:
        reserve = ram // 2
        reserve_rule += f"; capped at half of RAM ({ram:,} B is small)"
    avail = available_ram()
    in_use = f"; in use by the OS and other programs at probe time: {(ram - avail) / GiB:.2f} GiB" if avail else ""
    cpu, cpu_how = cpu_model()
    gpu_list, gpu_how = gpus()
    threads = cpu_count()

    _say(progress, f"measuring memory bandwidth ({threads} thread(s))")
    bandwidth, bw_how = measure_memory_bandwidth()
    flash_read = flash_write = None
    if quick:
        flash_how = (f"not measured (quick probe): conservative default {_rate_text(DEFAULT_FLASH_READ)}, "
                     "SATA-SSD class — a floor for NVMe SSDs and UFS 3.x; run the full probe to measure")
    else:
        flash_read, flash_write, flash_how, write_how = measure_flash(flash_dir, progress=progress)
        if flash_read is not None and flash_read > bandwidth / 2:
            flash_how = (f"{flash_how} — faster than half the measured memory bandwidth "
                         f"({_rate_text(bandwidth)}): page-cache speed, not flash, so not used; conservative "
                         f"default {_rate_text(DEFAULT_FLASH_READ)}")
            flash_read = flash_write = None
        elif flash_read is None:
            flash_how = (f"not measured ({flash_how}): conservative default {_rate_text(DEFAULT_FLASH_READ)}, "
                         "SATA-SSD class")
    host = _slug(socket.gethostname().split(".")[0])
    profile_name = name or (f"this-{host}" if host else "this")
    parts = [cpu or _platform.machine() or "unknown CPU", f"{threads} CPU(s)", f"{ram / GiB:.1f} GiB RAM"]
    if gpu_list:
        parts.append("GPU " + "; ".join(gpu_list))
    sources = {
        "ram": f"read {when}: {ram_how} = {ram:,} B",
        "os_reserve": f"rule, not measured: {reserve_rule} = {reserve:,} B{in_use}",
        "memory_bandwidth": f"{bw_how}; probed {when}",
        "flash_read": flash_how if flash_read is not None else flash_how + f"; {when}",
        "probe": (f"kvplan probe on {socket.gethostname()} ({_platform.platform()}, Python "
                  f"{_platform.python_version()}) {when}{' (quick: disk not measured)' if quick else ''}"),
    }
    if cpu:
        sources["cpu"] = f"{cpu} ({cpu_how})"
    if gpu_list:
        sources["gpu"] = f"{'; '.join(gpu_list)} ({gpu_how})"
    profile = {
        "name": profile_name,
        "description": f"this machine, probed {when[:10]}: " + ", ".join(parts),
        "platform": plat,
        "ram": _size_text(ram),
        "os_reserve": _size_text(reserve),
        "memory_bandwidth": _rate_text(bandwidth),
        "flash_read": _rate_text(flash_read if flash_read is not None else DEFAULT_FLASH_READ),
    }
    if flash_write is not None:
        profile["flash_write"] = _rate_text(flash_write)
        sources["flash_write"] = write_how
    profile["sources"] = sources
    return profile
