"""Weights priced tensor by tensor: llama.cpp's per-tensor GGUF types, and the bytes that follow.

Notes
-----
``llama-quantize`` does not store every tensor in the file type's own type. This module
re-derives its choice (llama.cpp as vendored by llama-cpp-python 0.3.36, ``src/llama-quant.cpp``):

1. ``tensor_allows_quantization``: only tensors with ≥ 2 dims whose name ends in ``weight``,
   not a ``*_norm.weight``, not the MoE router ``ffn_gate_inp`` and not a state layer's conv kernel
   (``ssm_conv1d``, ``shortconv.conv.weight``); the rest keep the type the converter wrote (F32 for
   1-D tensors, norms, routers, conv kernels and Mamba's ``ssm_a`` / ``ssm_d``); nor Gemma 3n's ``altup*``,
   ``laurel*`` and ``per_layer_model_proj`` (they stay in the source float type). ``per_layer_token_embd`` is in
   the token-embedding category (``tensor_name_match_token_embd``), so with tied embeddings it is priced as the
   output.
2. ``llama_ftype_get_default_type``: the file type's base type (``q4_k_m`` → q4_K …). A plain
   float base (f32, f16, bf16) is used as is, with no mixture and no fallback.
3. ``llama_tensor_get_type_impl``: the mixture. ``output.weight`` — and ``token_embd.weight``
   when no ``output.weight`` exists (tied) — becomes q6_K (q8_0 stays q8_0; q8_0 when its rows
   are not whole blocks of the base type). ``attn_v`` (and ``attn_qkv``, ``attn_kv_b``, which
   share its branch, so phi3's fused QKV follows the attn_v rules) gets more bits in some layers,
   depending on the GQA ratio; ``ffn_down`` and ``attn_output`` likewise. ``use_more_bits(i, n)``
   is ``i < n/8 or i ≥ 7n/8 or (i − n/8) % 3 == 2`` (integer division).
4. ``tensor_type_fallback``: a row that is not a whole number of blocks falls back
   (q2_K, q3_K → q4_0; q4_K → q5_0; q5_K → q5_1; q6_K → q8_0; iq4_xs → iq4_nl), and to f16 if
   even that does not fit.

Layer counters: llama.cpp counts attn_v-like and ffn_down tensors in the order it visits
them, which is ``weights_map`` order (block number, then name; see
``tensors.tensor_inventory``): ``i_attention_wv`` over ``n_attention_wv`` (the number of attn_v-like
tensors), ``i_ffn_down`` over ``n_ffn_down = n_layer_all``; for MoE models llama.cpp parses the
block number from the name instead (``layer_info``). On a dense transformer each block holds one of
each, so both are the block number; on a hybrid they are not: LFM2 has 6 attn_v in 16 blocks
(``n_attention_wv`` 6), Qwen3.5's Gated DeltaNet ``attn_qkv`` counts as attn_v-like (24 in 24 blocks),
Nemotron-H has 25 ffn_down in 56 blocks (counted 0…24 against 56). ``hparams.n_gqa()`` is layer 0's:
0 when layer 0 is a state layer of a file whose ``head_count_kv`` is a per-layer array (lfm2,
granitehybrid, nemotron_h), so the GQA ≥ 4 rules do not fire there.
MXFP4 (ggml ``block_mxfp4``: one E8M0 scale byte + 16 bytes of 4-bit values per 32 values, 4.25 bits):

* ``mxfp4_moe`` is llama-quantize's ``MXFP4_MOE`` (ggml-org/llama.cpp 007dbbf3, ``src/llama-quant.cpp``
  ``llama_tensor_get_type_impl``): ``output.weight`` (and a tied ``token_embd``) Q8_0; every other
  quantizable tensor MXFP4 when it is a 3-D stack (``ne[2] > 1``: the experts), else Q8_0.
* ``mxfp4`` is the GGUF ``convert_hf_to_gguf.py`` writes from gpt-oss's own checkpoint
  (ggml-org/llama.cpp 2bbcf7fc, ``conversion/gpt_oss.py`` ``GptOssModel``: ``dequant_model`` is skipped
  and ``generate_extra_tensors`` / ``repack_mxfp4`` copy the checkpoint's MXFP4 expert blocks as
  ``GGML_TYPE_MXFP4``); every other tensor as the converter writes it (F32 or the source float type).
  Only gpt-oss has such a checkpoint, so other architectures are refused.

Hybrids measured: lfm2-1.2b, qwen3.5-2b, qwen3.5-35b-a3b, granite-4.0-h-1b, nemotron-nano-9b-v2, falcon-h1-0.5b;
and gemma-4-e2b (build 11434, 19 types each). Falcon-H1 is ``LLM_ARCH_FALCON_H1``, not ``LLM_ARCH_FALCON``: none of
the ``arch == LLM_ARCH_FALCON`` branches apply to it. Qwen3.5-MoE's 256 experts make ``layer_info`` parse the block
number for its ``ffn_down_exps`` and ``ffn_down_shexp``; its ``ffn_gate_inp_shexp`` [hidden] has one ggml dimension.
Not modelled: imatrix-dependent choices (no imatrix assumed), ``--pure``, per-tensor overrides,
the IQ1/IQ2/IQ3/TQ file types, Falcon's own rules.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from kvplan.engine.ggml_types import ggml_type, tensor_bytes
from kvplan.engine.tensors import ModelShape, Tensor, has_output_tensor, n_params, tensor_inventory

# llama_ftype_get_default_type, for the file types modelled here.
FILE_TYPES: dict[str, str] = {
    "f32": "f32", "f16": "f16", "bf16": "bf16", "q8_0": "q8_0", "q6_k": "q6_K",
    "q5_k_m": "q5_K", "q5_k_s": "q5_K", "q5_1": "q5_1", "q5_0": "q5_0",
    "q4_k_m": "q4_K", "q4_k_s": "q4_K", "q4_1": "q4_1", "q4_0": "q4_0",
    "q3_k_l": "q3_K", "q3_k_m": "q3_K", "q3_k_s": "q3_K", "q2_k": "q2_K",
    "iq4_xs": "iq4_xs", "iq4_nl": "iq4_nl", "mxfp4_moe": "mxfp4", "mxfp4": "mxfp4",
}

# tensor_type_fallback: the 32-value type a 256-value type falls back to.
_FALLBACK = {"q2_K": "q4_0", "q3_K": "q4_0", "q4_K": "q5_0", "q5_K": "q5_1", "q6_K": "q8_0", "iq4_xs": "iq4_nl"}

# tensor_get_category: the first name fragment found decides (output/token_embd by full name).
_CATEGORIES = (
    ("attn_qkv.weight", "attn_v"), ("attn_kv_b.weight", "attn_v"), ("attn_v.weight", "attn_v"),
    ("attn_k.weight", "attn_k"), ("attn_q.weight", "attn_q"), ("attn_output.weight", "attn_output"),
    ("ffn_up", "ffn_up"), ("ffn_gate", "ffn_gate"), ("ffn_down", "ffn_down"),
)


@dataclass(frozen=True)
class PricedTensor:
    """One tensor as stored: its storage type (or format label) and its bytes [bytes]."""

    name: str
    kind: str
    dtype: str
    shape: tuple[int, ...]
    bytes: int


@dataclass(frozen=True)
class WeightPricing:
    """A whole model's weights in one format: per-tensor bytes, total [bytes], values [count]."""

    format: str
    tensors: tuple[PricedTensor, ...]
    total_bytes: int
    n_params: int

    @property
    def bits_per_weight(self) -> float:
        """Average storage per stored value [bits]: ``8 · total_bytes / n_params``."""
        return 8 * self.total_bytes / self.n_params


def _category(name: str) -> str:
    if name == "output.weight":
        return "output"
    if name in ("token_embd.weight", "per_layer_token_embd.weight"):  # tensor_name_match_token_embd
        return "token_embd"
    return next((cat for fragment, cat in _CATEGORIES if fragment in name), "other")


def _allows_quantization(t: Tensor) -> bool:
    # tensor_allows_quantization (build 11434 src/llama-quant.cpp lines 287-325): ≥ 2 dims, a name ending in
    # "weight", no norm, no router, not Mamba's / LFM2's small conv kernels (ssm_conv1d, shortconv.conv), and
    # never Gemma 3n's small AltUp / LAuReL tensors nor per_layer_model_proj
    return (len(t.shape) >= 2 and t.name.endswith("weight") and "_norm.weight" not in t.name
            and "ffn_gate_inp.weight" not in t.name and "ssm_conv1d" not in t.name
            and "shortconv.conv.weight" not in t.name and "altup" not in t.name and "laurel" not in t.name
            and "per_layer_model_proj" not in t.name)


def _use_more_bits(i_layer: int, n_layers: int) -> bool:
    return i_layer < n_layers // 8 or i_layer >= 7 * n_layers // 8 or (i_layer - n_layers // 8) % 3 == 2


def _is_70b(s: ModelShape) -> bool:
    # LLM_TYPE_70B: llama with 80 layers and GQA (src/models/llama.cpp), qwen2 with 80 (qwen2.cpp).
    return s.layers == 80 and (s.arch == "qwen2" or (s.arch == "llama" and s.heads != s.kv_heads))


# Hybrids whose converter writes attention.head_count_kv as a per-layer array, 0 on the state (and MLP-only)
# layers (conversion/lfm2.py, granite.py GraniteHybridModel, nemotron.py); qwen35 writes one number.
_KV_HEADS_PER_LAYER = ("lfm2", "lfm2moe", "granitehybrid", "nemotron_h")


def _n_gqa(s: ModelShape) -> int:
    # hparams.n_gqa(il = 0) = n_head(0) / n_head_kv(0), 0 when layer 0 has no KV heads (src/llama-hparams.cpp
    # llama_hparams::n_gqa); the deepseek2 converter writes head_count_kv = 1 (MLA as MQA).
    if s.arch in _KV_HEADS_PER_LAYER and (0 in s.state_layers or 0 in s.feedforward_layers):
        return 0
    return s.heads // (1 if s.kv_lora_rank else s.kv_heads)


@lru_cache(maxsize=256)
def _counters(s: ModelShape) -> tuple[dict[str, int], int, dict[str, int]]:
    """llama-quantize's layer counters: ``i_attention_wv`` of each attn_v-like tensor, ``n_attention_wv``, and the
    layer index its ffn_down rule uses.

    ``init_quantize_state_counters`` counts every attn_v-like tensor (attn_v, attn_qkv, attn_kv_b) into
    ``n_attention_wv``; ``llama_tensor_get_type_impl`` numbers them in visiting order. ``ffn_down`` rules use a
    running count too (``i_ffn_down``) over ``n_ffn_down = n_layer_all``, except with more than one expert, where
    ``layer_info`` parses the block number from the name. On a dense model with one of each per block both are the
    block number; on a hybrid they are not (LFM2 has 6 attn_v in 16 blocks, Nemotron-H 25 ffn_down in 56).
    """
    attn_v, ffn_down = {}, {}
    for t in tensor_inventory(s, "gguf"):
        if not _allows_quantization(t):
            continue
        cat = _category(t.name)
        if cat == "attn_v":
            attn_v[t.name] = len(attn_v)
        elif cat == "ffn_down":
            ffn_down[t.name] = t.layer if s.n_expert > 1 else len(ffn_down)
    return attn_v, len(attn_v), ffn_down


def _attn_v_type(ftype: str, new: str, i: int, n: int, s: ModelShape) -> str:
    gqa = _n_gqa(s)
    if ftype == "q2_k":
        new = "q4_K" if gqa >= 4 else "q3_K"
    elif ftype == "q3_k_m":
        new = "q5_K" if i < 2 else "q4_K"
    elif ftype == "q3_k_l":
        new = "q5_K"
    elif ftype in ("iq4_nl", "iq4_xs") and gqa >= 4:
        new = "q5_K"
    elif ftype in ("q4_k_m", "q5_k_m") and _use_more_bits(i, n):
        new = "q6_K"
    elif ftype == "q4_k_s" and i < 4:
        new = "q5_K"
    if _is_70b(s) and new in ("q3_K", "q4_K"):
        new = "q5_K"
    return "q8_0" if s.n_expert == 8 else new


def _ffn_down_type(ftype: str, new: str, i: int, n: int) -> str:
    if ftype == "q2_k":
        return "q3_K"
    if ftype == "q3_k_m":
        return "q5_K" if i < n // 16 else "q4_K"  # non-Falcon: Q4_K whether or not use_more_bits
    if ftype == "q3_k_l":
        return "q5_K"
    if ftype == "q4_k_m":
        return "q6_K" if _use_more_bits(i, n) else new
    if ftype in ("iq4_nl", "iq4_xs") and i < n // 8:
        return "q5_K"
    if ftype == "q5_k_m" and _use_more_bits(i, n):
        return "q6_K"
    if ftype == "q4_k_s" and i < n // 8:
        return "q5_K"
    return new


def _attn_output_type(ftype: str, new: str, s: ModelShape) -> str:
    if s.n_expert == 8:
        mixed = ("q2_k", "q3_k_s", "q3_k_m", "iq4_nl", "q4_k_s", "q4_k_m", "iq4_xs")
        return "q5_K" if ftype in mixed else new
    return {"q2_k": "q3_K", "q3_k_m": "q4_K", "q3_k_l": "q5_K"}.get(ftype, new)


def _mixture_type(t: Tensor, ftype: str, new: str, s: ModelShape) -> str:
    """llama_tensor_get_type_impl for the modelled file types (no imatrix)."""
    cat = _category(t.name)
    if ftype == "mxfp4_moe":  # MoE tensors -> MXFP4, other tensors (the output too) -> Q8_0
        is_output = cat == "output" or (cat == "token_embd" and not has_output_tensor(s))
        return "mxfp4" if not is_output and len(t.shape) > 2 and t.shape[2] > 1 else "q8_0"
    if cat == "output" or (cat == "token_embd" and not has_output_tensor(s)):
        if t.shape[0] % ggml_type(new).block_values:
            return "q8_0"
        return new if new == "q8_0" else "q6_K"
    if cat == "attn_v":
        index, count, _ = _counters(s)
        return _attn_v_type(ftype, new, index.get(t.name, t.layer), count or s.layers + s.mtp_layers, s)
    if cat == "attn_k":
        return "q8_0" if s.n_expert == 8 else new
    if cat == "ffn_down":
        # n_ffn_down = hparams.n_layer_all: the MTP blocks count (src/llama-quant.cpp line 940)
        return _ffn_down_type(ftype, new, _counters(s)[2].get(t.name, t.layer), s.layers + s.mtp_layers)
    if cat == "attn_output":
        return _attn_output_type(ftype, new, s)
    return new  # token_embd (untied), attn_q, ffn_gate, ffn_up, other: the base type


def _fallback(new: str, n_cols: int) -> str:
    """tensor_type_fallback: a type whose blocks tile the row."""
    block = ggml_type(new).block_values
    if n_cols % block == 0:
        return new
    if new not in _FALLBACK and block > 32:
        raise ValueError(f"no fallback type for {new}")
    chosen = _FALLBACK.get(new, new)
    return chosen if n_cols % ggml_type(chosen).block_values == 0 else "f16"


def gguf_type_for(tensor: Tensor, ftype: str, shape: ModelShape, source_type: str = "f16") -> str:
    """The ggml type llama-quantize gives ``tensor`` for file type ``ftype``.

    Parameters
    ----------
    tensor : Tensor from ``tensor_inventory(shape)``
    ftype : a key of FILE_TYPES (``"q4_k_m"``, ``"q8_0"``, ``"f16"`` …), case-insensitive
    shape : ModelShape the tensor belongs to
    source_type : the float type of the converted GGUF's 2-D weights (kept by tensors that are
        never quantized and are not F32 already)

    Returns
    -------
    str, a ggml type name (``"q6_K"``, ``"f32"`` …)
    """
    key = ftype.lower()
    if key not in FILE_TYPES:
        raise ValueError(f"unknown GGUF file type {ftype!r}; known: {', '.join(FILE_TYPES)}")
    if key == "mxfp4":  # the converter's GGUF of gpt-oss: its expert blocks copied as they are
        if shape.arch != "gpt-oss":
            raise ValueError(f"the mxfp4 GGUF is the one convert_hf_to_gguf.py writes from gpt-oss's MXFP4 "
                             f"checkpoint; architecture {shape.architecture!r} has none (mxfp4_moe quantizes any "
                             "MoE's experts)")
        if tensor.kind == "experts":
            return "mxfp4"
        return "f32" if tensor.float32_in_gguf else source_type
    if not _allows_quantization(tensor):
        return "f32" if tensor.float32_in_gguf else source_type
    base = FILE_TYPES[key]
    if not ggml_type(base).is_quantized:
        return base
    return _fallback(_mixture_type(tensor, key, base, shape), tensor.shape[0])


def price_gguf(shape: ModelShape, ftype: str, source_type: str = "f16") -> WeightPricing:
    """Every tensor of the model's GGUF in file type ``ftype``: type and bytes, and the total.

    Parameters
    ----------
    shape : ModelShape
        The model's tensor shapes.
    ftype : str
        A llama.cpp file type (``Q4_K_M``, ``Q8_0`` …, :data:`FILE_TYPES`).
    source_type : str
        The type of the tensors quantized from (``f16``, ``bf16``, ``f32``).

    Returns
    -------
    WeightPricing
        ``tensors`` in llama-quantize's order, ``total_bytes`` [bytes] (tensor data only: no GGUF header,
        metadata or alignment padding) and ``bits_per_weight``.
    """
    tensors = tensor_inventory(shape, "gguf")
    priced = []
    for t in tensors:
        dtype = gguf_type_for(t, ftype, shape, source_type)
        priced.append(PricedTensor(t.name, t.kind, dtype, t.shape, tensor_bytes(dtype, t.shape)))
    return WeightPricing(ftype.lower(), tuple(priced), sum(p.bytes for p in priced), n_params(tensors))
