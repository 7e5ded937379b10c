import pytest

from kvplan.engine import ortgenai_cache as o


def test_fp16_row_and_shared_buffer():
    # Llama-3-8B-like: 32 layers, 8 kv heads, head_size 128, fp16 → 128·2 = 256 bytes per row
    row = o.head_row_bytes(128, 2)
    assert row == 256
    # 2 · 32 · 1 · 8 · 256 · 4096 = 536,870,912
    assert o.shared_buffer_bytes(32, 1, 8, row, 4096) == 536_870_912
    # batch 2 doubles it
    assert o.shared_buffer_bytes(32, 2, 8, row, 4096) == 2 * 536_870_912


def test_quantized_rows():
    # 8-bit: 128/4 + 1 = 33 words · 4 = 132 bytes; 4-bit: 128/8 + 1 = 17 words · 4 = 68 bytes
    assert o.head_row_bytes(128, 2, 8) == 132
    assert o.head_row_bytes(128, 2, 4) == 68
    with pytest.raises(ValueError):
        o.head_row_bytes(96, 2, 4)
    with pytest.raises(ValueError):
        o.head_row_bytes(128, 2, 3)


def test_unshared_peak_is_past_plus_present():
    # 2 layers, 1 seq, 2 heads, row 4 bytes: past 10 + present 11 = 21 tokens → 2·2·1·2·4·21 = 672
    assert o.unshared_step_peak_bytes(2, 1, 2, 4, 10, 1) == 672


@pytest.mark.parametrize("past", [0, 1, 100, 4095])
def test_unshared_peak_monotone_and_linear_in_batch(past):
    a = o.unshared_step_peak_bytes(4, 1, 8, 256, past, 1)
    assert o.unshared_step_peak_bytes(4, 1, 8, 256, past + 1, 1) > a
    assert o.unshared_step_peak_bytes(4, 3, 8, 256, past, 1) == 3 * a
