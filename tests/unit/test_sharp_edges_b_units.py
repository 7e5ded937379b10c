"""Issue #27 (sharp edges): durations past minutes, the order of profile lists, counts with their suffix."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvplan.render.fmt import seconds
from kvplan.profiles.catalog import natural_key

YEAR_S = 365.25 * 86400  # 31,557,600 s


@pytest.mark.parametrize("x, text", [
    (119, "119.00 s"),
    (120, "2.0 min"),  # 120 / 60
    (7199, "120.0 min"),  # below 2 h
    (7200, "2.0 h"),  # 7,200 / 3,600
    (3 * 86400, "3.0 d"),
    (7.9 * YEAR_S, "7.9 years"),  # was "4154760.0 min"
    (1234.5 * YEAR_S, "1,234.5 years"),  # digit groups
])
def test_long_durations_use_hours_days_and_years(x, text):
    assert seconds(x) == text


def test_profile_names_in_natural_order():
    names = ["galaxy-s24-ultra.yaml", "galaxy-s24.yaml", "macbook-air-m2-16gb.yaml", "macbook-air-m2-8gb.yaml"]
    assert [p.name for p in sorted(map(Path, names), key=natural_key)] == [
        "galaxy-s24.yaml", "galaxy-s24-ultra.yaml", "macbook-air-m2-8gb.yaml", "macbook-air-m2-16gb.yaml"]


# --- hints that misled ----------------------------------------------------------------------------------------------

def test_a_list_of_grouped_counts_without_spaces_suggests_both_unambiguous_spellings():
    from kvplan.errors import QuantityError
    from kvplan.units import split_token_list

    with pytest.raises(QuantityError) as caught:
        split_token_list("1,024,2,048")
    message = str(caught.value)
    assert "'1, 024'" not in message  # the hint once split a number in two
    assert "('1024,2048')" in message and "('1,024, 2,048')" in message
    # each suggestion reads back as the two counts 1,024 and 2,048
    assert split_token_list("1024,2048") == ["1024", "2048"]
    assert split_token_list("1,024, 2,048") == ["1,024", "2,048"]


def test_a_list_for_a_single_count_says_so_not_thousands_separators():
    from kvplan.errors import QuantityError
    from kvplan.units import parse_tokens

    with pytest.raises(QuantityError) as caught:
        parse_tokens("1k,2k", noun="a prefix")
    assert str(caught.value) == "a prefix is one value, got a list '1k,2k'"
    with pytest.raises(QuantityError, match="thousands separators go every three digits"):
        parse_tokens("1,00")  # a misplaced separator still gets the separator hint
