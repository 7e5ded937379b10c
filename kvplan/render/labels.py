"""Short text naming the allocation a row was computed under: the runtime and the KV policy.

Tables, CSV and JSON rows of ``sweep`` and ``compare`` carry these labels so a row says which
cache model produced its bytes (``ideal``, ``llama.cpp unified``, ``transformers static
4096``; a policy's ``name`` or ``none``). Both commands call these same functions, so a row of
each for the same point reads the same. Pure functions of the runtime spec and the cache model.

Wording, so it lives in render: a sweep's ``runtime`` and ``kv_policy`` columns hold the facts (the runtime
spec, the policy's name or None) and every writer and plot labels them here (:func:`column_labels`).
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
    from kvplan.profiles.runtime import (ExecuTorchSpec, LiteRtLmSpec, LlamaCppSpec, MlxLmSpec, OllamaSpec,
                                         OrtGenAiSpec, TransformersSpec)

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
    elif isinstance(spec, OllamaSpec):  # OLLAMA_NUM_PARALLEL left out as -np is: the sequences column says it
        defaults = OllamaSpec()
        if spec.kv_cache_type is not None:
            parts.append(spec.kv_cache_type)
        if spec.flash_attention is not None:
            parts.append("fa on" if spec.flash_attention else "fa off")
        if spec.num_batch != defaults.num_batch:
            parts.append(f"num_batch {spec.num_batch}")
        if not spec.use_mmap:
            parts.append("no mmap")
    elif isinstance(spec, TransformersSpec):
        if spec.cache != TransformersSpec().cache:
            parts.append(spec.cache)
        if spec.max_cache_len is not None:
            parts.append(str(spec.max_cache_len))
    elif isinstance(spec, MlxLmSpec):
        defaults = MlxLmSpec()
        if spec.max_kv_size is not None:
            parts.append(f"max-kv {spec.max_kv_size}")
        if spec.prefill_step_size != defaults.prefill_step_size:
            parts.append(f"prefill {spec.prefill_step_size}")
        if spec.quantized_kv_start != defaults.quantized_kv_start:
            parts.append(f"qstart {spec.quantized_kv_start}")
        if spec.prompt_cache_size is not None:
            parts.append(f"server, {spec.prompt_cache_size} cached prompts")
    elif isinstance(spec, OrtGenAiSpec):
        if spec.past_present_share_buffer:
            parts.append("shared")
        if spec.max_length is not None:
            parts.append(f"max-length {spec.max_length}")
    elif isinstance(spec, LiteRtLmSpec):
        if spec.max_num_tokens != LiteRtLmSpec().max_num_tokens:
            parts.append(f"max-num-tokens {spec.max_num_tokens}")
        if spec.kv_cache_tokens is not None:
            parts.append(f"kv {spec.kv_cache_tokens}")
        if spec.litert_backend != LiteRtLmSpec().litert_backend:
            parts.append(spec.litert_backend)
    elif isinstance(spec, ExecuTorchSpec):
        if spec.max_context_length is not None:
            parts.append(f"ctx {spec.max_context_length}")
        if spec.dtype_override != ExecuTorchSpec().dtype_override:
            parts.append(spec.dtype_override)
        if spec.quantize_kv_cache:
            parts.append("int8-kv")
    return " ".join(parts)


def policy_label(cache) -> str:
    """The name of the compression policy ``cache`` applies, or ``none`` (plain cache or a runtime's)."""
    policy = getattr(cache, "policy", None)
    return policy_name_label(policy.name if policy is not None else None)


def policy_name_label(name: str | None) -> str:
    """A policy's name, or ``none`` for no policy (None)."""
    return name if name is not None else NO_POLICY


_COLUMN_LABELS = {"runtime": runtime_label, "kv_policy": policy_name_label}
#: the columns of :class:`kvplan.sweep.SweepColumns` that hold facts to label, not text
LABELLED_COLUMNS = frozenset(_COLUMN_LABELS)


def column_labels(name: str, values):
    """The labels of a sweep's fact column ``name`` (``runtime``: runtime specs or None; ``kv_policy``: policy names
    or None) as a str array of the same length. A column with one value in every row (a zero-stride view: one
    group, however many rows) is labelled once and stays a view, so a million-row CSV costs one label."""
    import numpy as np

    label = _COLUMN_LABELS[name]
    n = len(values)
    if n and values.strides == (0,):
        return np.broadcast_to(np.asarray(label(values[0])), (n,))
    said: dict = {}  # runtime specs are frozen dataclasses: each distinct one labelled once
    return np.array([said[v] if v in said else said.setdefault(v, label(v)) for v in values.tolist()], dtype=str)
