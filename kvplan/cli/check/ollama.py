"""check under ``--runtime ollama`` with no context: Ollama's default ``num_ctx`` on the device, said as a note."""

from __future__ import annotations


def default_num_ctx(device, gpu_working_set_bytes: int | None = None) -> int:
    """The ``num_ctx`` ``ollama serve`` in this environment would use on ``device`` (``OLLAMA_CONTEXT_LENGTH``,
    ``OLLAMA_GPU_OVERHEAD`` read as Ollama reads them), told on stderr with what decided it."""
    from kvplan.cli import terminal
    from kvplan.files.env import ollama_context_length, ollama_gpu_overhead_bytes
    from kvplan.plan.ollama_ctx import ollama_default_ctx

    found = ollama_default_ctx(device, ollama_context_length(), ollama_gpu_overhead_bytes(), gpu_working_set_bytes)
    if found.source == "OLLAMA_CONTEXT_LENGTH":
        why = "OLLAMA_CONTEXT_LENGTH"
    elif found.source == "gpu_working_set":
        why = (f"Ollama's default for {found.gpu_memory_bytes / 2**30:.2f} GiB of GPU memory (the GPU working set: "
               "Metal's recommendedMaxWorkingSetSize, as Ollama reads it)")
    else:
        why = f"Ollama's default for under 23 GiB of GPU memory (the device has {device.ram / 2**30:.2f} GiB of RAM)"
    terminal.display_note(f"num_ctx {found.num_ctx_tokens:,}: {why}; --ctx sets another")
    return found.num_ctx_tokens
