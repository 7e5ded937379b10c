"""What a user should know before trusting an evaluation's figures: implausible inputs, and places where the
ideal formula allocates less than the runtimes people use.

Warnings are plain sentences about fields and figures (never flags); ``check`` prints them under its
tables, and every JSON document carries them as ``warnings``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvplan.errors import KvplanError

if TYPE_CHECKING:
    from kvplan.plan.evaluation import Evaluation
    from kvplan.plan.scenario import Scenario

#: below these a figure is almost surely a unit slip (bytes for GB, B/s for GB/s), not a device
MIN_PLAUSIBLE_RAM_BYTES = 256 * 10**6
MIN_PLAUSIBLE_BANDWIDTH_BYTES_PER_S = 10**9
MIN_PLAUSIBLE_FLASH_READ_BYTES_PER_S = 10 * 10**6
#: a context this many times the trained one is far past what any context extension was shown to reach
MAX_PLAUSIBLE_CTX_OVER_TRAINED = 8

_WINDOW_IGNORED_WHY = {
    "mistral": "Mistral is converted to GGUF as architecture llama, which has no window",
    "llama": "architecture llama has no window",
    "phi3": "llama.cpp disables Phi-3's window on purpose, ggml-org/llama.cpp#13676",
}


def _size(n: int) -> str:
    return f"{n / 1e9:.2f} GB" if n >= 10**9 else f"{n / 1e6:.2f} MB"


def implausible_inputs(s: Scenario, ctx_per_sequence: int) -> list[str]:
    """Figures that validate but are almost surely a slip (a unit left out, a context typed with extra zeros)."""
    d, m = s.device, s.model
    out = []
    if d.ram < MIN_PLAUSIBLE_RAM_BYTES:
        out.append(f"device {d.name}: ram {d.ram:,} B is under 256 MB — is a unit missing?")
    if d.memory_bandwidth < MIN_PLAUSIBLE_BANDWIDTH_BYTES_PER_S:
        out.append(f"device {d.name}: memory_bandwidth {d.memory_bandwidth:,.0f} B/s is under 1 GB/s — "
                   "is a unit missing?")
    if d.flash_read < MIN_PLAUSIBLE_FLASH_READ_BYTES_PER_S:
        out.append(f"device {d.name}: flash_read {d.flash_read:,.0f} B/s is under 10 MB/s — is a unit missing?")
    trained = m.max_context or 0
    if trained and ctx_per_sequence > MAX_PLAUSIBLE_CTX_OVER_TRAINED * trained:
        out.append(f"context {ctx_per_sequence:,} tokens is {ctx_per_sequence / trained:,.0f}× {m.name}'s trained "
                   f"{trained:,} (more than {MAX_PLAUSIBLE_CTX_OVER_TRAINED}×): no published context extension "
                   "reaches that; the figures are arithmetic only")
    return out


def ignored_window(ev: Evaluation) -> str | None:
    """The profile's sliding window, honoured by the ideal formula, that llama.cpp ignores — with llama.cpp's
    allocation at this context; None when it does not matter here."""
    s, m = ev.scenario, ev.scenario.model
    if s.runtime is not None or s.sliding_window is not None or not m.sliding_window:
        return None
    if getattr(ev.layout, "policy", None) is not None or ev.ctx_per_sequence_tokens <= m.sliding_window:
        return None
    from kvplan.caches.llamacpp import SWA_ARCHITECTURES, llamacpp_cache
    from kvplan.profiles.runtime import runtime_spec

    arch = (m.architecture or "").lower()
    if arch in SWA_ARCHITECTURES:
        return None
    why = _WINDOW_IGNORED_WHY.get(arch, "llama.cpp sets no window for this architecture")
    try:  # llama.cpp's -c is the total of its -np sequences
        cache = llamacpp_cache(runtime_spec("llama.cpp"), m, s.k_format, s.v_format)
        llama_kv = cache.kv_bytes(s.ctx * s.sequences, s.sequences)
    except KvplanError:  # a cache type llama.cpp cannot store: say so without its figure
        return (f"llama.cpp ignores {m.name}'s {m.sliding_window:,}-token sliding window ({why}) and keeps the "
                "full context on every layer; the ideal formula's window does not hold there")
    over = ev.total_bytes - ev.kv_peak_bytes + llama_kv > ev.budget_bytes
    return (f"llama.cpp ignores {m.name}'s {m.sliding_window:,}-token sliding window ({why}): it allocates "
            f"{_size(llama_kv)} of KV cache here, not {_size(ev.kv_bytes)}"
            + (", over the budget" if over else ""))


def warnings_of(ev: Evaluation) -> tuple[str, ...]:
    """Every warning about one evaluation, most important first."""
    out = []
    window = ignored_window(ev)
    if window:
        out.append(window)
    out += implausible_inputs(ev.scenario, ev.ctx_per_sequence_tokens)
    return tuple(out)


def llamacpp_buffers_if_ideal(s: Scenario):
    """What llama.cpp would add (compute + output buffers, default options) to an ideal-formula evaluation;
    None under a runtime, or when the profile lacks the shape the buffers need."""
    if s.runtime is not None:
        return None
    from kvplan.caches.buffers import llamacpp_buffers, missing_shape_fields
    from kvplan.caches.llamacpp import llamacpp_cache
    from kvplan.profiles.runtime import runtime_spec

    if missing_shape_fields(s.model):
        return None
    spec = runtime_spec("llama.cpp")
    if s.k_format is not None or s.v_format is not None:  # the profile's own cache types always load
        try:  # the line names a --runtime llama.cpp command: say nothing where llama.cpp refuses the request
            llamacpp_cache(spec, s.model, s.k_format, s.v_format)
        except KvplanError:
            return None
    return llamacpp_buffers(spec, s.model, s.ctx * s.sequences, s.sequences)
