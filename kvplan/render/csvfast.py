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

_ZERO, _MINUS, _DOT, _COMMA, _NEWLINE = 48, 45, 46, 44, 10


def _four_digits():
    import numpy as np

    table = np.empty((10_000, 4), dtype=np.uint8)
    numbers = np.arange(10_000)
    for j in range(3, -1, -1):
        table[:, j] = numbers % 10 + _ZERO
        numbers //= 10
    return table


_TABLE = None
_POWERS_OF_TEN = [10**k for k in range(1, 19)]


def int_field(values, empty=None):
    """ASCII matrix of whole numbers (``-`` for negatives); rows where ``empty`` is True are blank."""
    import numpy as np

    global _TABLE
    if _TABLE is None:
        _TABLE = _four_digits()
    values = np.asarray(values, dtype=np.int64)
    n = len(values)
    magnitude = np.abs(values)
    largest = int(magnitude.max()) if n else 0
    groups = max(1, -(-len(str(largest)) // 4))  # digits in blocks of four, from a lookup table
    width = 4 * groups
    out = np.empty((n, width + 1), dtype=np.uint8)
    rest = magnitude
    for g in range(groups - 1, -1, -1):
        rest, block = np.divmod(rest, 10_000)
        out[:, 1 + 4 * g:5 + 4 * g] = _TABLE[block]
    # Leading zeros become 0 (dropped when the rows are joined); the last digit always stays.
    digits = 1 + np.searchsorted(_POWERS_OF_TEN, magnitude, side="right")
    leading = np.arange(width)[None, :] < (width - digits)[:, None]
    body = out[:, 1:]
    body[leading] = 0
    out[:, 0] = np.where(values < 0, _MINUS, 0)
    if empty is not None:
        out[np.asarray(empty)] = 0
    return out


def fixed_field(values, decimals: int = 6):
    """ASCII matrix of non-negative floats with ``decimals`` digits after the point; NaN/inf blank."""
    import numpy as np

    values = np.asarray(values, dtype=np.float64)
    blank = ~np.isfinite(values)
    scaled = np.round(np.where(blank, 0.0, values) * 10**decimals).astype(np.int64)
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


def join_fields(fields: list) -> bytes:
    """CSV lines (comma-separated, newline-terminated) from per-field ASCII matrices."""
    import numpy as np

    n = fields[0].shape[0]
    comma = np.full((n, 1), _COMMA, dtype=np.uint8)
    newline = np.full((n, 1), _NEWLINE, dtype=np.uint8)
    parts = []
    for i, field in enumerate(fields):
        parts.append(field)
        parts.append(comma if i < len(fields) - 1 else newline)
    matrix = np.hstack(parts)
    return matrix[matrix != 0].tobytes()


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
    import numpy as np

    matrix = np.hstack(fields)
    return matrix[matrix != 0].tobytes()
