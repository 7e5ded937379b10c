"""Sequential speed of the disk holding the temporary folder, measured past the page cache.

A fresh file of :data:`FLASH_FILE_BYTES` of random (incompressible) data is written and
``fsync``-ed (the write rate), then read back in :data:`FLASH_BLOCK` blocks with ``O_DIRECT``
where the file system allows it, else after ``posix_fadvise(POSIX_FADV_DONTNEED)``, so the page
cache does not serve the reads. A temp folder on tmpfs/ramfs is RAM, not a disk: not measured.
"""

from __future__ import annotations

import mmap
import os
import shutil
import tempfile
import time

from kvplan.probe.system import MiB, Progress, say, today

FLASH_FILE_BYTES = 512 * MiB
FLASH_BLOCK = 8 * MiB


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
        say(progress, f"writing a {size / MiB:,.0f} MiB test file in {folder}")
        start = time.perf_counter()
        written = 0
        while written < size:
            written += os.write(fd, block)
        os.fsync(fd)
        write_s = time.perf_counter() - start
        write_rate = written / write_s
        os.close(fd)
        fd = -1
        say(progress, "reading it back past the page cache")
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
        when = today()
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


