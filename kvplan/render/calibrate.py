"""Tables and JSON of ``kvplan calibrate``: measured vs fitted rates and the fitted profile fields (formatting only)."""

from __future__ import annotations

from kvplan.render.profiles import JSON_NAMES, JSON_SCHEMA_VERSION
from kvplan.render.tables import Table

# The device fields a calibration fits, in the order they are shown.
FITTED_FIELDS = ("memory_bandwidth", "bandwidth_efficiency", "decode_latency", "compute", "compute_efficiency")


def _work(row) -> str:
    return f"{row.work / 1e9:.3f} GB/token" if row.kind == "decode" else f"{row.work / 1e12:.2f} TFLOP"


def rows_table(calibration) -> Table:
    """Every bench row: what it measured, what the fitted profile predicts, and the residual."""
    table = Table("Measured vs fitted", ["source", "model", "test", "work", "measured t/s", "fitted t/s",
                                        "residual"], key_columns=3)
    for r in calibration.table:
        table.add(f"{r.source}:{r.line}", r.model_type, r.test, _work(r), f"{r.measured_tokens_per_s:.2f}",
                  f"{r.fitted_tokens_per_s:.2f}", f"{r.error * 100:+.1f} %")
    table.notes.append("residual = (fitted − measured) / measured; decode work = bytes read per token, "
                       "prefill work = FLOPs of the row")
    return table


def fields_table(device: dict, sources: dict) -> Table:
    """The fitted device fields with the provenance written to ``sources``."""
    table = Table("Fitted device fields", ["field", "value", "source"], align=["left", "right", "left"])
    for name in FITTED_FIELDS:
        if name in device:
            table.add(name, device[name], _short(sources.get(name, "from the base device")))
    table.notes.append("sources shortened here; the profile's sources hold them whole")
    return table


def _short(text: str, limit: int = 90) -> str:
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"


def _whole(x: float):
    return int(x) if float(x).is_integer() else x


def calibrate_json(calibration, device, output: str | None, notes: list[str], warnings: list[str]) -> dict:
    """``device``: the validated profile written to ``output``, its figures under the keys and in the base units
    of ``profiles show --format json`` (``ram_bytes``, ``memory_bandwidth_bytes_per_s`` …); ``notes``: how the
    inputs were read (what was recognised, what was fixed), ``warnings``: what ``profiles show`` would warn about
    the written profile. A row's work has its unit in its key: bytes read per token for decode rows, FLOPs for
    prefill rows, the other one null."""
    fields = {JSON_NAMES.get(k, k): v for k, v in device.model_dump(mode="json").items()}
    return {
        "schema_version": JSON_SCHEMA_VERSION,
        "warnings": list(warnings),
        "output": output,
        "device": fields,
        "rows": [{"source": r.source, "line": r.line, "model_type": r.model_type, "test": r.test, "kind": r.kind,
                  "work_bytes_per_token": _whole(r.work) if r.kind == "decode" else None,
                  "work_flops": _whole(r.work) if r.kind == "prefill" else None,
                  "measured_tokens_per_s": r.measured_tokens_per_s,
                  "fitted_tokens_per_s": r.fitted_tokens_per_s, "residual": r.error} for r in calibration.table],
        "notes": notes,
    }
