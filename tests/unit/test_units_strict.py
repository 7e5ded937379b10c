"""Issue 14 (no silent misreadings): sizes and rates need a unit, token counts take one k/M rule and the
thousands separators kvplan prints, fractions take percentages, and senseless KV policies are refused."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from kvplan.errors import QuantityError
from kvplan.profiles.policy import PolicySpec
from kvplan.profiles.spec import Device
from kvplan.render import fmt
from kvplan.units import (parse_flop_per_s, parse_fraction, parse_rate_bytes_per_s, parse_size_bytes, parse_tokens,
                          split_token_list)

# --- bare sizes and rates: refused, with the unit the documented rule suggests ---------------------------------
# Rule (kvplan.units): below 1,000 → the big unit (GB, GB/s, TFLOP/s); 1,000 to below 10^6 → the next one down
# (MB, MB/s, GFLOP/s); from 10^6 up → base units, with their SI reading in parentheses.


@pytest.mark.parametrize("parser, value, suggestion", [
    (parse_size_bytes, "2", "2 GB"),
    (parse_size_bytes, 2, "2 GB"),  # a YAML integer is a bare number too
    (parse_size_bytes, 1.5, "1.5 GB"),
    (parse_size_bytes, "999", "999 GB"),
    (parse_size_bytes, "1000", "1000 MB"),
    (parse_size_bytes, "512000", "512000 MB"),
    (parse_size_bytes, 8_000_000_000, "8000000000 B (8 GB)"),  # 8e9 B = 8 GB
    (parse_size_bytes, "1000000", "1000000 B (1 MB)"),  # the threshold itself: 10^6 B = 1 MB
    (parse_size_bytes, "8589934592", "8589934592 B (8.59 GB)"),  # 2^33 = 8,589,934,592 → 8.59 GB (3 digits)
    (parse_rate_bytes_per_s, 50, "50 GB/s"),
    (parse_rate_bytes_per_s, "2.1", "2.1 GB/s"),
    (parse_rate_bytes_per_s, "2100", "2100 MB/s"),
    (parse_rate_bytes_per_s, "68300000000", "68300000000 B/s (68.3 GB/s)"),  # 6.83e10 = 68.3 · 10^9
    (parse_flop_per_s, 2.1, "2.1 TFLOP/s"),
    (parse_flop_per_s, "500", "500 TFLOP/s"),
    (parse_flop_per_s, "5000", "5000 GFLOP/s"),
    (parse_flop_per_s, "5e12", "5e12 FLOP/s (5 TFLOP/s)"),
])
def test_a_bare_size_or_rate_is_refused_with_the_likely_unit(parser, value, suggestion):
    with pytest.raises(QuantityError) as info:
        parser(value)
    shown = value if isinstance(value, str) else repr(value)
    assert str(info.value) == f"{shown} has no unit: did you mean {suggestion}?"


@pytest.mark.parametrize("value", [0, "0", 0.0])
def test_zero_needs_no_unit_for_a_size(value):
    assert parse_size_bytes(value) == 0


@pytest.mark.parametrize("parser, value, fragment", [
    (parse_rate_bytes_per_s, 0, "a rate must be positive"),  # zero bandwidth: not a unit problem
    (parse_rate_bytes_per_s, "-50", "a rate must be positive, got -50"),
    (parse_size_bytes, "-2", "a size must be zero or more"),
    (parse_size_bytes, 10**19, "implausibly large"),
])
def test_sign_and_range_come_before_the_unit(parser, value, fragment):
    with pytest.raises(QuantityError, match=fragment):
        parser(value)


@pytest.mark.parametrize("text, expected", [
    ("8000000000 B", 8_000_000_000), ("2 GB", 2_000_000_000), ("2100 MB/s", 2_100_000_000), ("0 B", 0),
])
def test_with_a_unit_the_figures_are_exact(text, expected):
    parser = parse_rate_bytes_per_s if text.endswith("/s") else parse_size_bytes
    assert parser(text) == expected


# --- token counts ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("text, expected", [
    ("8192", 8192), ("8,192", 8192), ("8k", 8192), ("8K", 8192),  # k = 1,024: 8 · 1,024 = 8,192
    ("1M", 1_048_576), ("1,048,576", 1_048_576),  # M = 1,048,576 = 2^20
    ("1.5k", 1536),  # 1.5 · 1,024
    ("128k", 131_072), ("131,072", 131_072), (" 32K ", 32_768), (4096, 4096),
])
def test_token_forms(text, expected):
    assert parse_tokens(text) == expected


def test_exponent_notation_is_refused_with_both_readings():
    with pytest.raises(QuantityError) as info:
        parse_tokens("1e6", noun="a context")
    # 1e6 = 1,000,000 tokens, while 1M = 2^20 = 1,048,576: both readings offered, neither guessed
    assert str(info.value) == ("1e6 is exponent notation, which a context does not take: write 1000000 "
                               "(1,000,000 tokens) or 1M (1,048,576 tokens)")
    with pytest.raises(QuantityError, match=r"write 1500 \(1,500 tokens\) or 1.5k \(1,536 tokens\)"):
        parse_tokens("1.5e3")  # 1.5 · 1,024 = 1,536
    with pytest.raises(QuantityError, match=r"write 1000000000 \(1,000,000,000 tokens\)$"):
        parse_tokens("1e9")  # 10^9 has no k/M spelling: only the one reading


@pytest.mark.parametrize("text, noun, message", [
    ("8kb", "a context", "8kb is a size; a context is a token count such as 8k (8,192 tokens)"),
    ("8 KiB", "a context", "8 KiB is a size; a context is a token count such as 8k (8,192 tokens)"),
    ("4kB", "a token count", "4kB is a size, not a token count such as 4k (4,096 tokens)"),
    ("1MB", "a window", "1MB is a size; a window is a token count such as 1M (1,048,576 tokens)"),
])
def test_a_size_is_not_a_token_count(text, noun, message):
    with pytest.raises(QuantityError) as info:
        parse_tokens(text, noun=noun)
    assert str(info.value) == message


@pytest.mark.parametrize("text", ["8,19", "81,92", "8,1920", "1,000.5", ",192"])
def test_misplaced_thousands_separators_are_refused(text):
    with pytest.raises(QuantityError, match="expected a token count"):
        parse_tokens(text)


@pytest.mark.parametrize("text, items", [
    ("1k,4k,8k", ["1k", "4k", "8k"]),
    ("1k, 8,192", ["1k", "8,192"]),  # values separated by ", ": a comma then three digits groups a number
    ("8,192, 1k", ["8,192", "1k"]),
    ("1,024, 2,048", ["1,024", "2,048"]),
    ("1,024..8,192:1,024", ["1,024..8,192:1,024"]),  # a range of grouped numbers stays one item
    ("256, 512", ["256", "512"]),  # a comma and a space always separates
    ("16,32", ["16", "32"]),
    ("1,255,1000", ["1", "255", "1000"]),  # 1000 written without a separator: this writer does not group digits
    ("2048,8,192", ["2048", "8", "192"]),
])
def test_split_token_list(text, items):
    assert split_token_list(text) == items


@pytest.mark.parametrize("text", ["256,512", "1k,8,192", "8,192", "128,256,512", "1,024,2,048"])
def test_a_list_that_reads_two_ways_is_refused(text):
    # 256,512: one count (256,512 tokens) or two (256 and 512)? Without ", " between values there is no telling
    with pytest.raises(QuantityError, match="ambiguous in a list"):
        split_token_list(text)


@given(st.integers(min_value=1, max_value=10**15))
def test_every_token_count_kvplan_prints_parses_back(n):
    assert parse_tokens(fmt.tokens(n)) == n  # 8,192
    assert parse_tokens(fmt.tokens_short(n)) == n  # 8k, 1M or 1,234
    assert parse_tokens(str(n)) == n


@given(st.lists(st.integers(min_value=1, max_value=10**9), min_size=2, max_size=6))
def test_a_list_of_printed_counts_splits_back(values):  # two or more: a lone "8,192" in a list is ambiguous
    text = ", ".join(fmt.tokens(v) for v in values)  # "8,192, 512, 1,048,576": ", " always separates
    assert [parse_tokens(item) for item in split_token_list(text)] == values


@given(st.lists(st.integers(min_value=1, max_value=2**20).map(lambda v: v * 1024), min_size=1, max_size=6))
def test_a_list_of_short_counts_splits_back(values):
    text = ",".join(fmt.tokens_short(v) for v in values)  # multiples of 1,024 print as 8k, 1M: no digit groups
    assert [parse_tokens(item) for item in split_token_list(text)] == values


# --- fractions and percentages ---------------------------------------------------------------------------------


@pytest.mark.parametrize("value, expected", [("60%", 0.6), (0.6, 0.6), ("0.6", 0.6), ("100%", 1.0), (1, 1.0),
                                             ("12.5%", 0.125)])
def test_fraction_forms(value, expected):
    assert parse_fraction(value) == expected


@pytest.mark.parametrize("value, kwargs, message", [
    ("10", {"zero_ok": True, "one_ok": False}, "must be at least 0 and below 100 %, got 10: did you mean 10%?"),
    ("1", {"zero_ok": True, "one_ok": False}, "must be at least 0 and below 100 %, got 1: did you mean 1%?"),
    (60, {}, "must be above 0 and at most 1 (100 %), got 60: did you mean 60%?"),
    ("150%", {}, "must be above 0 and at most 1 (100 %), got 150%"),  # already a percentage: no hint
    ("250", {"zero_ok": True}, "must be between 0 and 1 (or 0–100 %), got 250"),  # above 100: no percentage
    (0, {}, "must be above 0 and at most 1 (100 %), got 0"),
    ("nan", {"zero_ok": True}, "must be between 0 and 1 (or 0–100 %), got nan"),
])
def test_fraction_refusals(value, kwargs, message):
    with pytest.raises(QuantityError) as info:
        parse_fraction(value, **kwargs)
    assert str(info.value) == message


def test_device_efficiencies_take_percentages():
    device = Device(name="d", ram="8 GB", os_reserve="2 GB", memory_bandwidth="50 GB/s", flash_read="2 GB/s",
                    bandwidth_efficiency="60%", compute_efficiency="45%")
    assert (device.bandwidth_efficiency, device.compute_efficiency) == (0.6, 0.45)


# --- policies that make no sense --------------------------------------------------------------------------------


def _errors(spec: dict) -> list[tuple[tuple, str]]:
    with pytest.raises(ValidationError) as info:
        PolicySpec.model_validate(spec)
    return [(e["loc"], e["msg"].removeprefix("Value error, ")) for e in info.value.errors()]


def test_history_ratio_without_recent_window_is_refused():
    # ratio 20 % of "older" tokens with no recent window: 80 % of every token evicted, the newest included
    assert _errors({"history": {"ratio": "20%"}}) == [(("history",), (
        "a ratio of 0.2 with no recent_window evicts the newest tokens too (80% of all tokens, the one just "
        "generated included): add recent_window (the newest tokens kept whole, e.g. recent_window: 4k), or keep "
        "every token with ratio: 1"))]
    assert _errors({"layer_groups": [{"layers": "rest", "history": {"ratio": 0.5}}]})[0][0] == (
        "layer_groups", 0, "history")
    # with a window, or keeping every older token, it stands
    assert PolicySpec.model_validate({"recent_window": "4k", "history": {"ratio": "20%"}}).history.ratio == 0.2
    assert PolicySpec.model_validate({"history": {"ratio": 1, "k": 4}}).recent_window is None


def test_a_history_format_wider_than_the_recent_one_is_refused():
    (loc, message), = _errors({"k": "q4_0", "recent_window": 256, "history": {"ratio": 0.5, "k": "q8_0"}})
    # 4,096 values: q8_0 = 128 blocks × 34 B = 4,352 B; q4_0 = 128 blocks × 18 B = 2,304 B
    assert loc == ("history",)
    assert message.startswith("k stores older tokens in more bytes than k of the recent ones (4,352 > 2,304 bytes")


def test_policy_percentages_everywhere():
    spec = PolicySpec.model_validate({"k": {"bits": 4, "group_size": 64, "outlier_fraction": "1%"}})
    assert spec.k.outlier_fraction == 0.01
    (loc, message), = _errors({"recent_window": 8, "history": {"ratio": 20}})
    assert loc == ("history", "ratio") and message.endswith("got 20: did you mean 20%?")
