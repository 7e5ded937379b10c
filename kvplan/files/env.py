"""kvplan's on/off environment variables (``KVPLAN_NO_CACHE``, ``KVPLAN_PLAIN``, ``KVPLAN_DEBUG``) read one way:
set and not ``0``, ``false``, ``no`` or ``off`` (any case) is on, so ``KVPLAN_PLAIN=0`` means off everywhere."""

from __future__ import annotations

import os

_OFF = ("", "0", "false", "no", "off")


def env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() not in _OFF


def ollama_environment(environ=None) -> dict:
    """The Ollama settings ``ollama serve`` reads from its environment, as :class:`~kvplan.profiles.runtime.OllamaSpec`
    fields (only those set). Parsed as Ollama's ``envconfig`` reads them (v0.32.15 ``envconfig/config.go``):
    ``OLLAMA_NUM_PARALLEL`` a whole number, ``OLLAMA_FLASH_ATTENTION`` a boolean (``strconv.ParseBool``: 1, t, true,
    0, f, false in any case), ``OLLAMA_KV_CACHE_TYPE`` a name; a value Ollama could not read is an error naming the
    variable here, rather than a silent default."""
    from kvplan.errors import UsageError

    env = os.environ if environ is None else environ
    out: dict = {}
    raw = env.get("OLLAMA_NUM_PARALLEL", "").strip()
    if raw:
        if not raw.isdigit():
            raise UsageError(f"OLLAMA_NUM_PARALLEL: expected a whole number, got {raw!r}")
        if int(raw) > 0:  # 0: unset (Ollama takes max(value, 1))
            out["num_parallel"] = int(raw)
    raw = env.get("OLLAMA_FLASH_ATTENTION", "").strip()
    if raw:
        truth = {"1": True, "t": True, "true": True, "0": False, "f": False, "false": False}.get(raw.lower())
        if truth is None:
            raise UsageError(f"OLLAMA_FLASH_ATTENTION: expected true or false (1, 0), got {raw!r}")
        out["flash_attention"] = truth
    raw = env.get("OLLAMA_KV_CACHE_TYPE", "").strip()
    if raw:
        out["kv_cache_type"] = raw
    return out


def ollama_context_length(environ=None) -> int:
    """``OLLAMA_CONTEXT_LENGTH`` [tokens] (0: unset), and ``OLLAMA_GPU_OVERHEAD`` [bytes] is read by
    :func:`ollama_gpu_overhead_bytes`; both as Ollama's ``envconfig`` (whole numbers)."""
    return _whole(environ, "OLLAMA_CONTEXT_LENGTH")


def ollama_gpu_overhead_bytes(environ=None) -> int:
    """``OLLAMA_GPU_OVERHEAD`` [bytes] (0: unset): what Ollama subtracts from each GPU's memory."""
    return _whole(environ, "OLLAMA_GPU_OVERHEAD")


def _whole(environ, name: str) -> int:
    from kvplan.errors import UsageError

    env = os.environ if environ is None else environ
    raw = env.get(name, "").strip()
    if not raw:
        return 0
    if not raw.isdigit():
        raise UsageError(f"{name}: expected a whole number, got {raw!r}")
    return int(raw)
