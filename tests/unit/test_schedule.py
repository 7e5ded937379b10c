"""A model's schedule of layers (kvplan.engine.schedule), as the profile fields write it.

Each expected schedule is written out by hand from the profile's YAML fields (quoted in the comments), not
derived with kvplan's own pattern rules.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kvplan.caches.ideal import cache_layout
from kvplan.caches.llamacpp import llamacpp_cache
from kvplan.caches.policy import policy_cache
from kvplan.caches.transformers import transformers_cache
from kvplan.engine.formats import format_from_bits
from kvplan.engine.schedule import (Attention, Feedforward, Parallel, Schedule, SharedKV, State, attention_only,
                                    attention_part, attention_runs, compress, split_runs)
from kvplan.errors import FieldError
from kvplan.profiles.catalog import Catalog
from kvplan.profiles.catalog import load_profile
from kvplan.profiles.policy import PolicySpec
from kvplan.profiles.records import ModelRecord
from kvplan.profiles.runtime import LlamaCppSpec, TransformersSpec

ROOT = Path(__file__).resolve().parents[2]
FP16 = format_from_bits(16)
_catalog = Catalog(fast=False)


def model(name):
    return _catalog.model(name).profile


def test_gemma_3_1b_is_five_local_one_global_in_nine_runs():
    # layers 26, kv_heads 1, head_dim 256, sliding_window 512, pattern "5:1": layers 5, 11, 17, 23 global.
    local, full = Attention(1, 256, 256, 512), Attention(1, 256, 256, None)
    expected = ((5, local), (1, full)) * 4 + ((2, local),)
    s = model("gemma-3-1b").schedule
    assert s.runs == expected
    # 26 = 4 · 6 + 2: four whole periods of two runs (5 local, 1 global) and one run of the 2 layers left over
    assert len(s.runs) == 4 * 2 + 1 == 9
    assert s.layers == 26
    assert s.groups() == ((22, local), (4, full))  # 4 · 5 + 2 = 22 local, 4 global
    assert [first for first, _, layer in s.spans() if layer.window_tokens is None] == [5, 11, 17, 23]


def test_gemma_2_2b_alternates():
    # layers 26, kv_heads 4, head_dim 256, sliding_window 4096, pattern alternating: even layers local
    local, full = Attention(4, 256, 256, 4096), Attention(4, 256, 256, None)
    s = model("gemma-2-2b").schedule
    assert s.runs == ((1, local), (1, full)) * 13
    assert s.groups() == ((13, local), (13, full))
    assert list(s.layer_kinds(3, 6)) == [full, local, full]


def test_mistral_7b_v0_1_is_one_windowed_run():
    # layers 32, kv_heads 8, head_dim 128, sliding_window 4096, pattern all
    assert model("mistral-7b-v0.1").schedule.runs == ((32, Attention(8, 128, 128, 4096)),)


def test_deepseek_v2_lite_is_one_latent_run():
    # layers 27, mla {kv_lora_rank 512, qk_rope_head_dim 64}: one head of 512 + 64 = 576 K values, no V row
    s = model("deepseek-v2-lite").schedule
    assert s.runs == ((27, Attention(1, 576, 0, None, latent_rank=512)),)
    assert s.latent and not model("llama-2-7b").schedule.latent


def test_llama_2_7b_is_one_global_run():
    assert model("llama-2-7b").schedule.runs == ((32, Attention(32, 128, 128, None)),)


def test_per_layer_kv_heads():
    # tests/data/runtimes/gemma4-12b-shape.yaml: 48 layers, kv_heads 8 on local layers and 2 on every 6th
    # (the global ones, i % 6 == 5), head_dim 256, window 1024, pattern "5:1"
    m = load_profile("model", ROOT / "tests/data/runtimes/gemma4-12b-shape.yaml")
    local, full = Attention(8, 256, 256, 1024), Attention(2, 256, 256, None)
    assert m.schedule.runs == ((5, local), (1, full)) * 8  # 48 = 8 · 6: 16 runs
    assert m.schedule.groups() == ((40, local), (8, full))


def test_schedule_is_memoized_per_profile_and_follows_a_copy():
    m = model("gemma-2-2b")
    assert m.schedule is m.schedule
    copy = m.model_copy(update={"kv_heads": 8})
    assert copy.schedule.runs[0][1].kv_heads == 8 and m.schedule.runs[0][1].kv_heads == 4


def test_every_shipped_model_has_its_layer_count_and_one_attention_layer_per_index():
    names = [name for name, _, _, origin in _catalog.entries("model") if origin == "builtin"]
    assert len(names) >= 20
    for name in names:
        m = model(name)
        layers = list(m.schedule.layer_kinds())
        assert m.schedule.layers == len(layers) == m.layers, name
        state = m.state
        others = set(state.layers) | set(state.feedforward_layers) if state is not None else set()
        shared_from = m.layers - (m.shared_kv_layers or 0)  # Gemma 3n: the last layers read an earlier cache
        parallel = state is not None and state.parallel_attention
        for i, layer in enumerate(layers):  # an attention layer at every index the state mapping leaves
            assert isinstance(layer, (Parallel if parallel else State) if state is not None and i in state.layers else
                              Feedforward if i in others else SharedKV if i >= shared_from else Attention), (name, i)


def test_compress_groups_and_windows():
    a, b = Attention(2, 64, 64), Attention(2, 64, 64, 100)
    s = compress([a, a, b, a, a, a])
    assert s.runs == ((2, a), (1, b), (3, a))
    assert s.groups(1, 4) == ((2, a), (1, b))  # layers 1, 2, 3: a, b, a
    assert s.windows() == (100,)
    w = s.with_window(50)
    assert w.runs == ((6, Attention(2, 64, 64, 50)),)  # one window on every layer: the runs merge
    assert hash(w) == hash(Schedule(((6, Attention(2, 64, 64, 50)),)))


def test_ideal_kv_is_the_sum_over_runs():
    # gemma-3-1b fp16: each layer-token 1 · 256 · 2 (K) + 1 · 256 · 2 (V) = 1,024 B; at 32,768 tokens
    # 4 global layers · 1,024 · 32,768 + 22 local · 1,024 · 512 = 134,217,728 + 11,534,336 = 145,752,064
    layout = cache_layout(model("gemma-3-1b"), FP16, FP16)
    assert layout.kv_bytes(32768) == 145_752_064
    assert (layout.global_layers, layout.windowed_layers) == (4, 22)


def _with_schedule(base, schedule):
    """A cached-record profile of ``base`` whose schedule is ``schedule`` (no field writes the new kinds yet)."""

    class Stub(ModelRecord):
        __slots__ = ()

        @property
        def schedule(self):
            return schedule

    return Stub(base.model_dump(mode="json"))


@pytest.mark.parametrize("odd, words, refusing", [
    # a shared-KV layer is priced (zero bytes) by the ideal and transformers caches, and by llama.cpp for gemma3n
    (SharedKV(source_layer=1), "layers 2–3 read layer 1's KV cache (shared_kv)", ("compression policy",)),
    # a state layer is priced by the ideal, llama.cpp and transformers caches; a compression policy has none
    (State("mamba2", 4096, 4, 0), "layers 2–3 keeps a fixed-size state per sequence (state)", ("compression policy",)),
    (Parallel(Attention(32, 128, 128), State("mamba2", 4096, 4, 0)),
     "layers 2–3 attends and keeps a fixed-size state per sequence side by side (parallel)", ("compression policy",)),
])
def test_the_new_kinds_are_refused_by_the_cache_models_that_do_not_price_them(odd, words, refusing):
    a = Attention(32, 128, 128)
    m = _with_schedule(model("llama-2-7b"), Schedule(((2, a), (2, odd), (28, a))))
    builders = {
        "ideal": lambda: cache_layout(m, FP16, FP16),
        "compression policy": lambda: policy_cache(m, PolicySpec.model_validate({"k": {"bits": 8}})),
        "llama.cpp": lambda: llamacpp_cache(LlamaCppSpec(), m, FP16, FP16),
        "transformers": lambda: transformers_cache(TransformersSpec(), m, FP16, FP16),
    }
    for cache in refusing:
        build = builders[cache]
        with pytest.raises(FieldError) as exc:
            build()
        assert exc.value.fields == ("model",)
        assert str(exc.value).startswith(f"model: {words}; the {cache} cache model prices only attention layers")


def test_attention_runs_passes_attention():
    s = model("gemma-3-1b").schedule
    assert attention_runs(s, "ideal") == s.runs


def test_layer_by_index():
    s = model("gemma-3-1b").schedule
    assert s.layer(5) == Attention(1, 256, 256, None) and s.layer(25) == Attention(1, 256, 256, 512)
    with pytest.raises(IndexError):
        s.layer(26)


@pytest.mark.parametrize("name", ["gemma-2-2b", "gemma-3-1b", "gemma-3-4b"])
def test_llamacpp_compute_graph_windows_the_schedules_windowed_layers(name):
    # The compute buffer's allocator replay follows the layer order (each layer's attention reads the mask and
    # cells of its own cache), and the engine takes that order from the architecture as llama.cpp does
    # (set_swa_pattern: layer il windowed when il % period < period − 1; gemma2 period 2, gemma3 period 6).
    # For the shipped models it is the schedule's order, so the KV cache and the compute buffer agree.
    from kvplan.engine import llamacpp_buffers as lb

    m = model(name)
    period = lb._SWA_PERIOD[m.architecture]
    windowed = [layer.window_tokens is not None for layer in m.schedule.layer_kinds()]
    assert windowed == [il % period < period - 1 for il in range(m.layers)]


def test_lfm2_schedule_and_its_state_by_hand():
    # LFM2-1.2B: 16 layers, attention at 2, 5, 8, 10, 12, 14 (full_attn_idxs), short convs elsewhere over
    # hidden_size 2,048 channels with conv_L_cache 3 taps and no recurrent state
    m = model("lfm2-1.2b")
    conv = State("short_conv", 2048, 3, 0)
    attn = Attention(8, 64, 64)
    assert [layer for _, layer in m.schedule.runs] == [conv, attn, conv, attn, conv, attn, conv, attn, conv, attn,
                                                      conv, attn, conv]
    attention, states = split_runs(m.schedule, "ideal")
    assert attention == ((6, attn),) and states == ((10, conv),)
    assert attention_only(m.schedule).runs == ((6, attn),)
    # ideal: 6 layers × 2 (K, V) × 8 heads × 64 × 2 B = 12,288 B/token; the state as the computation needs it,
    # 10 layers × 2,048 × (3 − 1) columns × 2 B (bf16) = 81,920 B per sequence
    layout = cache_layout(m, FP16, FP16)
    assert layout.bytes_per_token == 12_288 and layout.state_bytes_per_sequence == 81_920
    # 32,768 tokens × 12,288 = 402,653,184; × 2 sequences + 2 × 81,920 state
    assert layout.kv_bytes(32768, 2) == 2 * 402_653_184 + 2 * 81_920
    assert layout.kv_bytes(0, 2) == 0  # no tokens, no cache
    # the state counts against the allowance: (10,000,000 − 81,920) // 12,288 = 807
    assert layout.max_ctx(10_000_000) == 807


def test_feedforward_and_shared_kv_layers_keep_nothing():
    s = compress([State("mamba2", 10, 4, 5), Feedforward(), Attention(2, 64, 64)])
    assert split_runs(s, "ideal") == (((1, Attention(2, 64, 64)),), ((1, State("mamba2", 10, 4, 5)),))
    # a shared-KV layer reads layer 0's cache: no cache of its own, so only layer 0 is priced
    assert split_runs(compress([Attention(2, 64, 64), SharedKV(0)]), "ideal") == (((1, Attention(2, 64, 64)),), ())
    with pytest.raises(FieldError, match="layer 1 reads layer 0"):
        attention_runs(compress([Attention(2, 64, 64), SharedKV(0)]), "mlx-lm")


def test_falcon_h1_every_layer_is_parallel_and_priced_as_both_by_hand():
    # Falcon-H1-0.5B: 36 layers, each attention (2 KV heads × 64) beside Mamba2 (24 heads × 64 = d_inner 1,536,
    # 1 group, d_state 128, kernel 4): conv channels 1,536 + 2 · 1 · 128 = 1,792, recurrent 24 · 64 · 128 = 196,608
    m = model("falcon-h1-0.5b")
    attn, mamba = Attention(2, 64, 64), State("mamba2", 1792, 4, 196_608)
    assert m.schedule.runs == ((36, Parallel(attn, mamba)),)
    assert m.schedule.parallel_layers == 36 and attention_part(m.schedule.layer(7)) == attn
    assert split_runs(m.schedule, "ideal") == (((36, attn),), ((36, mamba),))
    assert attention_only(m.schedule).runs == ((36, attn),)
    assert m.schedule.with_window(256).runs == ((36, Parallel(Attention(2, 64, 64, 256), mamba)),)
    assert m.schedule.with_window(256).windows() == (256,) and m.schedule.windows() == ()
    # ideal: 36 × 2 (K, V) × 2 × 64 × 2 B = 18,432 B/token; state 36 × (1,792 × 3 + 196,608) × 2 B (bf16)
    # = 36 × 403,968 = 14,542,848 B per sequence
    layout = cache_layout(m, FP16, FP16)
    assert layout.bytes_per_token == 18_432 and layout.state_bytes_per_sequence == 14_542_848
    # llama.cpp: every layer in llama_kv_cache and in llama_memory_recurrent: 36 × (3 × 1,792 × 4 = 21,504
    # + 196,608 × 4 = 786,432) = 29,085,696 B per cell; 16,384 cells × 18,432 = 301,989,888 B of KV
    c = llamacpp_cache(LlamaCppSpec(), m, FP16, FP16)
    assert c.state_bytes(16384, 1) == 29_085_696 and c.kv_bytes(16384, 1) == 301_989_888 + 29_085_696
    assert ("parallel_layers", 36) in {(r.kind, r.facts().get("layers")) for r in c.rules}
    # transformers: the whole kernel in the model's dtype + float32 recurrent: 36 × (1,792 × 4 × 2 + 196,608 × 4)
    # = 36 × 800,768 = 28,827,648 B per sequence
    t = transformers_cache(TransformersSpec(), m, FP16, FP16)
    assert t.state_bytes_per_sequence == 28_827_648 and t.bytes_per_token == 18_432
