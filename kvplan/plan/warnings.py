"""What a user should know before trusting an evaluation's figures: implausible inputs, and places where the
ideal formula allocates less than the runtimes people use.

Warnings are plain sentences about fields and figures (never flags); ``check`` prints them under its
tables, and every JSON document carries them as ``warnings``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvplan.errors import KvplanError

if TYPE_CHECKING:
    from kvplan.plan.results import Evaluation
    from kvplan.profiles.spec import Device
    from kvplan.plan.scenario import Scenario

#: below these a figure is almost surely a unit slip (bytes for GB, B/s for GB/s), not a device
MIN_PLAUSIBLE_RAM_BYTES = 256 * 10**6
MIN_PLAUSIBLE_BANDWIDTH_BYTES_PER_S = 10**9
MIN_PLAUSIBLE_FLASH_READ_BYTES_PER_S = 10 * 10**6
#: an OS keeps at least this much for itself on a device of more than MIN_RAM_FOR_RESERVE_CHECK_BYTES: a smaller
#: reserve is almost surely MB typed for GB (--os-reserve 2MB on an 8 GB phone)
MIN_PLAUSIBLE_OS_RESERVE_BYTES = 100 * 10**6
MIN_RAM_FOR_RESERVE_CHECK_BYTES = 10**9
#: a context this many times the trained one is far past what any context extension was shown to reach
MAX_PLAUSIBLE_CTX_OVER_TRAINED = 8

def _size(n: int) -> str:
    return f"{n / 1e9:.2f} GB" if n >= 10**9 else f"{n / 1e6:.2f} MB"


def implausible_device(d: Device, os_reserve_bytes: int | None = None) -> list[str]:
    """A device's figures that validate but are almost surely a unit left out (``os_reserve_bytes``: the reserve in
    force when it is not the profile's own)."""
    out = []
    if d.ram < MIN_PLAUSIBLE_RAM_BYTES:
        out.append(f"device {d.name}: ram {d.ram:,} B is under 256 MB — is a unit missing?")
    reserve = d.os_reserve if os_reserve_bytes is None else os_reserve_bytes
    if d.ram > MIN_RAM_FOR_RESERVE_CHECK_BYTES and reserve < MIN_PLAUSIBLE_OS_RESERVE_BYTES:
        if os_reserve_bytes is None or os_reserve_bytes == d.os_reserve:  # the profile's own field
            out.append(f"device {d.name}: os_reserve {reserve:,} B is under 100 MB on {_size(d.ram)} of RAM, less "
                       "than any OS keeps for itself — is the unit right?")
        else:  # the reserve asked for (a flag, a gate key), not the profile's field
            out.append(f"an OS reserve of {reserve:,} B is under 100 MB on {d.name}'s {_size(d.ram)} of RAM, less "
                       "than any OS keeps for itself — is the unit right?")
    if d.memory_bandwidth < MIN_PLAUSIBLE_BANDWIDTH_BYTES_PER_S:
        out.append(f"device {d.name}: memory_bandwidth {d.memory_bandwidth:,.0f} B/s is under 1 GB/s — "
                   "is a unit missing?")
    if d.flash_read < MIN_PLAUSIBLE_FLASH_READ_BYTES_PER_S:
        out.append(f"device {d.name}: flash_read {d.flash_read:,.0f} B/s is under 10 MB/s — is a unit missing?")
    return out


def implausible_inputs(s: Scenario, ctx_per_sequence: int) -> list[str]:
    """Figures that validate but are almost surely a slip (a unit left out, a context typed with extra zeros)."""
    m = s.model
    out = implausible_device(s.device, s.os_reserve_in_force_bytes)
    trained = m.max_context or 0
    if trained and ctx_per_sequence > MAX_PLAUSIBLE_CTX_OVER_TRAINED * trained:
        out.append(f"context {s.ctx:,} tokens: {ctx_per_sequence / trained:,.1f}× {m.name}'s trained {trained:,} "
                   f"per sequence (more than {MAX_PLAUSIBLE_CTX_OVER_TRAINED}×) — is that the context you meant? "
                   "Quality there depends on a context extension (RoPE scaling) the model may not support")
    return out


def ignored_window(ev: Evaluation) -> str | None:
    """The profile's sliding window, honoured by the ideal formula, that llama.cpp ignores — with llama.cpp's
    allocation at this context; None when it does not matter here."""
    s, m = ev.scenario, ev.scenario.model
    windows = m.schedule.windows()
    if s.runtime is not None or s.sliding_window is not None or not windows:
        return None
    window = windows[0]  # the smallest: past it the ideal formula and llama.cpp part
    if getattr(ev.cache, "policy", None) is not None or ev.ctx_per_sequence_tokens <= window:
        return None
    from kvplan.caches.llamacpp import llamacpp_cache, window_ignored_because
    from kvplan.profiles.runtime import runtime_spec

    why = window_ignored_because(m.architecture)
    if why is None:
        return None
    try:  # llama.cpp's -c is the total of its -np sequences
        cache = llamacpp_cache(runtime_spec("llama.cpp"), m, s.k_format, s.v_format)
        llama_kv = cache.kv_bytes(s.ctx * s.sequences, s.sequences)
    except KvplanError:  # a cache type llama.cpp cannot store: say so without its figure
        return (f"llama.cpp ignores {m.name}'s {window:,}-token sliding window ({why}) and keeps the "
                "full context on every layer; the ideal formula's window does not hold there")
    over = ev.total_bytes - ev.kv_peak_bytes + llama_kv > ev.budget_bytes
    return (f"llama.cpp ignores {m.name}'s {window:,}-token sliding window ({why}): it allocates "
            f"{_size(llama_kv)} of KV cache here, not {_size(ev.kv_bytes)}"
            + (", over the budget" if over else ""))


def unpriced_buffers(ev: Evaluation) -> str | None:
    """Under llama.cpp, why its compute and output buffers are left out of the total (None: they are in it)."""
    if getattr(ev.cache, "name", None) != "llama.cpp" or ev.buffers_bytes:
        return None
    from kvplan.caches.buffers import unpriced_because

    why = unpriced_because(ev.scenario.model)
    return f"llama.cpp's compute and output buffers are not counted in the total: {why}" if why else None


def warnings_of(ev: Evaluation) -> tuple[str, ...]:
    """Every warning about one evaluation, most important first."""
    out = []
    window = ignored_window(ev)
    if window:
        out.append(window)
    unpriced = unpriced_buffers(ev)
    if unpriced:
        out.append(unpriced)
    s = ev.scenario  # the tokens one sequence attends as requested (llama.cpp's padded cells would overstate it)
    shared = getattr(ev.cache, "name", None) == "llama.cpp" and not getattr(s.runtime, "kv_unified", False)
    out += implausible_inputs(s, -(-s.ctx // s.sequences) if shared else s.ctx)
    return tuple(out)
