"""Changes that would make an over-budget configuration fit, each evaluated exactly.

Every change is a :class:`~kvplan.plan.Scenario` edit; its evaluation comes from the
same engine as the original, so applying it with ``kvplan check`` reproduces it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kvplan.errors import KvplanError
from kvplan.engine.formats import format_from_bits
from kvplan.plan import Evaluation, Scenario, evaluate

KV_BITS_STEPS = (8, 4)
WEIGHT_BITS_STEPS = (8, 4, 3)
WINDOW_STEPS = (8192, 4096, 2048, 1024)


@dataclass(frozen=True)
class Change:
    """One edit to a configuration: ``kind`` names the knob, ``value`` its new setting."""

    kind: str  # ctx | kv_bits | weight_bits | sequences | sliding_window | model
    value: object
    evaluation: Evaluation

    @property
    def fits(self) -> bool:
        return self.evaluation.fits


def candidate_changes(ev: Evaluation, smaller_models: Iterable = ()) -> list[Change]:
    """Every single-knob change worth showing for ``ev``, unranked."""
    s = ev.scenario
    changes: list[Change] = []
    if ev.max_ctx is not None and 0 < ev.max_ctx < s.ctx:
        changes.append(Change("ctx", ev.max_ctx, evaluate(s.with_changes(ctx=ev.max_ctx))))
    current_bits = max(ev.layout.k_format.bits, ev.layout.v_format.bits)
    for bits in KV_BITS_STEPS:
        if bits < current_bits:
            fmt = format_from_bits(bits)
            try:
                changes.append(Change("kv_bits", bits, evaluate(s.with_changes(k_format=fmt, v_format=fmt))))
            except KvplanError:  # a runtime (kvplan.runtimes) without this cache type, or refusing it
                continue
    if s.sequences > 1:
        fitting = [n for n in range(s.sequences - 1, 0, -1) if evaluate(s.with_changes(sequences=n)).fits]
        if fitting:
            n = fitting[0]
            changes.append(Change("sequences", n, evaluate(s.with_changes(sequences=n))))
    for bits in WEIGHT_BITS_STEPS:
        if bits < ev.weight_bits:
            changes.append(Change("weight_bits", bits, evaluate(s.with_changes(weight_bits=bits))))
    windows = [w for w in WINDOW_STEPS if w < s.ctx and ev.layout.global_layers > 0]
    for window in windows:
        try:
            trial = evaluate(s.with_changes(sliding_window=window))
        except KvplanError:  # a runtime (kvplan.runtimes) with no way to add a window
            break
        if trial.fits:
            changes.append(Change("sliding_window", window, trial))
            break
    for model in smaller_models:
        changes.append(Change("model", model.name, evaluate(s.with_changes(model=model))))
    return changes


def changes_to_fit(ev: Evaluation, smaller_models: Iterable = ()) -> list[Change]:
    """Changes that make ``ev`` fit, ranked: most headroom first, then fastest decode."""
    fitting = [c for c in candidate_changes(ev, smaller_models) if c.fits]
    return sorted(fitting, key=lambda c: (-c.evaluation.headroom_bytes, -c.evaluation.decode_tokens_per_s))


def smaller_models(model, candidates: Iterable) -> list:
    """Models of ``model``'s ``family`` with fewer parameters, largest first (none without a family).

    ``candidates`` are :class:`~kvplan.profiles.spec.Model` profiles (e.g. every built-in one);
    the model itself and duplicates by name are skipped.
    """
    if not model.family:
        return []
    seen: dict[str, object] = {}
    for other in candidates:
        if other.family == model.family and other.params < model.params and other.name != model.name:
            seen.setdefault(other.name, other)
    return sorted(seen.values(), key=lambda m: -m.params)
