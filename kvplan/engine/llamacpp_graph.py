"""llama.cpp's worst-case prompt graph as the allocator sees it.

``llama_context::sched_reserve`` reserves the graph of one micro-batch of
``T = n_ubatch`` tokens with ``n_outputs = T``; :func:`reserve_graph` writes
the tensors of that graph which live in the compute buffer, in graph order,
with their byte sizes in closed form, for the graph families of
:mod:`kvplan.engine.llamacpp_buffers`. Weights and the KV cache live in other
buffers and are left out; views are kept (they delay their source's free).

The order and the ops follow llama.cpp ``0c1e57098`` (``src/llama-graph.cpp``:
``build_inp_*``, ``build_norm``, ``build_qkv``, ``build_attn``,
``build_attn_mha``, ``build_ffn``, ``build_moe_ffn``; ``src/models/*.cpp``;
``src/llama-kv-cache.cpp``: ``cpy_k``, ``cpy_v``) and were checked tensor by
tensor against ``GGML_ALLOCATOR_DEBUG`` traces.

Pure: no I/O.
"""

from __future__ import annotations

from kvplan.engine.ggml_alloc import Graph

#: bytes of one element: f32 activations, the f16 KQ mask with flash attention, I32 token ids / positions /
#: output ids, I64 KV row indices
F32 = 4
F16 = 2
I32 = 4
I64 = 8


def _f32(*ne):
    n = 1
    for x in ne:
        n *= x
    return n * F32


class _B:
    """Helpers shared by the graph families (one graph under construction)."""

    def __init__(self, T, O=None):
        self.g = Graph()
        self.T = T
        self.O = T if O is None else O  # output rows the last layer keeps

    def rms_norm(self, x, width):
        # RMS_NORM (in place only when x has no other consumer), then MUL by the weight (in place)
        y = self.g.op(_f32(width, self.T), x, inplace=True)
        return self.g.op(_f32(width, self.T), y, inplace=True)

    def mm(self, rows, x):
        return self.g.op(_f32(rows, self.T), x)

    def add(self, a, b, rows):
        return self.g.op(_f32(rows, self.T), a, b, inplace=True)

    def attention_out(self, attn_in, resid, out_ids, width, last: bool):
        """The output projection, the residual add and the feed-forward norm; the last layer first keeps only
        the output rows (GET_ROWS of both) and works on those rows from then on.
        Returns (the feed-forward's residual input, its normed input)."""
        cur = self.mm(width, attn_in)
        if last:
            self.T = self.O
            cur = self.g.op(_f32(width, self.T), cur, out_ids)
            resid = self.g.op(_f32(width, self.T), resid, out_ids)
        ffn_inp = self.add(cur, resid, width)
        return ffn_inp, self.rms_norm(ffn_inp, width)


def _llama(s, fa):
    """llama, mistral, qwen2, qwen3 (``qkv_order`` "QVK"), gemma2/gemma3 ("QKV", two caches) and phi3 ("fused").

    Ops that run in place on their only consumer's input without changing its size (Gemma's embedding
    and Q scaling, soft-capping and post-norms, Qwen3's Q/K norms after the projection's view) leave the
    allocator's events unchanged and are not written out.
    """
    T, E, F, V, L = s["T"], s["E"], s["F"], s["V"], s["layers"]
    H, Dv = s["H"], s["Dv"]
    b = _B(T, s.get("O"))
    g = b.g
    tokens = g.input(T * I32)
    g.input(_f32(E, T))  # inp_embd: an input no node reads for a token batch, live to the end
    # Hadamard rotations of a quantized cache (llama_kv_cache::build_input_k_rot / _v_rot), [nrot, nrot] f32
    k_rot = g.input(_f32(s["k_rot"], s["k_rot"])) if s.get("k_rot") else None
    pos = g.input(T * I32)
    v_rot = g.input(_f32(s["v_rot"], s["v_rot"])) if s.get("v_rot") else None
    # one (K indices, V indices, mask) group per KV cache: the sliding-window one first (llama_kv_cache_iswa)
    groups = []
    for n_kv in s["caches"]:
        groups.append((
            g.input(T * I64),
            g.input(T * I64 if fa else s["Hk"] * Dv * T * I64),
            g.input(n_kv * T * (F16 if fa else F32)),
            n_kv,
        ))
    out_ids = g.input(b.O * I32)
    x = g.op(_f32(E, T), tokens)  # GET_ROWS of the token embeddings

    def rot(t, r):
        # llama_mul_mat_hadamard: MUL_MAT of the reshaped tensor by the rotation, reshaped back
        if r is None:
            return t
        return g.view(g.op(g.size[t] or g.size[g.view_src[t]], r, g.view(t)))

    for il in range(L):
        g.mark()
        resid = x
        cur = b.rms_norm(x, E)
        k_idxs, v_idxs, mask, n_kv = groups[s["cache_of_layer"](il)]
        Dk, Hk = s["Dk"], s["Hk"]
        if s["qkv_order"] == "fused":  # Phi-3: one QKV matmul, Q/K/V are views of it
            qkv = b.mm(H * Dk + 2 * Hk * Dk, cur)
            qr = g.op(_f32(Dk, H, T), g.view(qkv), pos, inplace=True)  # ROPE, then an in-place SCALE
            v = g.view(qkv)
            kr = g.op(_f32(Dk, Hk, T), g.view(qkv), pos, inplace=True)
            vr = v if fa else None  # without flash attention V is made contiguous after K is stored
        else:
            q = b.mm(H * Dk, cur)
            qr = rot(g.op(_f32(Dk, H, T), g.view(q), pos, inplace=True), k_rot)  # ROPE (or the Q norm)
            if s["qkv_order"] == "QVK":
                vr = rot(g.view(b.mm(Hk * Dv, cur)), v_rot)
            k = b.mm(Hk * Dk, cur)
            kr = rot(g.op(_f32(Dk, Hk, T), g.view(k), pos, inplace=True), k_rot)
            if s["qkv_order"] == "QKV":
                vr = rot(g.view(b.mm(Hk * Dv, cur)), v_rot)
        g.external_view(g.view(kr), k_idxs)  # SET_ROWS into the K cache through a view
        if vr is None:
            vr = g.op(_f32(Hk * Dv, T), v)  # CONT
        if fa:
            g.external_view(g.view(vr), v_idxs)
        else:  # V stored transposed: V reshaped twice
            g.external_view(g.view(g.view(vr)), v_idxs)
        qp = g.view(g.view(qr))
        if fa:
            o = g.op(_f32(Dv, H, T), qp, mask)  # FLASH_ATTN_EXT
            attn_in = rot(g.view(o), v_rot)
        else:
            kq = g.op(_f32(n_kv, T, H), qp)
            kq = g.op(_f32(n_kv, T, H), kq, mask, inplace=True)  # SOFT_MAX (after Gemma-2's in-place softcap)
            kqv = g.op(_f32(Dv, T, H), kq)
            attn_in = rot(g.op(_f32(Dv * H, T), g.view(kqv)), v_rot)  # permute + CONT
        ffn_inp, cur = b.attention_out(attn_in, resid, out_ids, E, last=il == L - 1)
        if s["qkv_order"] == "fused":  # Phi-3: fused gate+up [2·n_ff, T], SWIGLU of its halves
            act = g.op(_f32(F, b.T), b.mm(2 * F, cur))
            x = b.add(ffn_inp, b.mm(E, act), E)  # the residual is the first operand
        else:
            gate = b.mm(F, cur)
            up = b.mm(F, cur)
            act = g.op(_f32(F, b.T), gate, up)  # SWIGLU / GEGLU
            x = b.add(b.mm(E, act), ffn_inp, E)
    x = g.op(_f32(E, b.T), x, inplace=True)  # final RMS_NORM, in place on the last residual
    x = g.op(_f32(E, b.T), x, inplace=True, output=True)  # result_norm
    g.op(_f32(V, b.T), x, output=True)  # result_output
    return g


def _moe(b, x, s):
    """``build_moe_ffn`` with soft-max gating (DeepSeek-V2) plus the shared experts; x: the normed input."""
    g, T, E = b.g, b.T, s["E"]
    n_exp, used, Fe = s["n_expert"], s["n_expert_used"], s["F_expert"]
    probs = g.op(_f32(n_exp, T), b.mm(n_exp, x), inplace=True)  # router logits, SOFT_MAX in place
    probs_r = g.view(probs)
    order = g.op(n_exp * T * I32, probs)  # ARGSORT
    topk = g.view(order)
    weights = g.op(_f32(1, used, T), probs_r, topk)  # GET_ROWS
    xr = g.view(x)
    gate = g.op(_f32(Fe, used, T), xr, topk)  # MUL_MAT_ID
    up = g.op(_f32(Fe, used, T), xr, topk)
    act = g.op(_f32(Fe, used, T), gate, up)
    down = g.op(_f32(E, used, T), act, topk)
    weighted = g.op(_f32(E, used, T), down, weights, inplace=True)
    parts = [g.view(weighted) for _ in range(used)]
    out = g.op(_f32(E, T), parts[0], parts[1], inplace=True)  # views are not owned: a new tensor
    for p in parts[2:]:
        out = g.op(_f32(E, T), out, p, inplace=True)
    if s["F_shared"]:
        sg = b.mm(s["F_shared"], x)
        su = b.mm(s["F_shared"], x)
        sh = b.mm(E, g.op(_f32(s["F_shared"], T), sg, su))
        out = b.add(out, sh, E)
    return out


def _mla(s, fa):
    """DeepSeek-V2/V3 (``src/models/deepseek2.cpp``): absorbed MLA attention, MoE after ``dense_layers``."""
    T, E, F, V, L = s["T"], s["E"], s["F"], s["V"], s["layers"]
    H, Dk, Dv, R, rope = s["H"], s["Dk"], s["Dv"], s["kv_lora_rank"], s["rope_dim"]
    n_kv = s["caches"][0]
    b = _B(T, s.get("O"))
    g = b.g
    tokens = g.input(T * I32)
    g.input(_f32(E, T))
    pos = g.input(T * I32)
    k_idxs = g.input(T * I64)  # MLA: no V cache, no V indices
    mask = g.input(n_kv * T * (F16 if fa else F32))
    out_ids = g.input(b.O * I32)
    x = g.op(_f32(E, T), tokens)
    for il in range(L):
        g.mark()
        resid = x
        cur = b.rms_norm(x, E)
        q = b.mm(H * Dk, cur)
        qv = g.view(q)
        q_nope = g.op(_f32(R, T, H), g.view(g.view(qv)))  # absorbed: attn_k_b × q_nope
        q_pe = g.op(_f32(rope, H, T), g.view(qv), pos, inplace=True)  # ROPE of a view: a new tensor
        qc = g.op(_f32(R + rope, H, T), g.view(q_nope), q_pe)  # CONCAT
        kv = b.mm(R + rope, cur)
        kv_n = b.rms_norm(g.view(kv), R)
        vcur = g.view(kv_n)
        k_pe = g.op(_f32(rope, 1, T), g.view(kv), pos, inplace=True)
        kcur = g.op(_f32(R + rope, 1, T), vcur, k_pe)  # CONCAT
        g.external_view(g.view(kcur), k_idxs)
        qp = g.view(g.view(qc))
        if fa:
            o = g.op(_f32(R, H, T), qp, mask)  # FLASH_ATTN_EXT over the latent
            o = g.op(_f32(Dv, H, T), g.view(o))  # attn_v_b
            o = g.op(_f32(Dv, H, T), g.view(o))  # CONT of the permuted result
            attn_in = g.view(o)
        else:
            v_cont = g.op(n_kv * R * F16 * s["n_stream"])  # CONT of the latent cache view (f16, every stream)
            kq = g.op(_f32(n_kv, T, H), qp)
            kq = g.op(_f32(n_kv, T, H), kq, mask, inplace=True)
            kqv = g.op(_f32(R, T, H), v_cont, kq)
            o = g.op(_f32(Dv, T, H), kqv)  # attn_v_b
            attn_in = g.op(_f32(Dv * H, T), g.view(o))
        ffn_inp, cur = b.attention_out(attn_in, resid, out_ids, E, last=il == L - 1)
        if il < s["dense_layers"] or not s["n_expert_used"]:
            act = g.op(_f32(F, b.T), b.mm(F, cur), b.mm(F, cur))
            out = b.mm(E, act)
        else:
            out = _moe(b, cur, s)
        x = b.add(out, ffn_inp, E)
    x = g.op(_f32(E, b.T), x, inplace=True)
    x = g.op(_f32(E, b.T), x, inplace=True, output=True)
    g.op(_f32(V, b.T), x, output=True)
    return g


def reserve_graph(s, fa):
    """The compute-buffer tensors of the reserve graph (a :class:`~kvplan.engine.ggml_alloc.Graph`).

    Parameters
    ----------
    s : dict
        The shape :func:`kvplan.engine.llamacpp_buffers.compute_buffer_bytes` builds, in tokens, values and
        cells: ``T`` tokens, ``E`` n_embd, ``F`` n_ff, ``V`` vocabulary, ``H``/``Hk`` heads, ``Dk``/``Dv`` head
        widths, ``caches`` cells per cache and ``cache_of_layer``, ``qkv_order``, rotation sides
        ``k_rot``/``v_rot``, the MLA and MoE widths.
    fa : bool
        Flash attention on.

    Returns
    -------
    Graph
        Every tensor of the worst-case graph with its bytes, sources and lifetime, for
        :func:`~kvplan.engine.ggml_alloc.peak_bytes`.
    """
    return _mla(s, fa) if s.get("graph") == "mla" else _llama(s, fa)
