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


TABLE_COLUMNS = ("device", "model", "ctx", "sequences", "weight_bits", "k_bits", "v_bits", "kv_bytes",
                 "total_bytes", "headroom_bytes", "verdict", "decode_tokens_per_s", "max_ctx")
_TABLE_HEADINGS = ("device", "model", "ctx", "seq", "W bits", "K bits", "V bits", "KV cache", "total",
                   "headroom", "verdict", "decode tok/s", "max ctx")


def table(cols: SweepColumns, indices, omitted_after: int | None, omitted: int, units: str = "si",
          title: str = "") -> Table:
    """Rows ``indices`` of the sweep; a "… N rows omitted" line after position ``omitted_after``."""
    t = Table(title, list(_TABLE_HEADINGS), align=["left", "left"] + ["right"] * (len(_TABLE_HEADINGS) - 2))
    blank = [""] * len(_TABLE_HEADINGS)
    for position, i in enumerate(indices):
        row = {name: _value(name, getattr(cols, name), int(i)) for name in TABLE_COLUMNS}
        style = {"fit": None, "tight": "yellow", "over": "red"}[row["verdict"]]
        t.add(row["device"], row["model"], fmt.tokens(row["ctx"]), row["sequences"], fmt.bits(row["weight_bits"]),
              row["k_bits"], row["v_bits"], fmt.bytes_(row["kv_bytes"], units), fmt.bytes_(row["total_bytes"], units),
              fmt.bytes_(row["headroom_bytes"], units), row["verdict"], fmt.per_s(row["decode_tokens_per_s"]),
              fmt.tokens(row["max_ctx"]), style=style)
        if omitted_after is not None and position == omitted_after:
            t.add(*(["…"] * len(blank)))
    if omitted:
        t.notes.append(f"… {omitted:,} rows omitted between the first and last {len(indices) // 2:,} "
                       f"(--all shows every row)")
    return t
