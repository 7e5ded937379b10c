"""What ``kvplan compare`` shows: one row per device × model, and the verdict matrix."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvplan.render.labels import NO_POLICY, policy_label, runtime_label
from kvplan.render import fmt, rates
from kvplan.render.check import JSON_SCHEMA_VERSION
from kvplan.render.csvnum import bits as bits_text, fixed
from kvplan.render.maxctx import beyond_trained_note, max_ctx_cell
from kvplan.render.sweep import output_columns
from kvplan.render.tables import Table, to_csv
from kvplan.render.warnings import word, words
from kvplan.sweep import SweepColumns

if TYPE_CHECKING:
    from kvplan.plan.results import Evaluation

# sweep's columns, in sweep's order (one list for both commands: a row of each for the same point reads the same);
# max_ctx_at_target, last, only with a decode target
CSV_COLUMNS = output_columns(SweepColumns.names())
_AT_TARGET = "max_ctx_at_target"
_PROCESS = "process_bytes"
_PARTS = "parts_bytes"


def columns_of(evaluations: list[list[Evaluation]]) -> list[str]:
    """The CSV columns (and the first keys of a JSON row): ``max_ctx_at_target`` only with a decode target,
    ``process_bytes`` only where a cell runs under llama.cpp, ``parts_bytes`` only where a cell has resident
    parts (as sweep writes them)."""
    first = evaluations[0][0].scenario if evaluations and evaluations[0] else None
    target = first is not None and first.target_tokens_per_s
    process = any(ev.process is not None for row in evaluations for ev in row)
    parts = any(ev.parts for row in evaluations for ev in row)
    offloaded = any(ev.offload is not None for row in evaluations for ev in row)
    return [c for c in CSV_COLUMNS if (c != _AT_TARGET or target) and (c != _PROCESS or process)
            and (c != _PARTS or parts) and (c not in _OFFLOAD or offloaded)]


# each memory of an offloaded configuration, as sweep writes them (columns only where some cell offloads)
_OFFLOAD = ("gpu_total_bytes", "gpu_budget_bytes", "gpu_headroom_bytes", "gpu_verdict", "ram_total_bytes",
            "ram_headroom_bytes", "ram_verdict", "flash_bytes")


def _offload_row(ev: Evaluation) -> dict:
    """The ``gpu_*`` / ``ram_*`` / ``flash_bytes`` values of a cell (no GPU memory where it does not offload)."""
    o = ev.offload
    if o is None:
        return {"gpu_total_bytes": 0, "gpu_budget_bytes": 0, "gpu_headroom_bytes": 0, "gpu_verdict": "fit",
                "ram_total_bytes": ev.total_bytes, "ram_headroom_bytes": ev.headroom_bytes,
                "ram_verdict": ev.verdict.value, "flash_bytes": 0}
    mem = {m.memory: m for m in o.memories}
    return {"gpu_total_bytes": mem["gpu"].total_bytes, "gpu_budget_bytes": mem["gpu"].budget_bytes,
            "gpu_headroom_bytes": mem["gpu"].headroom_bytes, "gpu_verdict": mem["gpu"].verdict.value,
            "ram_total_bytes": mem["ram"].total_bytes, "ram_headroom_bytes": mem["ram"].headroom_bytes,
            "ram_verdict": mem["ram"].verdict.value,
            "flash_bytes": mem["flash"].total_bytes if "flash" in mem else 0}


def weight_type_of(ev: Evaluation) -> str:
    """The named weight format priced tensor by tensor, as the user or the profile wrote it (as sweep's
    ``weight_type``); empty for params × bits or a size the profile states."""
    if ev.weights_pricing is None:
        return ""
    s = ev.scenario
    return s.weight_type or getattr(s.model, "weight_type", None) or ""


def _row(ev: Evaluation) -> dict:
    s = ev.scenario
    return {
        "device": s.device.name, "model": s.model.name, "runtime": runtime_label(s.runtime),
        "kv_policy": policy_label(ev.cache), "ctx": s.ctx, "sequences": s.sequences,
        "pinned_prefix_tokens": s.pinned_prefix_tokens, "weight_bits": ev.weight_bits,
        "k_format": ev.cache.k_format.name, "v_format": ev.cache.v_format.name,
        "kv_bytes_per_token": ev.kv_bytes_per_token, "kv_bytes": ev.kv_bytes, "kv_peak_bytes": ev.kv_peak_bytes,
        "pinned_prefix_bytes": ev.pinned_prefix_bytes, "weights_bytes": ev.weights_bytes,
        "overhead_bytes": ev.overhead_bytes, "total_bytes": ev.total_bytes, "budget_bytes": ev.budget_bytes,
        "headroom_bytes": ev.headroom_bytes, "verdict": ev.verdict.value,
        "decode_tokens_per_s": ev.decode_tokens_per_s,
        "aggregate_decode_tokens_per_s": ev.aggregate_decode_tokens_per_s, "max_ctx": ev.max_ctx,
        "max_ctx_limited_by": ev.max_ctx_limited_by, "max_ctx_trained": ev.max_ctx_trained,
        "ctx_beyond_trained": ev.ctx_beyond_trained, "max_ctx_at_target": ev.max_ctx_at_target,
        "prefill_s": ev.prefill_s,
        "buffers_bytes": ev.buffers_bytes, "weight_type": weight_type_of(ev),
        # under llama.cpp the process's baseline and repacked copy, in total_bytes (a column only there)
        "process_bytes": ev.process_bytes,
        "parts_bytes": ev.parts_bytes,  # the resident parts (a draft model, an encoder), in total_bytes
        **_offload_row(ev),
    }


def compare_json(evaluations: list[list[Evaluation]]) -> dict:
    first = evaluations[0][0].scenario if evaluations and evaluations[0] else None
    cells = [ev for row in evaluations for ev in row]
    columns = columns_of(evaluations)
    return {
        "schema_version": JSON_SCHEMA_VERSION,
        "ctx": first.ctx if first else None,
        "devices": [row[0].scenario.device.name for row in evaluations if row],
        "models": list(dict.fromkeys(ev.scenario.model.name for ev in evaluations[0])) if evaluations else [],
        "runtimes": list(dict.fromkeys(runtime_label(ev.scenario.runtime) for ev in cells)),
        "target_tokens_per_s": first.target_tokens_per_s if first else None,
        "rows": [_json_row(ev, columns) for ev in cells],
        "warnings": words(rates.warnings_of(cells)),
    }


def _json_row(ev: Evaluation, columns: list[str]) -> dict:
    """The CSV columns in their order, then what CSV has no place for (``ctx_beyond_trained``, ``warnings``)."""
    row = _row(ev)
    return {**{c: row[c] for c in columns}, "ctx_beyond_trained": row["ctx_beyond_trained"],
            "warnings": [word(w) for w in ev.warnings]}


def compare_csv(evaluations: list[list[Evaluation]]) -> str:
    """CSV rows in the number formats of every kvplan CSV (:mod:`kvplan.render.csvnum`)."""
    columns = columns_of(evaluations)
    rows = [_row(ev) for row in evaluations for ev in row]
    for r in rows:
        r["weight_bits"] = bits_text(r["weight_bits"])
        for decimal in ("decode_tokens_per_s", "aggregate_decode_tokens_per_s", "prefill_s"):
            r[decimal] = fixed(r[decimal])
    return to_csv(columns, [["" if r[c] is None else r[c] for c in columns] for r in rows])


def compare_tables(evaluations: list[list[Evaluation]], units: str = "si") -> list[Table]:
    cells = [ev for row in evaluations for ev in row]
    if not cells:
        return [Table("nothing to compare", ["device", "model"])]
    s = cells[0].scenario
    target = s.target_tokens_per_s
    runtimes = [runtime_label(ev.scenario.runtime) for ev in cells]
    policies = [policy_label(ev.cache) for ev in cells]
    # One runtime / policy for every cell: named in the title (the ideal formula and no policy go unsaid);
    # else a column. The KV peak is a column only where some cell's peak differs from its steady cache, the
    # buffers only where some cell has them (as in sweep's table).
    runtime_column, policy_column = len(set(runtimes)) > 1, len(set(policies)) > 1
    peak_column = any(ev.kv_peak_bytes != ev.kv_bytes for ev in cells)
    buffers_column = any(ev.buffers_bytes for ev in cells)
    process_column = any(ev.process is not None for ev in cells)
    parts_column = any(ev.parts for ev in cells)
    several = s.sequences > 1  # one --sequences for every cell
    columns = ["device", "model"] + ["runtime"] * runtime_column + ["KV policy"] * policy_column + \
        ["verdict", "KV cache"] + ["KV peak"] * peak_column + ["buffers"] * buffers_column + \
        ["process"] * process_column + ["parts"] * parts_column + ["total", "headroom", rates.decode_heading(several)] + [rates.AGGREGATE] * several + ["max ctx"]
    if target:
        columns.append(f"max ctx ≥ {target:g} tok/s")
    extra = (f", {s.sequences} sequences" if s.sequences > 1 else "") + \
        (f", {s.pinned_prefix_tokens:,}-token pinned prefix" if s.pinned_prefix_tokens else "") + \
        (f", runtime {runtimes[0]}" if not runtime_column and runtimes[0] != "ideal" else "") + \
        (f", KV policy {policies[0]}" if not policy_column and policies[0] != NO_POLICY else "")
    left = 3 + runtime_column + policy_column
    t = Table(f"compare at {fmt.n_tokens(s.ctx)}{extra}", columns,
              align=["left"] * left + ["right"] * (len(columns) - left), key_columns=2)
    for ev, runtime, policy in zip(cells, runtimes, policies):
        style = {"fit": "green", "tight": "yellow", "over": "red"}[ev.verdict.value]
        cells_text = [ev.scenario.device.name, ev.scenario.model.name] + [runtime] * runtime_column + \
            [policy] * policy_column + [ev.verdict.value, fmt.bytes_(ev.kv_bytes, units)] + \
            [fmt.bytes_(ev.kv_peak_bytes, units)] * peak_column + \
            [fmt.bytes_(ev.buffers_bytes, units)] * buffers_column + \
            [fmt.bytes_(ev.process_bytes, units)] * process_column + \
            [fmt.bytes_(ev.parts_bytes, units)] * parts_column + \
            [fmt.bytes_(ev.total_bytes, units), fmt.bytes_(ev.headroom_bytes, units),
             fmt.per_s(ev.decode_tokens_per_s)] + [fmt.per_s(ev.aggregate_decode_tokens_per_s)] * several + \
            [_max_ctx(ev)]
        if target:
            cells_text.append(fmt.tokens(ev.max_ctx_at_target))
        t.add(*cells_text, style=style)
        note = beyond_trained_note(ev)
        if note and note not in t.notes:
            t.notes.append(note)
    if peak_column:
        from kvplan.render.runtime import PEAK_NOTE

        t.notes.append(PEAK_NOTE)
    if buffers_column:
        t.notes.append("buffers: llama.cpp's compute and output buffers, counted in the total")
    if parts_column:
        t.notes.append("parts: what is resident beside the model's weights and cache (a draft model, an encoder), "
                       "counted in the total")
    t.notes.extend(rates.warning_notes(rates.warnings_of(cells)))
    tables = [t]
    if len(evaluations) > 1 and len(evaluations[0]) > 1:
        models = [ev.scenario.model.name + (f" · {runtime_label(ev.scenario.runtime)}" if runtime_column else "")
                  for ev in evaluations[0]]
        m = Table("verdict and headroom (devices × models" + (" · runtimes)" if runtime_column else ")"),
                  ["device", *models])
        for row in evaluations:
            m.add(row[0].scenario.device.name,
                  *(f"{ev.verdict.value} {fmt.bytes_(ev.headroom_bytes, units)}" for ev in row))
        tables.append(m)
    return tables


def _max_ctx(ev: Evaluation) -> str:
    return max_ctx_cell(ev)
