"""The vectorized CSV fields read back as the numbers they were made from."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from kvplan.render import csvfast

INT64 = st.integers(min_value=-(10**18), max_value=10**18)


def _lines(fields):
    return csvfast.join_fields(fields).decode().splitlines()


@given(st.lists(INT64, min_size=1, max_size=50))
def test_int_field_is_str(values):
    arr = np.array(values, dtype=np.int64)
    assert _lines([csvfast.int_field(arr)]) == [str(v) for v in values]


@given(st.lists(st.floats(min_value=0, max_value=1e9, allow_nan=False), min_size=1, max_size=50))
def test_fixed_field_is_six_decimals(values):
    arr = np.array(values, dtype=np.float64)
    got = _lines([csvfast.fixed_field(arr, 6)])
    for text, v in zip(got, values):
        assert abs(float(text) - v) <= 5e-7 + 1e-15 * v
        assert len(text.split(".")[1]) == 6


@given(st.lists(st.tuples(INT64, st.booleans()), min_size=1, max_size=30))
def test_empty_mask_and_separators(pairs):
    values = np.array([v for v, _ in pairs], dtype=np.int64)
    empty = np.array([e for _, e in pairs])
    lines = _lines([csvfast.constant_field("pixel8", len(values)), csvfast.int_field(values, empty=empty),
                    csvfast.fixed_field(np.full(len(values), np.nan))])
    assert lines == [f"pixel8,{'' if e else v}," for v, e in pairs]


def _fixed_text(v: float) -> str:
    """One float as fixed_field writes it, by hand: rounded to whole millionths (half to even, as np.round), then
    the whole part, the point and six digits; NaN and infinity are empty."""
    if not np.isfinite(v):
        return ""
    millionths = int(np.round(np.float64(v) * 10**6))
    return f"{millionths // 10**6}.{millionths % 10**6:06d}"


@given(st.lists(st.one_of(st.floats(min_value=0, max_value=1e12), st.sampled_from([float("nan"), float("inf")])),
                min_size=1, max_size=50))
def test_fixed_field_is_the_rounded_millionths(values):
    assert _lines([csvfast.fixed_field(np.array(values, dtype=np.float64), 6)]) == [_fixed_text(v) for v in values]


# A grid as the sweep writes it: a name, whole numbers of every size and sign (some rows empty), floats from 10^-9 to
# 10^12 with NaN, infinity and exact halves of a millionth (the rounding edge), a constant column.
GRID_ROW = st.tuples(st.sampled_from(["pixel8", "llama-2-7b", "q4_0", ""]), INT64, st.booleans(),
                     st.one_of(st.floats(min_value=0, max_value=1e12),
                               st.integers(min_value=0, max_value=10**12).map(lambda k: k / 2e6),
                               st.sampled_from([0.0, 5e-7, 1.5e-6, 2.5e-6, 1e-9, float("nan"), float("inf")])))


@given(st.lists(GRID_ROW, min_size=1, max_size=60))
def test_a_grid_is_what_the_csv_module_writes(rows):
    """The vectorized writer's bytes equal the csv module's for the same rows (each value's text by hand)."""
    import csv
    import io

    names = np.array([r[0] for r in rows])
    ints = np.array([r[1] for r in rows], dtype=np.int64)
    empty = np.array([r[2] for r in rows])
    floats = np.array([r[3] for r in rows], dtype=np.float64)
    fast = csvfast.join_fields([csvfast.text_field(names), csvfast.int_field(ints), csvfast.int_field(ints, empty=empty),
                                csvfast.fixed_field(floats), csvfast.constant_field("ideal", len(rows))])
    expected = io.StringIO()
    writer = csv.writer(expected, lineterminator="\n")
    for (name, value, blank, x) in rows:
        writer.writerow([name, value, "" if blank else value, _fixed_text(x), "ideal"])
    assert fast == expected.getvalue().encode()


def test_blocks_of_rows_join_as_one():
    """Rows are joined a block at a time (csvfast._JOIN_ROWS): a grid of several blocks is every row, in order."""
    n = 3 * csvfast._JOIN_ROWS + 7
    values = np.arange(-n // 2, n - n // 2, dtype=np.int64) * 1_000_003
    assert _lines([csvfast.int_field(values), csvfast.fixed_field(np.abs(values) / 7)]) == [
        f"{v},{_fixed_text(abs(v) / 7)}" for v in values.tolist()]
