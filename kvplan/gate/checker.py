"""Evaluating every configuration of a gate file against its thresholds (pure: no I/O, never stops early)."""

from __future__ import annotations

import time

from kvplan.gate.result import ConfigResult, GateResult, ThresholdResult
from kvplan.gate.spec import GateConfig, GateFile, Thresholds
from kvplan.plan import Evaluation, evaluate


def decode_rate_judged(ev: Evaluation) -> float:
    """The decode rate ``min_decode_tok_s`` judges [tokens/s per sequence]: speculative decoding's when the
    configuration has a draft and an acceptance rate (``Evaluation.speculative``), else the plain decode rate
    (each part read from its memory when offloaded)."""
    return ev.speculative.tokens_per_s if ev.speculative is not None else ev.decode_tokens_per_s


def judge(t: Thresholds, ev: Evaluation) -> tuple[ThresholdResult, ...]:
    """Every threshold in force, in a fixed order, each with its limit and the actual figure."""
    out: list[ThresholdResult] = []

    def at_least(name, unit, limit, actual, fraction=None):
        passed = actual is None or actual >= limit
        out.append(ThresholdResult(name, "min", unit, limit, actual, passed, fraction))

    def at_most(name, unit, limit, actual):
        out.append(ThresholdResult(name, "max", unit, limit, actual, actual <= limit))

    if t.must_fit:
        at_least("must_fit", "bytes", 0, ev.headroom_bytes)
    if t.min_headroom is not None:
        at_least("min_headroom", "bytes", t.min_headroom.limit_bytes(ev.budget_bytes), ev.headroom_bytes,
                 t.min_headroom.fraction)
    if t.min_decode_tok_s is not None:  # with a draft and an acceptance rate: the speculative rate check prints
        at_least("min_decode_tok_s", "tokens_per_s", t.min_decode_tok_s, decode_rate_judged(ev))
    if t.max_total is not None:
        at_most("max_total", "bytes", t.max_total, ev.total_bytes)
    if t.max_weights is not None:
        at_most("max_weights", "bytes", t.max_weights, ev.weights_bytes)
    if t.max_swap_in_s is not None:
        at_most("max_swap_in_s", "s", t.max_swap_in_s, ev.flash.swap_in_s)
    if t.min_max_ctx is not None:
        unbounded = ev.max_ctx_limited_by == "unbounded"
        at_least("min_max_ctx", "tokens", t.min_max_ctx, None if unbounded else ev.max_ctx or 0)
    return tuple(out)


def check_configuration(cfg: GateConfig) -> ConfigResult:
    start = time.perf_counter()
    ev = cfg.evaluation or evaluate(cfg.scenario)  # the loader already evaluated it, once
    results = judge(cfg.thresholds, ev)
    return ConfigResult(cfg.name, cfg.line, ev, results, time.perf_counter() - start)


def check_gate(gate: GateFile) -> GateResult:
    """Evaluate every configuration (all of them, whatever fails)."""
    return GateResult(gate.path, gate.title, tuple(check_configuration(c) for c in gate.configurations))
