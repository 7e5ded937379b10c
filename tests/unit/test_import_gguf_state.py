"""`kvplan import gguf` on hybrid headers (lfm2, granitehybrid, nemotron_h, qwen35): small GGUF files written here
with gguf's own writer, the keys llama.cpp build 11434 reads (kvplan.importers.gguf_state)."""

from __future__ import annotations

import pytest

from kvplan.engine.schedule import Attention, Feedforward, Parallel, State
from kvplan.errors import ProfileError

gguf = pytest.importorskip("gguf")
np = pytest.importorskip("numpy")

from kvplan.importers.gguf import profile_from_gguf_file  # noqa: E402

HIDDEN = 512


def write(path, arch, kv_heads, ff=1024, extra=None, layers=4, heads=8):
    w = gguf.GGUFWriter(str(path), arch)
    w.add_name("Hybrid Test")
    w.add_block_count(layers)
    w.add_head_count(heads)
    w.add_head_count_kv(kv_heads)
    w.add_embedding_length(HIDDEN)
    w.add_feed_forward_length(ff)
    w.add_context_length(8192)
    w.add_vocab_size(1000)
    for key, value in (extra or {}).items():
        (w.add_uint32 if isinstance(value, int) else w.add_array)(key.format(arch=arch), value)
    # the fewest parameters the shape may hold: layers × heads × head_dim × hidden (kvplan.profiles.plausible)
    w.add_tensor("blk.0.attn_output.weight", np.zeros((layers * HIDDEN, HIDDEN), dtype=np.float16))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def test_lfm2_conv_layers_are_the_ones_without_kv_heads(tmp_path):
    m = profile_from_gguf_file(write(tmp_path / "l.gguf", "lfm2", [0, 2, 0, 2],
                                     extra={"{arch}.shortconv.l_cache": 3})).model
    assert (m.state.mixer, m.state.layers, m.state.conv_channels, m.kv_heads) == ("short_conv", [0, 2], 512, 2)
    assert m.schedule.layer(0) == State("short_conv", 512, 3, 0) and m.schedule.layer(1) == Attention(2, 64, 64)


def test_granitehybrid_mamba2_widths(tmp_path):
    # granite4:tiny-h's widths: inner 3,072 = 48 heads × 64, 1 group, state 128, kernel 4
    extra = {"{arch}.ssm.conv_kernel": 4, "{arch}.ssm.inner_size": 3072, "{arch}.ssm.state_size": 128,
             "{arch}.ssm.time_step_rank": 48, "{arch}.ssm.group_count": 1}
    m = profile_from_gguf_file(write(tmp_path / "g.gguf", "granitehybrid", [0, 0, 0, 2], extra=extra)).model
    # conv 3,072 + 2 · 128 = 3,328 channels; SSM 3,072 · 128 = 393,216 values
    assert m.schedule.layer(0) == State("mamba2", 3328, 4, 393_216)
    assert m.state.layers == [0, 1, 2] and m.schedule.layer(3) == Attention(2, 64, 64)


def test_nemotron_h_mlp_only_layers(tmp_path):
    extra = {"{arch}.ssm.conv_kernel": 4, "{arch}.ssm.inner_size": 1024, "{arch}.ssm.state_size": 64,
             "{arch}.ssm.time_step_rank": 16, "{arch}.ssm.group_count": 2}
    path = write(tmp_path / "n.gguf", "nemotron_h", [0, 0, 2, 0], ff=[0, 2048, 0, 0], extra=extra)
    m = profile_from_gguf_file(path).model
    assert [type(x) for x in m.schedule.layer_kinds()] == [State, Feedforward, Attention, State]


def test_qwen35_recurrent_layers_by_interval_and_its_mtp_layer(tmp_path):
    extra = {"{arch}.ssm.conv_kernel": 4, "{arch}.ssm.inner_size": 2048, "{arch}.ssm.state_size": 128,
             "{arch}.ssm.time_step_rank": 16, "{arch}.ssm.group_count": 16, "{arch}.full_attention_interval": 4,
             "{arch}.nextn_predict_layers": 1}
    m = profile_from_gguf_file(write(tmp_path / "q.gguf", "qwen35", 2, extra=extra, layers=9)).model
    assert m.layers == 8 and m.state.layers == [0, 1, 2, 4, 5, 6]  # the 9th block is the MTP draft layer
    # conv 2 · 16 · 128 + 16 · 128 = 6,144; matrix memory 16 · 128 · 128 = 262,144
    assert m.schedule.layer(0) == State("gated_deltanet", 6144, 4, 262_144)


def test_inconsistent_gated_deltanet_widths_are_refused(tmp_path):
    extra = {"{arch}.ssm.conv_kernel": 4, "{arch}.ssm.inner_size": 2000, "{arch}.ssm.state_size": 128,
             "{arch}.ssm.time_step_rank": 16, "{arch}.ssm.group_count": 16}
    with pytest.raises(ProfileError, match="inner_size 2000 is not time_step_rank 16 × state_size 128"):
        profile_from_gguf_file(write(tmp_path / "q.gguf", "qwen35", 2, extra=extra))


def test_falcon_h1_every_layer_attends_and_keeps_a_mamba2_state(tmp_path):
    # Falcon-H1-0.5B's widths in its GGUF (convert_hf_to_gguf FalconH1Model): inner 1,536 = 24 heads × 64, 1 group,
    # state 128, kernel 4; one head_count_kv for every layer (llama.cpp fills is_recr_impl with true and its hybrid
    # memory's filter_attn and filter_recr are both true on every layer)
    extra = {"{arch}.ssm.conv_kernel": 4, "{arch}.ssm.inner_size": 1536, "{arch}.ssm.state_size": 128,
             "{arch}.ssm.time_step_rank": 24, "{arch}.ssm.group_count": 1}
    m = profile_from_gguf_file(write(tmp_path / "f.gguf", "falcon-h1", 2, extra=extra)).model
    assert m.state.parallel_attention and m.state.layers == [0, 1, 2, 3]
    # conv 1,536 + 2 · 128 = 1,792 channels; SSM 1,536 · 128 = 196,608 values; attention 2 KV heads × 512 / 8
    assert m.schedule.runs == ((4, Parallel(Attention(2, 64, 64), State("mamba2", 1792, 4, 196_608))),)


def test_lfm2moe_conv_layers_are_the_ones_without_kv_heads(tmp_path):
    # src/models/lfm2moe.cpp: is_recr_impl[il] = n_head_kv(il) == 0, as lfm2's
    m = profile_from_gguf_file(write(tmp_path / "m.gguf", "lfm2moe", [0, 0, 2, 0],
                                     extra={"{arch}.shortconv.l_cache": 3})).model
    assert (m.state.mixer, m.state.layers, m.state.conv_channels) == ("short_conv", [0, 1, 3], 512)
    assert m.schedule.layer(2) == Attention(2, 64, 64)
