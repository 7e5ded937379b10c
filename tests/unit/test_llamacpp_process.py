"""The llama.cpp process model by hand: baseline, repacked copy, staging buffer, reclaimable part."""

from __future__ import annotations

from collections import namedtuple

import pytest

from kvplan.engine import llamacpp_process as lp

T = namedtuple("T", "name kind dtype shape bytes")


def test_baseline_heap_grows_with_the_vocabulary():
    # 10,506,240 + 189 · 128,256 = 10,506,240 + 24,240,384 = 34,746,624 bytes (Llama 3's vocabulary)
    assert lp.baseline_anon_bytes(128_256) == 34_746_624
    assert lp.baseline_anon_bytes(0) == lp.BASELINE_ANON_FIXED_BYTES


def test_repacked_bytes_follow_type_kind_and_row_multiple():
    tensors = [
        T("blk.0.attn_q.weight", "linear", "q4_0", (2048, 2048), 2_359_296),  # 2048·2048/32·18
        T("blk.0.ffn_down.weight", "linear", "q4_0", (8192, 2052), 9_455_616),  # 2052 rows: not a multiple of 8
        T("token_embd.weight", "embedding", "q4_0", (2048, 128_256), 147_750_912),  # read by GET_ROWS
        T("output.weight", "output", "q6_K", (2048, 128_256), 215_470_080),  # Q6_K: repacked on Arm only
        T("blk.0.attn_norm.weight", "norm", "f32", (2048,), 8_192),
    ]
    assert lp.repacked_bytes(tensors, "avx2") == 2_359_296
    # NEON with int8 matmul: Q4_0 needs rows % 4 (2052 = 4 · 513 qualifies) and Q6_K is repacked
    assert lp.repacked_bytes(tensors, "neon-i8mm") == 2_359_296 + 9_455_616 + 215_470_080
    assert lp.repacked_bytes(tensors, "none") == 0


def test_with_mmap_the_repacked_part_is_held_twice_and_the_file_pages_are_reclaimable():
    # Llama-3.1-8B Q4_0 (build 11434 logs): 4,653,375,744 bytes of weights, 3,925,868,544 (3,744 MiB) repacked
    p = lp.process_parts(4_653_375_744, 3_925_868_544, mmap=True, repack=True, n_vocab=128_256,
                         largest_repacked=33_030_144)
    assert p.repack_copy_bytes == 3_925_868_544
    assert p.weights_file_bytes == 4_653_375_744
    assert p.staging_bytes == 0  # mapped: no staging buffer
    assert p.extra_bytes == 34_746_624 + lp.BASELINE_FILE_BYTES + 3_925_868_544
    assert p.reclaimable_bytes == 4_653_375_744 - lp.MMAP_WORKING_SET_BYTES


def test_without_mmap_repacking_replaces_its_source_but_stages_the_largest_tensor():
    p = lp.process_parts(4_653_375_744, 3_925_868_544, mmap=False, repack=True, n_vocab=128_256,
                         largest_repacked=33_030_144)
    assert p.repack_copy_bytes == 0 and p.weights_file_bytes == 0 and p.reclaimable_bytes == 0
    assert p.staging_bytes == 33_030_144  # 14,336 · 4,096 / 32 · 18, the largest Q4_0 tensor (ffn_down/gate/up)
    assert p.weights_anon_bytes == 4_653_375_744


def test_repack_off_holds_one_copy():
    p = lp.process_parts(1_000_000, 600_000, mmap=True, repack=False)
    assert p.repacked_bytes == p.repack_copy_bytes == p.staging_bytes == 0
    assert p.extra_bytes == lp.BASELINE_ANON_FIXED_BYTES + lp.BASELINE_FILE_BYTES


@pytest.mark.parametrize("mmap", [True, False])
def test_a_small_mapped_file_has_nothing_reclaimable_below_the_working_set(mmap):
    p = lp.process_parts(lp.MMAP_WORKING_SET_BYTES // 2, 0, mmap=mmap, repack=True)
    assert p.reclaimable_bytes == 0
