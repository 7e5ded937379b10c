"""What ``kvplan fit`` shows, and the ``kvplan check`` command line that reproduces a scenario."""

from __future__ import annotations

from typing import TYPE_CHECKING

import shlex

from kvplan.render import fmt
from kvplan.render import maxctx as maxctx_render
from kvplan.render.check import change_json, describe_change, memory_json
from kvplan.render.tables import Table

if TYPE_CHECKING:
    from kvplan.advice import Change
    from kvplan.plan import Evaluation, Scenario


def command_line(argv: list[str]) -> str:
    return shlex.join(argv)


def fit_json(probe: Evaluation, ev: Evaluation | None, changes: list[Change] | None,
             commands: list[list[str]]) -> dict:
    s = probe.scenario
    document = {
        "device": s.device.name,
        "model": s.model.name,
        "sequences": s.sequences,
        "pinned_prefix_tokens": s.pinned_prefix_tokens,
        "weight_bits": probe.weight_bits,
        "k_format": probe.layout.k_format.name,
        "v_format": probe.layout.v_format.name,
        "kv_bytes_per_token": probe.kv_bytes_per_token,
        "max_ctx": probe.max_ctx,
        "max_ctx_limited_by": probe.max_ctx_limited_by,
        "max_ctx_trained": probe.max_ctx_trained,
        "ctx_beyond_trained": None,
        "target_tokens_per_s": s.target_tokens_per_s,
        "max_ctx_at_target": probe.max_ctx_at_target,
        "ctx": None,
        "verdict": None,
        "memory": None,
        "decode_tokens_per_s": None,
        "changes_to_fit": [],
    }
    if ev is not None:
        document.update(ctx=ev.scenario.ctx, verdict=ev.verdict.value, memory=memory_json(ev),
                        decode_tokens_per_s=ev.decode_tokens_per_s, ctx_beyond_trained=ev.ctx_beyond_trained)
        document["changes_to_fit"] = [{**change_json(c), "check_command": argv}
                                      for c, argv in zip(changes or [], commands)]
    return document


FIT_CSV_COLUMNS = ["rank", "change", "value", "verdict", "headroom_bytes", "decode_tokens_per_s", "check_command"]


def fit_csv_rows(changes: list[Change], commands: list[list[str]]) -> list[list]:
    """One CSV row per ranked change; tokens/s with the sweep CSV's fixed decimals."""
    from kvplan.render.sweep import FLOAT_DECIMALS

    return [[i, c.kind, c.value, c.evaluation.verdict.value, c.evaluation.headroom_bytes,
             f"{c.evaluation.decode_tokens_per_s:.{FLOAT_DECIMALS}f}", command_line(argv)]
            for i, (c, argv) in enumerate(zip(changes, commands), 1)]


def limits_table(probe: Evaluation, ev: Evaluation | None) -> Table:
    s = probe.scenario
    knobs = [f"{fmt.bits(probe.weight_bits)}-bit weights", f"KV {probe.layout.k_format.name}"
             if probe.layout.k_format == probe.layout.v_format
             else f"K {probe.layout.k_format.name} / V {probe.layout.v_format.name}"]
    if s.sequences > 1:
        knobs.append(f"{s.sequences} sequences")
    if s.pinned_prefix_tokens:
        knobs.append(f"{s.pinned_prefix_tokens:,}-token pinned prefix")
    t = Table(f"{s.device.name} × {s.model.name} ({', '.join(knobs)})", ["figure", "value"])
    t.add("largest context that fits", maxctx_render.max_ctx_text(probe))
    if s.target_tokens_per_s:
        at = probe.max_ctx_at_target
        t.add(f"largest that also decodes at ≥ {s.target_tokens_per_s:g} tok/s",
              f"{at:,} tokens" if at is not None else "none: even an empty cache decodes slower")
    if ev is not None:
        t.add(f"at {fmt.n_tokens(ev.scenario.ctx)}",
              f"{ev.verdict.value.upper()}, headroom {fmt.bytes_(ev.headroom_bytes)}, "
              f"{fmt.per_s(ev.decode_tokens_per_s)} tok/s")
        note = maxctx_render.beyond_trained_note(ev)
        if note:
            t.notes.append(note)
    return t


def changes_table(changes: list[Change], commands: list[list[str]], units: str = "si") -> Table:
    """The ranked changes; the `kvplan check` command of each follows the table as a numbered list."""
    t = Table("ranked changes that make it fit (most headroom first)",
              ["#", "change", "verdict", "headroom", "decode tok/s"],
              align=["right", "left", "left", "right", "right"], key_columns=2)
    for rank, change in enumerate(changes, 1):
        ev = change.evaluation
        t.add(rank, describe_change(change), ev.verdict.value, fmt.bytes_(ev.headroom_bytes, units),
              fmt.per_s(ev.decode_tokens_per_s))
    if not changes:
        t.add("", "no single change fits", "", "", "")
    if commands:
        t.notes.append("apply a change with:")
        t.notes.extend(f"{rank}. {command_line(argv)}" for rank, argv in enumerate(commands, 1))
    return t
