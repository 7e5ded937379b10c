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


# how a row's label words each runtime's options, by runtime name: (spec field, its words), each said only when the
# value differs from the runtime's default. -np (llama.cpp's parallel, Ollama's num_parallel) is left out: every row
# that carries the label also has a ``sequences`` column, so the label stays one value over a sweep of sequences.
LABEL_WORDS = {
    "llama.cpp": (("kv_unified", lambda v: "unified"), ("ubatch", "-ub {}".format), ("batch", "-b {}".format),
                  ("swa_full", lambda v: "swa-full"), ("flash_attn", "-fa {}".format)),
    "ollama": (("kv_cache_type", str), ("flash_attention", lambda v: "fa on" if v else "fa off"),
               ("num_batch", "num_batch {}".format), ("use_mmap", lambda v: "no mmap")),
    "transformers": (("cache", str), ("max_cache_len", str)),
    "mlx-lm": (("max_kv_size", "max-kv {}".format), ("prefill_step_size", "prefill {}".format),
               ("quantized_kv_start", "qstart {}".format),
               ("prompt_cache_size", "server, {} cached prompts".format)),
    "onnxruntime-genai": (("past_present_share_buffer", lambda v: "shared"), ("max_length", "max-length {}".format)),
    "litert-lm": (("max_num_tokens", "max-num-tokens {}".format), ("kv_cache_tokens", "kv {}".format),
                  ("litert_backend", str)),
    "executorch": (("max_context_length", "ctx {}".format), ("dtype_override", str),
                   ("quantize_kv_cache", lambda v: "int8-kv")),
}


def runtime_label(spec) -> str:
    """``ideal`` for the contract's formula, else the runtime and the options that differ from its defaults
    (:data:`LABEL_WORDS`)."""
    if spec is None:
        return "ideal"
    defaults = type(spec)()
    parts = [spec.name]
    for field, words in LABEL_WORDS.get(spec.name, ()):
        value = getattr(spec, field)
        if value != getattr(defaults, field):
            parts.append(words(value))
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
