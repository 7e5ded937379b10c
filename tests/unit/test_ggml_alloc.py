"""kvplan.engine.ggml_alloc: ggml's graph allocator rules on graphs small enough to follow by hand.

Each expected offset is read off ggml/src/ggml-alloc.c (0c1e57098): sizes padded to
32 bytes, best fit among the free blocks but the last, the later block on a tie,
the last (unbounded) block only when nothing else fits, in place when the op allows
and the parent has no other consumer, views keep their source alive.
"""

from __future__ import annotations

from kvplan.engine.ggml_alloc import Graph, peak_bytes


def _offsets(g):
    trace = []
    peak = peak_bytes(g, trace=trace)
    return peak, trace


def test_sizes_are_padded_to_32_bytes():
    # a 10-byte input takes 32 bytes; a 40-byte tensor after it takes 64: 32 + 64 = 96
    g = Graph()
    a = g.input(10)
    g.op(40, a)
    peak, trace = _offsets(g)
    assert trace[:2] == [("A", 0, 0), ("A", 1, 32)]
    assert peak == 96


def test_free_at_last_use_and_best_fit_prefers_the_smaller_hole():
    # x @0 (96), y @96 (288), z @384 (96); w = op(x, z) @480, then x and z are freed:
    # holes [0,96) and [384,480), the tail from 544. v (96) fits both holes exactly:
    # a tie, the later one wins -> @384. Then y and w are freed: [0,384) and the tail
    # from 480. v2 (96) -> best fit @0. Peak 480 + 64 = 544.
    g = Graph()
    x = g.input(96)       # 96: already a multiple of 32
    y = g.input(288)      # @96
    z = g.input(96)       # @384
    w = g.op(64, x, z)    # @480, x and z freed afterwards
    v = g.op(96, y, w)    # holes 96 @0 and 96 @384 -> the later: @384
    g.op(96, v)           # @0
    peak, trace = _offsets(g)
    placed = {t: off for kind, t, off in trace if kind == "A"}
    assert placed[w] == 480
    assert placed[v] == 384
    assert placed[v + 1] == 0
    assert peak == 480 + 64


def test_in_place_reuse_needs_the_last_consumer():
    # x @0 (input); a @64, then x's last use frees [0,64).
    # b = ADD(a): b is a's only consumer -> b takes a's block @64, no allocation.
    # a2 = op(b): best fit -> the hole @0; b's last use frees [64,128), merged into the tail.
    # c = MUL(a2): a2 has a second consumer still to run -> no reuse, c @64.
    # d = op(a2, c) @128. Peak 192.
    g = Graph()
    x = g.input(64)
    a = g.op(64, x)
    b = g.op(64, a, inplace=True)
    a2 = g.op(64, b)
    c = g.op(64, a2, inplace=True)
    d = g.op(64, a2, c)
    peak, trace = _offsets(g)
    placed = {t: off for kind, t, off in trace if kind == "A"}
    assert b not in placed
    assert (placed[a2], placed[c], placed[d]) == (0, 64, 128)
    assert peak == 192


def test_a_view_keeps_its_source_until_the_view_is_consumed():
    # x @0; s @64; a view of s; t @128 (x's last use frees [0,64)); u = op(view, t) -> @0.
    # s is freed only after u, its view's consumer: had it been freed at the view, t
    # would have taken its block @64 and the peak would be 128 instead of 192.
    g = Graph()
    x = g.input(64)
    s = g.op(64, x)
    view = g.view(s)
    t = g.op(64, x)
    u = g.op(64, view, t)
    peak, trace = _offsets(g)
    placed = {t_: off for kind, t_, off in trace if kind == "A"}
    assert (placed[s], placed[t], placed[u]) == (64, 128, 0)
    assert trace.index(("F", s, 64)) > trace.index(("A", u, 0))
    assert peak == 192


def test_outputs_are_never_freed():
    # x @0; o (output) @32, x freed; p = op(o) -> the hole @0; q = op(p): o's block
    # stays taken, so q goes to the tail @64 (peak 96; were o freed, q would reuse @32).
    g = Graph()
    x = g.input(32)
    o = g.op(32, x, output=True)
    p = g.op(32, o)
    q = g.op(32, p)
    peak, trace = _offsets(g)
    placed = {t: off for kind, t, off in trace if kind == "A"}
    assert (placed[o], placed[p], placed[q]) == (32, 0, 64)
    assert not any(kind == "F" and t == o for kind, t, off in trace)
    assert peak == 96
