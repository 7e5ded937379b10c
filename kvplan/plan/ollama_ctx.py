"""Ollama's default ``num_ctx`` on a device: the context ``kvplan check --runtime ollama`` prices when none is given.

Ollama v0.32.15 takes ``OLLAMA_CONTEXT_LENGTH`` when set, else a tier of the GPU memory it found, summed over the
GPUs less ``OLLAMA_GPU_OVERHEAD`` each (``server/routes.go`` :: ``Serve``, 2043-2057; the tiers in
:func:`kvplan.engine.ollama_args.default_num_ctx_tokens`). On Apple silicon the GPU memory is Metal's
``recommendedMaxWorkingSetSize`` (``discover/gpu_info_darwin.m``), the device profile's ``gpu_working_set`` (or ``--gpu-limit``);
with no GPU Ollama finds none (0 bytes: the lowest tier).
"""

from __future__ import annotations

from kvplan.engine.ollama_args import DEFAULT_CTX_TIERS, default_num_ctx_tokens
from kvplan.errors import FieldError
from kvplan.records import Figures


class DefaultCtx(Figures):
    """Ollama's default ``num_ctx`` and what decided it."""

    __slots__ = _fields = ("num_ctx_tokens", "source", "gpu_memory_bytes")
    num_ctx_tokens: int
    source: str  # "OLLAMA_CONTEXT_LENGTH", "gpu_working_set" or "ram"
    gpu_memory_bytes: int | None  # the GPU memory the tier was taken from (None: the variable decided)


def ollama_default_ctx(device, context_length_tokens: int = 0, gpu_overhead_bytes: int = 0,
                       gpu_working_set_bytes: int | None = None) -> DefaultCtx:
    """The ``num_ctx`` Ollama runs a model with on ``device`` when no request or Modelfile sets it.

    Without a GPU working-set figure on the profile, the device's RAM bounds the GPU memory from above: below the
    lowest tier boundary (23 GiB) every such figure gives the same 4096, so the answer is exact; above it kvplan
    cannot tell the tier and says so.
    """
    if context_length_tokens:
        return DefaultCtx(int(context_length_tokens), "OLLAMA_CONTEXT_LENGTH", None)
    lowest_boundary = DEFAULT_CTX_TIERS[-2][0]
    working_set = gpu_working_set_bytes or getattr(device, "gpu_working_set", None)
    if working_set:
        gpu = max(int(working_set) - int(gpu_overhead_bytes), 0)
        return DefaultCtx(default_num_ctx_tokens(gpu), "gpu_working_set", gpu)
    ram = int(device.ram)
    if ram - int(gpu_overhead_bytes) < lowest_boundary:
        return DefaultCtx(default_num_ctx_tokens(0), "ram", ram)
    raise FieldError("ctx", f"Ollama's default num_ctx depends on the GPU memory it finds, and device "
                     f"{device.name!r} has {ram:,} B of RAM but no gpu_working_set; give the context (or the working set)")
