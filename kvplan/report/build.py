"""What a design review shows for a file of configurations: summary, assumptions, each configuration, sources."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from kvplan.render import gate as reporters
from kvplan.gate.result import ConfigResult, GateResult
from kvplan.gate.spec import GateConfig, GateFile
from kvplan.render import fmt, rates
from kvplan.render.check import check_tables
from kvplan.render.tables import Table
from kvplan.report.document import Bullets, Heading, Paragraph, Plot, Report, Tables

LEFT_OUT = (
    "Activations, scratch buffers and allocator fragmentation are not computed: they live in the margin.",
    "The KV cache is the ideal closed form (every cached byte counted once, no paging slack) unless a "
    "configuration names a runtime.",
    "Runtime overhead is counted only where the device profile states `runtime_overhead`.",
    "Prefill (time to first token) is not part of the decode rate; decode is memory-bound: every token "
    "reads the weights (less the input-embedding table when untied) and the whole cache once.",
    "Thermal throttling, other apps' memory beyond the OS reserve, and storage wear are not modelled.",
    "Flash figures are sequential-read class figures; a real phone measures lower.",
)


def _key(name: str, used: set[str]) -> str:
    base = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.") or "configuration"
    key, n = base, 2
    while key.lower() in used:
        key, n = f"{base}-{n}", n + 1
    used.add(key.lower())
    return key


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def build_report(gates: GateFile | Sequence[GateFile], results: GateResult | Sequence[GateResult],
                 units: str = "si", plots: bool = True, version: str = "",
                 changes: dict[int, list] | Sequence[dict[int, list]] | None = None) -> Report:
    """The whole report, in file order; ``plots`` adds one plot block per configuration.

    ``gates`` and ``results``: one loaded file and its result, or several (one report for all of them).
    ``changes``: the changes that would make each over-budget configuration fit, by index in its file
    (:func:`kvplan.advice.changes_to_fit`, computed by the caller: the report only lays them out), one
    mapping per file."""
    gates = [gates] if isinstance(gates, GateFile) else list(gates)
    results = [results] if isinstance(results, GateResult) else list(results)
    if changes is None or isinstance(changes, dict):
        changes = [changes or {}] + [{}] * (len(gates) - 1)
    labels = reporters.file_labels([g.path for g in gates])
    names = [labels[g.path] for g in gates]
    several = len(gates) > 1
    title = gates[0].title if not several else None
    report = Report(title or f"Design review: {', '.join(names)}")
    add = report.blocks.append
    add(Heading(1, report.title))
    configurations = [c for g in gates for c in g.configurations]
    outcomes = [c for r in results for c in r.configurations]
    explicit = any(c.explicit_thresholds for c in configurations)
    n = len(outcomes)
    line = (f"{_plural(n, 'configuration')} from {_listed(f'`{name}`' for name in names)}, evaluated with kvplan "
            f"{version}").rstrip() + "."
    if explicit:
        failed = sum(not c.passed for c in outcomes)
        line += f" Thresholds: {n - failed} of {n} pass" + (f"; {failed} fail." if failed else ".")
    add(Paragraph(line))
    add(Heading(2, "Summary"))
    for gate, result in zip(gates, results):
        summary = reporters.summary_table(result, units)
        summary.title = "" if not several else labels[gate.path] + (f": {gate.title}" if gate.title else "")
        if not explicit:
            _drop_column(summary, "result")
        add(Tables((summary,)))
    _assumptions(report, configurations, units)
    used: set[str] = set()
    for gate, result, by_index in zip(gates, results, changes):
        where = f" ({labels[gate.path]})" if several else ""
        for index, (cfg, res) in enumerate(zip(gate.configurations, result.configurations)):
            _configuration(report, cfg, res, units, plots, _key(cfg.name, used), by_index.get(index), where)
    _sources(report, configurations)
    return report


def _listed(items) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    items = list(items)
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def _drop_column(t: Table, column: str) -> None:
    i = t.columns.index(column)
    t.columns.pop(i)
    for row in t.rows:
        row.pop(i)
    if t.align:
        t.align.pop(i)


def _assumptions(report: Report, configurations: list[GateConfig], units: str) -> None:
    add = report.blocks.append
    add(Heading(2, "Assumptions"))
    devices = Table("", ["device", "RAM", "OS reserve", "budget", "memory bandwidth", "bandwidth efficiency",
                         "flash read", "runtime overhead"])
    seen: set[tuple] = set()
    for c in configurations:
        s, d = c.scenario, c.scenario.device
        reserve = s.os_reserve_in_force_bytes
        row = (d.name, reserve, s.budget_bytes)
        if row in seen:
            continue
        seen.add(row)
        devices.add(d.name, fmt.bytes_(d.ram, units), fmt.bytes_(reserve, units), fmt.bytes_(s.budget_bytes, units),
                    fmt.rate(d.memory_bandwidth, units), fmt.percent(d.bandwidth_efficiency),
                    fmt.rate(d.flash_read, units), fmt.bytes_(d.runtime_overhead, units))
    add(Tables((devices,)))
    margins = sorted({c.scenario.margin_fraction for c in configurations})
    shown = ", ".join(fmt.percent(m) for m in margins)
    add(Bullets((
        "Budget = RAM − OS reserve (the device's figure unless a configuration sets `os_reserve`), or the "
        "device's per-app memory limit where that is smaller (iOS; a configuration's `app_limit` picks which).",
        f"Margin: a configuration whose headroom is under {shown} of its budget is `tight` — it fits, "
        "but the margin is what activations, fragmentation and the OS's memory killer use.",
        "Decode: time per token = bytes read per token (weights read + the whole cache at the stated context) "
        "÷ (memory bandwidth × bandwidth efficiency) + the device's fixed latency per step (0 where the profile "
        "gives none: the pure bandwidth model); tokens/s is its inverse. With several concurrent sequences that is the rate of each; "
        "a step reads the weights once for all of them, so the aggregate is that rate × sequences.",
        *LEFT_OUT,
    )))


def _configuration(report: Report, cfg: GateConfig, res: ConfigResult, units: str, plots: bool, key: str,
                   changes: list | None, file_name: str = "") -> None:
    add = report.blocks.append
    ev, s = res.evaluation, cfg.scenario
    add(Heading(2, f"Configuration: {cfg.name}{file_name}"))
    where = f" (line {cfg.line})" if cfg.line else ""
    add(Paragraph(f"{s.device.name} × {s.model.name} at {fmt.n_tokens(s.ctx)}{where}: **{ev.verdict.value}**, "
                  f"{fmt.bytes_(ev.total_bytes, units)} of a {fmt.bytes_(ev.budget_bytes, units)} budget, "
                  f"{rates.rate_text(ev)} at {rates.decode_ctx_text(ev)}."))
    if cfg.explicit_thresholds:
        per = s.sequences > 1
        t = Table("thresholds", ["threshold", "limit", "actual", "missed by", "result"],
                  align=["left", "right", "right", "right", "left"])
        for th in res.thresholds:
            t.add(th.name, reporters.limit_text(th, units, per), reporters.actual_text(th, units, per),
                  reporters.miss_text(th, units, per), "pass" if th.passed else "FAIL")
        add(Tables((t,)))
    add(Tables(tuple(check_tables(ev, changes, units))))
    if plots:
        add(Plot(key, f"memory and decode speed against context for {cfg.name}", ev))


def _sources(report: Report, configurations: list[GateConfig]) -> None:
    add = report.blocks.append
    add(Heading(2, "Sources"))
    add(Paragraph("Where every device and model figure comes from, as each profile states it."))
    for kind, attr in (("Devices", "device"), ("Models", "model")):
        add(Heading(3, kind))
        seen: set[str] = set()
        for c in configurations:
            resolved = getattr(c, attr)
            key = str(resolved.path)
            if key in seen:
                continue
            seen.add(key)
            profile = resolved.profile
            add(Heading(4, f"{profile.name} ({resolved.origin}: {_shown_path(resolved)})"))
            items = tuple(f"`{field}`: {text}" for field, text in profile.sources.items())
            add(Bullets(items or ("no sources given in the profile",)))


def _shown_path(resolved) -> str:
    path = Path(resolved.path)
    if resolved.origin == "builtin":
        return f"{path.parent.name}/{path.name}"
    return str(path)
