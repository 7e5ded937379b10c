"""The compute buffer's floor (ggml_alloc.live_floor_bytes): the most bytes live at once, a lower bound on the
allocator's peak for the graph and for the same graph with larger tensors, which lets the llama.cpp max-context
search stop scanning blocks early without changing its answer."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from kvplan.caches.buffers import llamacpp_buffers
from kvplan.engine import ggml_alloc
from kvplan.engine.ggml_alloc import Graph
from kvplan.errors import KvplanError
from kvplan.profiles.catalog import Catalog
from kvplan.profiles.runtime import runtime_spec


def test_live_floor_by_hand():
    g = Graph()
    a = g.input(100)  # aligned to 128
    b = g.op(64, a)  # live a + b = 128 + 64 = 192, then a is freed (its last use): 64
    c = g.op(64, b, inplace=True)  # may reuse b's block: counted as 64 + 64 − 64 = 64
    g.op(256, c)  # 64 + 256 = 320, the most at once
    assert ggml_alloc.live_floor_bytes(g) == 320
    # the allocator: a at 0, b at 128, a freed ([0, 128) free), c takes b's block, the 256 B tensor does not fit
    # the 128 B hole and goes to 192: peak 192 + 256 = 448
    assert ggml_alloc.peak_bytes(g) == 448


def test_an_in_place_node_whose_source_has_another_reader_counts_both():
    g = Graph()
    a = g.input(64)
    b = g.op(64, a)
    c = g.op(64, b, inplace=True)  # b is read again below: no reuse, b + c live (a freed after b)
    g.op(32, b, c)
    assert ggml_alloc.live_floor_bytes(g) == 64 + 64 + 32  # b, c and the last node
    assert ggml_alloc.live_floor_bytes(g) <= ggml_alloc.peak_bytes(g)


@st.composite
def graphs(draw):
    """A random graph and the same graph with every tensor at least as large."""
    n_in = draw(st.integers(1, 3))
    n_nodes = draw(st.integers(1, 25))
    sizes = draw(st.lists(st.integers(1, 5000), min_size=n_in + n_nodes, max_size=n_in + n_nodes))
    grow = draw(st.lists(st.integers(0, 3000), min_size=n_in + n_nodes, max_size=n_in + n_nodes))
    spec = []
    for i in range(n_nodes):
        k = n_in + i
        srcs = draw(st.lists(st.integers(0, k - 1), min_size=1, max_size=3, unique=True))
        kind = draw(st.sampled_from(["op", "op", "inplace", "view"]))
        spec.append((kind, srcs, draw(st.booleans()) and i == n_nodes - 1))

    def build(sz):
        g = Graph()
        for j in range(n_in):
            g.input(sz[j])
        for i, (kind, srcs, out) in enumerate(spec):
            k = n_in + i
            if kind == "view":
                g.view(srcs[0], *srcs[1:])
            else:
                g.op(sz[k], *srcs, inplace=kind == "inplace", output=out)
        return g

    return build(sizes), build([s + d for s, d in zip(sizes, grow)])


@settings(max_examples=300, deadline=None)
@given(graphs())
def test_the_floor_is_below_the_peak_of_the_graph_and_of_its_larger_twin(pair):
    small, large = pair
    floor = ggml_alloc.live_floor_bytes(small)
    assert ggml_alloc.largest_tensor_bytes(small) <= floor <= ggml_alloc.peak_bytes(small)
    assert floor <= ggml_alloc.live_floor_bytes(large) <= ggml_alloc.peak_bytes(large)


def _llamacpp_models():
    catalog = Catalog()
    return [name for name, *_ in catalog.entries("model")]


@pytest.mark.parametrize("model", _llamacpp_models())
def test_every_built_in_models_floor_is_below_its_buffers_there_and_later(model):
    profile = Catalog().model(model).profile
    spec = runtime_spec("llama.cpp")
    try:
        for ctx in (4096, 8193, 40_000):
            floor = llamacpp_buffers(spec, profile, ctx, 1, floor=True).total_bytes
            later = [llamacpp_buffers(spec, profile, c, 1).total_bytes for c in (ctx, ctx + 256, ctx + 10_240, 2 * ctx)]
            assert 0 < floor <= min(later)
    except KvplanError:
        pytest.skip(f"{model}: llama.cpp's buffers are not priced for it")
