from __future__ import annotations

import pytest

from kvplan.errors import QuantityError
from kvplan.units import parse_count, parse_flop_per_s, parse_rate_bytes_per_s, parse_size_bytes, parse_tokens


@pytest.mark.parametrize("text, expected", [
    ("8 GB", 8_000_000_000),  # SI: 8 · 10^9
    ("8 GiB", 8_589_934_592),  # IEC: 8 · 2^30
    ("8GB", 8_000_000_000),
    ("512 MB", 512_000_000),
    ("1.5 KiB", 1536),  # 1.5 · 1024
    ("3.7 GiB", 3_972_844_749),  # 3.7 · 2^30 = 3,972,844,748.8 → rounded up to a whole byte
    ("1024 B", 1024),
    (0, 0),  # zero needs no unit
    ("0", 0),
    ("1.75 GB", 1_750_000_000),
])
def test_sizes(text, expected):
    assert parse_size_bytes(text) == expected


def test_si_and_iec_differ_by_7_4_percent():
    # 8 GiB / 8 GB = 2^30 / 10^9 = 1.073741824
    assert parse_size_bytes("8 GiB") / parse_size_bytes("8 GB") == pytest.approx(1.073741824)


@pytest.mark.parametrize("text, expected", [("51.2 GB/s", 51.2e9), ("3 GiB/s", 3 * 2**30), ("2100 MB/s", 2.1e9)])
def test_rates(text, expected):
    assert parse_rate_bytes_per_s(text) == expected


@pytest.mark.parametrize("text, expected", [("6.74B", 6_740_000_000), ("494M", 494_000_000), ("7e9", 7_000_000_000),
                                            (1100048384, 1100048384)])
def test_counts(text, expected):
    assert parse_count(text) == expected


@pytest.mark.parametrize("text, expected", [("8192", 8192), ("8k", 8192), ("32K", 32768), ("1M", 1_048_576), (4096, 4096)])
def test_tokens(text, expected):
    assert parse_tokens(text) == expected


def test_compute():
    assert parse_flop_per_s("2.5 TFLOP/s") == 2.5e12
    assert parse_flop_per_s("2.5 TFLOPS") == 2.5e12


@pytest.mark.parametrize("parser, value, fragment", [
    (parse_size_bytes, "8 GB/s", "got a rate"),
    (parse_rate_bytes_per_s, "8 GB", "got a size"),
    (parse_size_bytes, "8 XB", "unknown unit"),
    (parse_size_bytes, True, "boolean"),
    (parse_size_bytes, float("nan"), "got nan"),
    (parse_rate_bytes_per_s, float("inf"), "got inf"),
    (parse_rate_bytes_per_s, 0, "positive"),
    (parse_rate_bytes_per_s, "-5 GB/s", "positive"),
    (parse_size_bytes, -5, "zero or more"),
    (parse_size_bytes, "1e30 B", "implausibly large"),
    (parse_tokens, "8.3k", "whole number"),  # 8.3 · 1024 = 8499.2
    (parse_tokens, "0", "positive"),
    (parse_count, "6.74 GB", "expected a count"),
    (parse_tokens, "lots", "expected a token count"),
])
def test_bad_quantities(parser, value, fragment):
    with pytest.raises(QuantityError, match=fragment):
        parser(value)
