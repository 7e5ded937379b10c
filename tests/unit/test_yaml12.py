"""kvplan reads plain YAML scalars as YAML 1.2 does, and refuses the numbers YAML 1.1 reads otherwise."""

from __future__ import annotations

import datetime

import pytest

from kvplan.errors import ProfileError
from kvplan.files.yamlio import parse_yaml, reads_back_plain


@pytest.mark.parametrize("text, value", [
    ("true", True), ("False", False), ("yes", "yes"), ("no", "no"), ("on", "on"), ("off", "off"),
    ("5:1", "5:1"),                     # YAML 1.1: base 60, 5·60 + 1 = 301
    ("2024-01-02", "2024-01-02"),        # YAML 1.1: a date
    ("=", "="),                          # YAML 1.1: the 'value' tag, which nothing constructs
    ("40", 40), ("-7", -7), ("0", 0), ("1.5", 1.5), (".5", 0.5), ("1.5e+3", 1500.0),
    ("7e9", "7e9"),                      # text: a count reads it, a token count refuses it with a hint
    ("~", None), ("null", None), (".inf", float("inf")), ('"040"', "040"), ("'no'", "no"),
])
def test_plain_scalars_read_as_yaml_1_2(text, value):
    assert parse_yaml(f"v: {text}").data == {"v": value}


def test_a_date_is_not_constructed():
    assert not isinstance(parse_yaml("v: 2024-01-02").data["v"], datetime.date)


@pytest.mark.parametrize("text, message", [
    ("040", "'040': a number with a leading zero is octal 32 in YAML 1.1 and 40 in YAML 1.2: write 40"),
    ("-010", "'-010': a number with a leading zero is octal -8 in YAML 1.1 and -10 in YAML 1.2: write -10"),
    ("089", "'089': a number with a leading zero is not a number in YAML 1.1 and 89 in YAML 1.2: write 89"),
    ("3_2", "'3_2': '_' between digits is YAML 1.1 only (YAML 1.2 reads text): write 32"),
    ("1_000.5", "'1_000.5': '_' between digits is YAML 1.1 only (YAML 1.2 reads text): write 1000.5"),
    ("0x20", "'0x20': write numbers in decimal (32)"),
    ("0o40", "'0o40': write numbers in decimal (32)"),
    ("0b100000", "'0b100000': write numbers in decimal (32)"),
])
def test_numbers_yaml_1_1_reads_otherwise_are_refused_with_the_decimal(text, message):
    with pytest.raises(ProfileError) as info:
        parse_yaml(f"a: 1\nlist:\n  - {text}\n", "f.yaml")
    assert info.value.problems == [f"f.yaml:3: list.0: {message} (or quote it for the text)".replace(
        "(32) (or quote it for the text)", "(32), or quote it for the text")]


def test_a_key_yaml_1_1_reads_otherwise_is_refused_too():
    with pytest.raises(ProfileError) as info:
        parse_yaml("040: a\n", "f.yaml")
    assert info.value.problems[0].startswith("f.yaml:1: 040: key '040': a number with a leading zero")


def test_a_number_beyond_pythons_int_limit_is_refused_not_an_internal_error():
    with pytest.raises(ProfileError) as info:
        parse_yaml("layers: " + "1" * 5000 + "\n", "m.yaml")
    assert info.value.problems == ["m.yaml:1: layers: a number of 5,000 digits is far beyond any figure kvplan "
                                   "reads (at most 4,300)"]


def test_4300_digits_are_still_a_number():
    assert parse_yaml("v: " + "1" * 4300).data["v"] == int("1" * 4300)


@pytest.mark.parametrize("text, plain", [("qwen3", True), ("no", False), ("040", False), ("7e9", True),
                                         ("5:1", False), ("1.5", False)])
def test_reads_back_plain_in_yaml_1_1_tools_and_in_kvplan(text, plain):
    assert reads_back_plain(text) is plain
