"""The warnings a sweep reports: those of each group's largest point, evaluated once with the scalar engine.

The vectorized sweep computes figures, not warnings; a warning (a window the common runtimes ignore,
a context far past the trained one, an implausible device figure) depends on the group's settings and
grows with the context and the sequences, so the largest point of each group carries it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kvplan.plan.facts import WarningFact


def sweep_warnings(bases, ctx_values, seq_values) -> list[WarningFact]:
    """Every distinct warning of the groups ``bases`` at their largest context and number of sequences (facts:
    :mod:`kvplan.render.warnings` words them)."""
    from kvplan.errors import KvplanError
    from kvplan.plan import evaluate

    if not len(ctx_values) or not len(seq_values):
        return []
    found: dict[WarningFact, None] = {}
    for base in bases:
        try:
            ev = evaluate(base.with_changes(ctx=int(max(ctx_values)), sequences=int(max(seq_values))))
        except KvplanError:  # the vectorized sweep already refused what the scalar engine refuses
            continue
        found.update(dict.fromkeys(ev.warnings))
    return list(found)
