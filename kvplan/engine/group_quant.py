"""Group-quantized weight formats other than GGUF: MLX affine, GPTQ, AWQ, ExecuTorch 8da4w.

Notes
-----
Each format stores a quantized matrix of ``n_in`` inputs (ggml ``ne0``) by ``n_out`` outputs as
packed ``bits``-bit integers plus per-group metadata, one group being ``group`` consecutive
inputs of one output row; everything else stays in the model's float type. Tensors come from
``tensor_inventory(shape, "hf")`` — the checkpoint's own tensors (MLA ``kv_b`` unsplit, no
rope-factor tensors, full config vocabulary). Per format, bytes of one quantized matrix::

    MLX affine  n·b/8 + 2·(n/g)·f                 weight uint32, scales and biases in the model
                                                   dtype (f = 2 for bf16/fp16)
    GPTQ        n·b/8 + ⌈n_in/g⌉·n_out·(2 + b/8) + 4·n_in
                                                   qweight int32, scales fp16, qzeros int32, g_idx int32
    AWQ (GEMM)  n·b/8 + (n_in/g)·n_out·(2 + b/8)   qweight, qzeros int32, scales fp16; no g_idx
    8da4w       n·4/8 + (n/g)·2                    int4 pairs per byte, one 16-bit scale per group

Sources and assumptions
-----------------------
* MLX (sourced): ``mlx.nn.quantize`` (ml-explore/mlx ``python/mlx/nn/layers/quantized.py``) turns
  every leaf with ``to_quantized`` — ``Linear``, ``Embedding`` and mlx-lm's ``SwitchLinear`` experts —
  into its quantized form; affine defaults are group 64, 4 bits; ``QuantizedLinear`` keeps
  ``weight`` (uint32-packed), ``scales`` and ``biases`` (one each per group, dtype of the source
  weight). mlx-lm ``utils.quantize_model`` skips a layer whose input width is not a multiple of the
  group size. Norms (``RMSNorm``) and DeepSeek's router (``MoEGate``, a plain weight;
  mlx-lm ``models/deepseek_v2.py``) have no ``to_quantized`` and stay in the model dtype.
  Tied embeddings are quantized once (``QuantizedEmbedding.as_linear`` serves as the head).
* GPTQ (sourced): AutoGPTQ ``auto_gptq/nn_modules/qlinear/qlinear_cuda_old.py`` ``QuantLinear``
  buffers: qweight [n_in·b/32, n_out] int32, qzeros [⌈n_in/g⌉, n_out·b/32] int32, scales
  [⌈n_in/g⌉, n_out] fp16, g_idx [n_in] int32, bias fp16. Only decoder-block linears are quantized;
  embeddings, lm_head, norms and MoE routers stay fp16 (assumption: AutoGPTQ's per-model
  ``inside_layer_modules`` lists, lm_head excluded by default).
* AWQ (sourced): AutoAWQ ``awq/modules/linear/gemm.py`` ``WQLinear_GEMM``: qweight [n_in, n_out·b/32]
  int32, qzeros [n_in/g, n_out·b/32] int32, scales [n_in/g, n_out] fp16; asserts n_in % g == 0
  (a layer that fails it is left fp16 here — assumption). Same unquantized set as GPTQ.
* ExecuTorch 8da4w: ``--qmode 8da4w`` (``examples/models/llama/source_transformation/quantize.py``)
  applies torchao's ``Int8DynActInt4WeightQuantizer`` to every ``nn.Linear`` — the output head
  included — with int8 dynamic per-token activations (nothing stored) and symmetric int4 weights,
  group 32 or 128 (group size has no default: it must be given). Serialized for XNNPACK as
  blockwise 4-bit (``qb4w``) with one 16-bit (bf16) scale per block and no stored zero point
  (google/XNNPACK ``src/qb4-packw``: ``const uint16_t* scale`` per block). Linears whose input width
  is not a multiple of the group are skipped (torchao's divisibility check; assumption that they
  stay float). ``extension/llm/export/config/llm_config.py``: ``embedding_quantize`` defaults to
  None (embedding stays float) and ``dtype_override`` to fp32, so unquantized tensors take 4 bytes;
  ``--embedding-quantize 8,0`` / ``4,32`` is the common override (bits, group; 0 = one group per
  row), priced with a 16-bit scale per group (assumption). ExecuTorch's Llama keeps a separate
  ``output`` Linear, so a tied checkpoint stores the head twice unless ``use_shared_embedding``
  (assumption from ``llama_transformer.py``).
Bytes are the stored weights (checkpoint / .pte constant data), not runtime repacking.
"""

from __future__ import annotations

from kvplan.engine.quantize import PricedTensor, WeightPricing
from kvplan.engine.tensors import ModelShape, Tensor, n_params, tensor_inventory

GROUP_FORMATS = {
    "mlx-4bit": ("mlx", 4, 64), "mlx-8bit": ("mlx", 8, 64),
    "gptq-4bit": ("gptq", 4, 128), "awq-4bit": ("awq", 4, 128),
    "executorch-8da4w": ("8da4w", 4, 128), "executorch-8da4w-g32": ("8da4w", 4, 32),
}
_MATRIX_KINDS = ("linear", "experts")


def _matrix(t: Tensor) -> tuple[int, int, int]:
    """(n_in, n_out, copies) of a matrix or a stack of expert matrices."""
    return t.shape[0], t.shape[1], t.shape[2] if len(t.shape) > 2 else 1


#: group sizes each family's quantizer accepts: MLX's affine mode (mlx.core.quantize) takes 32, 64 or 128;
#: GPTQ/AWQ kernels ship for 32, 64 and 128; ExecuTorch's 8da4w recipes use 32 or 128 (powers of two in torchao)
GROUP_SIZES = {"mlx": (32, 64, 128), "gptq": (32, 64, 128), "awq": (32, 64, 128), "8da4w": (32, 64, 128, 256)}


def mlx_affine_bytes(n_in: int, n_out: int, bits: int, group: int, dtype_bytes: int = 2) -> int:
    """Bytes of one MLX ``QuantizedLinear`` weight: packed values + scales + biases.

    Parameters
    ----------
    n_in : int [values]
        Input features (the row length the groups run along).
    n_out : int [values]
        Output features (rows).
    bits : int [bits/value]
        Bits of a packed value.
    group : int [values]
        Values per scale and bias.
    dtype_bytes : int [bytes]
        Bytes of one scale or bias (the model's float type).

    Returns
    -------
    int [bytes]
        ``n_out · n_in · bits / 8 + 2 · n_out · (n_in / group) · dtype_bytes``.
    """
    return n_out * n_in * bits // 8 + 2 * n_out * (n_in // group) * dtype_bytes


def gptq_bytes(n_in: int, n_out: int, bits: int = 4, group: int = 128) -> int:
    """Bytes of one AutoGPTQ ``QuantLinear``: qweight + qzeros + fp16 scales + int32 g_idx.

    Parameters
    ----------
    n_in : int [values]
        Input features (the row length the groups run along).
    n_out : int [values]
        Output features (rows).
    bits : int [bits/value]
        Bits of a packed weight and of a zero point.
    group : int [values]
        Input features per scale and zero point.

    Returns
    -------
    int [bytes]
        ``n_in · n_out · bits / 8 + G · n_out · bits / 8 + G · n_out · 2 + 4 · n_in``,
        ``G = ceil(n_in / group)``.
    """
    groups = -(-n_in // group)
    return n_in * n_out * bits // 8 + groups * n_out * bits // 8 + groups * n_out * 2 + 4 * n_in


def awq_bytes(n_in: int, n_out: int, bits: int = 4, group: int = 128) -> int:
    """Bytes of one AutoAWQ ``WQLinear_GEMM``: qweight + qzeros + fp16 scales.

    Parameters
    ----------
    n_in : int [values]
        Input features (the row length the groups run along).
    n_out : int [values]
        Output features (rows).
    bits : int [bits/value]
        Bits of a packed weight and of a zero point.
    group : int [values]
        Input features per scale and zero point.

    Returns
    -------
    int [bytes]
        ``n_in · n_out · bits / 8 + (n_in / group) · n_out · bits / 8 + (n_in / group) · n_out · 2``.
    """
    groups = n_in // group
    return n_in * n_out * bits // 8 + groups * n_out * bits // 8 + groups * n_out * 2


def grouped_int_bytes(n_in: int, n_out: int, bits: int, group: int, scale_bytes: int = 2) -> int:
    """Bytes of symmetric grouped ints: packed values + one scale per group (group 0 = per row).

    Parameters
    ----------
    n_in : int [values]
        Input features (the row length the groups run along).
    n_out : int [values]
        Output features (rows).
    bits : int [bits/value]
        Bits of a packed value.
    group : int [values]
        Values per scale (0: one scale per row).
    scale_bytes : int [bytes]
        Bytes of one scale.

    Returns
    -------
    int [bytes]
        ``n_out · ceil(n_in · bits / 8) + n_out · groups · scale_bytes``, ``groups = n_in / group`` (1 per row).
    """
    groups = n_in // group if group else 1
    return n_out * (-(-n_in * bits // 8)) + n_out * groups * scale_bytes


def _price_mlx(t: Tensor, bits: int, group: int, dtype_bytes: int) -> tuple[str, int]:
    quantizable = t.kind in _MATRIX_KINDS + ("embedding", "output") and t.shape[0] % group == 0
    if not quantizable:
        return f"float{8 * dtype_bytes}", t.n_values * dtype_bytes
    n_in, n_out, copies = _matrix(t)
    return f"mlx-affine{bits}/g{group}", copies * mlx_affine_bytes(n_in, n_out, bits, group, dtype_bytes)


def _price_gptq_awq(t: Tensor, family: str, bits: int, group: int, dtype_bytes: int) -> tuple[str, int]:
    if t.kind not in _MATRIX_KINDS or (family == "awq" and t.shape[0] % group):
        return f"float{8 * dtype_bytes}", t.n_values * dtype_bytes
    n_in, n_out, copies = _matrix(t)
    sized = gptq_bytes if family == "gptq" else awq_bytes
    return f"{family}{bits}/g{group}", copies * sized(n_in, n_out, bits, group)


def _price_8da4w(t: Tensor, group: int, dtype_bytes: int, embedding: tuple[int, int] | None) -> tuple[str, int]:
    if t.kind == "embedding" and embedding is not None:
        e_bits, e_group = embedding
        return f"int{e_bits}/g{e_group}", grouped_int_bytes(t.shape[0], t.shape[1], e_bits, e_group)
    if t.kind in _MATRIX_KINDS + ("output",) and t.shape[0] % group == 0:
        n_in, n_out, copies = _matrix(t)
        return f"8da4w/g{group}", copies * grouped_int_bytes(n_in, n_out, 4, group)
    return f"float{8 * dtype_bytes}", t.n_values * dtype_bytes


def price_group_format(shape: ModelShape, fmt: str, *, group: int = 0, dtype_bytes: int = 0,
                       embedding_quantize: tuple[int, int] | None = None) -> WeightPricing:
    """Price the model's weights in a group-quantized format (a key of GROUP_FORMATS).

    Parameters
    ----------
    shape : ModelShape
    fmt : ``mlx-4bit``, ``mlx-8bit``, ``gptq-4bit``, ``awq-4bit``, ``executorch-8da4w`` (group 128)
        or ``executorch-8da4w-g32``
    group : int [values] overrides the format's group size when > 0
    dtype_bytes : int [bytes] float type of unquantized tensors (and MLX scales/biases); 0 picks the
        format's default (2 for MLX, GPTQ, AWQ; 4 for ExecuTorch's fp32 default)
    embedding_quantize : (bits, group) for ExecuTorch's ``--embedding-quantize``; None keeps it float

    Returns
    -------
    WeightPricing; ``n_params`` counts the checkpoint's values (a head stored twice counts twice).
    """
    if fmt not in GROUP_FORMATS:
        raise ValueError(f"unknown weight format {fmt!r}; known: {', '.join(GROUP_FORMATS)}")
    family, bits, default_group = GROUP_FORMATS[fmt]
    group = group or default_group
    allowed = GROUP_SIZES.get(family)
    if allowed and group not in allowed:
        raise ValueError(f"{fmt} takes a group size of {', '.join(map(str, allowed))}, got {group}")
    tensors = tensor_inventory(shape, "hf")
    if family == "8da4w" and shape.tied_embeddings:
        embd = next(t for t in tensors if t.kind == "embedding")
        tensors = tensors + (Tensor("output.weight", embd.shape, "output"),)
    priced = []
    for t in tensors:
        if family == "mlx":
            dtype, size = _price_mlx(t, bits, group, dtype_bytes or 2)
        elif family in ("gptq", "awq"):
            dtype, size = _price_gptq_awq(t, family, bits, group, dtype_bytes or 2)
        else:
            dtype, size = _price_8da4w(t, group, dtype_bytes or 4, embedding_quantize)
        priced.append(PricedTensor(t.name, t.kind, dtype, t.shape, size))
    return WeightPricing(fmt, tuple(priced), sum(p.bytes for p in priced), n_params(tensors))
