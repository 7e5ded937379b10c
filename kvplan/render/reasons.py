"""The words for why a runtime leaves something out (:class:`kvplan.caches.facts.Reason`): the clause inside a
rule (``sliding window 4,096 ignored: …``) and inside a warning (``… sliding window (…)``). One entry per kind;
each takes the reason's facts."""

from __future__ import annotations

_WORDS = {
    # why llama.cpp keeps the whole context on every layer (kvplan.caches.llamacpp.window_ignored_because)
    "converted_as_llama": lambda v: "Mistral is converted to GGUF as architecture llama, which has no window",
    "llama_has_no_window": lambda v: "architecture llama has no window",
    "window_disabled_upstream": lambda v: "llama.cpp disables Phi-3's window on purpose, ggml-org/llama.cpp#13676",
    "no_window_for_architecture": lambda v: "llama.cpp sets no window for this architecture",
    # why llama.cpp's buffers are not priced (kvplan.caches.buffers.unpriced_because)
    "missing_shape_fields": lambda v: (f"the model profile lacks {', '.join(v['fields'])}, which llama.cpp's "
                                       "compute buffer depends on"),
    "experts_graph_unmodelled": lambda v: (f"llama.cpp's graph for a mixture of experts of architecture "
                                           f"{v['architecture'] or 'unknown'} is not modelled (only DeepSeek-V2/V3's "
                                           "is)"),
    "state_graph_unmodelled": lambda v: (f"llama.cpp's graph for the state layers of architecture "
                                         f"{v['architecture'] or 'unknown'} is not modelled (only attention graphs "
                                         "are replayed)"),
    "gemma3n_graph_unmodelled": lambda v: (f"llama.cpp's graph of architecture {v['architecture'] or 'unknown'} "
                                           "(AltUp streams, per-layer embeddings, shared-KV layers) is not modelled"),
    "gemma4_graph_unmodelled": lambda v: (f"llama.cpp's graph of architecture {v['architecture'] or 'unknown'} "
                                          "with experts or without per-layer embeddings is not modelled (only the "
                                          "dense E models' graph is replayed)"),
}

KINDS = frozenset(_WORDS)


def reason_text(reason) -> str:
    """The clause for one :class:`~kvplan.caches.facts.Reason`."""
    return _WORDS[reason.kind](reason.facts())
