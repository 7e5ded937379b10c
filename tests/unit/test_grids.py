"""Sweep value lists: token lists, inclusive ranges, bit lists; mistakes name the option."""

from __future__ import annotations

import pytest

from kvplan.errors import UsageError
from kvplan.grids import parse_ctx_grid, parse_float_list, parse_int_list


def test_token_list_uses_token_units():
    # 1k = 1,024, 4k = 4,096, 8k = 8,192 tokens
    assert parse_ctx_grid("1k,4k,8k").tolist() == [1024, 4096, 8192]


def test_inclusive_range_with_step():
    values = parse_ctx_grid("1k..32k:1k")
    # 1,024 … 32,768 in steps of 1,024: (32768 − 1024) / 1024 + 1 = 32 values, both ends included
    assert len(values) == 32
    assert values[0] == 1024 and values[-1] == 32768 and values[1] - values[0] == 1024


def test_range_stops_at_or_before_stop():
    # 1, 4, 7, 10 (13 would pass 10)
    assert parse_ctx_grid("1..10:3").tolist() == [1, 4, 7, 10]
    assert parse_ctx_grid("1..11:3").tolist() == [1, 4, 7, 10]


def test_million_point_range_and_repeats():
    values = parse_ctx_grid("1..1000000")
    assert len(values) == 1_000_000 and values[0] == 1 and values[-1] == 1_000_000
    assert parse_ctx_grid(["2k", "512..1024:512"]).tolist() == [2048, 512, 1024]


@pytest.mark.parametrize("text", ["8k..1k", "1k..2k:0", "1k,,2k", "", "abc", "1k..", "1.5..3"])
def test_bad_ctx_grids_name_the_option(text):
    with pytest.raises(UsageError, match="^ctx: "):  # the field; the CLI words it --ctx
        parse_ctx_grid(text)


def test_too_many_points_is_refused():
    with pytest.raises(UsageError, match="more than"):
        parse_ctx_grid("1..100000000")


def test_int_and_float_lists():
    assert parse_int_list("16,8,4", "--kv-bits", 1, 32) == [16, 8, 4]
    assert parse_int_list(["1..4", "8"], "--sequences") == [1, 2, 3, 4, 8]
    assert parse_float_list("4.5,8", "--weight-bits") == [4.5, 8.0]
    with pytest.raises(UsageError, match="^--kv-bits: must be a whole number from 1 to 32, got 64"):
        parse_int_list("16,64", "--kv-bits", 1, 32)
    with pytest.raises(UsageError, match="^--sequences: expected whole numbers"):
        parse_int_list("two", "--sequences")
    with pytest.raises(UsageError, match="^--weight-bits: "):
        parse_float_list("nan", "--weight-bits")


def test_repeated_values_are_kept_once_in_first_order():
    # --kv-bits 8,8 is one 8-bit row, not two identical ones
    assert parse_int_list("8,8", "--kv-bits", 1, 32) == [8]
    assert parse_int_list(["16,8", "4,16", "1..4"], "--kv-bits", 1, 32) == [16, 8, 4, 1, 2, 3]
    assert parse_float_list("4.5,8,4.5", "--weight-bits") == [4.5, 8.0]
    # 4k = 4,096 given three ways; 1k..3k:1k = 1,024, 2,048, 3,072 overlaps 2k = 2,048
    assert parse_ctx_grid("4k,4096,2k,4k").tolist() == [4096, 2048]
    assert parse_ctx_grid(["2k", "1k..3k:1k"]).tolist() == [2048, 1024, 3072]
    assert parse_ctx_grid("1k..4k:1k").tolist() == [1024, 2048, 3072, 4096]  # one range: as built
