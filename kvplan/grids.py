"""Parsing the value lists of a sweep: ``1k,4k,8k``, ``1k..32k:1k``, ``16,8,4``.

A list item is a single value or an inclusive range ``START..STOP[:STEP]`` (``STEP``
defaults to 1), and items are joined with commas; an option may also be repeated
(``kv_bits`` 8 then 4). A value given twice is kept once, where it first appears
(``8,8`` is one 8-bit row). Token items take the token units of
:func:`kvplan.units.parse_tokens` (``8k`` = 8,192). Mistakes raise
:class:`~kvplan.errors.FieldError` about ``option``, the field the values are for
(``ctx``, ``kv_bits``; the CLI words it with its flag).

Context grids can be large (``1..1000000`` is a million points), so they come back as a
numpy ``int64`` array built with ``numpy.arange``; numpy is imported only when one is
parsed.
"""

from __future__ import annotations

from collections.abc import Iterable

from kvplan.errors import FieldError, QuantityError
from kvplan.units import parse_tokens, split_token_list

# A grid larger than this is a typo (and would not fit in memory as rows).
MAX_GRID_POINTS = 20_000_000


def _items(values: str | Iterable[str], option: str, split=lambda text: text.split(",")) -> list[str]:
    texts = [values] if isinstance(values, str) else list(values)
    try:
        items = [item.strip() for text in texts for item in split(str(text))]
    except QuantityError as exc:  # an ambiguous list: say which option
        raise FieldError(option, str(exc)) from None
    if not items or any(not item for item in items):
        raise FieldError(option, f"empty value in {', '.join(map(repr, texts)) or 'nothing'}; "
                         f"write values like 1k,4k,8k or a range like 1k..32k:1k")
    return items


def _first_of_each(values: list) -> list:
    """``values`` without repeats, in the order each first appears."""
    return list(dict.fromkeys(values))


def _tokens(text: str, option: str, what: str) -> int:
    try:
        return parse_tokens(text)
    except QuantityError as exc:
        raise FieldError(option, f"{what} {text!r}: {exc}") from None


def parse_ctx_grid(values: str | Iterable[str], option: str = "ctx"):
    """Token counts of ``1k,4k,8k`` / ``1k..32k:1k`` / repeated options, in the order given, each once.

    Returns
    -------
    numpy.ndarray of int64 [tokens]
    """
    import numpy as np

    parts = []
    count = 0
    for item in _items(values, option, split_token_list):  # 1k, 8,192: with ', ' between values a comma then three digits groups 8,192
        if ".." in item:
            start_text, _, rest = item.partition("..")
            stop_text, _, step_text = rest.partition(":")
            start = _tokens(start_text, option, "range start")
            stop = _tokens(stop_text, option, "range stop")
            step = _tokens(step_text, option, "range step") if step_text.strip() else 1
            if stop < start:
                raise FieldError(option, f"range {item!r} ends before it starts ({stop:,} < {start:,})")
            n = (stop - start) // step + 1
            count += n
            if count > MAX_GRID_POINTS:
                break
            parts.append(np.arange(start, start + n * step, step, dtype=np.int64))
        else:
            count += 1
            parts.append(np.array([_tokens(item, option, "value")], dtype=np.int64))
    if count > MAX_GRID_POINTS:
        raise FieldError(option, f"more than {MAX_GRID_POINTS:,} values; use a coarser step")
    values = np.concatenate(parts)
    if len(parts) == 1 and (len(values) < 2 or parts[0][1] > parts[0][0]):  # one value or one range: no repeats
        return values
    _, first = np.unique(values, return_index=True)
    return values if len(first) == len(values) else values[np.sort(first)]


def parse_int_list(values: str | Iterable[str], option: str, lo: int = 1, hi: int = 10**6) -> list[int]:
    """Whole numbers from ``16,8,4``, ``1..4`` or repeated options, each within ``[lo, hi]``, each once."""
    out: list[int] = []
    for item in _items(values, option):
        start_text, dots, rest = item.partition("..")
        stop_text, _, step_text = rest.partition(":")
        try:
            if dots:
                start, stop = int(start_text), int(stop_text)
                step = int(step_text) if step_text.strip() else 1
                if step < 1 or stop < start:
                    raise ValueError
                out.extend(range(start, stop + 1, step))
            else:
                out.append(int(item))
        except ValueError:
            raise FieldError(option, f"expected whole numbers like 16,8,4 or a range like 1..4, "
                             f"got {item!r}") from None
        if len(out) > MAX_GRID_POINTS:
            raise FieldError(option, f"more than {MAX_GRID_POINTS:,} values")
    bad = [v for v in out if not lo <= v <= hi]
    if bad:
        raise FieldError(option, f"must be a whole number from {lo} to {hi}, got {bad[0]}")  # check's wording
    return _first_of_each(out)


def parse_float_list(values: str | Iterable[str], option: str, lo: float = 0.0, hi: float = 32.0) -> list[float]:
    """Numbers from ``4,8`` or ``4.5,8`` or repeated options, each in ``(lo, hi]``, each once."""
    out: list[float] = []
    for item in _items(values, option):
        try:
            value = float(item)
        except ValueError:
            raise FieldError(option, f"expected numbers like 4,8 or 4.5, got {item!r}") from None
        if not lo < value <= hi:
            raise FieldError(option, f"must be above {lo:g} and at most {hi:g}, got {item}")
        out.append(value)
    return _first_of_each(out)
