"""The state bytes of each state-layer kind, derived by hand from the real configs' widths."""

from __future__ import annotations

import numpy as np

from kvplan.engine import state as st


def test_short_conv_lfm2():
    # LFM2-1.2B: hidden_size 2,048 channels, conv_L_cache 3; llama.cpp keeps 3 − 1 = 2 columns in f32:
    # 2,048 × 2 × 4 = 16,384 B per layer per sequence (n_embd_r = n_embd · (L_cache − 1) = 4,096 values)
    channels = st.short_conv_channels(2048)
    assert channels == 2048
    assert st.state_bytes(channels, 3 - 1, 0, 4, 0) == 16_384
    # transformers keeps the whole kernel in bf16: 2,048 × 3 × 2 = 12,288 B
    assert st.state_bytes(channels, 3, 0, 2, 0) == 12_288


def test_mamba2_granite_4_h():
    # Granite-4.0-H-Micro style widths: 48 heads × 64 head_dim = d_inner 3,072 (= 2 × hidden 1,536),
    # 1 group, d_state 128, d_conv 4
    # conv channels 3,072 + 2 · 1 · 128 = 3,328; SSM 48 · 64 · 128 = 393,216 values
    assert st.mamba2_conv_channels(48, 64, 1, 128) == 3_328
    assert st.mamba2_recurrent_values(48, 64, 128) == 393_216
    # llama.cpp f32, 3 columns: 3,328 · 3 · 4 + 393,216 · 4 = 39,936 + 1,572,864 = 1,612,800 B
    assert st.state_bytes(3_328, 3, 393_216, 4, 4) == 1_612_800


def test_gated_deltanet_qwen3_5():
    # 16 key heads × 128, 16 value heads × 128, kernel 4:
    # conv channels 2 · 16 · 128 + 16 · 128 = 6,144; matrix memory 16 · 128 · 128 = 262,144 values
    assert st.gated_deltanet_conv_channels(16, 128, 16, 128) == 6_144
    assert st.gated_deltanet_recurrent_values(128, 16, 128) == 262_144
    # llama.cpp f32: 6,144 · 3 · 4 + 262,144 · 4 = 73,728 + 1,048,576 = 1,122,304 B
    assert st.state_bytes(6_144, 3, 262_144, 4, 4) == 1_122_304


def test_arrays_broadcast_and_sequences_scale_linearly():
    seqs = np.array([1, 2, 4])
    out = st.state_bytes(6_144, 3, 262_144, 4, 4, seqs)
    assert out.tolist() == [1_122_304, 2_244_608, 4_489_216]
