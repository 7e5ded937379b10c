"""The memory-relevant part of the ``llama-server`` command line Ollama v0.32.15 starts, in Ollama's order
(``llm/llama_server.go`` :: ``startLlamaServer``, 368-403: context, load mode, cache types, flash attention, batch).

Takes an :class:`kvplan.engine.ollama_args.OllamaLaunch` (read by attribute; render imports no engine).
"""

from __future__ import annotations


def llama_server_args(launch) -> tuple[str, ...]:
    """``-c``, ``-np``, ``--load-mode``, ``--cache-type-k/-v``, ``--flash-attn``, ``--embedding``, ``-b``/``-ub``."""
    args = ["-c", str(launch.n_ctx_tokens), "-np", str(launch.parallel)]
    if not launch.mmap:
        args += ["--load-mode", "none"]  # appendLoadModeArgs, 627-637
    if launch.cache_type:
        args += ["--cache-type-k", launch.cache_type, "--cache-type-v", launch.cache_type]
    args += ["--flash-attn", launch.flash_attn]
    if launch.embedding:
        args.append("--embedding")
    if launch.batch_tokens:
        args += ["-b", str(launch.batch_tokens), "-ub", str(launch.batch_tokens)]
    return tuple(args)
