"""Short text naming the allocation a row was computed under: the runtime and the KV policy.

Tables and CSV rows of ``sweep`` and ``compare`` carry these labels so a row says which
cache model produced its bytes (``ideal``, ``llama.cpp -np 2 unified``, ``transformers static
4096``; a policy's ``name`` or ``none``). Pure functions of the scenario and its cache model.
"""

from __future__ import annotations

NO_POLICY = "none"


def runtime_label(spec, sequences: int | None = None) -> str:
    """``ideal`` for the contract's formula, else the runtime and the options that differ from its defaults.

    ``sequences`` adds llama.cpp's ``-np N`` when above 1 (a sweep leaves it out: its ``sequences``
    column is ``-np``).
    """
    if spec is None:
        return "ideal"
    from kvplan.profiles.runtime import LlamaCppSpec, TransformersSpec

    parts = [spec.name]
    if isinstance(spec, LlamaCppSpec):
        defaults = LlamaCppSpec()
        if sequences is not None and sequences > 1:
            parts.append(f"-np {sequences}")
        if spec.kv_unified:
            parts.append("unified")
        if spec.ubatch != defaults.ubatch:
            parts.append(f"-ub {spec.ubatch}")
        if spec.batch != defaults.batch:
            parts.append(f"-b {spec.batch}")
        if spec.swa_full:
            parts.append("swa-full")
        if spec.flash_attn != defaults.flash_attn:
            parts.append(f"-fa {spec.flash_attn}")
    elif isinstance(spec, TransformersSpec):
        if spec.cache != TransformersSpec().cache:
            parts.append(spec.cache)
        if spec.max_cache_len is not None:
            parts.append(str(spec.max_cache_len))
    return " ".join(parts)


def policy_label(cache) -> str:
    """The name of the compression policy ``cache`` applies, or ``none`` (plain cache or a runtime's)."""
    policy = getattr(cache, "policy", None)
    return policy.name if policy is not None else NO_POLICY
