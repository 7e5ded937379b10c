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
