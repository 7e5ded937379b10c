"""Memory bandwidth of this machine, measured: STREAM's copy and triad kernels with numpy threads.

Both kernels run on arrays of at least 8 × the last-level cache (and ≥ 256 MiB each), so the
caches cannot hold them, split in equal slices over one thread per CPU this process may use
(numpy releases the GIL inside its loops, so the threads stream in parallel). Each thread times
its own slice; a round lasts from the first thread's start to the last thread's end; the best of
``repeats`` rounds after a warm-up round counts.

- **copy** ``a = b``: ``np.copyto`` of each slice; STREAM counts 2 × 8 bytes per element (read b,
  write a).
- **triad** ``a = b + s·c``: numpy has no fused multiply-add over arrays, so each slice goes by
  blocks small enough to stay in cache — ``a = s·c`` then ``a += b`` on the block in cache — and
  DRAM sees one read of b and c and one write of a: STREAM counts 3 × 8 bytes per element.

Bytes are counted as STREAM counts them: the write-allocate read a store also causes (where the
CPU does not stream the store) is not counted, so both rates are **lower bounds** of the bandwidth
the memory delivered. The profile takes the larger of the two — the tighter lower bound — and its
``sources`` entry gives both.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from kvplan.errors import ProbeError
from kvplan.probe.system import GiB, MiB, available_ram, cpu_count, last_level_cache

MIN_ARRAY_BYTES = 256 * MiB
MAX_ARRAY_BYTES = 1 * GiB
REPEATS = 5
_MIN_BLOCK, _MAX_BLOCK = 16_384, 262_144  # triad block [float64 elements]: 128 KiB … 2 MiB per array


@dataclass(frozen=True)
class Bandwidth:
    """Both kernels' best rates [bytes/s] and how they were measured."""

    copy_bytes_per_s: float
    triad_bytes_per_s: float
    threads: int
    array_bytes: int
    block_elements: int
    llc_bytes: int
    llc_source: str
    repeats: int

    @property
    def kernel(self) -> str:
        """The kernel the profile uses: the larger rate, i.e. the tighter of two lower bounds."""
        return "triad" if self.triad_bytes_per_s >= self.copy_bytes_per_s else "copy"

    @property
    def bytes_per_s(self) -> float:
        return max(self.copy_bytes_per_s, self.triad_bytes_per_s)

    def how(self) -> str:
        n = self.array_bytes // 8
        return (f"measured: STREAM copy (a = b) and triad (a = b + s·c) with numpy on float64 arrays of "
                f"{self.array_bytes / MiB:,.0f} MiB each ({self.array_bytes / self.llc_bytes:.3g} × the "
                f"{self.llc_bytes / MiB:g} MiB last-level cache from {self.llc_source}), {self.threads} thread(s), one per CPU this process may use; triad in "
                f"{self.block_elements:,}-element blocks that stay in cache; best of {self.repeats} after a warm-up; "
                f"bytes counted as STREAM counts them (copy 2 × {n:,} × 8 B, triad 3 × {n:,} × 8 B): "
                f"copy {self.copy_bytes_per_s / 1e9:.2f} GB/s, triad {self.triad_bytes_per_s / 1e9:.2f} GB/s; "
                f"the profile uses the {self.kernel} figure, the larger — a measured lower bound of the DRAM "
                "bandwidth (write-allocate traffic is not counted)")


def array_bytes_for(llc_bytes: int, available_bytes: int | None) -> int:
    """Bytes per array: ≥ 8 × the last-level cache and ≥ 256 MiB, three arrays ≤ 1/4 of the free memory, ≤ 1 GiB."""
    size = max(MIN_ARRAY_BYTES, 8 * llc_bytes)
    if available_bytes:
        size = min(size, max(64 * MiB, available_bytes // 12))
    return min(size, MAX_ARRAY_BYTES)


def triad_block(llc_bytes: int, threads: int) -> int:
    """Triad block [elements]: the three blocks of every thread fill at most half the last-level cache."""
    return max(_MIN_BLOCK, min(_MAX_BLOCK, llc_bytes // (2 * 3 * 8 * threads)))


def _rounds(threads: int, n: int, kernel, rounds: int) -> list[float]:
    """Run ``kernel(lo, hi)`` on ``threads`` equal slices of ``range(n)``, ``rounds`` times; seconds per round."""
    chunks = [(i * n // threads, (i + 1) * n // threads) for i in range(threads)]
    barrier = threading.Barrier(threads, timeout=120)
    stamps = [[(0.0, 0.0)] * rounds for _ in range(threads)]  # per thread and round: (start, end)
    errors: list[BaseException] = []

    def worker(k: int, lo: int, hi: int):
        try:
            for r in range(rounds):
                barrier.wait()
                start = time.perf_counter()  # each thread times itself: no GIL hand-off inside the interval
                kernel(lo, hi)
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
        raise ProbeError(f"memory bandwidth probe failed: {errors[0]}")
    return [max(stamps[k][r][1] for k in range(threads)) - min(stamps[k][r][0] for k in range(threads))
            for r in range(rounds)]


def measure_memory_bandwidth(repeats: int = REPEATS, array_bytes: int | None = None, progress=None) -> Bandwidth:
    """Copy and triad rates of this machine (module docstring); ``progress(text)`` hears each step."""
    import numpy as np

    llc, llc_source = last_level_cache()
    threads = cpu_count()
    if array_bytes is None:
        array_bytes = array_bytes_for(llc, available_ram())
    n = array_bytes // 8 // threads * threads
    # every array written once before timing, so its pages exist and the first round measures no page faults
    a = np.zeros(n, dtype=np.float64)
    b = np.ones(n, dtype=np.float64)
    c = np.full(n, 2.0, dtype=np.float64)
    scalar = 3.0
    block = triad_block(llc, threads)

    def copy(lo: int, hi: int) -> None:
        np.copyto(a[lo:hi], b[lo:hi])

    def triad(lo: int, hi: int) -> None:
        for s in range(lo, hi, block):
            e = min(s + block, hi)
            out = a[s:e]
            np.multiply(c[s:e], scalar, out=out)
            np.add(out, b[s:e], out=out)

    if progress:
        progress(f"measuring memory bandwidth: copy, {threads} thread(s), {n * 8 / MiB:,.0f} MiB arrays")
    copy_s = min(_rounds(threads, n, copy, repeats + 1)[1:])
    if progress:
        progress("measuring memory bandwidth: triad")
    triad_s = min(_rounds(threads, n, triad, repeats + 1)[1:])
    if a[0] != b[0] + scalar * c[0] or a[-1] != b[-1] + scalar * c[-1]:  # the kernel really ran
        raise ProbeError("memory bandwidth probe: the triad gave a wrong result")
    return Bandwidth(2 * n * 8 / copy_s, 3 * n * 8 / triad_s, threads, n * 8, block, llc, llc_source, repeats)
