"""Gate results as terminal tables, JSON, JUnit XML and Markdown, chosen by name (see :data:`REPORTERS`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from kvplan.gate.result import ConfigResult, GateResult, ThresholdResult
from kvplan.render import fmt, rates
from kvplan.render.check import JSON_SCHEMA_VERSION as CHECK_SCHEMA_VERSION, format_json
from kvplan.render.maxctx import beyond_trained_note, max_ctx_cell
from kvplan.render.tables import Table, to_markdown
from kvplan.render.warnings import word, words

JSON_SCHEMA_VERSION = CHECK_SCHEMA_VERSION


# --- human text for one threshold ---

def quantity(unit: str, value: float | int | None, units: str = "si", per_sequence: bool = False) -> str:
    """``per_sequence``: a rate of one of several concurrent sequences (min_decode_tok_s is per sequence)."""
    if value is None:
        return "unbounded"
    if unit == "bytes":
        return fmt.bytes_(value, units)
    if unit == "tokens_per_s":
        return f"{fmt.per_s(value)} tok/s" + (" per sequence" if per_sequence else "")
    if unit == "s":
        return fmt.seconds(value)
    return fmt.n_tokens(int(value))


def limit_text(t: ThresholdResult, units: str = "si", per_sequence: bool = False) -> str:
    if t.name == "must_fit":
        return "fit (headroom ≥ 0)"
    sign = "≥" if t.kind == "min" else "≤"
    share = f" ({fmt.percent(t.limit_fraction)} of budget)" if t.limit_fraction is not None else ""
    return f"{sign} {quantity(t.unit, t.limit, units, per_sequence)}{share}"


def actual_text(t: ThresholdResult, units: str = "si", per_sequence: bool = False) -> str:
    if t.name == "must_fit":
        return f"{'fits' if t.passed else 'over'} (headroom {quantity('bytes', t.actual, units)})"
    return quantity(t.unit, t.actual, units, per_sequence)


def miss_text(t: ThresholdResult, units: str = "si", per_sequence: bool = False) -> str:
    if t.miss is None:
        return ""
    if t.name == "must_fit":
        return f"{quantity('bytes', t.miss, units)} over budget"
    return f"{quantity(t.unit, t.miss, units, per_sequence)} {'short' if t.kind == 'min' else 'over'}"


def failure_message(t: ThresholdResult, units: str = "si", per_sequence: bool = False) -> str:
    return (f"{t.name}: {actual_text(t, units, per_sequence)}, needs {limit_text(t, units, per_sequence)} — "
            f"{miss_text(t, units, per_sequence)}")


def several_sequences(c: ConfigResult) -> bool:
    return c.evaluation.scenario.sequences > 1


def _status(c: ConfigResult) -> str:
    return "PASS" if c.passed else "FAIL"


# --- tables (terminal and Markdown) ---

def file_labels(paths: Sequence[str]) -> dict[str, str]:
    """How each gate file is named in titles and suites: its file name, or the path as given where two files
    share one (``a/release.yaml`` and ``b/release.yaml``)."""
    names = [Path(p).name for p in paths]
    return {p: name if names.count(name) == 1 else str(p) for p, name in zip(paths, names)}


def summary_table(result: GateResult, units: str = "si", label: str | None = None) -> Table:
    n, failed = len(result.configurations), len(result.failed)
    label = label or Path(result.path).name
    title = f"kvplan gate {label}: {'PASSED' if result.passed else 'FAILED'} — " \
            f"{n - failed} of {n} configurations pass"
    several = any(several_sequences(c) for c in result.configurations)
    parts = any(c.evaluation.parts for c in result.configurations)  # a draft model, an encoder … beside the model
    columns = ["configuration", "device", "model", "ctx"] + ["seq"] * several + \
        ["verdict"] + ["parts"] * parts + ["total", "headroom", rates.decode_heading(several)] + [rates.AGGREGATE] * several + \
        ["max ctx", "result"]
    t = Table(title, columns, align=["left", "left", "left"] + ["right"] * (len(columns) - 3))
    for c in result.configurations:
        ev, s = c.evaluation, c.evaluation.scenario
        t.add(c.name, s.device.name, s.model.name, f"{s.ctx:,}", *[s.sequences] * several, ev.verdict.value,
              *[fmt.bytes_(ev.parts_bytes, units)] * parts, fmt.bytes_(ev.total_bytes, units), fmt.bytes_(ev.headroom_bytes, units),
              fmt.per_s(ev.decode_tokens_per_s), *[fmt.per_s(ev.aggregate_decode_tokens_per_s)] * several,
              max_ctx_cell(ev), _status(c), style=None if c.passed else "bold red")
        note = beyond_trained_note(ev)
        if note and f"{c.name}: {note}" not in t.notes:
            t.notes.append(f"{c.name}: {note}")
    for c in result.configurations:
        for note in rates.warning_notes(c.evaluation.warnings):
            if f"{c.name}: {note}" not in t.notes:
                t.notes.append(f"{c.name}: {note}")
    return t


def failures_table(result: GateResult, units: str = "si") -> Table:
    t = Table("failing thresholds", ["configuration", "threshold", "limit", "actual", "missed by"],
              align=["left", "left", "right", "right", "right"])
    for c in result.failed:
        for f in c.failures:
            per = several_sequences(c)
            t.add(c.name, f.name, limit_text(f, units, per), actual_text(f, units, per), miss_text(f, units, per),
                  style="red")
    return t


def tables(results: Sequence[GateResult], units: str = "si") -> list[Table]:
    """Per file: the summary, then (when any fails) its failing thresholds."""
    out: list[Table] = []
    labels = file_labels([r.path for r in results])
    for result in results:
        out.append(summary_table(result, units, labels[result.path]))
        if result.failed:
            failures = failures_table(result, units)
            if len(results) > 1:
                failures.title += f" ({labels[result.path]})"
            out.append(failures)
    return out


# --- JSON ---

def threshold_json(t: ThresholdResult) -> dict:
    return {"name": t.name, "kind": t.kind, "unit": t.unit, "limit": t.limit, "limit_fraction": t.limit_fraction,
            "actual": t.actual, "passed": t.passed, "miss": t.miss}


def check_json(c: ConfigResult) -> dict:
    """The `kvplan check --format json` document of a configuration, with the aggregate decode rate."""
    document = format_json(c.evaluation)
    document.setdefault("aggregate_decode_tokens_per_s", c.evaluation.aggregate_decode_tokens_per_s)
    document.setdefault("warnings", [word(w) for w in c.evaluation.warnings])
    return document


def json_document(results: Sequence[GateResult]) -> dict:
    configurations = [(r, c) for r in results for c in r.configurations]
    return {
        "schema_version": JSON_SCHEMA_VERSION,
        "passed": all(r.passed for r in results),
        "configurations_total": len(configurations),
        "configurations_failed": sum(not c.passed for _, c in configurations),
        "files": [{"file": r.path, "title": r.title, "passed": r.passed} for r in results],
        "configurations": [
            {"file": r.path, "name": c.name, "line": c.line, "passed": c.passed,
             "failures": [f.name for f in c.failures],
             "thresholds": [threshold_json(t) for t in c.thresholds],
             "check": check_json(c)}
            for r, c in configurations
        ],
        "warnings": words(rates.warnings_of(c.evaluation for _, c in configurations)),
    }


def to_json(results: Sequence[GateResult], units: str = "si") -> str:
    return json.dumps(json_document(results), indent=2, allow_nan=False) + "\n"


# --- JUnit XML (the subset GitHub, GitLab and Jenkins render) ---

def to_junit(results: Sequence[GateResult], units: str = "si") -> str:
    """One <testsuite> per file, one <testcase> per configuration, one <failure> per failing configuration."""
    import xml.etree.ElementTree as ET

    root = ET.Element("testsuites", name="kvplan gate",
                      tests=str(sum(len(r.configurations) for r in results)),
                      failures=str(sum(len(r.failed) for r in results)), errors="0",
                      time=f"{sum(c.elapsed_s for r in results for c in r.configurations):.6f}")
    labels = file_labels([r.path for r in results])
    for result in results:
        _junit_suite(ET, root, result, units, labels[result.path])
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _junit_suite(ET, root, result: GateResult, units: str, label: str) -> None:
    n, failed = len(result.configurations), len(result.failed)
    elapsed = f"{sum(c.elapsed_s for c in result.configurations):.6f}"
    stem = str(Path(label).with_suffix("")).replace("/", ".").replace("\\", ".")  # a/release.yaml → a.release
    suite = ET.SubElement(root, "testsuite", name=f"kvplan gate {label}", tests=str(n),
                          failures=str(failed), errors="0", skipped="0", time=elapsed)
    for c in result.configurations:
        ev, s = c.evaluation, c.evaluation.scenario
        case = ET.SubElement(suite, "testcase", classname=f"kvplan.gate.{stem}", name=c.name,
                             file=result.path, time=f"{c.elapsed_s:.6f}")
        if c.line:
            case.set("line", str(c.line))
        if not c.passed:
            per = several_sequences(c)
            failure = ET.SubElement(case, "failure", type="threshold",
                                    message="; ".join(failure_message(f, units, per) for f in c.failures))
            failure.text = "\n".join(
                [f"{s.device.name} × {s.model.name} at {fmt.n_tokens(s.ctx)} ({result.path}:{c.line or '?'})"]
                + [failure_message(f, units, per) for f in c.failures]) + "\n"
        out = ET.SubElement(case, "system-out")
        out.text = (f"verdict {ev.verdict.value}; total {fmt.bytes_(ev.total_bytes, units)} of "
                    f"{fmt.bytes_(ev.budget_bytes, units)} budget; headroom {fmt.bytes_(ev.headroom_bytes, units)}; "
                    f"decode {rates.rate_text(ev)}\n" + "".join(f"warning: {word(w)}\n" for w in ev.warnings))


# --- Markdown (for $GITHUB_STEP_SUMMARY and pull requests) ---

def to_markdown_text(results: Sequence[GateResult], units: str = "si") -> str:
    """One section per file."""
    labels = file_labels([r.path for r in results])
    return "\n".join(_markdown_one(r, units, labels[r.path]) for r in results)


def _markdown_one(result: GateResult, units: str, label: str) -> str:
    n, failed = len(result.configurations), len(result.failed)
    mark = "✅" if result.passed else "❌"
    heading = f"## {mark} kvplan gate: {'passed' if result.passed else 'failed'} — " \
              f"{n - failed} of {n} configurations pass (`{label}`)\n"
    if result.title:
        heading += f"\n{result.title}\n"
    summary = summary_table(result, units)
    summary.title = ""
    body = to_markdown([summary])
    if result.failed:
        body += "\n" + to_markdown([failures_table(result, units)], heading_level=3)
    return heading + "\n" + body


REPORTERS = {"json": to_json, "junit": to_junit, "markdown": to_markdown_text}


def render(name: str, results: Sequence[GateResult], units: str = "si") -> str:
    """The report called ``name`` (``json``, ``junit``, ``markdown``) of one or more files, as text."""
    return REPORTERS[name](results, units)
