"""What llama.cpp would add to a configuration priced by the ideal formula: its compute and output buffers at
its default options (check prints it under the memory table; ``--runtime llama.cpp`` counts them)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvplan.errors import KvplanError

if TYPE_CHECKING:
    from kvplan.plan.scenario import Scenario


def llamacpp_buffers_if_ideal(s: Scenario):
    """What llama.cpp would add (compute + output buffers, default options) to an ideal-formula evaluation;
    None under a runtime, or when the profile lacks the shape the buffers need."""
    if s.runtime is not None:
        return None
    from kvplan.caches.buffers import llamacpp_buffers, unpriced_because
    from kvplan.caches.llamacpp import llamacpp_cache
    from kvplan.profiles.runtime import runtime_spec

    if unpriced_because(s.model) or s.sliding_window is not None or s.pinned_prefix_tokens:
        return None  # llama.cpp cannot put a window on a model, nor keep a prefix outside its -c
    spec = runtime_spec("llama.cpp")
    try:  # the line names a --runtime llama.cpp command: say nothing where llama.cpp refuses the request
        cache = llamacpp_cache(spec, s.model, s.k_format, s.v_format)
    except KvplanError:
        return None
    v_format = cache.v_format or cache.k_format
    return llamacpp_buffers(spec, s.model, s.ctx * s.sequences, s.sequences, cache.k_format.name, v_format.name)
