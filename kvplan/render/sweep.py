"""What ``kvplan sweep`` shows: CSV (vectorized), JSON rows, and a table of the first and last rows."""

from __future__ import annotations

import math

from kvplan.render import csvfast, csvnum, fmt, rates
from kvplan.render.check import JSON_SCHEMA_VERSION
from kvplan.render.labels import LABELLED_COLUMNS, column_labels
from kvplan.render.tables import Table
from kvplan.render.warnings import words
from kvplan.sweep import NO_MAX_CTX, VERDICTS, SweepColumns

# Columns written as fixed-point decimals in CSV (6 places: µs and 10⁻⁶ tok/s), as in every kvplan CSV.
FLOAT_DECIMALS = csvnum.FLOAT_DECIMALS
CSV_CHUNK_ROWS = 131_072

AGGREGATE = "aggregate_decode_tokens_per_s"
# The written names of SweepColumns fields, where they differ: the cache formats by name, as in
# `check --format json` (the bits alone do not tell int8 from q8_0), in the place of the first release's
# k_bits / v_bits so columns read by position keep theirs.
_RENAMED = {"k_bits": "k_format", "v_bits": "v_format"}


def output_columns(columns: list[str]) -> list[str]:
    """The columns a sweep writes, from :meth:`SweepColumns.columns`: ``k_bits``/``v_bits`` become
    ``k_format``/``v_format`` (written once), and the aggregate decode rate comes after ``kv_policy``."""
    out = []
    for name in columns:
        name = _RENAMED.get(name, name)
        if name not in out:
            out.append(name)
    if AGGREGATE not in out:
        out.insert(out.index("kv_policy") + 1 if "kv_policy" in out else len(out), AGGREGATE)
    return out


def column(cols: SweepColumns, name: str):
    """The values of written column ``name``; the aggregate rate is the per-sequence rate × sequences
    (a decode step reads the weights once for every sequence) unless the sweep gives it; the runtime and KV
    policy labelled (:mod:`kvplan.render.labels`)."""
    if name == AGGREGATE and getattr(cols, AGGREGATE, None) is None:
        return cols.decode_tokens_per_s * cols.sequences
    if name in LABELLED_COLUMNS:
        return column_labels(name, getattr(cols, name))
    return getattr(cols, name)


# Verdict columns: codes indexing VERDICTS, written by name (the offloaded memories' too).
_VERDICT_COLUMNS = ("verdict", "gpu_verdict", "ram_verdict")

# Token columns where NO_MAX_CTX means "none": empty in CSV, null in JSON.
_TOKENS_OR_NONE = ("max_ctx", "max_ctx_trained", "max_ctx_at_target")


def csv_header(columns: list[str]) -> str:
    """The CSV header line of a sweep with ``columns`` (:meth:`SweepColumns.columns`)."""
    return ",".join(output_columns(columns)) + "\n"


def _is_constant(values) -> bool:
    return len(values) > 0 and values.strides == (0,)


def _constant_text(name: str, value) -> str:
    if name in _VERDICT_COLUMNS:
        return VERDICTS[int(value)].value
    if name in _TOKENS_OR_NONE:
        return "" if int(value) == NO_MAX_CTX else str(int(value))
    if name == "weight_bits":
        return csvnum.bits(float(value))
    if isinstance(value, str) or getattr(value, "dtype", None) is not None and value.dtype.kind == "U":
        return str(value)
    if getattr(value, "dtype", None) is not None and value.dtype.kind == "f":
        return "" if not math.isfinite(float(value)) else f"{float(value):.{FLOAT_DECIMALS}f}"
    return str(int(value))


def _field(name: str, values):
    import numpy as np

    n = len(values)
    if _is_constant(values):
        return csvfast.constant_field(_constant_text(name, values[0]), n)
    if name in _VERDICT_COLUMNS:
        lookup = csvfast.text_field([v.value for v in VERDICTS])
        return lookup[np.asarray(values, dtype=np.intp)]
    if name in _TOKENS_OR_NONE:
        return csvfast.int_field(values, empty=values == NO_MAX_CTX)
    if name == "weight_bits":
        distinct, inverse = np.unique(values, return_inverse=True)
        return csvfast.text_field([csvnum.bits(float(v)) for v in distinct])[inverse]
    if values.dtype.kind == "U":
        distinct, inverse = np.unique(values, return_inverse=True)
        return csvfast.text_field(distinct)[inverse]
    if values.dtype.kind == "f":
        return csvfast.fixed_field(values, FLOAT_DECIMALS)
    return csvfast.int_field(values)


def csv_chunks(parts: list[SweepColumns]):
    """Yield (rows, bytes) chunks of CSV for the groups' columns, in order (no header)."""
    for part in parts:
        for start in range(0, len(part), CSV_CHUNK_ROWS):
            chunk = part.take(slice(start, start + CSV_CHUNK_ROWS))
            fields = [_field_reusing(name, chunk) for name in output_columns(chunk.columns())]
            yield len(chunk), csvfast.join_fields(fields)


def _field_reusing(name: str, chunk):
    """The peak is the steady cache for most caches: print that column once, not twice."""
    import numpy as np

    values = column(chunk, name)
    if name == "kv_peak_bytes" and np.array_equal(values, chunk.kv_bytes):
        name, values = "kv_bytes", chunk.kv_bytes
    return _field(name, values)


def _value(name: str, values, i: int):
    v = values[i]
    if name in _VERDICT_COLUMNS:
        return VERDICTS[int(v)].value
    if name in _TOKENS_OR_NONE:
        return None if int(v) == NO_MAX_CTX else int(v)
    if values.dtype.kind == "U":
        return str(v)
    if values.dtype.kind == "f":
        return float(v) if math.isfinite(float(v)) else None
    return int(v)


def json_rows(cols: SweepColumns) -> list[dict]:
    """One dict per row with exact integer bytes (column-wise conversion, then zipped)."""
    names = output_columns(cols.columns())
    columns = []
    for name in names:
        values = column(cols, name)
        if name in _VERDICT_COLUMNS:
            labels = [v.value for v in VERDICTS]
            columns.append([labels[c] for c in values.tolist()])
        elif name in _TOKENS_OR_NONE:
            columns.append([None if c == NO_MAX_CTX else c for c in values.tolist()])
        elif values.dtype.kind == "f":
            columns.append([v if math.isfinite(v) else None for v in values.tolist()])
        else:
            columns.append(values.tolist())
    return [dict(zip(names, row)) for row in zip(*columns)]


JSON_CHUNK_ROWS = 65_536


def json_fields(rows: int, columns: list[str], warnings=()) -> dict:
    """The keys of the sweep's JSON document before ``rows`` (``columns``: :meth:`SweepColumns.columns`)."""
    return {"schema_version": JSON_SCHEMA_VERSION, "rows_count": rows, "columns": output_columns(columns),
            "warnings": words(warnings)}


def json_document(cols: SweepColumns, warnings=()) -> dict:
    """The whole JSON document of a sweep small enough to print indented."""
    return {**json_fields(len(cols), cols.columns(), warnings), "rows": json_rows(cols)}


def json_head(rows: int, columns: list[str], warnings=()) -> bytes:
    """The start of the compact JSON document, up to the opening ``[`` of ``rows``."""
    import json

    return (json.dumps(json_fields(rows, columns, warnings))[:-1] + ', "rows": [').encode()


JSON_TAIL = b"]}\n"


def _json_value_field(name: str, values):
    """ASCII matrix of the JSON text of one column: exact integers, floats as ``repr``, null, strings."""
    import json

    import numpy as np

    n = len(values)
    if name in _VERDICT_COLUMNS:
        return csvfast.text_field([json.dumps(v.value) for v in VERDICTS])[np.asarray(values, dtype=np.intp)]
    if values.dtype.kind == "U":
        if _is_constant(values):
            return csvfast.constant_field(json.dumps(str(values[0])), n)
        distinct, inverse = np.unique(values, return_inverse=True)
        return csvfast.text_field([json.dumps(str(v)) for v in distinct])[inverse]
    if values.dtype.kind == "f":
        if _is_constant(values):
            v = float(values[0])
            return csvfast.constant_field(repr(v) if math.isfinite(v) else "null", n)
        return csvfast.repr_field(values)
    if name in _TOKENS_OR_NONE:
        return csvfast.with_null(csvfast.int_field(values), values == NO_MAX_CTX)
    if _is_constant(values):
        return csvfast.constant_field(str(int(values[0])), n)
    return csvfast.int_field(values)


def json_chunks(parts: list[SweepColumns], chunk_rows: int = JSON_CHUNK_ROWS):
    """Yield (rows, bytes) chunks of the rows of the compact JSON document (between head and tail).

    Each row is exactly what ``json.dumps`` writes for the dict of :func:`json_rows` (keys in
    column order, ``", "`` and ``": "`` separators), rows separated by ``", "``.
    """
    import json

    names = output_columns(parts[0].columns() if parts else SweepColumns.names())
    keys = [json.dumps(name) + ": " for name in names]
    total = sum(len(part) for part in parts)
    written = 0
    for part in parts:
        for start in range(0, len(part), chunk_rows):
            chunk = part.take(slice(start, start + chunk_rows))
            n = len(chunk)
            fields = []
            for i, (name, key) in enumerate(zip(names, keys)):
                fields.append(csvfast.constant_field(("{" if i == 0 else ", ") + key, n))
                fields.append(_json_value_field(name, column(chunk, name)))
            fields.append(csvfast.constant_field("}, ", n))
            data = csvfast.concat_fields(fields)
            written += n
            yield n, data[:-2] if written == total else data


TABLE_COLUMNS = ("device", "model", "runtime", "kv_policy", "ctx", "sequences", "weight_bits", "k_format",
                 "v_format", "kv_bytes", "kv_peak_bytes", "buffers_bytes", "process_bytes", "parts_bytes",
                 "total_bytes", "gpu_total_bytes", "gpu_verdict", "ram_total_bytes", "ram_verdict", "headroom_bytes",
                 "verdict",
                 "decode_tokens_per_s", AGGREGATE, "max_ctx", "max_ctx_at_target")
_TABLE_HEADINGS = ("device", "model", "runtime", "KV policy", "ctx", "seq", "W bits", "K type", "V type", "KV cache",
                   "KV peak", "buffers", "process", "parts", "total", "GPU holds", "GPU", "RAM holds", "RAM",
                   "headroom", "verdict", rates.DECODE, rates.AGGREGATE, "max ctx",
                   "max ctx at target")
_LEFT = ("device", "model", "runtime", "kv_policy", "k_format", "v_format")


# Columns shown once in the title when every row of the sweep has the same value.
_HOISTABLE = ("device", "model", "runtime", "kv_policy", "sequences", "pinned_prefix_tokens", "weight_bits",
              "weight_type", "k_format", "v_format")


def _constant_columns(cols: SweepColumns) -> dict:
    """{column: value} for the hoistable columns that hold one value in every row."""
    import numpy as np

    found = {}
    for name in _HOISTABLE:
        values = column(cols, name)
        if len(values) and (_is_constant(values) or bool(np.all(values == values[0]))):
            found[name] = values[0].item() if hasattr(values[0], "item") else values[0]
    return found


def _fixed_text(fixed: dict) -> str:
    from kvplan.render.labels import NO_POLICY

    parts = []
    if "device" in fixed and "model" in fixed:
        parts.append(f"{fixed['device']} × {fixed['model']}")
    else:
        parts += [f"{name} {fixed[name]}" for name in ("device", "model") if name in fixed]
    if fixed.get("runtime", "ideal") != "ideal":
        parts.append(f"runtime {fixed['runtime']}")
    if fixed.get("kv_policy", NO_POLICY) != NO_POLICY:
        parts.append(f"KV policy {fixed['kv_policy']}")
    if "sequences" in fixed:
        parts.append(f"{fixed['sequences']} sequence{'s' if fixed['sequences'] != 1 else ''}")
    if fixed.get("pinned_prefix_tokens"):
        parts.append(f"{fixed['pinned_prefix_tokens']:,}-token pinned prefix")
    if fixed.get("weight_type") and "weight_bits" in fixed:
        parts.append(f"{fixed['weight_type']} weights ({fixed['weight_bits']:.2f} bits/weight)")
    elif "weight_bits" in fixed:
        parts.append(f"{fmt.bits(fixed['weight_bits'])}-bit weights")
    if fixed.get("k_format") is not None and fixed.get("k_format") == fixed.get("v_format"):
        parts.append(f"{fixed['k_format']} KV cache")
    else:
        parts += [f"{label} {fixed[name]}" for name, label in (("k_format", "keys"), ("v_format", "values"))
                  if name in fixed]
    return ", ".join(parts)


def _hidden(cols: SweepColumns, fixed: dict) -> set:
    """Columns left out of the table: those named in the title, a peak equal to the steady cache in every row,
    max ctx at target without a target, and the aggregate rate when every row runs one sequence."""
    import numpy as np

    hidden = set(fixed)
    if not len(cols) or int(np.max(cols.sequences)) <= 1:
        hidden.add(AGGREGATE)
    if not len(cols) or bool(np.array_equal(cols.kv_peak_bytes, cols.kv_bytes)):
        hidden.add("kv_peak_bytes")
    if not len(cols) or not bool(np.any(cols.buffers_bytes)):
        hidden.add("buffers_bytes")
    if cols.process_bytes is None:
        hidden.add("process_bytes")
    if cols.parts_bytes is None:
        hidden.add("parts_bytes")
    if cols.max_ctx_at_target is None:
        hidden.add("max_ctx_at_target")
    if cols.gpu_total_bytes is None:  # not offloaded: one memory
        hidden.update(("gpu_total_bytes", "gpu_verdict", "ram_total_bytes", "ram_verdict"))
    return hidden


def table(cols: SweepColumns, indices, omitted_after: int | None, omitted: int, units: str = "si",
          title: str = "", target_tokens_per_s: float | None = None, warnings=()) -> Table:
    """Rows ``indices`` of the sweep; a "… N rows omitted" line after position ``omitted_after``.

    Columns with one value in every row (device, model, runtime, policy, sequences, weight bits,
    K/V formats) are named once in the title instead of repeated on every row, so the table stays
    narrow enough for a terminal. The KV peak is a column only where it differs from the steady
    cache (a runtime's one-shot prefill, a policy between evictions): the total counts the peak.
    """
    import numpy as np

    fixed = _constant_columns(cols)
    hidden = _hidden(cols, fixed)
    headings = dict(zip(TABLE_COLUMNS, _TABLE_HEADINGS))
    several = AGGREGATE not in hidden
    headings["decode_tokens_per_s"] = rates.decode_heading(several)
    if target_tokens_per_s:
        per = " per sequence" if several else ""
        headings["max_ctx_at_target"] = f"max ctx ≥ {target_tokens_per_s:g} tok/s{per}"
    shown = [(name, headings[name]) for name in TABLE_COLUMNS if name not in hidden]
    if fixed:
        title = f"{title} — {_fixed_text(fixed)}" if title else _fixed_text(fixed)
    names = [name for name, _ in shown]
    key_columns = sum(1 for name in names if name in ("device", "model")) or 1
    t = Table(title, [heading for _, heading in shown],
              align=["left" if name in _LEFT else "right" for name in names],
              key_columns=key_columns)
    values = {name: column(cols, name) for name in names}  # each labelled once, not once per row
    for position, i in enumerate(indices):
        row = {name: _value(name, values[name], int(i)) for name in names}
        row.setdefault("verdict", _value("verdict", cols.verdict, int(i)))
        style = {"fit": None, "tight": "yellow", "over": "red"}[row["verdict"]]
        text = {name: row[name] for name in names}
        for name in names:
            if name.endswith("_bytes"):
                text[name] = fmt.bytes_(row[name], units)
            elif name in ("ctx", "max_ctx", "max_ctx_at_target"):
                text[name] = fmt.tokens(row[name])
        if text.get("max_ctx") == "—":  # as compare: an unbounded cache is not the same as no room at all
            text["max_ctx"] = "unbounded" if str(cols.max_ctx_limited_by[int(i)]) == "unbounded" else "none"
        if "weight_bits" in text:
            named = str(cols.weight_type[int(i)])
            text["weight_bits"] = f"{named} ({row['weight_bits']:.2f})" if named else fmt.bits(row["weight_bits"])
        for rate in ("decode_tokens_per_s", AGGREGATE):
            if rate in text:
                text[rate] = fmt.per_s(row[rate])
        t.add(*(text[name] for name in names), style=style)
        if omitted_after is not None and position == omitted_after:
            t.add(*(["…"] * len(names)))
    if omitted:
        t.notes.append(f"… {omitted:,} rows omitted between the first and last {len(indices) // 2:,} "
                       f"(--all shows every row)")
    if "kv_peak_bytes" in names:
        from kvplan.render.runtime import PEAK_NOTE

        t.notes.append(PEAK_NOTE)
    if "buffers_bytes" in names:
        t.notes.append("buffers: llama.cpp's compute and output buffers, counted in the total")
    if "process_bytes" in names:
        t.notes.append("process: llama.cpp's own heap and libraries, and a repacked copy of the weights under "
                       "mmap, counted in the total (its resident peak)")
    if "parts_bytes" in names:
        t.notes.append("parts: what is resident beside the model's weights and cache (a draft model, an "
                       "encoder), counted in the total")
    if "gpu_total_bytes" in names:
        t.notes.append("offloaded: GPU / RAM hold each memory's parts, judged against its own budget; the verdict "
                       "is the worse memory's, the headroom the deciding memory's, decode reads each part from its "
                       "memory; total: the resident total (GPU + RAM, or RAM on unified memory)")
    if "weight_bits" in names and bool(np.any(cols.weight_type != "")):
        t.notes.append("W bits: a named weight format with its effective bits per weight in brackets")
    t.notes.extend(rates.warning_notes(warnings))
    return t
