"""How every command words the max context and the model's trained context.

``max_ctx`` is the largest context that fits in memory (the contract's definition); the
trained context is shown beside it and never caps it. One wording for check, fit,
compare, gate and report.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kvplan.plan.results import Evaluation


def _trained(ev: Evaluation) -> int | None:
    return ev.max_ctx_trained


def _per_sequence(ev: Evaluation, ctx: int) -> int:
    """The tokens one sequence attends at ``ctx``: llama.cpp splits ``-c`` over ``-np`` (``n_ctx_seq``),
    and that, not ``-c``, is what the trained context is compared with."""
    return ev.tokens_per_sequence(ctx)


def max_ctx_text(ev: Evaluation) -> str:
    """Long form: ``5,016 tokens (model trained to 4,096)``; ``unbounded: …``; ``none: …``.

    Under llama.cpp with parallel sequences ``max_ctx`` is ``-c``, the total:
    ``4,608 tokens of -c (2,304 per sequence; model trained to 4,096)``."""
    trained = _trained(ev)
    suffix = f" (model trained to {trained:,})" if trained else ""
    if ev.max_ctx is not None:
        per_sequence = _per_sequence(ev, ev.max_ctx)
        if per_sequence != ev.max_ctx:
            trained_text = f"; model trained to {trained:,}" if trained else ""
            return f"{ev.max_ctx:,} tokens of -c ({per_sequence:,} per sequence{trained_text})"
    if ev.max_ctx is None:
        if ev.max_ctx_limited_by == "weights":
            if getattr(ev, "process", None) is not None:  # the process's baseline and repacked copy count too
                return "none: the weights and the llama.cpp process (heap, libraries, repacked copy) exceed the budget"
            return "none: the weights alone exceed the budget"
        if ev.max_ctx_limited_by == "pinned_prefix":
            return (f"none: the weights and the {ev.scenario.pinned_prefix_tokens:,}-token pinned prefix exceed "
                    "the budget")
        if ev.max_ctx_limited_by != "unbounded":  # a runtime's preallocated cache (transformers' max_cache_len)
            return f"none: the {_limit_tokens(ev)}cache preallocated for {ev.max_ctx_limited_by} does not fit"
        windows = getattr(ev.cache, "windows", ()) or ()
        stop = max((w for w, _ in windows), default=0)
        where = f" at {stop:,} tokens" if stop else ""
        return f"unbounded: every layer windowed, the cache stops growing{where}{suffix}"
    if ev.max_ctx_limited_by not in ("memory", "weights", "unbounded", "pinned_prefix"):  # a fixed-length cache
        trained_text = f"; model trained to {trained:,}" if trained else ""
        return f"{ev.max_ctx:,} tokens (= {ev.max_ctx_limited_by}{trained_text})"
    return f"{ev.max_ctx:,} tokens{suffix}"


def contiguous_text(ev: Evaluation) -> str | None:
    """Where a larger context fits again past one that does not (llama.cpp's compute buffer is smaller at some
    larger ``-c``): ``91,904 tokens (91,905 does not fit, yet 94,976 does: …)``; None where max context is it."""
    if ev.max_ctx is None or ev.max_ctx_contiguous is None or ev.max_ctx_contiguous == ev.max_ctx:
        return None
    first_gap = ev.max_ctx_contiguous + 1
    return (f"{ev.max_ctx_contiguous:,} tokens ({first_gap:,} does not fit, yet {ev.max_ctx:,} does: llama.cpp's "
            "compute buffer is smaller at some larger -c)")


def _limit_tokens(ev: Evaluation) -> str:
    limit = getattr(ev.cache, "ctx_limit", None)
    return f"{limit[0]:,}-token " if limit else ""


def max_ctx_cell(ev: Evaluation) -> str:
    """Short form for a table cell: ``5,016``, ``5,016 (trained 4,096)`` past the trained context,
    ``unbounded (trained 32,768)``, ``none``; under llama.cpp with parallel sequences
    ``4,608 (2,304 per sequence)`` (the trained context compared with the per-sequence tokens)."""
    trained = _trained(ev)
    if ev.max_ctx is None:
        if ev.max_ctx_limited_by != "unbounded":
            return "none"
        return f"unbounded (trained {trained:,})" if trained else "unbounded"
    per_sequence = _per_sequence(ev, ev.max_ctx)
    beyond = bool(trained) and per_sequence > trained
    if per_sequence != ev.max_ctx:  # llama.cpp: -c over -np sequences
        return f"{ev.max_ctx:,} ({per_sequence:,} per sequence" + (f"; trained {trained:,})" if beyond else ")")
    if beyond:
        return f"{ev.max_ctx:,} (trained {trained:,})"
    return f"{ev.max_ctx:,}"


def beyond_trained_note(ev: Evaluation) -> str | None:
    """A note when the context asked about is past the model's trained context, else None."""
    if not ev.ctx_beyond_trained:
        return None
    s = ev.scenario
    tokens = ev.ctx_per_sequence_tokens
    what = f"{tokens:,}" if tokens == s.ctx else f"-c {s.ctx:,} ({tokens:,} per sequence)"
    if s.pinned_prefix_tokens:
        what += f" after the {s.pinned_prefix_tokens:,}-token pinned prefix ({ev.attended_tokens:,} attended)"
    return (f"{s.model.name} was trained to {ev.max_ctx_trained:,} tokens; {what} needs a context extension "
            "(RoPE scaling)")


def at_target_text(ev: Evaluation) -> str:
    """The largest context that also decodes at the target rate: ``4,096 tokens``, or why there is none."""
    if ev.max_ctx_at_target is not None:
        return f"{ev.max_ctx_at_target:,} tokens"
    if ev.target_reach == "unreachable":
        return "none: even an empty cache decodes slower"
    if ev.target_reach == "every context":
        return "unbounded: the cache stops growing while decoding at least this fast"
    return "none: no context fits"
