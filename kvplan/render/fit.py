"""What ``kvplan fit`` shows, and the ``kvplan check`` command line that reproduces a scenario."""

from __future__ import annotations

from typing import TYPE_CHECKING

import shlex

from kvplan.render import fmt, rates
from kvplan.render import maxctx as maxctx_render
from kvplan.render.changes import caveat_cell, change_json, changes_table as _changes_table
from kvplan.render.check import JSON_SCHEMA_VERSION, memory_json
from kvplan.render.csvnum import fixed
from kvplan.render.tables import Table
from kvplan.render.warnings import words

if TYPE_CHECKING:
    from kvplan.plan.results import Advice, Change
    from kvplan.plan.results import Evaluation


def command_line(argv: list[str]) -> str:
    return shlex.join(argv)


def shown_evaluations(probe: Evaluation, ev: Evaluation | None, advice: Advice | None) -> list[Evaluation]:
    """The evaluations fit's output shows: the configuration (or the probe without --ctx) and every change."""
    changes = [] if advice is None else [*advice.keep_model, *advice.other_models]
    return [probe if ev is None else ev] + [c.evaluation for c in changes]


def fit_json(probe: Evaluation, ev: Evaluation | None, advice: Advice | None,
             commands: list[list[str]], model_commands: list[list[str]] | None = None) -> dict:
    """``commands`` apply ``advice.keep_model`` in order, ``model_commands`` ``advice.other_models``."""
    s = probe.scenario
    document = {
        "schema_version": JSON_SCHEMA_VERSION,
        "device": s.device.name,
        "model": s.model.name,
        "sequences": s.sequences,
        "pinned_prefix_tokens": s.pinned_prefix_tokens,
        "weight_bits": probe.weight_bits,
        "k_format": probe.cache.k_format.name,
        "v_format": probe.cache.v_format.name,
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
        "aggregate_decode_tokens_per_s": None,
        "changes_to_fit": [],
        "other_models_that_fit": [],
        "warnings": words(rates.warnings_of(shown_evaluations(probe, ev, advice))),
    }
    if ev is not None:
        document.update(ctx=ev.scenario.ctx, verdict=ev.verdict.value, memory=memory_json(ev),
                        decode_tokens_per_s=ev.decode_tokens_per_s,
                        aggregate_decode_tokens_per_s=ev.aggregate_decode_tokens_per_s,
                        ctx_beyond_trained=ev.ctx_beyond_trained)
    if advice is not None:
        document["changes_to_fit"] = [{**change_json(c), "check_command": argv}
                                      for c, argv in zip(advice.keep_model, commands)]
        document["other_models_that_fit"] = [{**change_json(c), "check_command": argv}
                                             for c, argv in zip(advice.other_models, model_commands or [])]
    return document


# rank 0 is the configuration as given (change "none"); the changes follow, ranked within their section.
FIT_CSV_COLUMNS = ["rank", "change", "value", "verdict", "headroom_bytes", "decode_tokens_per_s", "check_command",
                   # added later, at the end so columns read by position keep their place
                   "section", "sequences", "aggregate_decode_tokens_per_s", "caveats"]


def fit_csv_rows(ev: Evaluation, advice: Advice | None, commands: list[list[str]],
                 model_commands: list[list[str]], given: list[str]) -> list[list]:
    """One row for the configuration as given (``given``: its check command), then one per change."""

    def row(rank, kind, value, e: Evaluation, argv, section, caveats=""):
        return [rank, kind, value, e.verdict.value, e.headroom_bytes, fixed(e.decode_tokens_per_s),
                command_line(argv), section, e.scenario.sequences, fixed(e.aggregate_decode_tokens_per_s), caveats]

    rows = [row(0, "none", "", ev, given, "as_given")]
    if advice is not None:
        for section, changes, argvs in (("keep_model", advice.keep_model, commands),
                                        ("other_model", advice.other_models, model_commands)):
            rows += [row(i, c.kind, c.value, c.evaluation, argv, section, ";".join(c.caveats))
                     for i, (c, argv) in enumerate(zip(changes, argvs), 1)]
    return rows


def limits_table(probe: Evaluation, ev: Evaluation | None, units: str = "si") -> Table:
    s = probe.scenario
    knobs = [f"{fmt.bits(probe.weight_bits)}-bit weights", f"KV {probe.cache.k_format.name}"
             if probe.cache.k_format == probe.cache.v_format
             else f"K {probe.cache.k_format.name} / V {probe.cache.v_format.name}"]
    if s.sequences > 1:
        knobs.append(f"{s.sequences} sequences")
    if s.pinned_prefix_tokens:
        knobs.append(f"{s.pinned_prefix_tokens:,}-token pinned prefix")
    t = Table(f"{s.device.name} × {s.model.name} ({', '.join(knobs)})", ["figure", "value"])
    t.add("largest context that fits", maxctx_render.max_ctx_text(probe))
    if s.target_tokens_per_s:
        per = " per sequence" if s.sequences > 1 else ""
        t.add(f"largest that also decodes at ≥ {s.target_tokens_per_s:g} tok/s{per}",
              maxctx_render.at_target_text(probe))
    if ev is not None:
        t.add(f"at {fmt.n_tokens(ev.scenario.ctx)}",
              f"{ev.verdict.value.upper()}, headroom {fmt.bytes_(ev.headroom_bytes, units)}, {rates.rate_text(ev)}")
        note = maxctx_render.beyond_trained_note(ev)
        if note:
            t.notes.append(note)
    if ev is None:  # with --ctx the memory table below carries the warnings
        t.notes.extend(rates.warning_notes(probe.warnings))
    return t


def changes_table(changes: list[Change], commands: list[list[str]], units: str = "si",
                  model_name: str | None = None) -> Table:
    """The changes that keep the model, ranked; the `kvplan check` command of each follows the table as a
    numbered list."""
    keep = f" keeping {model_name}" if model_name else ""
    return _changes_table(changes, units, f"ranked changes{keep} that make it fit (fewest caveats, then most "
                          "headroom; of one kind, the least lossy first)", numbered=True, commands=commands)


def other_models_table(changes: list[Change], commands: list[list[str]], units: str = "si") -> Table:
    """Smaller models of the family that fit: a different model, so not ranked with the changes above."""
    several = any(c.evaluation.scenario.sequences > 1 for c in changes)
    caveats = any(c.caveats for c in changes)
    columns = ["#", "model", "params", "verdict", "headroom", rates.decode_heading(several)] + \
        [rates.AGGREGATE] * several + ["caveat"] * caveats
    t = Table("a different model that fits (a smaller one of the same family; not a change to this model)",
              columns, align=["right", "left", "right", "left", "right", "right"] + ["right"] * several
              + ["left"] * caveats, key_columns=2)
    for rank, change in enumerate(changes, 1):
        e = change.evaluation
        t.add(rank, change.value, f"{e.scenario.model.params / 1e9:.2f}B", e.verdict.value,
              fmt.bytes_(e.headroom_bytes, units), fmt.per_s(e.decode_tokens_per_s),
              *[fmt.per_s(e.aggregate_decode_tokens_per_s)] * several, *[caveat_cell(change)] * caveats)
    if commands:
        t.notes.append("check one with:")
        t.notes.extend(f"{rank}. {command_line(argv)}" for rank, argv in enumerate(commands, 1))
    return t
