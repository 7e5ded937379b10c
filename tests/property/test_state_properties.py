"""A state layer's bytes are constant in the context and linear in the sequences, in every cache model that
prices them (hypothesis)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kvplan.caches.ideal import cache_layout
from kvplan.caches.llamacpp import llamacpp_cache
from kvplan.engine.formats import format_from_name
from kvplan.profiles.runtime import LlamaCppSpec
from kvplan.profiles.spec import Model

F16 = format_from_name("f16")


def _hybrid(layers, state_every, kernel, heads, head_dim, state_size):
    state_layers = [i for i in range(layers - 1) if i % state_every != state_every - 1]  # the last: attention
    return Model(name="h", params=10**10, layers=layers, attention_heads=8, kv_heads=2, head_dim=64,
                 state={"mixer": "mamba2", "layers": state_layers, "conv_kernel_tokens": kernel,
                        "ssm_heads": heads, "ssm_head_dim": head_dim, "ssm_groups": 1,
                        "ssm_state_size": state_size})


shapes = st.tuples(st.integers(2, 64), st.integers(2, 8), st.integers(2, 5), st.sampled_from([8, 32, 48]),
                   st.sampled_from([32, 64]), st.sampled_from([16, 64, 128]))


@settings(max_examples=100, deadline=None)
@given(shape=shapes, ctx=st.integers(1, 200_000), more=st.integers(1, 100_000), sequences=st.integers(1, 8))
def test_ideal_state_is_constant_in_context_and_linear_in_sequences(shape, ctx, more, sequences):
    m = _hybrid(*shape)
    layout = cache_layout(m, F16, F16)
    state = layout.state_bytes(ctx, sequences)
    assert state == layout.state_bytes(ctx + more, sequences) == sequences * layout.state_bytes(ctx, 1) > 0
    # the KV part grows with the context as the attention layers alone would
    kv = layout.kv_bytes(ctx, sequences) - state
    assert kv == layout.bytes_per_token * ctx * sequences


@settings(max_examples=100, deadline=None)
@given(shape=shapes, ctx=st.integers(1, 200_000), more=st.integers(1, 100_000), sequences=st.integers(1, 8),
       unified=st.booleans())
def test_llamacpp_recurrent_memory_is_one_f32_cell_per_sequence(shape, ctx, more, sequences, unified):
    m = _hybrid(*shape)
    cache = llamacpp_cache(LlamaCppSpec(kv_unified=unified), m, F16, F16)
    layers, _, kernel, heads, head_dim, state_size = shape
    n_state = len(m.state.layers)
    per_cell = n_state * 4 * ((kernel - 1) * (heads * head_dim + 2 * state_size) + heads * head_dim * state_size)
    assert cache.state_bytes(ctx, sequences) == cache.state_bytes(ctx + more, sequences) == per_cell * sequences
    scalar = cache.kv_bytes(ctx, sequences)
    import numpy as np
    assert int(cache.kv_bytes(np.array([ctx]), np.array([sequences]))[0]) == scalar  # arrays agree with scalars
