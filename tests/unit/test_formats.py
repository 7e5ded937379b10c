from __future__ import annotations

import pytest

from kvplan.errors import UsageError
from kvplan.engine.formats import format_from_bits, format_from_name


@pytest.mark.parametrize("name, values, expected", [
    ("f16", 1024, 2048),  # 2 B each
    ("f32", 1024, 4096),
    ("bf16", 128, 256),
    ("fp8", 128, 128),
    ("q8_0", 1024, 1088),  # 1024 / 32 blocks · 34 B = 32 · 34
    ("q4_0", 1024, 576),  # 32 · 18
    ("q4_1", 1024, 640),  # 32 · 20
    ("q5_0", 1024, 704),  # 32 · 22
    ("q5_1", 1024, 768),  # 32 · 24
    ("iq4_nl", 1024, 576),  # 32 · 18
])
def test_named_row_bytes(name, values, expected):
    assert format_from_name(name).row_bytes(values) == expected


def test_group_quantized_int4_with_fp16_scales():
    # 128 values · 4 bits = 64 B of data + 128 / 32 groups · 2 B = 8 B of scales → 72 B (0.5625 B/value)
    fmt = format_from_bits(4, group_size=32)
    assert fmt.row_bytes(128) == 72
    assert fmt.bytes_per_value == 0.5625


def test_odd_bit_widths_round_up_to_whole_bytes():
    # 3 bits · 100 values = 300 bits = 37.5 B → 38 B for the row
    assert format_from_bits(3).row_bytes(100) == 38


def test_unknown_names_and_bits():
    with pytest.raises(UsageError, match="unknown cache type"):
        format_from_name("q3_k")
    with pytest.raises(UsageError):
        format_from_bits(0)
    with pytest.raises(UsageError):
        format_from_bits(33)
