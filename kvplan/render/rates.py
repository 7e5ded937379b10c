"""How fit, compare, sweep, gate and report word decode rates with concurrent sequences, and gather warnings
(facts, worded by :mod:`kvplan.render.warnings`).

``decode_tokens_per_s`` is one sequence's rate; with ``-n`` sequences a decode step reads the
weights once and emits a token for each, so the aggregate is that rate × sequences. A table says
"per sequence" wherever a rate is one sequence's and more than one sequence runs, and shows the
aggregate beside it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from kvplan.render import fmt
from kvplan.render.warnings import word

if TYPE_CHECKING:
    from kvplan.plan.facts import WarningFact
    from kvplan.plan.results import Evaluation

DECODE = "decode tok/s"
DECODE_PER_SEQUENCE = "decode tok/s per sequence"
AGGREGATE = "aggregate tok/s"


def decode_heading(several_sequences: bool) -> str:
    return DECODE_PER_SEQUENCE if several_sequences else DECODE


def rate_text(ev: Evaluation) -> str:
    """``4.2 tok/s``, or ``4.2 tok/s per sequence, 16.8 tok/s over 4 sequences``."""
    n = ev.scenario.sequences
    if n <= 1:
        return f"{fmt.per_s(ev.decode_tokens_per_s)} tok/s"
    return (f"{fmt.per_s(ev.decode_tokens_per_s)} tok/s per sequence, "
            f"{fmt.per_s(ev.aggregate_decode_tokens_per_s)} tok/s over {n} sequences")


def decode_ctx_text(ev: Evaluation) -> str:
    """The context a decode rate is quoted at: the tokens one sequence holds. Under llama.cpp the sequences share
    ``-c`` (3 sequences of -c 8,192 hold 2,816 cells each), so that is not the context asked for."""
    s = ev.scenario
    held = ev.ctx_per_sequence_tokens or s.ctx
    if held == s.ctx:
        return fmt.n_tokens(s.ctx)
    return f"{fmt.n_tokens(held)} (one sequence's share of {s.ctx:,})"


def warnings_of(evaluations: Iterable[Evaluation]) -> list[WarningFact]:
    """Every evaluation's ``warnings``, in order of first appearance, each once (:func:`kvplan.render.warnings.words`
    words them)."""
    return list(dict.fromkeys(w for ev in evaluations for w in ev.warnings))


def warning_notes(warnings: Iterable[WarningFact]) -> list[str]:
    """Table notes for warnings (the JSON ``warnings`` list, worded for a reader), and how to see what a runtime the
    warnings name would allocate."""
    warnings = list(warnings)
    notes = [f"warning: {word(w)}" for w in warnings]
    if any(w.kind == "window_ignored" for w in warnings):
        notes.append("the same command with --runtime llama.cpp prices llama.cpp's own allocation")
    return notes
