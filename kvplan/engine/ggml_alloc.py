"""A replay of ggml's graph allocator over a tensor sequence.

llama.cpp sizes its compute buffer by running ``ggml_gallocr_reserve`` on the
worst-case graph: ``ggml/src/ggml-alloc.c`` (``ggml_gallocr_alloc_graph_impl``,
``ggml_gallocr_allocate_node``, ``ggml_gallocr_free_node`` and the dynamic
allocator ``ggml_dyn_tallocr_alloc`` / ``ggml_dyn_tallocr_free_bytes``) places
every tensor the graph owns into one buffer and reports the highest address
reached. The placement depends on the whole history of allocations and frees
(best fit over the free blocks, in-place reuse, frees at last use), so it is
replayed here rather than written in closed form. Checked against
``0c1e57098`` (llama-cpp-python 0.3.36).

A :class:`Graph` holds only what the allocator looks at: each tensor's byte
size, its sources *that the graph owns* (weights and KV-cache tensors live in
other buffers and are left out), whether it is a view (and of which tensor),
whether its op may run in place, a layout key (``ggml_are_same_layout``) and
the input/output flags. :func:`peak_bytes` runs the allocator over it.

Pure: no I/O; deterministic.
"""

from __future__ import annotations

#: ``TENSOR_ALIGNMENT`` of the CPU buffer type (``ggml/src/ggml-impl.h``)
CPU_ALIGNMENT = 32
#: the first chunk's tail block: "unbounded" (``max_chunk_size`` is SIZE_MAX/2 on CPU)
_UNBOUNDED = 1 << 62
#: view_src of a view whose base lives outside the graph's buffer
_EXTERNAL = -2


class Graph:
    """Tensors and nodes of a ggml graph as the allocator sees them.

    Ids are indices. Inputs (``GGML_TENSOR_FLAG_INPUT``) are placed first, in
    the order given; nodes are placed in graph order.
    """

    __slots__ = ("size", "srcs", "view_src", "inplace", "layout", "output", "inputs", "nodes", "marks")

    def __init__(self):
        self.size: list[int] = []
        self.srcs: list[tuple[int, ...]] = []
        self.view_src: list[int] = []  # -1: not a view, _EXTERNAL: a view of a tensor not owned
        self.inplace: list[bool] = []
        self.layout: list[object] = []
        self.output: list[bool] = []
        self.inputs: list[int] = []
        self.nodes: list[int] = []
        self.marks: list[int] = []  # node positions where a repeating block (a layer) starts

    def mark(self):
        """Note that a layer starts here: :func:`peak_bytes` can snapshot the allocator at each mark.

        Returns
        -------
        None
            The mark is the number of nodes so far, appended to ``marks``.
        """
        self.marks.append(len(self.nodes))

    def _new(self, size, srcs, view_src, inplace, layout, output):
        self.size.append(int(size))
        self.srcs.append(tuple(s for s in srcs if s is not None))
        self.view_src.append(view_src)
        self.inplace.append(inplace)
        self.layout.append(layout)
        self.output.append(output)
        return len(self.size) - 1

    def input(self, size, layout=None):
        """A graph input (token ids, positions, KV indices, masks …).

        Parameters
        ----------
        size : int [bytes]
            Bytes of the input tensor.
        layout : hashable, optional
            Layout key (``ggml_are_same_layout``); None: none to match.

        Returns
        -------
        int [id]
            The input's id; inputs are placed first, in the order given.
        """
        t = self._new(size, (), -1, False, layout, False)
        self.inputs.append(t)
        return t

    def op(self, size, *srcs, inplace=False, layout=None, output=False):
        """A computed tensor of ``size`` bytes from ``srcs`` (owned sources only).

        Parameters
        ----------
        size : int [bytes]
            Bytes of the result tensor.
        *srcs : int [id]
            Ids of the owned tensors it reads.
        inplace : bool
            The op is one ``ggml_op_can_inplace`` accepts (ADD, MUL, SCALE, ROPE, RMS_NORM,
            SOFT_MAX, UNARY …): it may reuse a source's block.
        layout : hashable, optional
            Tensors of equal layout key have the same type, shape and strides
            (``ggml_are_same_layout``); by default the byte size, enough where every in-place
            candidate of equal size is a contiguous f32 tensor of equal shape (llama.cpp's graphs here).
        output : bool
            A graph output (``GGML_TENSOR_FLAG_OUTPUT``): never freed.

        Returns
        -------
        int [id]
            The node's id.
        """
        t = self._new(size, srcs, -1, inplace, layout if layout is not None else size, output)
        self.nodes.append(t)
        return t

    def view(self, src, *other_srcs):
        """A view node (VIEW, RESHAPE, PERMUTE, TRANSPOSE) of the owned tensor ``src``.

        Parameters
        ----------
        src : int [id]
            Id of the tensor viewed (a view of a view resolves to its base).
        *other_srcs : int [id]
            Ids of further owned tensors the node reads.

        Returns
        -------
        int [id]
            The node's id (it takes no bytes of its own).
        """
        base = self.view_src[src] if self.view_src[src] >= 0 else src
        t = self._new(0, (src, *other_srcs), base, False, None, False)
        self.nodes.append(t)
        return t

    def external_view(self, *srcs):
        """A node that writes into, or views, a tensor the graph does not own (SET_ROWS into the KV cache).

        Parameters
        ----------
        *srcs : int [id]
            Ids of the owned tensors it reads.

        Returns
        -------
        int [id]
            The node's id (it takes no bytes of the buffer).
        """
        t = self._new(0, srcs, _EXTERNAL, False, None, False)
        self.nodes.append(t)
        return t


class _Allocator:
    """``ggml_dyn_tallocr`` with one chunk: free blocks sorted by offset, the last one unbounded."""

    __slots__ = ("blocks", "max_size", "align")

    def __init__(self, align):
        self.blocks = [[0, _UNBOUNDED]]
        self.max_size = 0
        self.align = align

    def alloc(self, size):
        a = self.align
        size = (size + a - 1) // a * a
        blocks = self.blocks
        best = -1
        best_size = _UNBOUNDED + 1
        # best fit among all blocks but the last; on a tie the later block wins (`<=`)
        for i in range(len(blocks) - 1):
            bs = blocks[i][1]
            if size <= bs <= best_size:
                best, best_size = i, bs
        if best < 0:
            best = len(blocks) - 1
        block = blocks[best]
        offset = block[0]
        block[0] += size
        block[1] -= size
        if block[1] == 0:
            del blocks[best]
        if offset + size > self.max_size:
            self.max_size = offset + size
        return offset

    def free(self, offset, size):
        a = self.align
        size = (size + a - 1) // a * a
        blocks = self.blocks
        for i, block in enumerate(blocks):
            if block[0] + block[1] == offset:
                block[1] += size
                if i < len(blocks) - 1 and block[0] + block[1] == blocks[i + 1][0]:
                    block[1] += blocks[i + 1][1]
                    del blocks[i + 1]
                return
            if offset + size == block[0]:
                block[0] = offset
                block[1] += size
                if i > 0 and blocks[i - 1][0] + blocks[i - 1][1] == block[0]:
                    blocks[i - 1][1] += block[1]
                    del blocks[i]
                return
        i = 0
        while i < len(blocks) and blocks[i][0] < offset:
            i += 1
        blocks.insert(i, [offset, size])


def largest_tensor_bytes(graph: Graph, alignment: int = CPU_ALIGNMENT) -> int:
    """The largest tensor :func:`peak_bytes` gives an address of its own (a graph input, or a node that is not a
    view), aligned: a lower bound on the peak, since that tensor alone occupies this much of the buffer.

    Parameters
    ----------
    graph : Graph
        The tensor sequence.
    alignment : int [bytes]
        Buffer alignment (:data:`CPU_ALIGNMENT`).

    Returns
    -------
    int [bytes]
        ``max(ceil(size / alignment) · alignment)`` over the inputs and non-view nodes (0 for an empty graph).
    """
    a = alignment
    own = list(graph.inputs) + [t for t in graph.nodes if graph.view_src[t] == -1]
    return max(((graph.size[t] + a - 1) // a * a for t in own), default=0)


def _readers(g: Graph) -> tuple[list[int], list[int]]:
    """Per tensor: how many nodes read it (``n_children``) and how many views of it there are (``n_views``), the
    counts whose reaching zero frees it (``ggml_gallocr_alloc_graph_impl``)."""
    children = [0] * len(g.size)
    views = [0] * len(g.size)
    view_src, srcs = g.view_src, g.srcs
    for t in g.nodes:
        if view_src[t] >= 0:
            views[view_src[t]] += 1
        for p in srcs[t]:
            children[p] += 1
    return children, views


def live_floor_bytes(graph: Graph, alignment: int = CPU_ALIGNMENT) -> int:
    """A lower bound on :func:`peak_bytes` of ``graph`` and of every graph with its tensors and nodes but no
    smaller sizes: the most bytes the graph's tensors hold at once.

    Tensors that hold bytes at the same moment sit side by side in the buffer, so their aligned sizes add up to
    no more than the highest address. Which tensors are live after each placement follows from the graph alone
    (frees come at last use); only the in-place reuse of a source's block depends on the sizes, through the
    layout key, so at each in-place node the largest source it might reuse is counted as already gone. A sum
    over a set fixed by the graph, less its largest member, only grows with the sizes: the bound holds for the
    larger graphs too, unlike the peak itself, which can shrink when a tensor grows (the allocator lands it in
    another hole).

    Parameters
    ----------
    graph : Graph
        The tensor sequence.
    alignment : int [bytes]
        Buffer alignment (:data:`CPU_ALIGNMENT`).

    Returns
    -------
    int [bytes]
        The largest sum of aligned sizes of the tensors live right after a placement (at least
        :func:`largest_tensor_bytes`).
    """
    g = graph
    n = len(g.size)
    a = alignment
    size = [(b + a - 1) // a * a for b in g.size]
    srcs, view_src, output, inplace = g.srcs, g.view_src, g.output, g.inplace
    children, views = _readers(g)
    own = [False] * n
    live = 0
    for t in g.inputs:
        own[t] = True
        live += size[t]
    best = live
    for t in g.nodes:
        if view_src[t] == -1 and not own[t]:
            gone = 0
            if inplace[t]:
                gone = max((size[p] for p in srcs[t]
                            if own[p] and not output[p] and children[p] == 1 and views[p] == 0), default=0)
            best = max(best, live + size[t] - gone)
            own[t] = True
            live += size[t]
        for p in srcs[t]:
            children[p] -= 1
            if children[p] == 0 and views[p] == 0:
                b = view_src[p]
                if b >= 0:
                    views[b] -= 1
                    if views[b] == 0 and children[b] == 0 and own[b] and not output[b]:
                        own[b] = False
                        live -= size[b]
                elif b == -1 and own[p] and not output[p]:
                    own[p] = False
                    live -= size[p]
    return best


def peak_bytes(graph: Graph, alignment: int = CPU_ALIGNMENT, trace: list | None = None,
               snapshots: list | None = None) -> int:
    """Buffer size ``ggml_gallocr_reserve`` gives ``graph``.

    Parameters
    ----------
    graph : Graph
        The tensor sequence.
    alignment : int [bytes]
        Buffer alignment (:data:`CPU_ALIGNMENT`).
    trace : list, optional
        Receives ``("A", tensor, offset)`` / ``("F", tensor, offset)`` events in the allocator's
        order (to compare with a ``GGML_ALLOCATOR_DEBUG`` log).
    snapshots : list, optional
        Receives the allocator state at each of ``graph.marks``: the free blocks, the high-water
        mark and the (offset, size) of every live tensor that is not a graph input. Two equal
        snapshots mean the blocks between them leave the allocator as they found it.

    Returns
    -------
    int [bytes]
        The highest address the allocator reaches.

    References
    ----------
    ``ggml/src/ggml-alloc.c`` at llama.cpp ``0c1e57098``: ``ggml_gallocr_alloc_graph_impl``,
    ``ggml_dyn_tallocr_alloc``, ``ggml_dyn_tallocr_free_bytes``.
    """
    g = graph
    n = len(g.size)
    size, srcs, view_src, layout, output = g.size, g.srcs, g.view_src, g.layout, g.output
    children, views = _readers(g)
    own = [False] * n  # hash_node.allocated
    addr = [0] * n
    done = [False] * n
    alloc = _Allocator(alignment)

    def place(t):
        done[t] = True
        own[t] = True
        addr[t] = alloc.alloc(size[t])
        if trace is not None:
            trace.append(("A", t, addr[t]))

    def free(t):
        if output[t]:
            return
        alloc.free(addr[t], size[t])
        own[t] = False
        if trace is not None:
            trace.append(("F", t, addr[t]))

    for t in g.inputs:
        place(t)

    is_input = set(g.inputs)
    marks = set(g.marks) if snapshots is not None else ()
    for i, t in enumerate(g.nodes):
        if i in marks:
            live = sorted((addr[u], size[u]) for u in range(n) if own[u] and u not in is_input)
            snapshots.append((tuple(map(tuple, alloc.blocks)), alloc.max_size, tuple(live)))
        if view_src[t] == -1 and not done[t]:
            reused = False
            if g.inplace[t]:
                for p in srcs[t]:
                    if not own[p] or output[p] or layout[p] != layout[t]:
                        continue
                    if children[p] == 1 and views[p] == 0:
                        done[t] = own[t] = True
                        addr[t] = addr[p]
                        own[p] = False
                        a = alignment
                        ps, ns = (size[p] + a - 1) // a * a, (size[t] + a - 1) // a * a
                        if ps > ns:
                            alloc.free(addr[p] + ns, ps - ns)
                        reused = True
                        break
            if not reused:
                place(t)
        for p in srcs[t]:
            children[p] -= 1
            if children[p] == 0 and views[p] == 0:
                b = view_src[p]
                if b >= 0:
                    views[b] -= 1
                    if views[b] == 0 and children[b] == 0 and own[b]:
                        free(b)
                elif b == -1 and own[p]:
                    free(p)
    return alloc.max_size
