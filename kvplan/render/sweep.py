"""What ``kvplan sweep`` shows: CSV (vectorized), JSON rows, and a table of the first and last rows."""

from __future__ import annotations

import math

from kvplan.render import csvfast, fmt
from kvplan.render.tables import Table
from kvplan.sweep import NO_MAX_CTX, VERDICTS, SweepColumns

# Columns written as fixed-point decimals in CSV (6 places: µs and 10⁻⁶ tok/s).
FLOAT_DECIMALS = 6
CSV_CHUNK_ROWS = 131_072


# Token columns where NO_MAX_CTX means "none": empty in CSV, null in JSON.
_TOKENS_OR_NONE = ("max_ctx", "max_ctx_at_target")


def csv_header(columns: list[str]) -> str:
    """The CSV header line of a sweep with ``columns`` (:meth:`SweepColumns.columns`)."""
    return ",".join(columns) + "\n"


def _is_constant(values) -> bool:
    return len(values) > 0 and values.strides == (0,)


def _constant_text(name: str, value) -> str:
    if name == "verdict":
        return VERDICTS[int(value)].value
    if name in _TOKENS_OR_NONE:
        return "" if int(value) == NO_MAX_CTX else str(int(value))
    if name == "weight_bits":
        return f"{float(value):g}"
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
    if name == "verdict":
        lookup = csvfast.text_field([v.value for v in VERDICTS])
        return lookup[np.asarray(values, dtype=np.intp)]
    if name in _TOKENS_OR_NONE:
        return csvfast.int_field(values, empty=values == NO_MAX_CTX)
    if name == "weight_bits":
        distinct, inverse = np.unique(values, return_inverse=True)
        return csvfast.text_field([f"{v:g}" for v in distinct])[inverse]
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
            fields = [_field_reusing(name, chunk) for name in chunk.columns()]
            yield len(chunk), csvfast.join_fields(fields)


def _field_reusing(name: str, chunk):
    """The peak is the steady cache for most caches: print that column once, not twice."""
    import numpy as np

    values = getattr(chunk, name)
    if name == "kv_peak_bytes" and np.array_equal(values, chunk.kv_bytes):
        name, values = "kv_bytes", chunk.kv_bytes
    return _field(name, values)


def _value(name: str, values, i: int):
    v = values[i]
    if name == "verdict":
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
    names = cols.columns()
    columns = []
    for name in names:
        values = getattr(cols, name)
        if name == "verdict":
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


def json_head(rows: int, columns: list[str]) -> bytes:
    """The start of the compact JSON document, up to the opening ``[`` of ``rows``."""
    import json

    return (json.dumps({"rows_count": rows, "columns": columns})[:-1] + ', "rows": [').encode()


JSON_TAIL = b"]}\n"


def _json_value_field(name: str, values):
    """ASCII matrix of the JSON text of one column: exact integers, floats as ``repr``, null, strings."""
    import json

    import numpy as np

    n = len(values)
    if name == "verdict":
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

    names = parts[0].columns() if parts else SweepColumns.names()
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
                fields.append(_json_value_field(name, getattr(chunk, name)))
            fields.append(csvfast.constant_field("}, ", n))
            data = csvfast.concat_fields(fields)
            written += n
            yield n, data[:-2] if written == total else data


TABLE_COLUMNS = ("device", "model", "runtime", "kv_policy", "ctx", "sequences", "weight_bits", "k_format",
                 "v_format", "kv_bytes", "kv_peak_bytes", "total_bytes", "headroom_bytes", "verdict",
                 "decode_tokens_per_s", "max_ctx", "max_ctx_at_target")
_TABLE_HEADINGS = ("device", "model", "runtime", "KV policy", "ctx", "seq", "W bits", "K type", "V type", "KV cache",
                   "KV peak", "total", "headroom", "verdict", "decode tok/s", "max ctx", "max ctx at target")
_LEFT = ("device", "model", "runtime", "kv_policy", "k_format", "v_format")


# Columns shown once in the title when every row of the sweep has the same value.
_HOISTABLE = ("device", "model", "runtime", "kv_policy", "sequences", "weight_bits", "k_format", "v_format")


def _constant_columns(cols: SweepColumns) -> dict:
    """{column: value} for the hoistable columns that hold one value in every row."""
    import numpy as np

    found = {}
    for name in _HOISTABLE:
        values = getattr(cols, name)
        if len(values) and (_is_constant(values) or bool(np.all(values == values[0]))):
            found[name] = values[0].item() if hasattr(values[0], "item") else values[0]
    return found


def _fixed_text(fixed: dict) -> str:
    from kvplan.caches.labels import NO_POLICY

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
    if "weight_bits" in fixed:
        parts.append(f"{fmt.bits(fixed['weight_bits'])}-bit weights")
    if fixed.get("k_format") is not None and fixed.get("k_format") == fixed.get("v_format"):
        parts.append(f"{fixed['k_format']} KV cache")
    else:
        parts += [f"{label} {fixed[name]}" for name, label in (("k_format", "keys"), ("v_format", "values"))
                  if name in fixed]
    return ", ".join(parts)


def _hidden(cols: SweepColumns, fixed: dict) -> set:
    """Columns left out of the table: those named in the title, a peak equal to the steady cache in every row,
    and max ctx at target without a target."""
    import numpy as np

    hidden = set(fixed)
    if not len(cols) or bool(np.array_equal(cols.kv_peak_bytes, cols.kv_bytes)):
        hidden.add("kv_peak_bytes")
    if cols.max_ctx_at_target is None:
        hidden.add("max_ctx_at_target")
    return hidden


def table(cols: SweepColumns, indices, omitted_after: int | None, omitted: int, units: str = "si",
          title: str = "", target_tokens_per_s: float | None = None) -> Table:
    """Rows ``indices`` of the sweep; a "… N rows omitted" line after position ``omitted_after``.

    Columns with one value in every row (device, model, runtime, policy, sequences, weight bits,
    K/V formats) are named once in the title instead of repeated on every row, so the table stays
    narrow enough for a terminal. The KV peak is a column only where it differs from the steady
    cache (a runtime's one-shot prefill, a policy between evictions): the total counts the peak.
    """
    fixed = _constant_columns(cols)
    hidden = _hidden(cols, fixed)
    headings = dict(zip(TABLE_COLUMNS, _TABLE_HEADINGS))
    if target_tokens_per_s:
        headings["max_ctx_at_target"] = f"max ctx ≥ {target_tokens_per_s:g} tok/s"
    shown = [(name, headings[name]) for name in TABLE_COLUMNS if name not in hidden]
    if fixed:
        title = f"{title} — {_fixed_text(fixed)}" if title else _fixed_text(fixed)
    names = [name for name, _ in shown]
    key_columns = sum(1 for name in names if name in ("device", "model")) or 1
    t = Table(title, [heading for _, heading in shown],
              align=["left" if name in _LEFT else "right" for name in names],
              key_columns=key_columns)
    for position, i in enumerate(indices):
        row = {name: _value(name, getattr(cols, name), int(i)) for name in names}
        row.setdefault("verdict", _value("verdict", cols.verdict, int(i)))
        style = {"fit": None, "tight": "yellow", "over": "red"}[row["verdict"]]
        text = {name: row[name] for name in names}
        for name in names:
            if name.endswith("_bytes"):
                text[name] = fmt.bytes_(row[name], units)
            elif name in ("ctx", "max_ctx", "max_ctx_at_target"):
                text[name] = fmt.tokens(row[name])
        if "weight_bits" in text:
            text["weight_bits"] = fmt.bits(row["weight_bits"])
        if "decode_tokens_per_s" in text:
            text["decode_tokens_per_s"] = fmt.per_s(row["decode_tokens_per_s"])
        t.add(*(text[name] for name in names), style=style)
        if omitted_after is not None and position == omitted_after:
            t.add(*(["…"] * len(names)))
    if omitted:
        t.notes.append(f"… {omitted:,} rows omitted between the first and last {len(indices) // 2:,} "
                       f"(--all shows every row)")
    if "kv_peak_bytes" in names:
        t.notes.append("total = weights + KV peak + pinned prefix + runtime overhead (the peak: right after a "
                       "one-shot prefill, or before an eviction)")
    return t
