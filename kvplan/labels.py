"""Short text naming the allocation a row was computed under: the runtime and the KV policy.

Tables and CSV rows of ``sweep`` and ``compare`` carry these labels so a row says which
cache model produced its bytes (``ideal``, ``llama.cpp unified``, ``transformers static
4096``; a policy's ``name`` or ``none``). Both commands call these same functions, so a row of
each for the same point reads the same. Pure functions of the scenario and its cache model.

Wording, not a cache model's facts, so it lives outside ``kvplan.caches``; it sits in its own layer just
below the planning layer (``.importlinter``) because ``sweep`` stores these labels in its string columns
and render, plots and compare read them too. It imports nothing that computes (checked there too).
"""

from __future__ import annotations

NO_POLICY = "none"


def runtime_label(spec) -> str:
    """``ideal`` for the contract's formula, else the runtime and the options that differ from its defaults.

    llama.cpp's ``-np`` is left out: every row that carries this label also has a ``sequences`` column (and a
    table its "N sequences"), which is ``-np``, so the label stays one value over a sweep of sequences.
    """
    if spec is None:
        return "ideal"
    from kvplan.profiles.runtime import LlamaCppSpec, TransformersSpec

    parts = [spec.name]
    if isinstance(spec, LlamaCppSpec):
        defaults = LlamaCppSpec()
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
