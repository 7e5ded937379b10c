"""What ``kvplan sweep`` shows: CSV (vectorized), JSON rows, and a table of the first and last rows."""

from __future__ import annotations

import math

from kvplan.engine import VERDICTS
from kvplan.render import csvfast, fmt
from kvplan.render.tables import Table
from kvplan.sweep import NO_MAX_CTX, SweepColumns

# Columns written as fixed-point decimals in CSV (6 places: µs and 10⁻⁶ tok/s).
FLOAT_DECIMALS = 6
CSV_CHUNK_ROWS = 131_072


def csv_header() -> str:
    return ",".join(SweepColumns.names()) + "\n"


def _is_constant(values) -> bool:
    return len(values) > 0 and values.strides == (0,)


def _constant_text(name: str, value) -> str:
    if name == "verdict":
        return VERDICTS[int(value)].value
    if name == "max_ctx":
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
    if name == "max_ctx":
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
            fields = [_field(name, getattr(chunk, name)) for name in SweepColumns.names()]
            yield len(chunk), csvfast.join_fields(fields)


def _value(name: str, values, i: int):
    v = values[i]
    if name == "verdict":
        return VERDICTS[int(v)].value
    if name == "max_ctx":
        return None if int(v) == NO_MAX_CTX else int(v)
    if values.dtype.kind == "U":
        return str(v)
    if values.dtype.kind == "f":
        return float(v) if math.isfinite(float(v)) else None
    return int(v)


def json_rows(cols: SweepColumns) -> list[dict]:
    """One dict per row with exact integer bytes (column-wise conversion, then zipped)."""
    names = SweepColumns.names()
    columns = []
    for name in names:
        values = getattr(cols, name)
        if name == "verdict":
            labels = [v.value for v in VERDICTS]
            columns.append([labels[c] for c in values.tolist()])
        elif name == "max_ctx":
            columns.append([None if c == NO_MAX_CTX else c for c in values.tolist()])
        elif values.dtype.kind == "f":
            columns.append([v if math.isfinite(v) else None for v in values.tolist()])
        else:
            columns.append(values.tolist())
    return [dict(zip(names, row)) for row in zip(*columns)]


JSON_CHUNK_ROWS = 65_536


def json_head(rows: int) -> bytes:
    """The start of the compact JSON document, up to the opening ``[`` of ``rows``."""
    import json

    return (json.dumps({"rows_count": rows, "columns": SweepColumns.names()})[:-1] + ', "rows": [').encode()


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
    if name == "max_ctx":
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

    names = SweepColumns.names()
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


TABLE_COLUMNS = ("device", "model", "ctx", "sequences", "weight_bits", "k_bits", "v_bits", "kv_bytes",
                 "total_bytes", "headroom_bytes", "verdict", "decode_tokens_per_s", "max_ctx")
_TABLE_HEADINGS = ("device", "model", "ctx", "seq", "W bits", "K bits", "V bits", "KV cache", "total",
                   "headroom", "verdict", "decode tok/s", "max ctx")


# Columns shown once in the title when every row of the sweep has the same value.
_HOISTABLE = ("device", "model", "sequences", "weight_bits", "k_bits", "v_bits")


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
    parts = []
    if "device" in fixed and "model" in fixed:
        parts.append(f"{fixed['device']} × {fixed['model']}")
    else:
        parts += [f"{name} {fixed[name]}" for name in ("device", "model") if name in fixed]
    if "sequences" in fixed:
        parts.append(f"{fixed['sequences']} sequence{'s' if fixed['sequences'] != 1 else ''}")
    if "weight_bits" in fixed:
        parts.append(f"{fmt.bits(fixed['weight_bits'])}-bit weights")
    if fixed.get("k_bits") is not None and fixed.get("k_bits") == fixed.get("v_bits"):
        parts.append(f"{fixed['k_bits']}-bit KV cache")
    else:
        parts += [f"{fixed[name]}-bit {label}" for name, label in (("k_bits", "keys"), ("v_bits", "values"))
                  if name in fixed]
    return ", ".join(parts)


def table(cols: SweepColumns, indices, omitted_after: int | None, omitted: int, units: str = "si",
          title: str = "") -> Table:
    """Rows ``indices`` of the sweep; a "… N rows omitted" line after position ``omitted_after``.

    Columns with one value in every row (device, model, sequences, bits) are named once in the
    title instead of repeated on every row, so the table stays narrow enough for a terminal.
    """
    fixed = _constant_columns(cols)
    shown = [(name, heading) for name, heading in zip(TABLE_COLUMNS, _TABLE_HEADINGS) if name not in fixed]
    if fixed:
        title = f"{title} — {_fixed_text(fixed)}" if title else _fixed_text(fixed)
    names = [name for name, _ in shown]
    key_columns = sum(1 for name in names if name in ("device", "model")) or 1
    t = Table(title, [heading for _, heading in shown],
              align=["left" if name in ("device", "model") else "right" for name in names],
              key_columns=key_columns)
    for position, i in enumerate(indices):
        row = {name: _value(name, getattr(cols, name), int(i)) for name in TABLE_COLUMNS}
        style = {"fit": None, "tight": "yellow", "over": "red"}[row["verdict"]]
        text = {"device": row["device"], "model": row["model"], "ctx": fmt.tokens(row["ctx"]),
                "sequences": row["sequences"], "weight_bits": fmt.bits(row["weight_bits"]),
                "k_bits": row["k_bits"], "v_bits": row["v_bits"], "kv_bytes": fmt.bytes_(row["kv_bytes"], units),
                "total_bytes": fmt.bytes_(row["total_bytes"], units),
                "headroom_bytes": fmt.bytes_(row["headroom_bytes"], units), "verdict": row["verdict"],
                "decode_tokens_per_s": fmt.per_s(row["decode_tokens_per_s"]), "max_ctx": fmt.tokens(row["max_ctx"])}
        t.add(*(text[name] for name in names), style=style)
        if omitted_after is not None and position == omitted_after:
            t.add(*(["…"] * len(names)))
    if omitted:
        t.notes.append(f"… {omitted:,} rows omitted between the first and last {len(indices) // 2:,} "
                       f"(--all shows every row)")
    return t
