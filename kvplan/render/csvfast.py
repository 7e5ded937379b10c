"""Vectorized CSV and JSON text for large numeric grids (a million rows in about a second or two).

Converting a million integers to text one at a time costs seconds in Python (and so do
``ndarray.astype(str)`` and ``numpy.savetxt``). Here every field of a chunk of rows becomes
a ``uint8`` matrix of ASCII codes, one row per record, with 0 marking "no character"
(leading zeros, empty fields); the fields and separators are stacked side by side and the
zeros dropped, which leaves the CSV bytes in row order. Integers are exact; floats are
written with a fixed number of decimals (CSV) or as Python's ``repr`` (JSON: the shortest text
that reads back as the same float). JSON rows are the same technique with another template:
constant key text between the value fields (:func:`concat_fields`).
"""

from __future__ import annotations

_ZERO, _MINUS_SIGN, _DOT, _COMMA, _NEWLINE = 48, 45, 46, 44, 10


def _digit_cells():
    """Every 4-digit block as one ``uint32`` cell of 4 ASCII bytes (the bytes in text order, whatever the machine's
    byte order: the table is built as bytes and viewed), so a block is one gather of a 4-byte word, not four bytes:

    - ``[k]`` (k < 10,000): k's four digits, leading zeros as ``0`` characters (a block below the top one);
    - ``[_TOP + k]``: k's own digits, right-aligned, the leading zeros as 0 bytes (dropped): the top block;
    - ``[_BLANK]``: four 0 bytes (a block above the number's top), ``[_MINUS]``: ``\0\0\0-``;
    - ``[_POINT_TWO + k]`` (k < 100): ``\0.`` and k's two digits (a fixed-point number's first decimals).
    """
    import numpy as np

    cells = np.zeros((_CELLS, 4), dtype=np.uint8)
    numbers = np.arange(10_000)
    rest = numbers.copy()
    for j in range(3, -1, -1):
        cells[:10_000, j] = rest % 10 + _ZERO
        rest //= 10
    top = cells[:10_000].copy()
    digits = 1 + (numbers >= 10) + (numbers >= 100) + (numbers >= 1_000)
    top[np.arange(4)[None, :] < (4 - digits)[:, None]] = 0
    cells[_TOP:_TOP + 10_000] = top
    cells[_MINUS, 3] = _MINUS_SIGN
    cells[_POINT_TWO:_POINT_TWO + 100, 1] = _DOT
    cells[_POINT_TWO:_POINT_TWO + 100, 2:] = cells[:100, 2:]
    return cells.view(np.uint32).reshape(_CELLS)


_TOP, _BLANK, _MINUS, _POINT_TWO = 10_000, 20_000, 20_001, 20_002
_CELLS = _POINT_TWO + 100
_CELL_TABLE = None


def _cells_table():
    global _CELL_TABLE
    if _CELL_TABLE is None:
        _CELL_TABLE = _digit_cells()
    return _CELL_TABLE


def _int_cells(values):
    """``uint32`` cells (n × (blocks + 1)) of whole numbers: a sign cell, then blocks of four digits.

    Each block is one table gather (:func:`_digit_cells`): the full digits below the number's top block, its own
    digits (leading zeros as 0 bytes) in the top block, blank above it; the last block is never blank (``0``).
    """
    import numpy as np

    table = _cells_table()
    values = np.asarray(values, dtype=np.int64)
    n = len(values)
    magnitude = np.abs(values)
    largest = int(magnitude.max()) if n else 0
    groups = max(1, -(-len(str(largest)) // 4))  # digits in blocks of four
    out = np.empty((n, groups + 1), dtype=np.uint32)
    out[:, 0] = table[np.where(values < 0, _MINUS, _BLANK)]
    rest = magnitude
    for g in range(groups, 0, -1):  # the lowest block first, in the last column
        rest, block = np.divmod(rest, 10_000)
        if g == groups:
            index = np.where(rest > 0, block, block + _TOP)
        else:
            index = np.where(rest > 0, block, np.where(block > 0, block + _TOP, _BLANK))
        out[:, g] = table[index]
    return out


def int_field(values, empty=None):
    """ASCII matrix of whole numbers (``-`` for negatives); rows where ``empty`` is True are blank."""
    import numpy as np

    cells = _int_cells(values)
    if empty is not None:
        cells[np.asarray(empty)] = 0
    return cells.view(np.uint8)


def fixed_field(values, decimals: int = 6):
    """ASCII matrix of non-negative floats with ``decimals`` digits after the point; NaN/inf blank.

    The value is rounded to a whole number of 10⁻⁶ (``np.round``: half to even), then written as its whole part,
    the point and the six decimals; other ``decimals`` take the digit-by-digit path.
    """
    import numpy as np

    values = np.asarray(values, dtype=np.float64)
    blank = ~np.isfinite(values)
    scaled = np.round(np.where(blank, 0.0, values) * 10**decimals).astype(np.int64)
    if decimals == 6:  # the point and two decimals in one cell, the last four in another (_digit_cells)
        table = _cells_table()
        whole, frac = np.divmod(scaled, 10**6)
        high, low = np.divmod(frac, 10_000)
        out = np.hstack([_int_cells(whole), table[high + _POINT_TWO][:, None], table[low][:, None]])
        out[blank] = 0
        return out.view(np.uint8)
    whole = int_field(scaled // 10**decimals)
    frac = np.empty((len(values), decimals), dtype=np.uint8)
    rest = scaled % 10**decimals
    for j in range(decimals - 1, -1, -1):
        frac[:, j] = rest % 10 + _ZERO
        rest //= 10
    out = np.hstack([whole, np.full((len(values), 1), _DOT, dtype=np.uint8), frac])
    out[blank] = 0
    return out


def text_field(values):
    """ASCII matrix of short strings (names, verdicts); non-ASCII is not expected in slugs."""
    import numpy as np

    encoded = np.char.encode(np.asarray(values, dtype=str), "ascii")
    width = max(encoded.dtype.itemsize, 1)
    return np.frombuffer(encoded.astype(f"S{width}").tobytes(), dtype=np.uint8).reshape(len(values), width).copy()


def constant_field(text: str, n: int):
    """The same text on every one of ``n`` rows."""
    import numpy as np

    row = np.frombuffer(text.encode("ascii"), dtype=np.uint8)
    return np.broadcast_to(row, (n, len(row)))


# Rows joined at a time: the byte matrix of a block (a few MB) stays in the processor's cache between stacking the
# fields and dropping the zeros, which is about a third faster than one pass over a whole chunk's tens of MB.
_JOIN_ROWS = 8_192


def join_fields(fields: list) -> bytes:
    """CSV lines (comma-separated, newline-terminated) from per-field ASCII matrices."""
    import numpy as np

    n = fields[0].shape[0]
    comma = np.broadcast_to(np.uint8(_COMMA), (n, 1))
    newline = np.broadcast_to(np.uint8(_NEWLINE), (n, 1))
    parts = []
    for i, field in enumerate(fields):
        parts.append(field)
        parts.append(comma if i < len(fields) - 1 else newline)
    return _drop_zeros(parts, n)


def _drop_zeros(parts: list, n: int) -> bytes:
    """The rows of the side-by-side ``parts`` with every 0 byte dropped, a block of rows at a time."""
    import numpy as np

    out = []
    for start in range(0, n, _JOIN_ROWS):
        rows = slice(start, start + _JOIN_ROWS)
        matrix = np.hstack([part[rows] for part in parts])
        out.append(matrix[matrix != 0].tobytes())
    return b"".join(out)


def repr_field(values, null: bytes = b"null"):
    """ASCII matrix of floats as ``float.__repr__`` writes them (exact round trip); NaN/inf → ``null``."""
    import numpy as np

    values = np.asarray(values, dtype=np.float64)
    finite = np.isfinite(values)
    text = np.array(list(map(float.__repr__, np.where(finite, values, 0.0).tolist())), dtype="S")
    width = max(text.dtype.itemsize, len(null))
    out = np.frombuffer(text.astype(f"S{width}").tobytes(), dtype=np.uint8).reshape(len(values), width).copy()
    return with_null(out, ~finite, null)


def with_null(matrix, mask, null: bytes = b"null"):
    """``matrix`` with the rows where ``mask`` is True replaced by ``null`` (JSON's null)."""
    import numpy as np

    mask = np.asarray(mask, dtype=bool)
    if not mask.any():
        return matrix
    if matrix.shape[1] < len(null):
        matrix = np.hstack([np.zeros((matrix.shape[0], len(null) - matrix.shape[1]), dtype=np.uint8), matrix])
    matrix = np.array(matrix)  # writable, even when it was broadcast
    matrix[mask] = 0
    matrix[np.ix_(mask, np.arange(matrix.shape[1] - len(null), matrix.shape[1]))] = np.frombuffer(null, np.uint8)
    return matrix


def concat_fields(fields: list) -> bytes:
    """Rows of the side-by-side ``fields`` (ASCII matrices, constant text included), zeros dropped."""
    return _drop_zeros(fields, fields[0].shape[0]) if fields else b""
