"""What ``kvplan check`` shows: the JSON document and the tables of one evaluation."""

from __future__ import annotations

from typing import TYPE_CHECKING

import math

from kvplan.render import fmt
from kvplan.render import maxctx as maxctx_render
from kvplan.render import policy as policy_render
from kvplan.render import runtime as runtime_render
from kvplan.render.tables import Table

if TYPE_CHECKING:
    from kvplan.advice import Change
    from kvplan.plan import Evaluation

JSON_SCHEMA_VERSION = 1


def _finite(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else x


def format_json(ev: Evaluation) -> dict:
    s = ev.scenario
    return {
        "schema_version": JSON_SCHEMA_VERSION,
        "device": s.device.name,
        "model": s.model.name,
        "ctx": s.ctx,
        "sequences": s.sequences,
        "pinned_prefix_tokens": s.pinned_prefix_tokens,
        "weight_bits": ev.weight_bits,
        "weights": weights_json(ev),
        "k_format": ev.layout.k_format.name,
        "v_format": ev.layout.v_format.name,
        "kv_bytes_per_token": ev.kv_bytes_per_token,
        "verdict": ev.verdict.value,
        "margin_fraction": s.margin_fraction,
        "memory": memory_json(ev),
        "decode_tokens_per_s": ev.decode_tokens_per_s,
        "decode_tokens_per_s_roofline": ev.decode_tokens_per_s_roofline,
        "mean_decode_tokens_per_s": ev.mean_decode_tokens_per_s,
        "bytes_per_step": ev.bytes_per_step,
        "max_ctx": ev.max_ctx,
        "max_ctx_limited_by": ev.max_ctx_limited_by,
        "max_ctx_trained": ev.max_ctx_trained,
        "ctx_beyond_trained": ev.ctx_beyond_trained,
        "max_ctx_at_target": ev.max_ctx_at_target,
        "target_tokens_per_s": s.target_tokens_per_s,
        "prefill_s": ev.prefill_s,
        "pinned_prefix_recompute_s": ev.pinned_prefix_recompute_s,
        "kv_policy": policy_render.policy_json(ev),
        "runtime": runtime_render.runtime_json(ev),
        "flash": {
            "overflow_bytes": ev.flash.overflow_bytes,
            "swap_in_s": ev.flash.swap_in_s,
            "streamed_decode_tokens_per_s": _finite(ev.flash.streamed_decode_tokens_per_s),
            "slowdown": ev.flash.slowdown,
        },
    }


def weights_json(ev: Evaluation) -> dict:
    """The weights' format: ``type`` (a named format, or null for params × bits), ``bits_per_weight``, and for a
    named format the bytes by tensor kind and by storage type (ggml type names for GGUF)."""
    pricing = ev.weights_pricing
    if pricing is None:
        return {"type": None, "bits_per_weight": ev.weight_bits, "bytes_by_kind": None, "bytes_by_type": None}
    by_kind: dict[str, int] = {}
    by_type: dict[str, int] = {}
    for t in pricing.tensors:
        by_kind[t.kind] = by_kind.get(t.kind, 0) + t.bytes
        by_type[t.dtype] = by_type.get(t.dtype, 0) + t.bytes
    return {"type": ev.scenario.weight_type or ev.scenario.model.weight_type, "bits_per_weight": ev.weight_bits,
            "bytes_by_kind": dict(sorted(by_kind.items())), "bytes_by_type": dict(sorted(by_type.items()))}


def memory_json(ev: Evaluation) -> dict:
    s = ev.scenario
    return {
        "ram_bytes": s.device.ram,
        "os_reserve_bytes": s.os_reserve_in_force_bytes,
        "budget_bytes": ev.budget_bytes,
        "weights_bytes": ev.weights_bytes,
        "weights_read_bytes": ev.weights_read_bytes,
        "kv_bytes": ev.kv_bytes,
        "kv_bytes_per_sequence": ev.kv_bytes_per_sequence,
        "kv_peak_bytes": ev.kv_peak_bytes,
        "pinned_prefix_bytes": ev.pinned_prefix_bytes,
        "overhead_bytes": ev.overhead_bytes,
        "total_bytes": ev.total_bytes,
        "headroom_bytes": ev.headroom_bytes,
        "margin_bytes": ev.margin_bytes,
    }


def change_json(change: Change) -> dict:
    ev = change.evaluation
    return {
        "change": change.kind,
        "value": change.value,
        "verdict": ev.verdict.value,
        "ctx": ev.scenario.ctx,
        "total_bytes": ev.total_bytes,
        "headroom_bytes": ev.headroom_bytes,
        "decode_tokens_per_s": ev.decode_tokens_per_s,
        "max_ctx": ev.max_ctx,
        "max_ctx_limited_by": ev.max_ctx_limited_by,
    }


def describe_change(change: Change) -> str:
    v = change.value
    if change.kind == "model":  # a name: the numeric formats below must not be applied to it
        return f"model {v}"
    return {
        "ctx": lambda: f"context {v:,} tokens",
        "kv_bits": lambda: f"KV cache at {v} bits",
        "weight_bits": lambda: f"weights at {v} bits",
        "sequences": lambda: f"{v} concurrent sequence{'s' if v != 1 else ''}",
        "sliding_window": lambda: f"sliding window of {v:,} tokens on every layer",
    }.get(change.kind, lambda: f"{change.kind} = {v}")()


def _kv_format_label(ev: Evaluation) -> str:
    policy = getattr(ev.layout, "policy", None)
    if policy is not None:
        return f"policy {policy.name}"
    k, v = ev.layout.k_format.name, ev.layout.v_format.name
    return k if k == v else f"K {k} / V {v}"


def memory_table(ev: Evaluation, units: str = "si") -> Table:
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
    shared_ctx = getattr(ev.layout, "name", None) == "llama.cpp"  # -c is the total of the -np sequences
    if s.sequences > 1 and ev.kv_bytes_per_sequence is None:  # llama.cpp --kv-unified: one shared stream
        row(f"KV cache ({_kv_format_label(ev)}, -c {s.ctx:,} in one stream shared by {s.sequences} sequences)",
            ev.kv_bytes)
    elif s.sequences > 1:
        of = (f"1 of {s.sequences} sequences, {ev.ctx_per_sequence_tokens:,} cells of -c {s.ctx:,}"
              if shared_ctx else f"{fmt.n_tokens(s.ctx)}, 1 sequence")
        row(f"KV cache ({_kv_format_label(ev)}, {of})", ev.kv_bytes_per_sequence)
        row(f"KV cache of {s.sequences - 1} more concurrent sequence{'s' if s.sequences > 2 else ''}",
            ev.kv_bytes - ev.kv_bytes_per_sequence)
    else:
        row(f"KV cache ({_kv_format_label(ev)}, {fmt.n_tokens(s.ctx)})", ev.kv_bytes)
    if ev.kv_peak_bytes > ev.kv_bytes:
        row("KV peak right after prefill (views of the prompt tensors)" if runtime_render.runtime_cache(ev)
            else "KV tokens awaiting eviction (peak between passes)", ev.kv_peak_bytes - ev.kv_bytes)
    if s.pinned_prefix_tokens:
        row(f"pinned prefix ({fmt.n_tokens(s.pinned_prefix_tokens)})", ev.pinned_prefix_bytes)
    row("runtime overhead", ev.overhead_bytes)
    row("total", ev.total_bytes, "bold")
    row(f"budget ({fmt.bytes_(s.device.ram, units)} RAM − {fmt.bytes_(s.os_reserve_in_force_bytes, units)} "
        "OS reserve)", b)
    style = {"fit": "green", "tight": "yellow", "over": "red"}[ev.verdict.value]
    row(f"headroom → {ev.verdict.value.upper()}", ev.headroom_bytes, f"bold {style}")
    if ev.verdict.value == "tight":
        t.notes.append(f"tight: headroom under the {fmt.percent(s.margin_fraction)} margin "
                       f"({fmt.bytes_(ev.margin_bytes, units)}) kept for activations and fragmentation")
    return t


def speed_table(ev: Evaluation, units: str = "si") -> Table:
    s, d = ev.scenario, ev.scenario.device
    t = Table("speed and limits", ["figure", "value"])
    t.add("KV bytes per token", f"{ev.kv_bytes_per_token:,} B")
    if ev.layout.windows:
        windows = ", ".join(f"{w:,}" for w, _ in ev.layout.windows)
        t.add("layers (global / windowed)", f"{ev.layout.global_layers} / {ev.layout.windowed_layers} (window {windows})")
    t.add("bytes read per decode step", f"{fmt.bytes_(ev.bytes_per_step, units)}")
    t.add(f"decode at {fmt.n_tokens(s.ctx)} ({fmt.percent(d.bandwidth_efficiency)} of "
          f"{fmt.rate(d.memory_bandwidth, units)})", f"{fmt.per_s(ev.decode_tokens_per_s)} tok/s")
    t.add("decode at roofline (100 % bandwidth)", f"{fmt.per_s(ev.decode_tokens_per_s_roofline)} tok/s")
    t.add(f"mean decode over a generation of {fmt.n_tokens(s.ctx)}", f"{fmt.per_s(ev.mean_decode_tokens_per_s)} tok/s")
    if ev.prefill_s is not None:
        t.add(f"prefill {s.ctx:,} prompt tokens at {d.compute / 1e12:g} TFLOP/s", fmt.seconds(ev.prefill_s))
    if ev.pinned_prefix_recompute_s is not None and s.pinned_prefix_tokens:
        t.add(f"recompute the {s.pinned_prefix_tokens:,}-token pinned prefix instead of keeping it",
              fmt.seconds(ev.pinned_prefix_recompute_s))
    t.add("max context that fits", maxctx_render.max_ctx_text(ev))
    if ev.max_ctx_at_target is not None:
        t.add(f"max context at ≥ {s.target_tokens_per_s:g} tok/s", f"{ev.max_ctx_at_target:,} tokens")
    note = maxctx_render.beyond_trained_note(ev)
    if note:
        t.notes.append(note)
    return t


def flash_table(ev: Evaluation, units: str = "si") -> Table:
    d = ev.scenario.device
    t = Table("if the overflow lives on flash", ["figure", "value"])
    t.add("overflow beyond the budget", fmt.bytes_(ev.flash.overflow_bytes, units))
    t.add(f"swap the cache in at {fmt.rate(d.flash_read, units)}", fmt.seconds(ev.flash.swap_in_s))
    t.add("decode with the overflow streamed from flash",
          f"{fmt.per_s(ev.flash.streamed_decode_tokens_per_s)} tok/s "
          f"({ev.flash.slowdown:.1f}× the time per token)")
    return t


def changes_table(changes: list[Change], units: str = "si") -> Table:
    t = Table("what would make it fit", ["change", "verdict", "headroom", "decode tok/s"])
    for change in changes:
        ev = change.evaluation
        t.add(describe_change(change), ev.verdict.value, fmt.bytes_(ev.headroom_bytes, units),
              fmt.per_s(ev.decode_tokens_per_s))
    if not changes:
        t.add("no single change fits", "", "", "")
    return t


def check_tables(ev: Evaluation, changes: list[Change] | None, units: str = "si") -> list[Table]:
    tables = [memory_table(ev, units), speed_table(ev, units)]
    policy = policy_render.policy_table(ev, units)
    if policy is not None:
        tables.append(policy)
    runtime = runtime_render.runtime_table(ev, units)
    if runtime is not None:
        tables.append(runtime)
    if ev.flash.overflow_bytes:
        tables.append(flash_table(ev, units))
    if changes is not None:
        tables.append(changes_table(changes, units))
    return tables
