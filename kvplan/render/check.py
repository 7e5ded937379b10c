"""What ``kvplan check`` shows: the JSON document and the tables of one evaluation."""

from __future__ import annotations

from typing import TYPE_CHECKING

import math

from kvplan.knob_table import KNOBS
from kvplan.render import fmt, rates
from kvplan.render import maxctx as maxctx_render
from kvplan.render import parts as parts_render
from kvplan.render import placement as placement_render
from kvplan.render import policy as policy_render
from kvplan.render import runtime as runtime_render
from kvplan.render.tables import Table
from kvplan.render.warnings import LLAMACPP_KINDS, word

if TYPE_CHECKING:
    from kvplan.plan.results import Change
    from kvplan.plan.results import Evaluation

JSON_SCHEMA_VERSION = 1

# JSON key → the Scenario field it echoes as is (kvplan.knob_table: json_key, json_plain); the knobs echoed as a figure
# derived from them (weights, cache formats, memory.os_reserve_bytes, runtime, kv_policy) have their own renderers.
_ECHOED = {k.json_key: k.name for k in KNOBS if k.json_key and k.json_plain}


def _echo(s, key: str):
    return getattr(s, _ECHOED[key])


def _finite(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else x


def format_json(ev: Evaluation, runtime_command: str | None = None) -> dict:
    """The JSON document; ``runtime_command`` is the ``kvplan check … --runtime llama.cpp`` line that prices
    llama.cpp's allocation of the same request (null when llama.cpp would refuse it, or under a runtime)."""
    s = ev.scenario
    return {
        "schema_version": JSON_SCHEMA_VERSION,
        "device": s.device.name,
        "model": s.model.name,
        "ctx": s.ctx,
        "sequences": _echo(s, "sequences"),
        "pinned_prefix_tokens": _echo(s, "pinned_prefix_tokens"),
        "weight_bits": ev.weight_bits,
        "weights": weights_json(ev),
        "k_format": ev.cache.k_format.name,
        "v_format": ev.cache.v_format.name,
        "sliding_window": _echo(s, "sliding_window"),
        "kv_bytes_per_token": ev.kv_bytes_per_token,
        "verdict": ev.verdict.value,
        "margin_fraction": _echo(s, "margin_fraction"),
        "memory": memory_json(ev),
        "decode_tokens_per_s": ev.decode_tokens_per_s,
        "decode_tokens_per_s_roofline": ev.decode_tokens_per_s_roofline,
        "mean_decode_tokens_per_s": ev.mean_decode_tokens_per_s,
        "mean_decode_tokens": ev.mean_decode_tokens,
        "aggregate_decode_tokens_per_s": ev.aggregate_decode_tokens_per_s,
        "decode_latency_s": s.device.decode_latency,
        "bytes_per_step": ev.bytes_per_step,
        "max_ctx": ev.max_ctx,
        "max_ctx_limited_by": ev.max_ctx_limited_by,
        "max_ctx_contiguous": ev.max_ctx_contiguous,
        "max_ctx_trained": ev.max_ctx_trained,
        "ctx_beyond_trained": ev.ctx_beyond_trained,
        "max_ctx_at_target": ev.max_ctx_at_target,
        "target_tokens_per_s": _echo(s, "target_tokens_per_s"),
        "prefill_s": ev.prefill_s,
        "prefill_bound": ev.prefill_bound,
        "prefill_compute_s": ev.prefill_compute_s,
        "prefill_memory_s": ev.prefill_memory_s,
        "prefill_n_ubatch": ev.prefill_n_ubatch,
        "pinned_prefix_recompute_s": ev.pinned_prefix_recompute_s,
        "kv_policy": policy_render.policy_json(ev),
        "runtime": runtime_render.runtime_json(ev),
        "warnings": [word(w) for w in ev.warnings],
        "llamacpp_command": runtime_command,
        **speculative_json(ev),
        "flash": {
            "overflow_bytes": ev.flash.overflow_bytes,
            "steady_overflow_bytes": ev.flash.steady_overflow_bytes,
            "transient": ev.flash.transient,
            "swap_in_s": ev.flash.swap_in_s,
            "overflow_swap_in_s": ev.flash.overflow_swap_in_s,
            "streamed_decode_tokens_per_s": _finite(ev.flash.streamed_decode_tokens_per_s),
            "slowdown": ev.flash.slowdown,
        },
        **({"placement": placement_render.placement_json(ev)} if ev.offload is not None else {}),
    }


def weights_json(ev: Evaluation) -> dict:
    """The weights' format: ``type`` (a named format, or null for params × bits), ``bits_per_weight``, and for a
    named format the bytes by tensor kind and by storage type (ggml type names for GGUF)."""
    pricing = ev.weights_pricing
    if pricing is None:  # params × bits, or a size the profile states (an imported GGUF's exact bytes and type)
        s = ev.scenario
        stated = s.weight_bits is None and s.model.weights is not None
        return {"type": getattr(s.model, "weight_type", None) if stated else None, "bits_per_weight": ev.weight_bits,
                "bytes_by_kind": None, "bytes_by_type": None}
    by_kind: dict[str, int] = {}
    by_type: dict[str, int] = {}
    for t in pricing.tensors:
        by_kind[t.kind] = by_kind.get(t.kind, 0) + t.bytes
        by_type[t.dtype] = by_type.get(t.dtype, 0) + t.bytes
    return {"type": ev.scenario.weight_type or ev.scenario.model.weight_type, "bits_per_weight": ev.weight_bits,
            "bytes_by_kind": dict(sorted(by_kind.items())), "bytes_by_type": dict(sorted(by_type.items()))}


# The words for the per-app limit that caps a budget, by the device field it comes from.
APP_LIMIT_WORDS = {
    "app_memory_limit": "the per-app memory limit",
    "app_memory_limit_increased": "the per-app memory limit with the increased-memory-limit entitlement",
}


def memory_json(ev: Evaluation) -> dict:
    s = ev.scenario
    return {
        "ram_bytes": s.device.ram,
        "os_reserve_bytes": s.os_reserve_in_force_bytes,
        "gpu_working_set_bytes": s.gpu_working_set_in_force_bytes,  # null: unknown (not an Apple GPU's profile)
        "app_limit_bytes": s.app_limit_in_force_bytes,  # null: no fixed per-app cap (the budget is RAM − reserve)
        "budget_bytes": ev.budget_bytes,
        "weights_bytes": ev.weights_bytes,
        "weights_read_bytes": ev.weights_read_bytes,
        "kv_bytes": ev.kv_bytes,
        "kv_bytes_per_sequence": ev.kv_bytes_per_sequence,
        "kv_peak_bytes": ev.kv_peak_bytes,
        **_state_json(ev),
        "pinned_prefix_bytes": ev.pinned_prefix_bytes,
        "overhead_bytes": ev.overhead_bytes,
        "buffers_bytes": ev.buffers_bytes,
        "total_bytes": ev.offload.main_total_bytes if ev.offload is not None else ev.total_bytes,
        "headroom_bytes": ev.headroom_bytes,
        "margin_bytes": ev.margin_bytes,
        **({"process": process_json(ev.process)} if ev.process is not None else {}),
        **parts_render.parts_json(ev),
    }


def process_json(p) -> dict:
    """``memory.process`` under llama.cpp: the build followed, the process's parts, and the verdict's basis."""
    return {
        "llamacpp_build": p.build, "mmap": p.mmap, "repack": p.repack,
        "baseline_anon_bytes": p.baseline_anon_bytes, "baseline_file_bytes": p.baseline_file_bytes,
        "repacked_bytes": p.repacked_bytes, "repack_copy_bytes": p.repack_copy_bytes,
        "staging_bytes": p.staging_bytes, "weights_file_bytes": p.weights_file_bytes,
        "compute_reserved_bytes": p.compute_reserved_bytes,
        "resident_bytes": p.resident_bytes, "reclaimable_bytes": p.reclaimable_bytes,
        "non_reclaimable_bytes": p.non_reclaimable_bytes, "judged": p.judge, "judged_bytes": p.judged_bytes,
    }


def _state_json(ev: Evaluation) -> dict:
    """``state_bytes``: the state layers' part of ``kv_bytes`` (a key only for a model with state layers)."""
    state_of = getattr(ev.cache, "state_bytes", None)
    if state_of is None or not getattr(ev.cache, "state_layers", 0):
        return {}
    return {"state_bytes": int(state_of(ev.scenario.ctx, ev.scenario.sequences))}


def change_json(change: Change) -> dict:
    from kvplan.render.changes import change_json as json_of

    return json_of(change)


def describe_change(change: Change) -> str:
    from kvplan.render.changes import describe_change as described

    return described(change)


def _kv_format_label(ev: Evaluation) -> str:
    policy = getattr(ev.cache, "policy", None)
    if policy is not None:
        return f"policy {policy.name}"
    k, v = ev.cache.k_format.name, ev.cache.v_format.name
    return k if k == v else f"K {k} / V {v}"


def memory_table(ev: Evaluation, units: str = "si", runtime_command: str | None = None) -> Table:
    """The memory breakdown; ``runtime_command`` is the command line that shows llama.cpp's allocation."""
    s = ev.scenario
    b = ev.budget_bytes
    title = f"{s.device.name} × {s.model.name} at {fmt.n_tokens(s.ctx)} — {ev.verdict.value.upper()}"
    t = Table(title, ["memory", "bytes", "size", "of budget"])

    def row(label, n, style=None):
        t.add(label, fmt.exact_bytes(n), fmt.bytes_(n, units), fmt.percent(n / b) if b else "", style=style)

    if ev.weights_pricing is not None:
        name = s.weight_type or s.model.weight_type
        row(f"weights ({name}, {ev.weight_bits:.2f} bits/weight, {s.model.params / 1e9:.2f}B params)", ev.weights_bytes)
    elif s.model.weights is not None and s.weight_bits is None:
        row(f"weights (as stated in the profile, {s.model.params / 1e9:.2f}B params)", ev.weights_bytes)
    else:
        row(f"weights ({fmt.bits(ev.weight_bits)}-bit, {s.model.params / 1e9:.2f}B params)", ev.weights_bytes)
    # concurrency on its own line: one sequence's cache, then the others'
    shared_ctx = getattr(ev.cache, "name", None) == "llama.cpp"  # -c is the total of the -np sequences
    state_of = getattr(ev.cache, "state_bytes", None)
    state = int(state_of(s.ctx, s.sequences)) if state_of is not None else 0  # the state layers' part of the cache
    state_one = state // max(s.sequences, 1)
    if s.sequences > 1 and ev.kv_bytes_per_sequence is None:  # llama.cpp --kv-unified: one shared stream
        row(f"KV cache ({_kv_format_label(ev)}, -c {s.ctx:,} in one stream shared by {s.sequences} sequences)",
            ev.kv_bytes - state)
    elif s.sequences > 1:
        of = (f"1 of {s.sequences} sequences, {ev.ctx_per_sequence_tokens:,} cells of -c {s.ctx:,}"
              if shared_ctx else f"{fmt.n_tokens(s.ctx)}, 1 sequence")
        row(f"KV cache ({_kv_format_label(ev)}, {of})", ev.kv_bytes_per_sequence - state_one)
        row(f"KV cache of {s.sequences - 1} more concurrent sequence{'s' if s.sequences > 2 else ''}",
            ev.kv_bytes - ev.kv_bytes_per_sequence - (state - state_one))
    else:
        row(f"KV cache ({_kv_format_label(ev)}, {fmt.n_tokens(s.ctx)})", ev.kv_bytes - state)
    if state:
        layers = ev.cache.state_layers
        row(f"state of {layers} state layer{'s' if layers > 1 else ''} ({fmt.bytes_(state_one, units)} per sequence"
            f" × {s.sequences}, constant in the context)", state)
    caches, held = runtime_render.prompt_cache_of(ev)  # mlx_lm.server's earlier caches: in the peak, not transient
    if held:
        row(runtime_render.prompt_cache_label(caches), held)
    if ev.kv_peak_bytes - held > ev.kv_bytes:
        peak = fmt.bytes_(ev.kv_peak_bytes, units)
        row(runtime_render.peak_label(ev, peak)
            if runtime_render.runtime_cache(ev)
            else f"+ KV tokens awaiting eviction (peak between passes, {peak} in all)",
            ev.kv_peak_bytes - ev.kv_bytes - held)
    if s.pinned_prefix_tokens:
        row(f"pinned prefix ({fmt.n_tokens(s.pinned_prefix_tokens)})", ev.pinned_prefix_bytes)
    if ev.compute_buffer_bytes:
        row(runtime_render.compute_buffer_label(ev), ev.compute_buffer_bytes)
    if ev.output_buffer_bytes:
        row(runtime_render.output_buffer_label(ev), ev.output_buffer_bytes)
    p = ev.process
    if p is not None:
        row(f"llama.cpp process: heap (vocabulary, server, threads; build {p.build})", p.baseline_anon_bytes)
        row("llama.cpp process: binary and libraries (file pages)", p.baseline_file_bytes)
        if p.repack_copy_bytes:
            row("repacked copy of the weights (CPU backend; the mapped file pages stay resident too)",
                p.repack_copy_bytes)
        if p.staging_bytes:
            row("loader's staging buffer (largest repacked tensor, --no-mmap)", p.staging_bytes)
    for part in ev.parts:  # a draft model, an encoder … (kvplan.plan.parts)
        row(parts_render.part_label(part), part.bytes)
    row("runtime overhead", ev.overhead_bytes)
    row("total (resident peak)" if p is not None else "total",
        ev.offload.main_total_bytes if ev.offload is not None else ev.total_bytes, "bold")
    if p is not None:
        row("  of it reclaimable: the weights' file pages, less the working set a thrashing process keeps"
            if p.mmap else "  of it reclaimable: none (weights loaded into memory, --no-mmap)", p.reclaimable_bytes)
        row("  of it non-reclaimable: what must fit or the process is killed", p.non_reclaimable_bytes)
    available = s.device.ram - s.os_reserve_in_force_bytes
    if s.app_limit_in_force_bytes is not None and s.app_limit_in_force_bytes < available:
        field = s.app_limit_field_in_force
        words = APP_LIMIT_WORDS[field]
        if field == "app_memory_limit" and getattr(s.device, "app_memory_limit_increased", None) is not None:
            words += " without the increased-memory-limit entitlement"
        row(f"budget ({words}; {fmt.bytes_(s.device.ram, units)} RAM − "
            f"{fmt.bytes_(s.os_reserve_in_force_bytes, units)} OS reserve would be {fmt.bytes_(available, units)})",
            b)
    else:
        row(f"budget ({fmt.bytes_(s.device.ram, units)} RAM − {fmt.bytes_(s.os_reserve_in_force_bytes, units)} "
            "OS reserve)", b)
    verdict = ev.offload.ram_verdict if ev.offload is not None else ev.verdict  # the RAM's, beside its headroom
    style = {"fit": "green", "tight": "yellow", "over": "red"}[verdict.value]
    judged = "" if p is None else (" of the non-reclaimable part" if p.judge == "non_reclaimable"
                                    else " of the resident peak")
    room = ev.offload.ram_headroom_bytes if ev.offload is not None else ev.headroom_bytes
    if ev.offload is not None and not ev.offload.unified:  # the GPU has a memory of its own: this is not the verdict
        judged = f"{judged} if every part were in RAM (each memory's own: where each part lives)"
    t.add(f"headroom{judged} → {verdict.value.upper()}", fmt.exact_bytes(room), fmt.bytes_(room, units),
          fmt.percent_beside(room / b, s.margin_fraction) if b else "", style=f"bold {style}")
    if verdict.value == "tight":
        t.notes.append(f"tight: headroom under the {fmt.percent(s.margin_fraction)} margin "
                       f"({fmt.bytes_(ev.margin_bytes, units)}) kept for activations and fragmentation")
    for w in ev.warnings:
        t.notes.append(f"warning: {word(w)}")
    if ev.llamacpp_buffers_bytes:
        t.notes.append(f"llama.cpp would add {fmt.bytes_(ev.llamacpp_buffers_bytes, units)} of compute and output "
                       "buffers (default -ub 512, flash attention on, CPU backend)"
                       + (f"; its whole allocation: {runtime_command}" if runtime_command else ""))
    elif runtime_command and any(w.kind in LLAMACPP_KINDS for w in ev.warnings):
        t.notes.append(f"llama.cpp's whole allocation: {runtime_command}")
    return t


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms"


def _prefill_bound_text(ev: Evaluation, units: str) -> str:
    """Which floor sets the prefill time, with the other one beside it."""
    d = ev.scenario.device
    if ev.prefill_bound == "memory" and ev.offload is not None:
        ubatches = -(-ev.scenario.ctx // ev.prefill_n_ubatch)
        return (f"memory: {ubatches:,} micro-batches, each memory's weights at its bandwidth "
                f"(compute alone {fmt.seconds(ev.prefill_compute_s)})")
    if ev.prefill_bound == "memory":
        ubatches = -(-ev.scenario.ctx // ev.prefill_n_ubatch)
        effective = d.memory_bandwidth * d.bandwidth_efficiency
        return (f"memory: {ubatches:,} × {fmt.bytes_(ev.weights_read_bytes, units)} of weights at "
                f"{fmt.rate(effective, units)} (compute alone {fmt.seconds(ev.prefill_compute_s)})")
    at = (f"{d.compute / 1e12:g} TFLOP/s" if d.compute_efficiency == 1
          else f"{fmt.percent(d.compute_efficiency)} of {d.compute / 1e12:g} TFLOP/s")
    return f"compute: FLOPs at {at} (memory floor {fmt.seconds(ev.prefill_memory_s)})"


def _speculative_rows(t: Table, ev: Evaluation, each: str, units: str) -> None:
    """Speculative decoding's rows (with a draft): the draft's step, the expected tokens, the rate."""
    s = ev.scenario
    if getattr(s, "draft", None) is None:
        return
    spec = ev.speculative
    if spec is None:
        t.add(f"speculative decoding with {s.draft.name}", "needs --acceptance (the draft tokens' acceptance rate)")
        return
    k, a = spec.draft_tokens, spec.acceptance_rate
    t.add(f"draft {s.draft.name}: one decode step ({fmt.bytes_(spec.draft_bytes_per_step, units)} read)",
          _ms(spec.draft_step_s))
    t.add(f"target verification of {k + 1} positions (memory-bound: one decode step)", _ms(spec.verify_step_s))
    t.add(f"expected tokens per step (1 − {a:g}^{k + 1}) / (1 − {a:g}), {k} draft tokens",
          f"{spec.expected_tokens_per_step:.3f}")
    t.add(f"speculative decode{each} ({spec.expected_tokens_per_step:.3f} tokens per {_ms(spec.step_s)} step)",
          f"{fmt.per_s(spec.tokens_per_s)} tok/s ({spec.speedup:.2f}× plain decode)")


def speculative_json(ev: Evaluation) -> dict:
    """``speculative`` (a key only with a draft): the draft knobs and, with an acceptance rate, the figures."""
    s = ev.scenario
    if getattr(s, "draft", None) is None:
        return {}
    spec = ev.speculative
    figures = {} if spec is None else {
        "expected_tokens_per_step": spec.expected_tokens_per_step,
        "draft_bytes_per_step": int(spec.draft_bytes_per_step), "draft_step_s": spec.draft_step_s,
        "verify_step_s": spec.verify_step_s, "step_s": spec.step_s,
        "speculative_decode_tokens_per_s": spec.tokens_per_s, "speedup": spec.speedup}
    return {"speculative": {"draft": s.draft.name, "draft_max_tokens": s.draft_max_tokens,
                            "acceptance_rate": s.acceptance_rate, "draft_kv_type": s.draft_kv_type, **figures}}


def speed_table(ev: Evaluation, units: str = "si") -> Table:
    s, d = ev.scenario, ev.scenario.device
    t = Table("speed and limits", ["figure", "value"])
    t.add("KV bytes per token", f"{ev.kv_bytes_per_token:,} B")
    if ev.cache.windows:
        windows = ", ".join(f"{w:,}" for w, _ in ev.cache.windows)
        t.add("layers (global / windowed)", f"{ev.cache.global_layers} / {ev.cache.windowed_layers} (window {windows})")
    n = s.sequences
    t.add("bytes read per decode step" + (f" (weights once, {n} sequences' caches)" if n > 1 else ""),
          f"{fmt.bytes_(ev.bytes_per_step, units)}")
    latency = d.decode_latency
    if latency:
        t.add("fixed latency per decode step (device decode_latency)", _ms(latency))
    else:
        t.add("fixed latency per decode step", "unknown: pure bandwidth model (0 ms)")
    each = " per sequence" if n > 1 else ""
    plus = f" + {_ms(latency)}/step" if latency else ""
    as_if = " from RAM, as if it fit" if ev.flash.steady_overflow_bytes else ""  # the flash rate is its own row
    if ev.offload is not None:  # the placement table shows each memory's reads and rates
        t.add(f"decode{each} at {rates.decode_ctx_text(ev)}, each part read from its memory "
              f"({fmt.percent(d.bandwidth_efficiency)} of each memory's bandwidth{plus})",
              f"{fmt.per_s(ev.decode_tokens_per_s)} tok/s")
    else:
        t.add(f"decode{each} at {rates.decode_ctx_text(ev)}{as_if} ({fmt.percent(d.bandwidth_efficiency)} of "
              f"{fmt.rate(d.memory_bandwidth, units)}{plus})", f"{fmt.per_s(ev.decode_tokens_per_s)} tok/s")
    if n > 1:
        t.add(f"decode, all {n} sequences together (one step reads the weights once)",
              f"{fmt.per_s(ev.aggregate_decode_tokens_per_s)} tok/s")
    t.add(f"decode{each} at roofline (100 % bandwidth, no latency)",
          f"{fmt.per_s(ev.decode_tokens_per_s_roofline)} tok/s")
    t.add(f"mean decode{each} over a generation of {fmt.n_tokens(ev.mean_decode_tokens or s.ctx)}",
          f"{fmt.per_s(ev.mean_decode_tokens_per_s)} tok/s")
    _speculative_rows(t, ev, each, units)
    if ev.prefill_s is not None:
        t.add(f"time to first token: prefill {fmt.n_tokens(s.ctx)}", fmt.seconds(ev.prefill_s))
        t.add(f"  bound in force (weights read once per {ev.prefill_n_ubatch:,}-token micro-batch)",
              _prefill_bound_text(ev, units))
    if ev.pinned_prefix_recompute_s is not None and s.pinned_prefix_tokens:
        t.add(f"recompute the {s.pinned_prefix_tokens:,}-token pinned prefix instead of keeping it",
              fmt.seconds(ev.pinned_prefix_recompute_s))
    t.add("max context that fits" + (" (every memory within its budget)" if ev.offload is not None else ""),
          maxctx_render.max_ctx_text(ev))
    gap = maxctx_render.contiguous_text(ev)
    if gap:
        t.add("every context fits up to", gap)
    if s.target_tokens_per_s:  # as fit: a target out of reach at any context says so
        per = " per sequence" if s.sequences > 1 else ""
        t.add(f"max context at ≥ {s.target_tokens_per_s:g} tok/s{per}", maxctx_render.at_target_text(ev))
    note = maxctx_render.beyond_trained_note(ev)
    if note:
        t.notes.append(note)
    return t


def flash_table(ev: Evaluation, units: str = "si") -> Table:
    d, f = ev.scenario.device, ev.flash
    t = Table("if the overflow lives on flash", ["figure", "value"])
    rate = fmt.rate(d.flash_read, units)
    if f.transient:
        t.add("overflow at the peak right after prefill (transient)", fmt.bytes_(f.overflow_bytes, units))
        t.add("overflow at the steady state (decode)", "none: the steady state fits")
    elif f.steady_overflow_bytes != f.overflow_bytes:
        t.add("overflow at the peak right after prefill", fmt.bytes_(f.overflow_bytes, units))
        t.add("overflow at the steady state (decode)", fmt.bytes_(f.steady_overflow_bytes, units))
    else:
        t.add("overflow beyond the budget", fmt.bytes_(f.overflow_bytes, units))
    if not f.transient:  # a transient peak is never swapped back: it is freed by the first decode step
        t.add(f"read the overflow back from flash at {rate}", fmt.seconds(f.overflow_swap_in_s))
    t.add(f"read the whole KV cache ({fmt.bytes_(ev.kv_bytes + ev.pinned_prefix_bytes, units)}) back at {rate}",
          fmt.seconds(f.swap_in_s))
    if f.transient:
        t.add("decode (steady state in RAM, nothing streamed)", f"{fmt.per_s(f.streamed_decode_tokens_per_s)} tok/s")
        t.notes.append("the peak lasts from the end of prefill to the first decode step; a runtime that "
                       "cannot hold it fails there (out of memory) or pages it out once")
    else:
        t.add("decode with the steady overflow streamed from flash every step",
              f"{fmt.per_s(f.streamed_decode_tokens_per_s)} tok/s ({f.slowdown:.1f}× the time per token)")
    return t


def changes_table(changes: list[Change], units: str = "si") -> Table:
    """The changes that keep the model, ranked (kvplan.advice.judge), with their caveats."""
    from kvplan.render.changes import changes_table as table

    return table(changes, units)


def check_tables(ev: Evaluation, changes: list[Change] | None, units: str = "si",
                 runtime_command: str | None = None) -> list[Table]:
    tables = [memory_table(ev, units, runtime_command), speed_table(ev, units)]
    placement = placement_render.placement_table(ev, units)
    if placement is not None:
        tables.append(placement)
    policy = policy_render.policy_table(ev, units)
    if policy is not None:
        tables.append(policy)
    runtime = runtime_render.runtime_table(ev, units)
    if runtime is not None:
        tables.append(runtime)
    if ev.flash.overflow_bytes and ev.offload is None:  # offloaded: the placement table says what is streamed
        tables.append(flash_table(ev, units))
    if changes is not None:
        tables.append(changes_table(changes, units))
    return tables
