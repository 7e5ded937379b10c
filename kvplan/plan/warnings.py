"""What a user should know before trusting an evaluation's figures: implausible inputs, and places where the
ideal formula allocates less than the runtimes people use.

Warnings are facts (:class:`kvplan.plan.facts.WarningFact`: a kind and its figures, about fields, never flags);
:mod:`kvplan.render.warnings` words them for ``check``'s notes under its tables and every JSON document's
``warnings``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvplan.errors import KvplanError
from kvplan.plan.facts import WarningFact, warning

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
#: measured fixed costs per decode step are milliseconds (2.37 ms on a Pixel 8, 4.39 ms on Apple chips): one of
#: more than this is seconds typed for milliseconds
MAX_PLAUSIBLE_DECODE_LATENCY_S = 0.1
#: a runtime overhead beyond this share of RAM leaves no room for a model: GB typed for MB
MAX_PLAUSIBLE_OVERHEAD_OF_RAM = 0.5
#: a context below this many tokens holds no prompt: a k left out (``ctx: 8`` for 8k)
MIN_PLAUSIBLE_CTX_TOKENS = 64
#: no weight format stores fewer bits per weight than this (ternary weights are 1.58; iq1_s 1.56)
MIN_PLAUSIBLE_WEIGHT_BITS = 1.0


def implausible_device(d: Device, os_reserve_bytes: int | None = None) -> list[WarningFact]:
    """A device's figures that validate but are almost surely a unit left out (``os_reserve_bytes``: the reserve in
    force when it is not the profile's own)."""
    out = []
    if d.ram < MIN_PLAUSIBLE_RAM_BYTES:
        out.append(warning("device_ram", device=d.name, ram_bytes=d.ram))
    reserve = d.os_reserve if os_reserve_bytes is None else os_reserve_bytes
    if d.ram > MIN_RAM_FOR_RESERVE_CHECK_BYTES and reserve < MIN_PLAUSIBLE_OS_RESERVE_BYTES:
        # the profile's own field, or the reserve asked for (a flag, a gate key)
        own = os_reserve_bytes is None or os_reserve_bytes == d.os_reserve
        out.append(warning("device_os_reserve" if own else "os_reserve_asked", device=d.name,
                           os_reserve_bytes=reserve, ram_bytes=d.ram))
    if d.memory_bandwidth < MIN_PLAUSIBLE_BANDWIDTH_BYTES_PER_S:
        out.append(warning("device_memory_bandwidth", device=d.name, memory_bandwidth_bytes_per_s=d.memory_bandwidth))
    if d.flash_read < MIN_PLAUSIBLE_FLASH_READ_BYTES_PER_S:
        out.append(warning("device_flash_read", device=d.name, flash_read_bytes_per_s=d.flash_read))
    if d.decode_latency > MAX_PLAUSIBLE_DECODE_LATENCY_S:
        out.append(warning("device_decode_latency", device=d.name, decode_latency_s=d.decode_latency))
    if d.runtime_overhead > MAX_PLAUSIBLE_OVERHEAD_OF_RAM * d.ram:
        out.append(warning("device_runtime_overhead", device=d.name, runtime_overhead_bytes=d.runtime_overhead,
                           ram_bytes=d.ram))
    return out


def implausible_inputs(s: Scenario, ctx_per_sequence: int) -> list[WarningFact]:
    """Figures that validate but are almost surely a slip (a unit left out, a context typed with extra zeros)."""
    m = s.model
    out = implausible_device(s.device, s.os_reserve_in_force_bytes)
    # ctx 1 is how fit evaluates a configuration it was given no context for (its max-context probe): no warning
    if 1 < s.ctx < MIN_PLAUSIBLE_CTX_TOKENS:
        out.append(warning("ctx_under_plausible", ctx_tokens=s.ctx, min_tokens=MIN_PLAUSIBLE_CTX_TOKENS))
    bits = s.weight_bits if s.weight_bits is not None else (
        None if m.weights is not None or getattr(m, "weight_type", None) or s.weight_type else m.weight_bits)
    if bits is not None and bits < MIN_PLAUSIBLE_WEIGHT_BITS:
        out.append(warning("weight_bits_under_plausible", weight_bits=bits, min_bits=MIN_PLAUSIBLE_WEIGHT_BITS))
    trained = m.max_context or 0
    if trained and ctx_per_sequence > MAX_PLAUSIBLE_CTX_OVER_TRAINED * trained:
        out.append(warning("ctx_past_trained", ctx_tokens=s.ctx, ctx_per_sequence_tokens=ctx_per_sequence,
                           model=m.name, trained_tokens=trained, max_over_trained=MAX_PLAUSIBLE_CTX_OVER_TRAINED))
    return out


def ignored_window(ev: Evaluation) -> WarningFact | None:
    """The profile's sliding window, honoured by the ideal formula, that llama.cpp ignores — with llama.cpp's
    allocation at this context (``llama_kv_bytes`` None: a cache type llama.cpp cannot store); None when it does
    not matter here."""
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
        return warning("window_ignored", model=m.name, window=window, reason=why, llama_kv_bytes=None,
                       kv_bytes=ev.kv_bytes, over_budget=None)
    over = ev.total_bytes - ev.kv_peak_bytes + llama_kv > ev.budget_bytes
    return warning("window_ignored", model=m.name, window=window, reason=why, llama_kv_bytes=int(llama_kv),
                   kv_bytes=ev.kv_bytes, over_budget=bool(over))


def window_override(ev: Evaluation) -> WarningFact | None:
    """A ``sliding_window`` asked for (it puts every layer behind one window) that changes what the model was
    trained to attend: it replaces the model's own window on its local layers (Gemma's 512 → 100,000), or puts
    a window on layers trained with full attention; None when the figures are the model's own.

    ``widens``: True/False when the local layers' own window changes, None when it does not; ``drops``: the
    layers trained with full attention whose tokens the window drops (``"global"`` beside local layers,
    ``"every"`` on a model with no window of its own), None when there are none."""
    s, m = ev.scenario, ev.scenario.model
    window = s.sliding_window
    if window is None:
        return None
    ctx, own = ev.ctx_per_sequence_tokens, m.sliding_window
    has_local = bool(own) and m.sliding_window_pattern != []
    has_global = not own or m.sliding_window_pattern != "all"
    widens = window > own if has_local and min(ctx, window) != min(ctx, own) else None
    drops = ("global" if has_local else "every") if has_global and window < ctx else None
    if widens is None and drops is None:
        return None
    return warning("window_override", window=window, model=m.name, own_window=own, widens=widens, drops=drops)


def unpriced_buffers(ev: Evaluation) -> WarningFact | None:
    """Under llama.cpp, why its compute and output buffers are left out of the total (None: they are in it)."""
    if getattr(ev.cache, "family", None) != "llama.cpp" or ev.buffers_bytes:
        return None
    from kvplan.caches.buffers import unpriced_because

    why = unpriced_because(ev.scenario.model)
    return warning("buffers_unpriced", reason=why) if why else None


def gpu_working_set(ev: Evaluation) -> WarningFact | None:
    """Where the GPU working set (the device's, or the one asked for) is known: under MLX-LM, its own warning
    when the weights pass 90 % of it (``mlx_wired_limit``); under llama.cpp, Metal buffers past it
    (``metal_working_set``: the weights, the KV cache and the compute buffer, all layers on the GPU — the output
    buffer is a CPU buffer, Metal having no host buffer type; ``ggml_warns`` when the weights alone pass it under
    mmap, the buffers ggml checks in the build followed). None otherwise."""
    s = ev.scenario
    working_set = s.gpu_working_set_in_force_bytes
    name = getattr(ev.cache, "name", None)
    if working_set is None or name not in ("mlx-lm", "llama.cpp"):
        return None
    from kvplan.engine.apple_gpu import (MIB, MLX_WIRED_WARN_FRACTION, metal_bytes, metal_over_working_set,
                                         mlx_warns_near_working_set)

    if name == "mlx-lm":
        if not mlx_warns_near_working_set(ev.weights_bytes, working_set):
            return None
        return warning("mlx_wired_limit", weights_bytes=ev.weights_bytes, working_set_bytes=working_set,
                       model_mb=ev.weights_bytes // MIB, max_mb=working_set // MIB,
                       fraction=MLX_WIRED_WARN_FRACTION)
    metal = metal_bytes(ev.weights_bytes, ev.kv_peak_bytes, ev.compute_buffer_bytes)
    if not metal_over_working_set(metal, working_set):
        return None
    mapped = bool(getattr(s.runtime, "mmap", True))
    return warning("metal_working_set", metal_bytes=metal, weights_bytes=ev.weights_bytes,
                   kv_bytes=ev.kv_peak_bytes, compute_bytes=ev.compute_buffer_bytes, working_set_bytes=working_set,
                   ggml_warns=mapped and bool(metal_over_working_set(ev.weights_bytes, working_set)))


def speculation_slower(ev: Evaluation) -> WarningFact | None:
    """Speculative decoding decodes slower than the target alone: the draft's steps cost more than the accepted
    tokens save (a large draft, a low acceptance rate, too many draft tokens)."""
    spec = ev.speculative
    if spec is None or spec.speedup >= 1:
        return None
    return warning("speculation_slower", draft=ev.scenario.draft.name, tokens_per_s=spec.tokens_per_s,
                   plain_tokens_per_s=ev.decode_tokens_per_s, acceptance_rate=spec.acceptance_rate,
                   draft_tokens=spec.draft_tokens)


def prefill_placement(ev: Evaluation) -> WarningFact | None:
    """An offloaded configuration's prefill: its memory floor reads each memory's weights at that memory's
    bandwidth, but its compute bound is the device's one ``compute`` figure whatever runs where (a profile has no
    compute figure per processor, and the weights llama.cpp copies to the GPU for a large batch are not priced)."""
    o = ev.offload
    if o is None or ev.prefill_s is None or (o.unified and not o.layers_on_gpu < o.layers):
        return None
    return warning("prefill_placement", layers_on_gpu=o.layers_on_gpu, layers=o.layers, discrete=not o.unified)


def mlx_chunked_batch(ev: Evaluation) -> WarningFact | None:
    """Several sequences of a model with chunked attention under MLX-LM: its batched path cannot merge a
    ``ChunkedKVCache`` (``generate.py`` ``_merge_caches``: the class has no ``merge``), so the sequences are priced as
    that many separate one-sequence runs, which mlx-lm serves one after another."""
    if getattr(ev.cache, "name", None) != "mlx-lm" or ev.scenario.sequences < 2:
        return None
    if not getattr(ev.cache, "chunked_layers", 0):
        return None
    return warning("mlx_chunked_batch", sequences=ev.scenario.sequences, chunked_layers=ev.cache.chunked_layers)


def warnings_of(ev: Evaluation) -> tuple[WarningFact, ...]:
    """Every warning about one evaluation, most important first."""
    out = []
    for found in (ignored_window(ev), window_override(ev), unpriced_buffers(ev), gpu_working_set(ev),
                  speculation_slower(ev), prefill_placement(ev), mlx_chunked_batch(ev)):
        if found:
            out.append(found)
    s = ev.scenario  # the tokens one sequence attends as requested (llama.cpp's padded cells would overstate it)
    shared = getattr(ev.cache, "name", None) == "llama.cpp" and not getattr(s.runtime, "kv_unified", False)
    out += implausible_inputs(s, -(-s.ctx // s.sequences) if shared else s.ctx)
    return tuple(out)
