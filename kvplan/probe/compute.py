"""Compute of this machine's CPU, measured: a dense float32 matrix product through numpy's BLAS.

Prefill is dominated by matrix products (prompt tokens × weights), so the FLOP/s a tuned GEMM
sustains on this CPU is the figure prefill can at best reach here. The probe multiplies two square
float32 matrices with ``numpy.matmul`` (numpy hands it to its BLAS, which uses its own threads),
counting ``2·n³`` FLOP per product. ``n`` doubles from 512 until one product takes at least
:data:`MIN_PRODUCT_S` (or n reaches 4096) — small products measure BLAS's thread start-up more
than its arithmetic — then the best of :data:`REPEATS` products at that size after a warm-up counts.

float16 is timed too, on a small product, and reported but never used: numpy has no
half-precision BLAS routine and multiplies float16 in a plain loop, orders of magnitude below
what the hardware's half-precision units (or a runtime's kernels) do — the figure says so.

What this is not: the GPU (no standard Python library measures one), int8 dot-product kernels
(llama.cpp's quantized CPU path), or the rate a runtime reaches on a 512-token prefill.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from kvplan.errors import ProbeError

MIN_PRODUCT_S = 0.05
REPEATS = 5
MIN_N, MAX_N = 512, 4096
F16_N = 128


@dataclass(frozen=True)
class Compute:
    float32_flop_per_s: float
    n: int
    repeats: int
    float16_flop_per_s: float
    float16_n: int
    blas: str

    def how(self) -> str:
        flop = 2 * self.n**3
        return (f"measured: numpy.matmul of two {self.n} × {self.n} float32 matrices through numpy's BLAS "
                f"({self.blas}, its default threads), 2 × {self.n}³ = {flop:,} FLOP per product, best of {self.repeats} "
                f"after a warm-up: {self.float32_flop_per_s / 1e9:,.1f} GFLOP/s — dense GEMM on the CPU, the best "
                "case of prefill's matrix products here; the GPU and int8 kernels are not measured")

    def float16_how(self) -> str:
        return (f"float16 not used: numpy.matmul of {self.float16_n} × {self.float16_n} float16 matrices ran at "
                f"{self.float16_flop_per_s / 1e9:,.2f} GFLOP/s — numpy has no half-precision BLAS and loops in "
                "plain code, so this says nothing about the hardware's float16 units")


def blas_name() -> str:
    """numpy's BLAS as its build configuration names it (``scipy-openblas 0.3.27``, ``accelerate``)."""
    try:
        import numpy as np

        blas = np.__config__.CONFIG["Build Dependencies"]["blas"]
        name = str(blas.get("name") or "").strip()
        version = str(blas.get("version") or "").strip()
        return f"{name} {version}".strip() if name else "BLAS not named by numpy"
    except (AttributeError, KeyError, TypeError, ImportError):
        return "BLAS not named by numpy"


def _product_s(np, n: int, dtype) -> float:
    a = np.full((n, n), 0.5, dtype=dtype)
    b = np.full((n, n), 2.0, dtype=dtype)
    start = time.perf_counter()
    c = np.matmul(a, b)
    seconds = time.perf_counter() - start
    if float(c[0, 0]) != float(n) or float(c[-1, -1]) != float(n):  # every entry is n × 0.5 × 2 = n
        raise ProbeError(f"compute probe: a {n} × {n} {np.dtype(dtype).name} product gave a wrong result")
    return seconds


def measure_compute(repeats: int = REPEATS, progress=None) -> Compute:
    """float32 GEMM FLOP/s of this machine (module docstring); ``progress(text)`` hears each step."""
    import numpy as np

    _product_s(np, 256, np.float32)  # starts BLAS's threads: the first product pays for that
    n = MIN_N
    # the faster of two products sizes it: one product delayed by another program must not stop the growth early
    while n < MAX_N and min(_product_s(np, n, np.float32) for _ in range(2)) < MIN_PRODUCT_S:
        n *= 2
    if progress:
        progress(f"measuring compute: float32 matrix product, n = {n}")
    times = [_product_s(np, n, np.float32) for _ in range(repeats + 1)][1:]
    f16_s = _product_s(np, F16_N, np.float16)
    best = min(times)
    if not math.isfinite(best) or best <= 0:
        raise ProbeError("compute probe: the clock did not advance")
    return Compute(2 * n**3 / best, n, repeats, 2 * F16_N**3 / f16_s, F16_N, blas_name())
