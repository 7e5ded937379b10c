"""The memory limits a platform puts on one program, read where the platform exposes them — never measured.

- **macOS, Apple GPU** (:func:`apple_gpu_working_set`): ``sysctl iogpu.wired_limit_mb`` (MiB; 0 = macOS's own
  figure). Set, it *is* Metal's ``recommendedMaxWorkingSetSize`` (Metal then reports exactly that value:
  https://github.com/AlexsJones/llmfit/pull/754). Unset, the figure is Metal's own, which only Metal reports
  (no Python here reaches Metal), so the probe writes the rule the published logs follow
  (:func:`kvplan.engine.apple_gpu.default_working_set_bytes`) and says it is a rule.
- **Linux cgroups** (:func:`cgroup_memory_limit`): the memory limit of the cgroup this process runs in — v2
  ``memory.max`` of its group and every parent (the smallest), else v1 ``memory.limit_in_bytes`` of its memory
  group — a container's ``--memory``. Past it the kernel's OOM killer ends the process, so below the RAM it is the
  process's budget (``app_memory_limit``).
- **Android** (:func:`android_lmk_properties`): the low-memory killer's ``ro.lmk.*`` properties (and
  ``ro.config.low_ram``) from ``getprop``, where it answers (an adb shell, Termux). Recorded for reference: lmkd
  has no fixed per-app cap to read (docs/concepts.md, "Android: the low-memory killer").

Each reader takes the text a tool or file gave (``parse_*``) or the paths to read, so tests run them on fixture
files; a missing tool or file is never an error (None, and the ``how`` says why).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable

from kvplan.probe.system import run as _run

# cgroup v1 writes "no limit" as PAGE_COUNTER_MAX pages (9223372036854771712 with 4 KiB pages); anything this
# large is no limit on any machine
_V1_UNLIMITED_FROM = 2**62


# --- macOS: the GPU working set ------------------------------------------------------------------------

def parse_sysctl_int(text: str | None, key: str) -> int | None:
    """An integer sysctl value from ``sysctl -n KEY`` ("0") or ``sysctl KEY`` ("iogpu.wired_limit_mb: 0") output;
    None when the text does not hold one (the key is unknown on this macOS, or the tool failed)."""
    if not text:
        return None
    for line in text.splitlines():
        line = line.strip()
        if line.startswith(f"{key}:"):
            line = line[len(key) + 1:].strip()
        elif ":" in line:
            continue
        if re.fullmatch(r"\d+", line):
            return int(line)
    return None


def apple_gpu_working_set(ram_bytes: int, run: Callable[[list[str]], str | None] | None = None
                          ) -> tuple[int, str]:
    """(bytes, how) of Metal's recommended working set on this Mac: ``iogpu.wired_limit_mb`` when set, else the
    rule of the published logs (module docstring). ``run`` runs a command and returns its stdout or None."""
    from kvplan.engine.apple_gpu import default_working_set_bytes, wired_limit_bytes

    run = run or _run
    wired = parse_sysctl_int(run(["sysctl", "-n", "iogpu.wired_limit_mb"]), "iogpu.wired_limit_mb")
    if wired:
        return int(wired_limit_bytes(wired)), (
            f"read: sysctl iogpu.wired_limit_mb = {wired} MiB, which Metal reports as its "
            "recommendedMaxWorkingSetSize while it is set (it resets at reboot)")
    said = ("iogpu.wired_limit_mb = 0 (macOS's own figure)" if wired == 0 else
            "iogpu.wired_limit_mb not readable")
    figure = int(default_working_set_bytes(ram_bytes))
    share = "2/3" if figure == ram_bytes * 2 // 3 else "3/4"
    return figure, (f"rule, not measured: {said}; Metal's recommendedMaxWorkingSetSize is {share} of hw.memsize "
                    f"on the Macs whose logs were found (2/3 below 64 GiB, 3/4 from 64 GiB; "
                    "docs/device-sources-notes.md, 'Apple GPU working set') = "
                    f"{figure:,} B; llama.cpp prints the real figure at start-up (recommendedMaxWorkingSetSize)")


# --- Linux: the cgroup's memory limit ------------------------------------------------------------------

def parse_proc_cgroup(text: str) -> list[tuple[str, tuple[str, ...], str]]:
    """``/proc/self/cgroup`` as (hierarchy id, controllers, path) per line: ``0::/path`` is cgroup v2,
    ``4:memory:/path`` a v1 hierarchy."""
    out = []
    for line in text.splitlines():
        parts = line.strip().split(":", 2)
        if len(parts) == 3:
            out.append((parts[0], tuple(c for c in parts[1].split(",") if c), parts[2] or "/"))
    return out


def parse_memory_max(text: str | None) -> int | None:
    """cgroup v2 ``memory.max``: bytes, None for ``max`` (no limit) or an unreadable value."""
    value = (text or "").strip()
    return int(value) if value.isdigit() else None


def parse_limit_in_bytes(text: str | None) -> int | None:
    """cgroup v1 ``memory.limit_in_bytes``: bytes, None for the "unlimited" page-counter maximum or an unreadable
    value."""
    value = (text or "").strip()
    if not value.isdigit():
        return None
    n = int(value)
    return None if n >= _V1_UNLIMITED_FROM else n


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="ascii") as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError):
        return None


def _ancestors(path: str) -> list[str]:
    """``/a/b`` → ``["/a/b", "/a", "/"]``."""
    parts = [p for p in path.split("/") if p]
    return ["/" + "/".join(parts[:i]) if i else "/" for i in range(len(parts), -1, -1)]


def cgroup_memory_limit(root: str = "/sys/fs/cgroup",
                        proc_cgroup: str = "/proc/self/cgroup") -> tuple[int | None, str]:
    """(bytes or None, how) — the memory limit of the cgroup this process runs in (module docstring).

    The group's folder is looked for under ``root`` at the path ``proc_cgroup`` names and, failing that, at the
    mount's own root (inside a container the mount shows the container's group as its root)."""
    text = _read(proc_cgroup)
    if text is None:
        return None, f"no cgroup limit read ({proc_cgroup} not readable)"
    lines = parse_proc_cgroup(text)
    found: list[tuple[int, str]] = []
    for hierarchy, controllers, path in lines:
        if hierarchy == "0" and not controllers:  # cgroup v2 (unified): the mount is root or root/unified
            for mount in (root, os.path.join(root, "unified")):
                for group in dict.fromkeys([*_ancestors(path), "/"]):
                    file = os.path.join(mount, group.lstrip("/"), "memory.max")
                    limit = parse_memory_max(_read(file))
                    if limit is not None:
                        found.append((limit, f"cgroup v2 {file} = {limit:,} B"))
        elif "memory" in controllers:  # cgroup v1 memory hierarchy
            mount = os.path.join(root, "memory")
            for group in dict.fromkeys([path, "/"]):
                file = os.path.join(mount, group.lstrip("/"), "memory.limit_in_bytes")
                limit = parse_limit_in_bytes(_read(file))
                if limit is not None:
                    found.append((limit, f"cgroup v1 {file} = {limit:,} B"))
                    break
    if not found:
        return None, "no cgroup memory limit set (memory.max is 'max' / memory.limit_in_bytes unlimited)"
    return min(found)


# --- Android: the low-memory killer's properties -------------------------------------------------------

_GETPROP_LINE = re.compile(r"^\[(?P<key>[^\]]+)\]: \[(?P<value>[^\]]*)\]$")


def parse_getprop(text: str | None) -> dict[str, str]:
    """``getprop`` output (``[key]: [value]`` per line) as a mapping."""
    out: dict[str, str] = {}
    for line in (text or "").splitlines():
        m = _GETPROP_LINE.match(line.strip())
        if m:
            out[m["key"]] = m["value"]
    return out


def android_lmk_properties(run: Callable[[list[str]], str | None] | None = None) -> dict[str, str] | None:
    """The ``ro.lmk.*`` and ``ro.config.low_ram`` properties from ``getprop``, sorted; None where ``getprop`` does
    not answer (not Android). An Android whose vendor sets none gives {} (lmkd's defaults apply)."""
    text = (run or _run)(["getprop"])
    if text is None:
        return None
    props = parse_getprop(text)
    if not props:
        return None
    return {k: props[k] for k in sorted(props) if k.startswith("ro.lmk.") or k == "ro.config.low_ram"}
