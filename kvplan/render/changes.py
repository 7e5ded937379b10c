"""The changes that would make a configuration fit, as ``check`` and ``fit`` show them.

A change keeping the model and another model are never in one ranking (:class:`kvplan.advice.Advice`);
each change's caveats (codes of :data:`kvplan.advice.CAVEATS`) are a short table cell and a sentence
below the table.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import shlex

from kvplan.render import fmt, rates
from kvplan.render.tables import Table
from kvplan.render.warnings import word

if TYPE_CHECKING:
    from kvplan.plan.results import Change

# Kept in step with kvplan.advice (render does not import advice's functions).
CTX_BEYOND_TRAINED, WINDOW_NOT_TRAINED = "ctx_beyond_trained", "window_not_trained"


def change_json(change: Change) -> dict:
    ev = change.evaluation
    return {
        "change": change.kind,
        "value": change.value,
        "verdict": ev.verdict.value,
        "ctx": ev.scenario.ctx,
        "sequences": ev.scenario.sequences,
        "total_bytes": ev.total_bytes,
        "headroom_bytes": ev.headroom_bytes,
        "decode_tokens_per_s": ev.decode_tokens_per_s,
        "aggregate_decode_tokens_per_s": ev.aggregate_decode_tokens_per_s,
        "max_ctx": ev.max_ctx,
        "max_ctx_limited_by": ev.max_ctx_limited_by,
        "caveats": list(change.caveats),
        "warnings": [word(w) for w in ev.warnings],
    }


def describe_change(change: Change) -> str:
    v = change.value
    if change.kind == "model":  # a name: the numeric formats below must not be applied to it
        return f"model {v}"
    if change.kind == "draft":  # dropped: its weights, cache and buffers freed, no speculative decoding
        return "drop the draft model (no speculative decoding)"
    if change.kind == "ctx" and v == change.evaluation.max_ctx_trained:
        return f"context {v:,} tokens (the trained length)"
    prefix = change.evaluation.scenario.pinned_prefix_tokens
    if change.kind == "ctx" and prefix and v + prefix == change.evaluation.max_ctx_trained:
        return f"context {v:,} tokens (the trained length less the pinned prefix)"
    runtime = getattr(change.evaluation.cache, "name", None)
    if change.kind.startswith("runtime."):  # one of the runtime's own options
        field = change.kind.removeprefix("runtime.")
        shown = "on" if v is True else "off" if v is False else f"{v:,}" if isinstance(v, int) else v
        return f"{runtime} {field} {shown}" + RUNTIME_OPTION_WORDS.get(field, "")
    if change.kind == "sequences" and runtime == "ollama":
        return f"{v} parallel slot{'s' if v != 1 else ''} (OLLAMA_NUM_PARALLEL)"
    return {
        "ctx": lambda: f"context {v:,} tokens",
        "kv_bits": lambda: f"KV cache at {v} bits",
        "weight_bits": lambda: f"weights at {v} bits",
        "weight_type": lambda: f"weights in {v} ({change.evaluation.weight_bits:.2f} bits/weight)",
        "sequences": lambda: f"{v} concurrent sequence{'s' if v != 1 else ''}",
        "sliding_window": lambda: f"sliding window of {v:,} tokens on every layer",
        "images": lambda: f"{v} image{'s' if v != 1 else ''}" + (" (no vision encoder loaded)" if v == 0 else ""),
        "audio": lambda: f"{v} audio clip{'s' if v != 1 else ''}" + (" (no audio encoder loaded)" if v == 0 else ""),
        "n_cpu_moe": lambda: f"offload experts: the first {v} layers' expert stacks in host RAM (llama.cpp n-cpu-moe)",
        "n_gpu_layers": lambda: (f"{v} layers on the GPU (llama.cpp -ngl {v}: the output layer and the last "
                                 f"{max(v - 1, 0)} repeating layers)" if v else "no layer on the GPU (llama.cpp -ngl 0)"),
        "stream_experts": lambda: f"stream the expert stacks of all {v} layers from flash",
        "app_limit": lambda: (f"the {v} per-app memory limit (iOS: ship the increased-memory-limit entitlement; "
                              f"budget {change.evaluation.budget_bytes / 1e9:.2f} GB)"),
    }.get(change.kind, lambda: f"{change.kind} = {v}")()


# what a runtime option suggested by fit does, after its name and value
RUNTIME_OPTION_WORDS = {
    "ubatch": " (-ub: a smaller compute buffer, slower prefill)",
    "num_batch": " (-b/-ub: a smaller compute buffer, slower prefill)",
    "kv_cache_type": " (OLLAMA_KV_CACHE_TYPE)",
    "max_kv_size": " (a RotatingKVCache on every layer: the oldest tokens are dropped)",
    "past_present_share_buffer": " (one buffer of max_length for past and present: no step holds both)",
    "dtype_override": " (--dtype-override: the cache in half the bytes of fp32)",
    "quantize_kv_cache": " (--quantize_kv_cache: an int8 cache with per-token scales)",
}


def caveat_cell(change: Change) -> str:
    """Short: ``past trained 4,096``, ``window not trained``."""
    words = []
    for code in change.caveats:
        if code == CTX_BEYOND_TRAINED:
            words.append(f"past trained {change.evaluation.max_ctx_trained:,}")
        elif code == WINDOW_NOT_TRAINED:
            words.append("window not trained")
        else:
            words.append(code)
    return "; ".join(words)


def caveat_notes(change: Change) -> list[str]:
    """The sentence behind each caveat cell."""
    ev, model = change.evaluation, change.evaluation.scenario.model
    notes = []
    for code in change.caveats:
        if code == CTX_BEYOND_TRAINED:
            notes.append(f"past trained {ev.max_ctx_trained:,}: {model.name} was trained to "
                         f"{ev.max_ctx_trained:,} tokens; a longer context needs a context extension (RoPE scaling) "
                         "and its quality is not what the model card reports")
        elif code == WINDOW_NOT_TRAINED:
            if getattr(model, "sliding_window", None):
                notes.append(f"window not trained: {model.name} has layers trained with full attention; a window "
                             "on them drops the tokens it was trained to attend (quality untested)")
            else:
                notes.append(f"window not trained: {model.name} was not trained with a sliding window; it drops "
                             "the tokens the model was trained to attend (quality untested)")
    return notes


def changes_table(changes: list[Change], units: str = "si", title: str = "what would make it fit",
                  numbered: bool = False, commands: list[list[str]] | None = None,
                  empty: str = "no single change fits") -> Table:
    """One row per change: verdict, headroom, decode rate (per sequence, with the aggregate beside it when
    any configuration runs several sequences) and, when any change has one, a caveat column."""
    several = any(c.evaluation.scenario.sequences > 1 for c in changes)
    caveats = any(c.caveats for c in changes)
    columns = ["#"] * numbered + ["change", "verdict", "headroom", rates.decode_heading(several)] + \
        [rates.AGGREGATE] * several + ["caveat"] * caveats
    align = ["right"] * numbered + ["left", "left", "right", "right"] + ["right"] * several + ["left"] * caveats
    t = Table(title, columns, align=align, key_columns=1 + numbered)
    for rank, change in enumerate(changes, 1):
        ev = change.evaluation
        t.add(*[rank] * numbered, describe_change(change), ev.verdict.value, fmt.bytes_(ev.headroom_bytes, units),
              fmt.per_s(ev.decode_tokens_per_s), *[fmt.per_s(ev.aggregate_decode_tokens_per_s)] * several,
              *[caveat_cell(change)] * caveats)
        for note in caveat_notes(change):
            if note not in t.notes:
                t.notes.append(note)
    if not changes:
        t.add(*[""] * numbered, empty, *[""] * (len(columns) - 1 - numbered))
    if commands:
        t.notes.append("apply a change with:")
        t.notes.extend(f"{rank}. {shlex.join(argv)}" for rank, argv in enumerate(commands, 1))
    return t
