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
tensor against ``GGML_ALLOCATOR_DEBUG`` traces. With ``s["b11434"]`` the graphs
are build 11434's (:func:`_embeddings`, per-cache rotations), and :func:`_layers`
writes that build's hybrid and MoE graphs (``src/models/lfm2.cpp``, ``qwen35.cpp``,
``granite-hybrid.cpp``, ``nemotron-h.cpp``, ``falcon-h1.cpp``, ``mamba-base.cpp``,
``delta-net-base.cpp``, ``openai-moe.cpp``, ``qwen3moe.cpp``, ``qwen35moe.cpp``), :func:`_gemma3n` Gemma 3n's
(``src/models/gemma3n.cpp``) and :func:`_gemma4` Gemma 4's (``src/models/gemma4.cpp``), checked allocation by allocation against dumps of its reserve
graph (``tests/harness/graph_dump.py``).

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


def _embeddings(b, s):
    """``build_inp_embd``: the token ids and the embeddings input, and on build 11434 the mixed-batch branch
    ``ggml_build_forward_select`` also places (``src/llama-graph.cpp``: inputs ``inp_mixed_tokens`` [T] I32,
    ``inp_mixed_slots`` [T] I64, ``inp_mixed_embd`` [E, T]; GET_ROWS of the token rows, DUP of the last,
    SET_ROWS into the DUP: a view nothing reads, so the DUP is never freed). Returns the token ids' id and a
    function that writes the branch's nodes (after the token path's GET_ROWS)."""
    g, T, E = b.g, b.T, s["E"]
    tokens = g.input(T * I32)
    g.input(_f32(E, T))  # inp_embd: an input no node reads for a token batch, live to the end
    if not s.get("b11434"):
        return tokens, lambda: None
    m_tok = g.input(T * I32)
    m_slots = g.input(T * I64)
    m_embd = g.input(_f32(E, T))
    if s.get("scale_rows"):  # Gemma 3 scales the token rows after the select: inp_scale_rows [1, T] f32 (MUL in place)
        g.input(_f32(1, T))

    def branch():
        rows = g.op(_f32(E, T), m_tok)  # GET_ROWS of the token rows
        dup = g.op(_f32(E, T), m_embd)  # DUP
        g.view(dup, rows, m_slots)  # SET_ROWS: a view of the DUP with no consumer
    return tokens, branch


def _rot(g, t, r):
    """``llama_mul_mat_hadamard``: MUL_MAT of the reshaped tensor by the rotation ``r``, reshaped back."""
    if r is None:
        return t
    return g.view(g.op(g.size[t] or g.size[g.view_src[t]], r, g.view(t)))


def _attention(b, s, cur, group, pos, k_rot, v_rot, fa, gated=False, rope=None, attn_temp=None):
    """``build_qkv`` + ``build_attn`` of one attention layer up to the output projection's input.

    ``group`` is the layer's cache: (K indices, V indices, mask, cells). ``gated`` (Qwen3.5's full-attention
    layers, ``src/models/qwen35.cpp`` ``build_layer_attn``): the Q projection is twice as wide (query and
    gate interleaved per head), the Q norm of its strided view is a new tensor (roped in place), and after the
    attention the gate is made contiguous (CONT), passed through a sigmoid (in place) and multiplies the output
    (in place). ``rope`` (None: every layer as ``s["no_rope"]`` says) is this layer's RoPE; Llama 4
    (``src/models/llama4.cpp``): a RoPE layer's Q and K are then RMS-normed (``use_kq_norm``: ``ggml_rms_norm``, in
    place on the roped tensor) and a NoPE layer's Q multiplied by the ``attn_temp`` input (``inp_attn_scale``, a new
    tensor: its source is the projection's view).
    """
    g, T, H, Dv = b.g, b.T, s["H"], s["Dv"]
    if rope is None:
        rope = not s.get("no_rope")
    kq_norm = rope and s.get("kq_norm", False)
    k_idxs, v_idxs, mask, n_kv = group
    Dk, Hk = s["Dk"], s["Hk"]
    gate = None
    if s["qkv_order"] == "fused":  # Phi-3: one QKV matmul, Q/K/V are views of it
        qkv = b.mm(H * Dk + 2 * Hk * Dk, cur)
        qr = g.op(_f32(Dk, H, T), g.view(qkv), pos, inplace=True)  # ROPE, then an in-place SCALE
        v = g.view(qkv)
        kr = g.op(_f32(Dk, Hk, T), g.view(qkv), pos, inplace=True)
        vr = v if fa else None  # without flash attention V is made contiguous after K is stored
    else:
        if gated:
            # RMS_NORM of the strided query view: a new tensor, roped in place (an owned tensor, one consumer)
            gate = b.mm(2 * H * Dk, cur)
            qr = _rot(g, g.op(_f32(Dk, H, T), g.view(gate)), k_rot)
        else:
            q = b.mm(H * Dk, cur)
            if not rope and attn_temp is not None:  # Llama 4's NoPE layers: MUL by inp_attn_scale
                qr = _rot(g, g.op(_f32(Dk, H, T), g.view(q), attn_temp, inplace=True), k_rot)
            elif not rope:
                # no RoPE (Nemotron-H's attention), or RoPE in place on the projection made contiguous by its
                # bias add (gpt-oss: ADD in place, then ROPE in place on an owned tensor); otherwise RoPE (or the
                # Q norm) of the projection's reshape view is a new tensor (ggml-alloc never reuses a view's source)
                qr = _rot(g, g.view(q), k_rot)
            else:
                qr = g.op(_f32(Dk, H, T), g.view(q), pos, inplace=True)  # ROPE (or the Q norm)
                if kq_norm:
                    qr = g.op(_f32(Dk, H, T), qr, inplace=True)  # RMS_NORM of the roped Q
                qr = _rot(g, qr, k_rot)
        if s["qkv_order"] == "QVK":
            vr = _rot(g, g.view(b.mm(Hk * Dv, cur)), v_rot)
        k = b.mm(Hk * Dk, cur)
        if not rope:
            kr = _rot(g, g.view(k), k_rot)
        else:
            kr = g.op(_f32(Dk, Hk, T), g.view(k), pos, inplace=True)
            if kq_norm:
                kr = g.op(_f32(Dk, Hk, T), kr, inplace=True)  # RMS_NORM of the roped K
            kr = _rot(g, kr, k_rot)
        if s["qkv_order"] == "QKV":
            vr = _rot(g, g.view(b.mm(Hk * Dv, cur)), v_rot)
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
        attn_in = _rot(g, g.view(o), v_rot)
    else:
        kq = g.op(_f32(n_kv, T, H), qp)
        kq = g.op(_f32(n_kv, T, H), kq, mask, inplace=True)  # SOFT_MAX (after Gemma-2's in-place softcap)
        kqv = g.op(_f32(Dv, T, H), kq)
        attn_in = _rot(g, g.op(_f32(Dv * H, T), g.view(kqv)), v_rot)  # permute + CONT
    if gate is not None:
        gc = g.op(_f32(Dk * H, T), g.view(gate))  # CONT of the gate view
        gs = g.op(_f32(Dk * H, T), gc, inplace=True)  # SIGMOID
        attn_in = g.op(_f32(Dv * H, T), attn_in, gs, inplace=True)  # MUL
    return attn_in


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
    tokens, mixed = _embeddings(b, s)
    # Hadamard rotations of a quantized cache (llama_kv_cache::build_input_k_rot / _v_rot), [nrot, nrot] f32
    k_rot = g.input(_f32(s["k_rot"], s["k_rot"])) if s.get("k_rot") else None
    pos = g.input(T * I32)
    v_rot = g.input(_f32(s["v_rot"], s["v_rot"])) if s.get("v_rot") else None
    # one (K indices, V indices, mask) group per KV cache: the sliding-window one first (llama_kv_cache_iswa)
    groups, rots = [], []
    for c, n_kv in enumerate(s["caches"]):
        if c and s.get("b11434"):  # build 11434: each cache of llama_kv_cache_iswa reads its own rotations
            k_rot = g.input(_f32(s["k_rot"], s["k_rot"])) if s.get("k_rot") else None
            v_rot = g.input(_f32(s["v_rot"], s["v_rot"])) if s.get("v_rot") else None
        rots.append((k_rot, v_rot))
        groups.append((
            g.input(T * I64),
            g.input(T * I64 if fa else s["Hk"] * Dv * T * I64),
            g.input(n_kv * T * (F16 if fa else F32)),
            n_kv,
        ))
    out_ids = g.input(b.O * I32)
    x = g.op(_f32(E, T), tokens)  # GET_ROWS of the token embeddings
    mixed()

    for il in range(L):
        g.mark()
        resid = x
        cur = b.rms_norm(x, E)
        c = s["cache_of_layer"](il)
        attn_in = _attention(b, s, cur, groups[c], pos, *rots[c], fa)
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


def _moe_ffn(b, x, s, after=lambda: None):
    """``build_moe_ffn`` (``src/llama-graph.cpp``) as Qwen3-MoE (soft-max gating, weights renormalised:
    SUM_ROWS, CLAMP, DIV), LFM2-MoE (``sigmoid``: SIGMOID in place of SOFT_MAX, the top-k of the probabilities plus
    the expert bias with ``moe_probs_bias``, weights renormalised) and gpt-oss (``softmax_weight``: top-k of the
    biased logits, SOFT_MAX of the k chosen; expert biases added in place, SWIGLU_OAI) call it, then a shared MLP ``F_shared`` wide (Granite-4.0-H), behind
    a sigmoid gate with ``shared_gate`` (Qwen3.5-MoE); x: the normed input [E, T]."""
    g, T, E = b.g, b.T, s["E"]
    n_exp, used, Fe = s["n_expert"], s["n_expert_used"], s["F_expert"]
    logits = b.mm(n_exp, x)  # router logits (the router bias, if any, is added in place)
    if s.get("moe_gating") == "sigmoid_logits":
        # Llama 4: SIGMOID of the logits, but the top-k picked on the logits themselves (two consumers: a new tensor)
        probs = g.op(_f32(n_exp, T), logits)
        order = g.op(n_exp * T * I32, logits)
    else:
        probs = logits if s.get("moe_gating") == "softmax_weight" else g.op(_f32(n_exp, T), logits, inplace=True)
        order = None
    probs_r = g.view(probs)
    if order is None and s.get("moe_probs_bias"):
        # LFM2-MoE: the top-k picks from probs + exp_probs_b (ADD: a new tensor, probs being read by the view too)
        order = g.op(n_exp * T * I32, g.op(_f32(n_exp, T), probs, inplace=True))
    if order is None:
        order = g.op(n_exp * T * I32, probs)  # ARGSORT (ggml_argsort_top_k: a view of its first k)
    topk = g.view(order)
    weights = g.op(_f32(1, used, T), probs_r, topk)  # GET_ROWS
    if s.get("moe_gating") == "softmax_weight":
        weights = g.op(_f32(1, used, T), g.view(weights), inplace=True)  # SOFT_MAX over the k chosen
    if s.get("moe_norm_w"):
        wsum = g.op(_f32(1, T), g.view(weights))  # SUM_ROWS, then CLAMP in place
        weights = g.op(_f32(1, used, T), g.view(weights), wsum, inplace=True)  # DIV
    xr = g.view(x)
    if s.get("weight_before_ffn"):  # Llama 4: the input repeated per chosen expert (REPEAT), times its weight
        xr = g.op(_f32(E, used, T), g.op(_f32(E, used, T), xr), weights, inplace=True)
    gate = g.op(_f32(Fe, used, T), xr, topk)  # MUL_MAT_ID
    up = g.op(_f32(Fe, used, T), xr, topk)
    act = g.op(_f32(Fe, used, T), gate, up)  # SWIGLU / SWIGLU_OAI: a new tensor
    down = g.op(_f32(E, used, T), act, topk)
    weighted = down if s.get("weight_before_ffn") else g.op(_f32(E, used, T), down, weights, inplace=True)
    parts = [g.view(weighted) for _ in range(used)]
    if used == 1:
        out = g.op(_f32(E, T), parts[0])  # CONT
    else:
        out = g.op(_f32(E, T), parts[0], parts[1], inplace=True)  # views are not owned: a new tensor
        for p in parts[2:]:
            out = g.op(_f32(E, T), out, p, inplace=True)
    after()  # build_moe_ffn expands moe_out: what a later layer expands at once comes next, before the shared MLP
    if s.get("F_shared"):  # Granite-4.0-H (granite-hybrid.cpp build_layer_ffn): build_ffn of the shared MLP, added
        su = b.mm(s["F_shared"], x)
        sg = b.mm(s["F_shared"], x)
        sh = b.mm(E, g.op(_f32(s["F_shared"], T), sg, su))  # SWIGLU, down
        if s.get("shared_gate"):  # Qwen3.5-MoE (qwen35moe.cpp build_layer_ffn): the gate ffn_gate_inp_shexp
            gate = g.op(_f32(1, T), b.mm(1, x), inplace=True)  # [1, T], SIGMOID in place
            sh = g.op(_f32(E, T), sh, gate, inplace=True)  # the shared expert's output times it (MUL in place)
        out = b.add(out, sh, E)
    return out


def _short_conv(b, s, x, s_copy, states=None, eager=lambda: None):
    """LFM2's gated short convolution (``src/models/lfm2.cpp``, ``build_shortconv_block``), up to the
    output projection's input. ``build_rs`` gathers every sequence's conv state first (GET_ROWS of the
    ``n_rs`` states: ``n_embd_r`` floats each); then the norm, the in-projection [3·E, T] (B, C, x views),
    B·x, the state prepended (CONCAT: ``E · (T + (L−1)·n_seqs)`` floats), the last columns copied back to the
    cache, SSM_CONV [E, T] and C·conv (in place)."""
    g, T, E = b.g, b.T, s["E"]
    if states is None:
        states = g.op(_f32(s["n_embd_r"], s["n_rs"]), s_copy)
    cur = b.rms_norm(x, E)
    bcx = b.mm(3 * E, cur)
    bx = g.op(_f32(E, T), g.view(bcx), g.view(bcx))  # MUL of the B and x views
    cx = g.op(_f32(E, T + (s["conv_k"] - 1) * s["n_seqs"]), g.view(states), g.view(bx))  # CONCAT
    g.external_view(g.view(cx))  # CPY of the new state into the cache
    eager()
    conv = g.op(_f32(E, T), cx)  # SSM_CONV
    return g.op(_f32(E, T), conv, g.view(bcx), inplace=True)  # MUL by the C view


def _mamba2(b, s, x, s_copy, conv_states=None, eager=lambda: None):
    """``build_mamba2_layer`` (``src/models/mamba-base.cpp``) up to ``ssm_out``'s input [d_inner, T].

    The conv states are gathered first (GET_ROWS, ``n_rs`` rows of ``n_embd_r`` floats), then the norm, the
    in-projection zxBCdt [2·d_inner + 2·G·N + H, T], CONCAT of the state and xBC, SSM_CONV [C, T] (bias and
    SiLU in place), dt made contiguous [H, T], SSM_SCAN (``d_inner·T`` outputs then ``N·d_inner·n_seqs`` final
    states), the other sequences' SSM states (GET_ROWS of ``n_rs − 1`` rows, copied back), z made contiguous,
    x·D, y + x·D (in place on x·D), SWIGLU, and the grouped RMS norm of its reshape (a new tensor; its weight in
    place). ``eager`` is called after the state copies: where the next state layer's GET_ROWS goes."""
    g, T, E = b.g, b.T, s["E"]
    di, H, N, G = s["d_inner"], s["ssm_H"], s["ssm_N"], s["ssm_G"]
    C = di + 2 * G * N
    if conv_states is None:
        conv_states = g.op(_f32(s["n_embd_r"], s["n_rs"]), s_copy)
    cur = b.rms_norm(x, E)
    zx = b.mm(2 * di + 2 * G * N + H, cur)
    cx = g.op(_f32(C, T + (s["conv_k"] - 1) * s["n_seqs"]), g.view(conv_states), g.view(zx))  # CONCAT
    g.external_view(g.view(cx))  # CPY of the new conv state
    xbc = g.op(_f32(C, T), cx)  # SSM_CONV
    xbc = g.op(_f32(C, T), xbc, inplace=True)  # ADD bias
    xbc = g.op(_f32(C, T), xbc, inplace=True)  # SILU
    dt = g.op(_f32(H, T), g.view(zx))  # CONT
    dt = g.op(_f32(H, T), dt, inplace=True)  # ADD dt bias
    scan = g.op(_f32(di * T + N * di * s["n_seqs"]), g.view(xbc), dt, g.view(xbc), g.view(xbc), s_copy)
    extra = g.op(_f32(N * di, s["n_rs"] - 1), s_copy)  # GET_ROWS of the states outside the micro-batch
    g.external_view(g.view(extra))
    g.external_view(g.view(scan))  # CPY of the final SSM state
    eager()
    zc = g.op(_f32(di, T), g.view(zx))  # CONT z
    xd = g.op(_f32(di, T), g.view(xbc))  # MUL x·D
    y = g.op(_f32(di, T), g.view(scan), xd, inplace=True)  # ADD: in place on x·D (a view is never reused)
    y = g.op(_f32(di, T), zc, y)  # SWIGLU (split): a new tensor
    if not s.get("ssm_norm", True):  # no ssm_norm tensor (Falcon-H1): ssm_out reads the reshape of y
        return g.view(y)
    y = g.op(_f32(di, T), g.view(y))  # grouped RMS_NORM of its reshape: a new tensor
    return g.op(_f32(di, T), y, inplace=True)  # its weight (MUL), in place


def _gated_deltanet(b, s, x, s_copy):
    """Qwen3.5's Gated DeltaNet layer (``src/models/qwen35.cpp`` ``build_layer_attn_linear``,
    ``src/models/delta-net-base.cpp`` ``build_conv_state``, ``build_recurrent_attn``, fused
    ``ggml_gated_delta_net``), up to ``ssm_out``'s input [Hv·Dv, T]."""
    g, T, E = b.g, b.T, s["E"]
    Hk, Dk, Hv, Dv = s["lin_Hk"], s["lin_Dk"], s["lin_Hv"], s["lin_Dv"]
    conv_dim = 2 * Hk * Dk + Hv * Dv
    cur = b.rms_norm(x, E)
    conv_states = g.op(_f32(s["n_embd_r"], s["n_rs"]), s_copy)  # build_rs: GET_ROWS
    qkv = b.mm(conv_dim, cur)
    cx = g.op(_f32(conv_dim, T + (s["conv_k"] - 1) * s["n_seqs"]), g.view(conv_states), g.view(qkv))  # CONCAT
    g.external_view(g.view(cx))  # CPY of the new conv state
    state = g.op(_f32(Dv * Dv * Hv, s["n_rs"]), s_copy)  # build_rs of the recurrent state: GET_ROWS
    co = g.op(_f32(conv_dim, T), cx)  # SSM_CONV, then SILU in place
    co = g.op(_f32(conv_dim, T), co, inplace=True)
    q = g.op(_f32(Hk * Dk, T), g.view(co))  # L2 norm (RMS_NORM of the view, SCALE in place)
    # no REPEAT of q and k to the value heads when Hk < Hv (Qwen3.5-35B-A3B's 16 / 32): qwen35.cpp / qwen35moe.cpp
    # build_layer_attn_linear repeats only without both fused kernels, and the CPU backend runs both
    # (llama_context::sched_reserve resolves cparams.fused_gdn_ar / fused_gdn_ch to enabled)
    k = g.op(_f32(Hk * Dk, T), g.view(co))
    # the ADD (then SOFTPLUS, MUL in place) and the SIGMOID read the projections' reshape views: new tensors
    alpha = g.op(_f32(Hv, T), g.view(b.mm(Hv, cur)))
    beta = g.op(_f32(Hv, T), g.view(b.mm(Hv, cur)))
    out = g.op(_f32(Dv * Hv * T + Dv * Dv * Hv * s["n_seqs"]), q, k, g.view(co), alpha, beta, g.view(state))
    g.external_view(g.view(out))  # CPY of the new state
    normed = g.op(_f32(Dv * Hv, T), g.view(out))  # RMS_NORM of the output view (its weight: in place)
    z = g.op(_f32(Hv * Dv, T), g.view(b.mm(Hv * Dv, cur)))  # SILU of the reshape: a new tensor
    return g.op(_f32(Hv * Dv, T), normed, z, inplace=True)  # MUL


def _layers(s, fa):
    """Graphs with a layer kind per layer: llama.cpp's hybrids (LFM2, Qwen3.5, Granite-4.0-H, Nemotron-H) and
    its MoE builds without latent attention (gpt-oss ``src/models/openai-moe.cpp``, Qwen3-MoE
    ``src/models/qwen3moe.cpp``; Qwen3.5-MoE ``src/models/qwen35moe.cpp`` is Qwen3.5's layers with ``moe``).

    ``s["mixers"]`` names each layer's mixer: ``attn`` (:func:`_attention`, ``gated`` for Qwen3.5), ``conv``
    (:func:`_short_conv`), ``mamba2`` (:func:`_mamba2`), ``parallel`` (Falcon-H1: attention and Mamba2 side by
    side, their outputs summed), ``gdn`` (:func:`_gated_deltanet`) or ``mlp``
    (Nemotron-H's MLP-only layers: up [F, T], ReLU² in place, down); ``s["ffns"]`` each layer's feed-forward
    after the mixer: ``swiglu`` (gate, up, SWIGLU, down), ``moe`` (:func:`_moe_ffn`) or ``none``. The mixer's
    output projection, the residual add (operands in the order the model file writes them), the FFN norm and
    the FFN follow; the last layer keeps only the output rows (GET_ROWS) before its residual add, except in
    Nemotron-H, which selects them after the final norm (``embeddings_nextn_masked`` false).
    """
    T, E, F, V, L = s["T"], s["E"], s["F"], s["V"], s["layers"]
    b = _B(T, s.get("O"))
    g = b.g
    mixers, ffns = s["mixers"], s["ffns"]
    tokens, mixed = _embeddings(b, s)
    # the graph's leafs in the order a node first reads them (graph order): the recurrent states' copy ids, the
    # positions (none without RoPE; Qwen3.5's M-RoPE keeps 4 per token), then each KV cache's inputs
    state_mixers = ("conv", "mamba2", "gdn", "parallel")
    late_s_copy = s.get("s_copy_late", False)  # Falcon-H1: build_inp_mem_hybrid reads the attention inputs first
    s_copy = g.input(s["n_rs"] * I32) if any(m in state_mixers for m in mixers) and not late_s_copy else None
    k_rot = g.input(_f32(s["k_rot"], s["k_rot"])) if s.get("k_rot") else None
    pos = None if s.get("no_rope") else g.input(T * I32 * s.get("n_pos", 1))
    v_rot = g.input(_f32(s["v_rot"], s["v_rot"])) if s.get("v_rot") else None
    groups, rots = [], []
    nope = s.get("nope_period")  # Llama 4: layer il without RoPE when (il + 1) % nope_period == 0
    attn_temp = None
    if "attn" in mixers or "parallel" in mixers:
        for c, n_kv in enumerate(s["caches"]):
            if c and nope and s.get("attn_temp"):  # inp_attn_scale [1, 1, T]: first read by the first NoPE layer,
                attn_temp = g.input(_f32(1, T))  # which reads it before the full cache's inputs
            if c:  # every cache of llama_kv_cache_iswa has its own rotations, read first by its first layer
                k_rot = g.input(_f32(s["k_rot"], s["k_rot"])) if s.get("k_rot") else None
                v_rot = g.input(_f32(s["v_rot"], s["v_rot"])) if s.get("v_rot") else None
            rots.append((k_rot, v_rot))
            groups.append((
                g.input(T * I64),
                g.input(T * I64 if fa else s["Hk"] * s["Dv"] * T * I64),
                g.input(n_kv * T * (F16 if fa else F32)),
                n_kv,
            ))
    if late_s_copy:
        s_copy = g.input(s["n_rs"] * I32)
    out_ids = g.input(b.O * I32)
    x = g.op(_f32(E, T), tokens)  # GET_ROWS of the token embeddings
    mixed()
    late = s.get("late_out_ids", False)
    resid_first = s.get("resid_first", False)
    # Graph order: ggml_build_forward_expand places a tensor when something expanded needs it. A layer's tail
    # (after its last explicit expand: the attention, a state copy) is placed only when a later expand reaches
    # it, but the next short-conv or Mamba2 layer's build_rs expands its GET_ROWS of the conv states at once:
    # that GET_ROWS comes right after the previous layer's last expand (as GGML_SCHED_DEBUG-style dumps of build
    # 11434's reserve graph show), before the tail.
    prefetched = {}

    def eager_after(il):
        def hook():
            nxt = next((j for j in range(il + 1, L) if mixers[j] != "mlp"), None)
            if nxt is not None and mixers[nxt] in ("conv", "mamba2") and nxt not in prefetched:
                prefetched[nxt] = g.op(_f32(s["n_embd_r"], s["n_rs"]), s_copy)
        return hook

    for il in range(L):
        g.mark()
        resid = x
        kind = mixers[il]
        # the layer's last explicit expand: the mixer's (attention, a state copy), or with experts the MoE's moe_out
        # (build_moe_ffn expands it), which places the mixer's tail before a later layer's eager GET_ROWS
        hook = eager_after(il) if s.get("b11434") else (lambda: None)
        moe_hook, hook = (hook, lambda: None) if ffns[il] == "moe" else (lambda: None, hook)
        if kind == "attn":
            cur = b.rms_norm(x, E)
            c = s["cache_of_layer"](il)
            rope = None if not nope else (il + 1) % nope != 0
            attn = _attention(b, s, cur, groups[c], pos, *rots[c], fa, gated=s.get("attn_gated", False), rope=rope,
                              attn_temp=attn_temp)
            hook()
            out = b.mm(E, attn)
        elif kind == "conv":
            out = b.mm(E, _short_conv(b, s, x, s_copy, prefetched.get(il), hook))
        elif kind == "mamba2":
            out = b.mm(E, _mamba2(b, s, x, s_copy, prefetched.get(il), hook))
        elif kind == "parallel":
            # Falcon-H1 (src/models/falcon-h1.cpp): attention and Mamba2 side by side on the same normed input (two
            # norms of it); the attention's output projection is placed when layer_out reads it, after the Mamba2
            # layer's explicitly expanded state copies and before its tail
            cur = b.rms_norm(x, E)
            c = s["cache_of_layer"](il)
            attn = _attention(b, s, cur, groups[c], pos, *rots[c], fa)
            held = []
            y = _mamba2(b, s, x, s_copy, None, lambda: held.append(b.mm(E, attn)))
            out = b.add(held[0], b.mm(E, y), E)  # layer_out = attn_out + ssm_out
        elif kind == "gdn":  # ssm_out reshaped to [E, T]: the residual add is in place on the residual, not on it
            out = g.view(b.mm(E, _gated_deltanet(b, s, x, s_copy)))
        else:  # mlp: up, ReLU and SQR in place, down
            cur = b.rms_norm(x, E)
            up = g.op(_f32(F, T), b.mm(F, cur), inplace=True)
            out = b.mm(E, up)
        if il == L - 1 and not late and not s.get("out_ids_after_add"):
            b.T = b.O
            out = g.op(_f32(E, b.T), out, out_ids)
            resid = g.op(_f32(E, b.T), resid, out_ids)
        x = b.add(resid, out, E) if resid_first else b.add(out, resid, E)
        if il == L - 1 and s.get("out_ids_after_add"):  # Falcon-H1: GET_ROWS of the residual sum (ffn_inp)
            b.T = b.O
            x = g.op(_f32(E, b.T), x, out_ids)
        if ffns[il] == "none":
            continue
        ffn_inp = x
        cur = b.rms_norm(ffn_inp, E)
        if ffns[il] == "moe":
            out = _moe_ffn(b, cur, s, moe_hook)
        else:
            gate = b.mm(F, cur)
            up = b.mm(F, cur)
            out = b.mm(E, g.op(_f32(F, b.T), gate, up))  # SWIGLU
        x = b.add(ffn_inp, out, E) if resid_first else b.add(out, ffn_inp, E)
    if late == "before_norm":  # gpt-oss: the last residual is t_h_nextn (an output), its output rows are normed
        g.output[x] = True
        b.T = b.O
        x = g.op(_f32(E, b.T), x, out_ids)  # GET_ROWS
        late = False
    x = g.op(_f32(E, b.T), x, inplace=True)  # final RMS_NORM
    x = g.op(_f32(E, b.T), x, inplace=True, output=True)  # its weight: result_norm (Nemotron-H, Qwen3.5: t_h_nextn)
    if late:
        b.T = b.O
        x = g.op(_f32(E, b.T), x, out_ids, output=True)  # GET_ROWS of the output rows
    g.op(_f32(V, b.T), x, output=True)  # result_output
    return g


def _mla(s, fa):
    """DeepSeek-V2/V3 (``src/models/deepseek2.cpp``): absorbed MLA attention, MoE after ``dense_layers``."""
    T, E, F, V, L = s["T"], s["E"], s["F"], s["V"], s["layers"]
    H, Dk, Dv, R, rope = s["H"], s["Dk"], s["Dv"], s["kv_lora_rank"], s["rope_dim"]
    n_kv = s["caches"][0]
    b = _B(T, s.get("O"))
    g = b.g
    # MLA keeps the 0c1e57098 embedding inputs on either build: with build 11434's mixed-batch branch the replay
    # equals llama-server's log (88.14 MiB, deepseek-v2-lite -c 4096), but the process model's resident peak,
    # fitted with the larger figure, would then fall 0.3 MiB under that run's VmHWM (left for the process model)
    tokens, mixed = _embeddings(b, dict(s, b11434=False))
    pos = g.input(T * I32)
    k_idxs = g.input(T * I64)  # MLA: no V cache, no V indices
    mask = g.input(n_kv * T * (F16 if fa else F32))
    out_ids = g.input(b.O * I32)
    x = g.op(_f32(E, T), tokens)
    mixed()
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


def _mtp(s, fa):
    """Qwen3.5's MTP draft graph (build 11434 ``src/models/qwen35.cpp`` ``graph_mtp``), the worst case an MTP
    context reserves: the token rows (GET_ROWS of ``token_embd``) and the target's hidden rows (input ``h``
    [E, T]) each RMS-normed, concatenated [2E, T], projected by ``nextn.eh_proj`` to [E, T]; one gated
    full-attention block (:func:`_attention`) and its MLP (a MoE's: :func:`_moe_ffn` with soft-max gating and
    renormalised weights, then the shared expert gated by a sigmoid), as the trunk's layers; the head norm
    (``t_h_nextn``, an output) over every row; then the output rows (GET_ROWS) and the logits [V, O].
    The token path is the reserve's (``ubatch.token`` set): ``inp->embd`` is in no node and not allocated."""
    T, E, F, V = s["T"], s["E"], s["F"], s["V"]
    b = _B(T, s.get("O"))
    g = b.g
    # inputs in the order the graph's nodes first read them
    tokens = g.input(T * I32)
    # the hidden rows: an f32 [E, T] input its RMS_NORM runs in place on (one consumer, the same layout)
    h = g.input(_f32(E, T), layout=_f32(E, T))
    k_rot = g.input(_f32(s["k_rot"], s["k_rot"])) if s.get("k_rot") else None
    pos = g.input(T * I32 * s.get("n_pos", 1))
    v_rot = g.input(_f32(s["v_rot"], s["v_rot"])) if s.get("v_rot") else None
    n_kv = s["caches"][0]
    group = (g.input(T * I64), g.input(T * I64 if fa else s["Hk"] * s["Dv"] * T * I64),
             g.input(n_kv * T * (F16 if fa else F32)), n_kv)
    out_ids = g.input(b.O * I32)
    e_norm = b.rms_norm(g.op(_f32(E, T), tokens), E)  # GET_ROWS, then nextn.enorm
    h_norm = b.rms_norm(h, E)  # nextn.hnorm of the hidden rows, in place on the input
    concat = g.op(_f32(2 * E, T), e_norm, h_norm)  # CONCAT along dim 0
    inp_sa = b.mm(E, concat)  # nextn.eh_proj
    cur = b.rms_norm(inp_sa, E)
    attn = _attention(b, s, cur, group, pos, k_rot, v_rot, fa, gated=True)
    x = b.add(b.mm(E, attn), inp_sa, E)  # attn_output, + the residual
    cur = b.rms_norm(x, E)  # post_attention_norm
    if s.get("n_expert"):  # Qwen3.5-MoE (src/models/qwen35moe.cpp graph_mtp): the routed experts, then the shared one
        out = _moe_ffn(b, cur, s)
        Fs = s["F_shared"]
        shared = b.mm(E, g.op(_f32(Fs, T), b.mm(Fs, cur), b.mm(Fs, cur)))  # gate, up, SWIGLU, down
        gate_w = g.op(_f32(1, T), b.mm(1, cur), inplace=True)  # ffn_gate_inp_shexp [1, T], SIGMOID in place
        shared = g.op(_f32(E, T), shared, gate_w, inplace=True)  # MUL: the gated shared expert
        x = b.add(b.add(out, shared, E), x, E)  # + the routed experts' sum, + the residual
    else:
        gate, up = b.mm(F, cur), b.mm(F, cur)
        x = b.add(b.mm(E, g.op(_f32(F, T), gate, up)), x, E)  # SWIGLU, ffn_down, + the residual
    x = g.op(_f32(E, T), x, inplace=True)  # the head norm (shared_head_norm or output_norm)
    x = g.op(_f32(E, T), x, inplace=True, output=True)  # its weight: t_h_nextn
    b.T = b.O
    x = g.op(_f32(E, b.T), x, out_ids)  # GET_ROWS of the output rows
    g.op(_f32(V, b.T), x, output=True)  # result_output
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
    if s.get("graph") == "mla":
        g = _mla(s, fa)
    elif s.get("graph") == "mtp":
        g = _mtp(s, fa)
    elif s.get("graph") == "gemma3n":
        g = _gemma3n(s, fa)
    elif s.get("graph") == "gemma4":
        g = _gemma4(s, fa)
    elif s.get("graph") == "layers":
        g = _layers(s, fa)
    else:
        g = _llama(s, fa)
    return g


def _gemma3n_attention(b, s, cur, group, pos, k_rot, v_rot, fa, shared):
    """Gemma 3n's attention (``src/models/gemma3n.cpp``, build 11434) up to the output projection's input: Q, K, V
    projections, their RMS norms of the reshape views (new tensors; Q and K roped in place), V normed without a
    weight, each rotated by a quantized cache's Hadamard matrix (:func:`_rot`); a shared-KV layer
    (``hparams.has_kv(il)`` false) computes only Q and reads an earlier layer's cache."""
    g, T, H, Dk, Hk, Dv = b.g, b.T, s["H"], s["Dk"], s["Hk"], s["Dv"]
    k_idxs, v_idxs, mask, n_kv = group
    qr = _rot(g, g.op(_f32(Dk, H, T), g.view(b.mm(H * Dk, cur)), pos, inplace=True), k_rot)  # RMS_NORM, MUL, ROPE
    if not shared:
        kr = _rot(g, g.op(_f32(Dk, Hk, T), g.view(b.mm(Hk * Dk, cur)), pos, inplace=True), k_rot)
        vr = _rot(g, g.op(_f32(Dv, Hk, T), g.view(b.mm(Hk * Dv, cur))), v_rot)  # RMS_NORM of the view, no weight
        g.external_view(g.view(kr), k_idxs)  # SET_ROWS into the K cache
        if fa:
            g.external_view(g.view(vr), v_idxs)
        else:
            g.external_view(g.view(g.view(vr)), v_idxs)
    qp = g.view(g.view(qr))
    if fa:
        return _rot(g, g.view(g.op(_f32(Dv, H, T), qp, mask)), v_rot)  # FLASH_ATTN_EXT
    kq = g.op(_f32(n_kv, T, H), qp)
    kq = g.op(_f32(n_kv, T, H), kq, mask, inplace=True)  # SOFT_MAX
    return _rot(g, g.op(_f32(Dv * H, T), g.view(g.op(_f32(Dv, T, H), kq))), v_rot)  # permute + CONT


def _project_per_layer_inputs(b, x, ple, P, L, T):
    """``project_per_layer_inputs`` of Gemma 3n and Gemma 4 (``src/models/gemma3n.cpp``, ``gemma4.cpp``): the
    embeddings ``x`` projected to ``P · L`` per-layer values, normed, added to the per-layer table's rows ``ple``
    and scaled, then permuted to [P, T, L]; returns that tensor."""
    g = b.g
    pp = g.op(_f32(P * L, T), b.mm(P * L, x), inplace=True)  # MUL_MAT, SCALE
    pp = g.op(_f32(P * L, T), g.view(pp))  # RMS_NORM of the reshape
    pp = g.op(_f32(P * L, T), pp, inplace=True)  # MUL per_layer_proj_norm
    pp = g.op(_f32(P * L, T), pp, ple, inplace=True)  # ADD
    pp = g.op(_f32(P * L, T), pp, inplace=True)  # SCALE: inp_per_layer
    return g.op(_f32(P, T, L), g.view(pp))  # permute + CONT


def _gemma3n(s, fa):
    """Gemma 3n (``src/models/gemma3n.cpp``, build 11434): per-layer embeddings, AltUp (``n_altup`` streams of
    [E, T]), LAuReL, Gaussian top-k sparsity in the first ``n_layer_sparsity`` layers, shared-KV layers from
    ``n_layer_kv_from_start`` on; the output rows are kept only after the AltUp merge. Written in the graph order of
    a dump of the reserve graph (``tests/harness/graph_dump.py``), node by node."""
    T, E, F, V, L = s["T"], s["E"], s["F"], s["V"], s["layers"]
    A, P, R = s["n_altup"], s["n_embd_altup"], s["laurel_rank"]
    b = _B(T, s.get("O"))
    g = b.g
    tokens, mixed = _embeddings(b, dict(s, b11434=True, scale_rows=False))
    scale_rows = g.input(_f32(1, T))  # inp_scale_rows (build_inp_embd with a scale), read by the MUL below
    ple_tokens = g.input(T * I32)  # build_inp_per_layer: its own token ids
    groups, rots = [], []
    for c, n_kv in enumerate(s["caches"]):
        # each cache of llama_kv_cache_iswa reads its own rotations; the first cache's sit around inp_pos
        k_rot = g.input(_f32(s["k_rot"], s["k_rot"])) if s.get("k_rot") else None
        if not c:
            pos = g.input(T * I32)
        v_rot = g.input(_f32(s["v_rot"], s["v_rot"])) if s.get("v_rot") else None
        rots.append((k_rot, v_rot))
        groups.append((g.input(T * I64), g.input(T * I64 if fa else s["Hk"] * s["Dv"] * T * I64),
                       g.input(n_kv * T * (F16 if fa else F32)), n_kv))
    out_ids = g.input(b.O * I32)
    x = g.op(_f32(E, T), tokens)  # GET_ROWS
    mixed()
    x = g.op(_f32(E, T), x, scale_rows, inplace=True)  # MUL by inp_scale_rows: inp_scaled
    ple = g.op(_f32(P * L, T), ple_tokens)  # GET_ROWS of per_layer_token_embd
    ple = g.op(_f32(P * L, T), g.view(ple))  # SCALE of the reshape: a new tensor

    def magnitude(t, rows):
        return g.op(_f32(1, T, rows), g.op(_f32(1, T, rows), g.op(g.size[t] or _f32(E, T), t, inplace=True)), inplace=True)  # SQR, SUM_ROWS, SQRT

    rep = g.op(_f32(E, T, A - 1), x)  # REPEAT
    added = g.op(_f32(E, T, A - 1), rep)  # MUL_MAT altup_proj
    mag = magnitude(x, 1)
    added2 = g.op(_f32(E, T, A - 1), added, mag, inplace=True)  # MUL
    added = g.op(_f32(E, T, A - 1), added2, magnitude(added, A - 1), inplace=True)  # DIV
    stack = g.op(_f32(E, T, A), x, added)  # CONCAT: inp_stacked
    ple_proj = None

    def router(t):  # altup_compute_router_modalities: RMS_NORM, MUL, SCALE, MUL_MAT, TANH
        n = g.op(_f32(E, T), t, inplace=True)
        n = g.op(_f32(E, T), g.op(_f32(E, T), n, inplace=True), inplace=True)
        return g.op(_f32(A, T), b.mm(A, n), inplace=True)

    for il in range(L):
        g.mark()
        perm = g.op(_f32(E, T, A), g.view(stack))  # CONT of the permuted streams
        coefs = g.view(b.mm(A * A, router(g.view(stack))))  # all_coefs, reshaped
        pred = g.op(_f32(E, T, A), g.view(g.op(_f32(E, A, T), perm, coefs)))  # MUL_MAT, permute + CONT
        pred = g.op(_f32(E, T, A), pred, stack, inplace=True)  # ADD: predictions
        active = g.view(pred)
        cur = b.rms_norm(active, E)  # attn_norm
        shared = il >= s["n_layer_kv_from_start"]
        c = s["cache_of_layer"](il)
        attn = _gemma3n_attention(b, s, cur, groups[c], pos, *rots[c], fa, shared)
        out = b.rms_norm(b.mm(E, attn), E)  # attn_output, attn_post_norm
        gated = b.add(out, active, E)  # attn_gated
        lau = b.rms_norm(b.mm(E, b.mm(R, cur)), E)  # laurel_l, laurel_r, laurel_post_norm
        lau = b.add(lau, cur, E)  # laurel_out
        al = g.op(_f32(E, T), b.add(gated, lau, E), inplace=True)  # SCALE: attn_laurel
        fcur = b.rms_norm(al, E)
        up = b.mm(F, fcur)
        gate = b.mm(F, fcur)
        if il < s["n_layer_sparsity"]:  # gaussian_topk: MEAN, SUB, SQR, SUM_ROWS, SCALE, SQRT, SCALE, ADD, SUB, RELU
            mean = g.op(_f32(1, T), gate)
            sq = g.op(_f32(F, T), g.op(_f32(F, T), gate, mean, inplace=True), inplace=True)
            std = g.op(_f32(1, T), sq)
            std = g.op(_f32(1, T), g.op(_f32(1, T), g.op(_f32(1, T), std, inplace=True), inplace=True), inplace=True)
            cut = g.op(_f32(1, T), mean, std, inplace=True)
            gate = g.op(_f32(F, T), g.op(_f32(F, T), gate, cut, inplace=True), inplace=True)
        gate = g.op(_f32(F, T), gate, inplace=True)  # GELU
        ffn = b.rms_norm(b.mm(E, g.op(_f32(F, T), up, gate, inplace=True)), E)  # MUL, ffn_down, ffn_post_norm
        lg = b.add(ffn, al, E)  # attn_ffw_laurel_gated
        # altup_correct
        innov = g.op(_f32(E, T), lg, g.view(pred), inplace=True)  # SUB
        rep = g.op(_f32(E, T, A), innov)  # REPEAT
        cc = g.op(_f32(A, T), b.mm(A, router(lg)), inplace=True)  # MUL_MAT altup_correct_coef, SCALE_BIAS
        cc = g.op(_f32(1, T, A), g.view(cc))  # CONT of the transpose
        corr = g.op(_f32(E, T, A), rep, cc, inplace=True)  # MUL
        corr = g.op(_f32(E, T, A), corr, pred, inplace=True)  # ADD: corrected
        first = g.view(corr)
        rest = g.view(corr)
        fp = g.op(_f32(E, T), g.view(corr))  # MUL by altup_correct_scale
        fp = g.op(_f32(P, T), b.mm(P, fp), inplace=True)  # per_layer inp_gate, GELU
        if ple_proj is None:  # placed at its first use
            ple_proj = _project_per_layer_inputs(b, x, ple, P, L, T)
        fp = g.op(_f32(P, T), fp, g.view(ple_proj), inplace=True)  # MUL by this layer's slice
        fp = b.rms_norm(b.mm(E, fp), E)  # per_layer proj, post_norm
        tmp = g.op(_f32(E, T, A - 1), rest, fp, inplace=True)  # ADD (of a view: a new tensor)
        stack = g.op(_f32(E, T, A), first, tmp)  # CONCAT: l_out
    # merge the streams (altup_unembd_proj), then keep the output rows
    un = g.op(_f32(E, T, A - 1), g.view(stack))  # MUL_MAT of the other streams' view
    mag = magnitude(g.view(stack), 1)  # of the active stream's view
    un2 = g.op(_f32(E, T, A - 1), un, mag, inplace=True)
    un = g.op(_f32(E, T, A - 1), un2, magnitude(un, A - 1), inplace=True)  # DIV: altup_unembd
    cur = g.op(_f32(E, T), g.view(stack), g.view(un), inplace=True)
    for _ in range(A - 2):
        cur = g.op(_f32(E, T), cur, g.view(un), inplace=True)
    cur = g.op(_f32(E, T), cur, inplace=True)  # SCALE: unembd_merged
    b.T = b.O
    cur = g.op(_f32(E, b.T), cur, out_ids)  # GET_ROWS
    cur = g.op(_f32(E, b.T), cur, inplace=True)  # RMS_NORM
    cur = g.op(_f32(E, b.T), cur, inplace=True, output=True)  # result_norm
    lg = g.op(_f32(V, b.T), cur)
    lg = g.op(_f32(V, b.T), g.op(_f32(V, b.T), lg, inplace=True), inplace=True)  # SCALE, TANH
    g.op(_f32(V, b.T), lg, inplace=True, output=True)  # SCALE: result_output
    return g


def _gemma4(s, fa):
    """Gemma 4 (``src/models/gemma4.cpp``, build 11434; dense): per-layer embeddings, sliding layers of ``Dk`` and
    full-attention layers of ``global_head_dim`` (K, V and query), one MLP width per layer (``ffn_widths``), shared-KV
    layers from ``n_layer_kv_from_start`` on (Q only: they read the last earlier cache of their type). Written in the
    graph order of dumps of the reserve graph (``tests/harness/graph_dump.py``), node by node:

    * ``build_inp_embd`` with the ``sqrt(n_embd)`` row scale (``inp_scale_rows``), then ``build_inp_per_layer``
      (its own token ids; GET_ROWS of ``per_layer_token_embd``, SCALE of the reshape: a new tensor), forced early;
      ``project_per_layer_inputs`` (MUL_MAT of the scaled input, SCALE, RMS_NORM of the reshape, MUL, ADD, SCALE,
      permute + CONT to [P, T, L]) lands at its first use, layer 0's per-layer MUL;
    * Q, K, V: the RMS norm of each projection's reshape is a new tensor (Q and K multiplied and roped in place, V
      normed without weight). Without flash attention V is stored transposed in rows of the widest V
      (``llama_kv_cache`` sizes every layer's V rows by ``n_embd_v_gqa_max``): a sliding layer's V is PADded to it
      (a new tensor), and the V row indices and the KV cache follow that width;
    * ``attn_post_norm`` + residual, the GEGLU MLP, ``ffn_post_norm`` + residual, the per-layer input (inp_gate,
      GELU, MUL by the layer's slice, proj, post_norm, residual), ``layer_output_scale`` (MUL in place);
    * the output rows are kept after the final norm (``embeddings_nextn_masked`` false: ``h_nextn`` is an output),
      then the logits and their soft-capping (SCALE, TANH, SCALE in place)."""
    T, E, V, L = s["T"], s["E"], s["V"], s["layers"]
    H, Hk, P = s["H"], s["Hk"], s["n_embd_altup"]
    d_swa, d_full = s["Dk"], s["global_head_dim"]
    d_max = max(d_swa, d_full)
    widths = s["ffn_widths"]
    b = _B(T, s.get("O"))
    g = b.g
    tokens, mixed = _embeddings(b, dict(s, b11434=True, scale_rows=False))
    scale_rows = g.input(_f32(1, T))  # inp_scale_rows, read by the MUL below
    ple_tokens = g.input(T * I32)  # build_inp_per_layer: its own token ids
    groups, rots = [], []
    for c, n_kv in enumerate(s["caches"]):
        # each cache of llama_kv_cache_iswa reads its own rotations (the sliding cache's sit around inp_pos); a
        # cache's K rotation is sized by its layers' head width (256 / 512: the q8_0 rows of models2026 equal)
        k_rot = g.input(_f32(s["k_rot"][c], s["k_rot"][c])) if s["k_rot"][c] else None
        if not c:
            pos = g.input(T * I32)
        v_rot = g.input(_f32(s["v_rot"], s["v_rot"])) if s.get("v_rot") else None
        rots.append((k_rot, v_rot))
        groups.append((g.input(T * I64), g.input(T * I64 if fa else Hk * d_max * T * I64),
                       g.input(n_kv * T * (F16 if fa else F32)), n_kv))
    out_ids = g.input(b.O * I32)
    x = g.op(_f32(E, T), tokens)  # GET_ROWS
    mixed()
    x = g.op(_f32(E, T), x, scale_rows, inplace=True)  # MUL by inp_scale_rows: inp_scaled
    scaled = x
    ple = g.op(_f32(P * L, T), ple_tokens)  # GET_ROWS of per_layer_token_embd
    ple = g.op(_f32(P * L, T), g.view(ple))  # SCALE of the reshape: a new tensor
    ple_proj = None
    for il in range(L):
        g.mark()
        c = s["cache_of_layer"](il)
        D = d_swa if c == 0 else d_full
        k_rot, v_rot = rots[c]
        k_idxs, v_idxs, mask, n_kv = groups[c]
        resid = x
        cur = b.rms_norm(x, E)  # attn_norm
        qr = _rot(g, g.op(_f32(D, H, T), g.view(b.mm(H * D, cur)), pos, inplace=True), k_rot)  # norm, MUL, ROPE
        if il < s["n_layer_kv_from_start"]:  # hparams.has_kv(il)
            kr = _rot(g, g.op(_f32(D, Hk, T), g.view(b.mm(Hk * D, cur)), pos, inplace=True), k_rot)
            vr = _rot(g, g.op(_f32(D, Hk, T), g.view(b.mm(Hk * D, cur))), v_rot)  # RMS_NORM of the view, no weight
            g.external_view(g.view(kr), k_idxs)  # SET_ROWS into the K cache
            if fa:
                g.external_view(g.view(vr), v_idxs)
            elif D < d_max:  # transposed V in rows of the widest V: PAD of the reshape (a new tensor)
                g.external_view(g.view(g.op(_f32(d_max * Hk, T), g.view(vr))), v_idxs)
            else:
                g.external_view(g.view(g.view(vr)), v_idxs)
        qp = g.view(g.view(qr))
        if fa:
            attn = _rot(g, g.view(g.op(_f32(D, H, T), qp, mask)), v_rot)  # FLASH_ATTN_EXT, reshaped
        else:
            kq = g.op(_f32(n_kv, T, H), qp)
            kq = g.op(_f32(n_kv, T, H), kq, mask, inplace=True)  # SOFT_MAX
            attn = _rot(g, g.op(_f32(D * H, T), g.view(g.op(_f32(D, T, H), kq))), v_rot)  # permute + CONT
        out = b.rms_norm(b.mm(E, attn), E)  # attn_output, attn_post_norm
        attn_out = b.add(out, resid, E)
        cur = b.rms_norm(attn_out, E)  # ffn_norm
        F = widths[il]
        act = g.op(_f32(F, T), b.mm(F, cur), b.mm(F, cur))  # gate, up, GEGLU
        ffn = b.rms_norm(b.mm(E, act), E)  # ffn_down, ffn_post_norm
        pe_in = b.add(ffn, attn_out, E)
        gate = g.op(_f32(P, T), b.mm(P, pe_in), inplace=True)  # inp_gate, GELU
        if ple_proj is None:  # placed at its first use
            ple_proj = _project_per_layer_inputs(b, scaled, ple, P, L, T)
        gate = g.op(_f32(P, T), gate, g.view(ple_proj), inplace=True)  # MUL by this layer's slice
        pe = b.rms_norm(b.mm(E, gate), E)  # proj, post_norm
        x = g.op(_f32(E, T), b.add(pe_in, pe, E), inplace=True)  # residual, then MUL by layer_output_scale
    x = g.op(_f32(E, T), x, inplace=True)  # final RMS_NORM
    x = g.op(_f32(E, T), x, inplace=True, output=True)  # its weight: h_nextn
    b.T = b.O
    x = g.op(_f32(E, b.T), x, out_ids, output=True)  # GET_ROWS: result_norm
    lg = g.op(_f32(V, b.T), x)
    lg = g.op(_f32(V, b.T), g.op(_f32(V, b.T), lg, inplace=True), inplace=True)  # SCALE, TANH
    g.op(_f32(V, b.T), lg, inplace=True, output=True)  # SCALE: result_output
    return g
