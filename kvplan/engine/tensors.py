"""A model's weight tensors, by name and shape, as llama.cpp's GGUF converter writes them.

Notes
-----
Shapes are in ggml order: ``ne0`` (the row length, the input dimension of a matrix)
first, then rows, then experts. Names follow ``src/llama-arch.cpp`` (LLM_TENSOR_NAMES);
which tensors exist and their shapes follow each architecture's ``load_tensors`` in
``src/models/<arch>.cpp`` and the converter ``conversion/*.py`` (llama.cpp as vendored
by llama-cpp-python 0.3.36):

* llama (also Mistral, TinyLlama, SmolLM2): ``rope_freqs`` [head_dim/2] when the
  config's rope scaling is ``llama3`` (conversion/llama.py ``generate_extra_tensors``);
* mixtral (build 11434: conversion/__init__.py maps MixtralForCausalLM to arch ``llama``; conversion/llama.py
  ``LlamaModel.modify_tensors`` stacks each layer's ``block_sparse_moe.experts.N.w1/w2/w3`` into 3-D
  ``ffn_{gate,down,up}_exps``; ``src/models/llama.cpp`` ``load_arch_tensors``, ``n_expert > 0`` branch): llama's
  attention, ``ffn_norm``, the router ``ffn_gate_inp`` [hidden, n_expert] and 3-D experts as wide as the config's
  ``intermediate_size`` (the GGUF's feed_forward_length) on every layer, no shared expert;
* qwen2: q/k/v biases; qwen3: per-head q/k RMSNorms;
* gemma2: post-attention and post-FFN norms, never an ``output`` tensor (gemma.py drops
  ``lm_head``); gemma3 adds q/k norms and trims ``token_embd`` to the tokenizer's length;
* phi3: fused ``attn_qkv`` [hidden, q+k+v] and fused ``ffn_up`` [hidden, 2·ff];
  ``rope_factors_long/short`` [rope_dim/2] for LongRoPE (conversion/phi.py);
* deepseek2: MLA (``attn_kv_a_mqa``, ``attn_kv_a_norm``, ``kv_b`` split into 3-D
  ``attn_k_b`` / ``attn_v_b`` by conversion/deepseek.py), a dense FFN in the first
  ``leading_dense_layers`` and routed + shared experts after (3-D ``*_exps``).
* llama4 (build 11434 ``src/models/llama4.cpp`` ``load_arch_tensors``; ``conversion/llama.py`` ``Llama4Model``):
  llama's attention (no q/k norm weights: Llama4TextL2Norm has none), ``rope_freqs`` for the llama3 rope scaling,
  and on each MoE layer a router, 3-D experts and the shared expert ``ffn_*_shexp`` as wide as one expert
  (``n_ff_shexp = n_ff_exp``);
* gpt-oss (``LLM_ARCH_OPENAI_MOE``; ggml-org/llama.cpp 00342301d, ``src/llama-model.cpp``
  ``llama_model::load_tensors``): q/k/v/o biases, ``attn_sinks`` [n_head] (one learned logit per
  head: a weight, nothing cached), ``post_attention_norm`` as the FFN's input norm (no
  ``ffn_norm``), a router with a bias, and expert stacks with biases (``ffn_*_exps.bias``
  [ff or hidden, n_expert]) on every layer.
* gemma3n (build 11434, ``src/models/gemma3n.cpp`` ``load_arch_tensors``; ``conversion/gemma.py``
  ``Gemma3NModel``): the gemma3 block (q/k norms, post norms) with one MLP width per layer, plus per-layer
  embeddings — ``per_layer_token_embd`` [n_layer · n_embd_altup, n_vocab], ``per_layer_model_proj``
  [hidden, n_layer · n_embd_altup], ``per_layer_proj_norm`` [n_embd_altup] and per block ``inp_gate``,
  ``proj``, ``post_norm`` — AltUp (``altup_proj`` / ``altup_unembd_proj`` [hidden, hidden, n_altup − 1], per
  block ``altup_correct_coef`` [n_altup, n_altup], ``altup_correct_scale``, ``altup_predict_coef``
  [n_altup, n_altup²], ``altup_router`` [hidden, n_altup], ``altup_router_norm``) and LAuReL (``laurel_l``
  [hidden, rank], ``laurel_r`` [rank, hidden], ``laurel_post_norm``). The converter pads ``token_embd`` and
  ``per_layer_token_embd`` to the config's ``vocab_size`` rows (the checkpoint's per-layer table has
  ``vocab_size_per_layer_input``). ``n_altup`` 4 and ``laurel_rank`` 64 are llama.cpp's fixed values
  (``src/llama-hparams.h``; the converter asserts ``altup_num_inputs == 4``).

* hybrids with state layers (llama.cpp build 11434: ``src/models/lfm2.cpp``, ``qwen35.cpp``,
  ``granite-hybrid.cpp``, ``nemotron-h.cpp`` ``load_arch_tensors``; the converter ``conversion/lfm2.py``,
  ``qwen.py``, ``mamba.py`` ``Mamba2Model.modify_tensors``, ``granite.py``, ``nemotron.py``). The state
  layers' tensors, ggml order:

  - LFM2 short convolution (``lfm2``): ``shortconv.in_proj`` [h, 3h], ``shortconv.conv`` [L_cache, h] (the
    checkpoint's [h, 1, L] squeezed), ``shortconv.out_proj`` [h, h]; its final norm is ``token_embd_norm``
    (``LLM_TENSOR_OUTPUT_NORM_LFM2``); attention layers carry q/k norms. LFM2-MoE (``lfm2moe``, build 11434
    ``src/models/lfm2moe.cpp``; ``conversion/lfm2.py`` ``LFM2MoeModel``, which stacks the per-expert w1/w3/w2
    into ``ffn_{gate,up,down}_exps``): the same mixers, a dense MLP on the first ``leading_dense_layers``
    (``num_dense_layers``) and on every later layer the router, the expert stacks and the expert bias
    ``exp_probs_b.bias`` (:func:`_lfm2_moe`).
  - Mamba2 (``granitehybrid``, ``nemotron_h``), d_inner = heads · head_dim, channels c = d_inner + 2·g·d_state:
    ``ssm_in`` [h, 2·d_inner + 2·g·d_state + heads], ``ssm_conv1d.weight`` [kernel, c] and ``.bias`` [c],
    ``ssm_dt.bias`` [heads], ``ssm_a`` and ``ssm_d`` [1, heads] (no ``.weight`` suffix; A = −exp(A_log)),
    ``ssm_norm.weight`` [d_inner/g, g], ``ssm_out`` [d_inner, h]. Granite's dense shared MLP is split into
    ``ffn_gate``/``ffn_up``; with experts (Granite-4.0-H-Tiny) a router ``ffn_gate_inp`` [h, n_expert], 3-D
    ``ffn_{gate,up,down}_exps`` and the shared MLP as ``ffn_{gate,up,down}_shexp``
    (conversion/granite.py ``GraniteMoeModel.modify_tensors`` splits ``input_linear`` into gate and up); Nemotron-H's blocks hold one mixer each (Mamba2, attention, or an MLP of
    ``ffn_up`` + ``ffn_down``) and only ``attn_norm``.
  - Gated DeltaNet (``qwen35``), key dim k = key_heads · key_head_dim, value dim v = value_heads ·
    value_head_dim: ``attn_qkv`` [h, 2k + v], ``attn_gate`` [h, v], ``ssm_conv1d.weight`` [kernel, 2k + v],
    ``ssm_dt.bias`` and ``ssm_a`` [value_heads], ``ssm_beta`` / ``ssm_alpha`` [h, value_heads],
    ``ssm_norm`` [value_head_dim], ``ssm_out`` [v, h]; its attention layers' ``attn_q`` holds the query and its
    output gate [h, 2 · heads · head_dim], and ``post_attention_norm`` is the FFN's input norm. Build 11434's
    converter also writes the multi-token-prediction block as an extra block unless ``--no-mtp``: in this
    inventory only when the shape's ``mtp_layers`` says so (below).

* the multi-token-prediction (MTP) block of Qwen3.5 (build 11434 ``conversion/qwen.py`` ``_QwenMtpMixin``:
  ``mtp.layers.0.*`` renamed to block ``layers`` (the first after the trunk), ``mtp.fc`` → ``nextn.eh_proj``
  [2h, h], ``mtp.pre_fc_norm_embedding`` / ``_hidden`` → ``nextn.enorm`` / ``nextn.hnorm``, ``mtp.norm`` →
  ``nextn.shared_head_norm``; ``src/models/qwen35.cpp`` ``load_block_mtp``): a gated full-attention block with
  the trunk's MLP (no ``nextn.embed_tokens`` / ``shared_head_head``: the trunk's ``token_embd`` and output
  serve it). llama-quantize types it by the trunk's rules (its attn_v and ffn_down count in
  ``n_attention_wv`` and ``n_layer_all``; measured, tests/data/llamacpp/quant/qwen3.5-2b-mtp.json.gz).

  - Falcon-H1 (``falcon-h1``, ``src/models/falcon-h1.cpp``; ``conversion/falcon_h1.py`` over Mamba2Model): every
    block holds the Mamba2 mixer (no ``ssm_norm``: mamba_rms_norm false), the attention and the MLP; its FFN norm
    is ``blk.N.ffn_norm`` (no suffix).
  - Qwen3.5 MoE (``qwen35moe``, ``src/models/qwen35moe.cpp``; ``conversion/qwen.py`` Qwen3_5MoeTextModel, whose
    Qwen2MoeModel.modify_tensors splits the fused ``gate_up_proj`` into ``ffn_gate_exps`` / ``ffn_up_exps``): qwen35's
    blocks with the MoE block (:func:`_moe`) in place of the MLP. The MTP block the converter writes unless
    ``--no-mtp`` is one more block, index ``layers`` (in this inventory when ``mtp_layers`` says so), built as an
    attention block with :func:`_moe` plus the nextn tensors (``nextn.eh_proj``, ``nextn.enorm``,
    ``nextn.hnorm``, ``nextn.shared_head_norm``); llama-quantize counts its ``attn_v`` and ``ffn_down`` too
    (measured, tests/data/llamacpp/mtp/quant_qwen3.5-35b-a3b-mtp.json.gz).

  The converter writes the conv kernels (``SSM_CONV1D``, ``SHORTCONV_CONV``) and every tensor whose name does
  not end in ``.weight`` as F32 (conversion/base.py ``prepare_tensors``), like 1-D tensors and norms.

* gemma4 (build 11434, ``src/models/gemma4.cpp`` ``load_arch_tensors``; ``conversion/gemma.py`` ``Gemma4Model``):
  :func:`_gemma4_block` — ``global_head_dim`` on the full-attention layers, per-layer MLP widths, per-layer
  embeddings, ``layer_output_scale`` and one ``rope_freqs``; the checkpoint's K/V weights on the shared-KV layers.

Tied embeddings: no ``output.weight`` is written (the checkpoint has no ``lm_head``).
1-D tensors, norms, biases (names not ending in ``.weight``, gpt-oss's 2-D expert biases too) and
the MoE router (``ffn_gate_inp``) are written as F32 by the converter (conversion/base.py
``prepare_tensors``); everything else in the model's float type. ``layout="hf"`` gives the
checkpoint's own tensors instead (no rope tensors, MLA ``attn_kv_b`` unsplit, the config's full
vocabulary) for formats quantized from it.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvplan.engine.arch_names import GGUF_ARCH  # re-exported: the one table of names

#: Gemma 3n's AltUp streams and LAuReL rank: llama.cpp's fixed values (src/llama-hparams.h: n_altup 4,
#: laurel_rank 64), those of both published configs (altup_num_inputs 4, laurel_rank 64)
GEMMA3N_ALTUP_INPUTS = 4
GEMMA3N_LAUREL_RANK = 64

# llama.cpp architecture → the state mixer its state layers hold.
STATE_MIXER = {"lfm2": "short_conv", "lfm2moe": "short_conv", "qwen35": "gated_deltanet", "qwen35moe": "gated_deltanet",
               "granitehybrid": "mamba2", "nemotron_h": "mamba2", "falcon-h1": "mamba2"}


@dataclass(frozen=True)
class ModelShape:
    """The numbers that fix a model's tensors. Counts [count], dims [values]."""

    architecture: str  # HF model_type or llama.cpp arch name (see GGUF_ARCH)
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int  # query/key head width (MLA: nope + rope)
    intermediate: int  # dense FFN width
    vocab: int
    tied_embeddings: bool
    v_head_dim: int = 0  # 0: same as head_dim
    gguf_vocab: int = 0  # rows of token_embd in the GGUF when the converter trims it; 0: vocab
    rope_scaling: str = ""  # config rope_scaling type: "llama3", "longrope", "yarn", "" (none)
    rope_dim: int = 0  # rotated dims per head (MLA: qk_rope_head_dim); 0: head_dim
    n_expert: int = 0  # routed experts (0: dense model)
    n_expert_used: int = 0
    expert_intermediate: int = 0
    n_shared_experts: int = 0
    leading_dense_layers: int = 0  # first layers with a dense FFN (first_k_dense_replace)
    q_lora_rank: int = 0  # MLA query compression (0: plain attn_q)
    kv_lora_rank: int = 0  # MLA latent width (0: not MLA)
    qkv_bias: bool | None = None  # None: the architecture's default
    qk_norm: bool | None = None
    post_norms: bool | None = None
    intermediate_per_layer: tuple[int, ...] = ()  # one MLP width per layer (Gemma 3n); (): intermediate everywhere
    per_layer_input: int = 0  # per-layer embedding width (hidden_size_per_layer_input); 0: none
    per_layer_vocab: int = 0  # rows of the checkpoint's per-layer table (vocab_size_per_layer_input)
    global_head_dim: int = 0  # Gemma 4: head width of the full-attention layers (K, V and query); 0: head_dim
    full_attention_layers: tuple[int, ...] = ()  # Gemma 4: the layers without a window (they take global_head_dim)
    # hybrids (state layers): which blocks hold a state mixer instead of attention, and its widths
    state_mixer: str = ""  # "short_conv", "mamba2", "gated_deltanet"; "" for no state layers
    state_layers: tuple[int, ...] = ()
    feedforward_layers: tuple[int, ...] = ()  # nemotron_h: blocks with only an MLP (no mixer)
    conv_kernel: int = 0  # conv_kernel_tokens [tokens]
    ssm_heads: int = 0  # Mamba2: heads, head width, groups, state size
    ssm_head_dim: int = 0
    ssm_groups: int = 0
    ssm_state_size: int = 0
    linear_key_heads: int = 0  # Gated DeltaNet: key / value heads and head widths
    linear_key_head_dim: int = 0
    linear_value_heads: int = 0
    linear_value_head_dim: int = 0
    mtp_layers: int = 0  # multi-token-prediction blocks after the trunk's layers (the GGUF's nextn_predict_layers)

    @property
    def arch(self) -> str:
        """llama.cpp's architecture name."""
        if self.architecture not in GGUF_ARCH:
            raise ValueError(f"no tensor layout for architecture {self.architecture!r}; known: {', '.join(GGUF_ARCH)}")
        return GGUF_ARCH[self.architecture]

    def flag(self, name: str) -> bool:
        """``qkv_bias`` / ``qk_norm`` / ``post_norms``, falling back on the architecture's default.

        Parameters
        ----------
        name : str
            The flag's field name.

        Returns
        -------
        bool
            The profile's value, else the architecture's default.
        """
        value = getattr(self, name)
        return _ARCH_FLAGS[name](self.arch) if value is None else value


_ARCH_FLAGS = {
    "qkv_bias": lambda a: a == "qwen2",
    "qk_norm": lambda a: a in ("qwen3", "qwen3moe", "gemma3", "gemma3n"),
    "post_norms": lambda a: a in ("gemma2", "gemma3", "gemma3n"),
}


@dataclass(frozen=True)
class Tensor:
    """One stored tensor: GGUF name, ggml-order shape, role and layer (-1 outside blocks)."""

    name: str
    shape: tuple[int, ...]
    kind: str  # embedding, output, linear, experts, norm, bias, router, rope, sinks, conv, ssm
    layer: int = -1

    @property
    def n_values(self) -> int:
        """Number of values [count]."""
        n = 1
        for dim in self.shape:
            n *= dim
        return n

    @property
    def float32_in_gguf(self) -> bool:
        """True for what the converter always writes as F32: 1-D tensors, norms, routers."""
        return (len(self.shape) < 2 or self.kind in ("norm", "router", "bias", "conv", "ssm")
                or self.name.endswith("_norm.weight") or not self.name.endswith(".weight"))


def _blk(i: int, short: str, shape: tuple[int, ...], kind: str) -> Tensor:
    return Tensor(f"blk.{i}.{short}", shape, kind, i)


def _attention(s: ModelShape, i: int, layout: str) -> list[Tensor]:
    h, d_k = s.hidden, s.head_dim
    d_v = s.v_head_dim or d_k
    q, k, v = s.heads * d_k, s.kv_heads * d_k, s.kv_heads * d_v
    if s.kv_lora_rank:  # MLA (deepseek2)
        rope = s.rope_dim or d_k
        out = [_blk(i, "attn_kv_a_mqa.weight", (h, s.kv_lora_rank + rope), "linear"),
               _blk(i, "attn_kv_a_norm.weight", (s.kv_lora_rank,), "norm")]
        if s.q_lora_rank:
            out += [_blk(i, "attn_q_a.weight", (h, s.q_lora_rank), "linear"),
                    _blk(i, "attn_q_a_norm.weight", (s.q_lora_rank,), "norm"),
                    _blk(i, "attn_q_b.weight", (s.q_lora_rank, q), "linear")]
        else:
            out.append(_blk(i, "attn_q.weight", (h, q), "linear"))
        nope = d_k - rope
        if layout == "gguf":
            out += [_blk(i, "attn_k_b.weight", (nope, s.kv_lora_rank, s.heads), "linear"),
                    _blk(i, "attn_v_b.weight", (s.kv_lora_rank, d_v, s.heads), "linear")]
        else:
            out.append(_blk(i, "attn_kv_b.weight", (s.kv_lora_rank, s.heads * (nope + d_v)), "linear"))
        return out + [_blk(i, "attn_output.weight", (s.heads * d_v, h), "linear")]
    if s.arch == "gpt-oss":
        return [_blk(i, "attn_q.weight", (h, q), "linear"), _blk(i, "attn_k.weight", (h, k), "linear"),
                _blk(i, "attn_v.weight", (h, v), "linear"), _blk(i, "attn_output.weight", (s.heads * d_v, h), "linear"),
                _blk(i, "attn_q.bias", (q,), "bias"), _blk(i, "attn_k.bias", (k,), "bias"),
                _blk(i, "attn_v.bias", (v,), "bias"), _blk(i, "attn_output.bias", (h,), "bias"),
                _blk(i, "attn_sinks.weight", (s.heads,), "sinks"),
                _blk(i, "post_attention_norm.weight", (h,), "norm")]
    if s.arch == "phi3":
        out = [_blk(i, "attn_qkv.weight", (h, q + k + v), "linear")]
    else:
        out = [_blk(i, "attn_q.weight", (h, q), "linear"), _blk(i, "attn_k.weight", (h, k), "linear"),
               _blk(i, "attn_v.weight", (h, v), "linear")]
    if s.flag("qkv_bias"):
        out += [_blk(i, "attn_q.bias", (q,), "bias"), _blk(i, "attn_k.bias", (k,), "bias"),
                _blk(i, "attn_v.bias", (v,), "bias")]
    if s.flag("qk_norm"):
        out += [_blk(i, "attn_q_norm.weight", (d_k,), "norm"), _blk(i, "attn_k_norm.weight", (d_k,), "norm")]
    if s.flag("post_norms"):
        out.append(_blk(i, "post_attention_norm.weight", (s.hidden,), "norm"))
    return out + [_blk(i, "attn_output.weight", (s.heads * d_v, h), "linear")]


def _ffn(s: ModelShape, i: int) -> list[Tensor]:
    h = s.hidden
    if s.arch == "gpt-oss":  # no ffn_norm (post_attention_norm is the FFN's input norm); biases everywhere
        e, ff = s.n_expert, s.expert_intermediate
        return [_blk(i, "ffn_gate_inp.weight", (h, e), "router"), _blk(i, "ffn_gate_inp.bias", (e,), "bias"),
                _blk(i, "ffn_gate_exps.weight", (h, ff, e), "experts"),
                _blk(i, "ffn_down_exps.weight", (ff, h, e), "experts"),
                _blk(i, "ffn_up_exps.weight", (h, ff, e), "experts"),
                _blk(i, "ffn_gate_exps.bias", (ff, e), "bias"), _blk(i, "ffn_down_exps.bias", (h, e), "bias"),
                _blk(i, "ffn_up_exps.bias", (ff, e), "bias")]
    out = [_blk(i, "ffn_norm.weight", (h,), "norm")]
    if s.flag("post_norms"):
        out.append(_blk(i, "post_ffw_norm.weight", (h,), "norm"))
    if s.n_expert and i >= s.leading_dense_layers:
        e, ff = s.n_expert, s.expert_intermediate
        out += [_blk(i, "ffn_gate_inp.weight", (h, e), "router"),
                _blk(i, "ffn_gate_exps.weight", (h, ff, e), "experts"),
                _blk(i, "ffn_up_exps.weight", (h, ff, e), "experts"),
                _blk(i, "ffn_down_exps.weight", (ff, h, e), "experts")]
        if s.n_shared_experts:
            sh = ff * s.n_shared_experts
            out += [_blk(i, "ffn_gate_shexp.weight", (h, sh), "linear"),
                    _blk(i, "ffn_up_shexp.weight", (h, sh), "linear"),
                    _blk(i, "ffn_down_shexp.weight", (sh, h), "linear")]
        return out
    ff = s.intermediate_per_layer[i] if s.intermediate_per_layer else s.intermediate
    if s.arch == "phi3":
        return out + [_blk(i, "ffn_up.weight", (h, 2 * ff), "linear"), _blk(i, "ffn_down.weight", (ff, h), "linear")]
    return out + [_blk(i, "ffn_gate.weight", (h, ff), "linear"), _blk(i, "ffn_up.weight", (h, ff), "linear"),
                  _blk(i, "ffn_down.weight", (ff, h), "linear")]


def _global_tensors(s: ModelShape, layout: str) -> list[Tensor]:
    vocab = (s.gguf_vocab or s.vocab) if layout == "gguf" else s.vocab
    # LFM2's final norm is named token_embd_norm (src/llama-arch.cpp LLM_TENSOR_OUTPUT_NORM_LFM2)
    norm = "token_embd_norm.weight" if s.arch in ("lfm2", "lfm2moe") else "output_norm.weight"
    out = [Tensor("token_embd.weight", (s.hidden, vocab), "embedding"), Tensor(norm, (s.hidden,), "norm")]
    if has_output_tensor(s):
        out.append(Tensor("output.weight", (s.hidden, vocab), "output"))
    if layout == "gguf":
        half_rope = (s.rope_dim or s.head_dim) // 2
        if s.arch in ("llama", "llama4") and s.rope_scaling == "llama3":
            out.append(Tensor("rope_freqs.weight", (half_rope,), "rope"))
        if s.arch == "phi3" and s.rope_scaling in ("longrope", "su"):
            out += [Tensor("rope_factors_long.weight", (half_rope,), "rope"),
                    Tensor("rope_factors_short.weight", (half_rope,), "rope")]
    if s.arch == "gemma3n":
        out += _gemma3n_global(s, vocab if layout == "gguf" else (s.per_layer_vocab or s.vocab))
    if s.arch == "gemma4":
        out += _gemma4_global(s, layout)
    return out


def _gemma4_global(s: ModelShape, layout: str) -> list[Tensor]:
    # src/models/gemma4.cpp load_arch_tensors: per-layer embeddings when embedding_length_per_layer_input > 0;
    # conversion/gemma.py Gemma4Model.generate_extra_tensors writes one rope_freqs [global_head_dim / 2] (the
    # proportional RoPE of the full-attention layers), not a checkpoint tensor
    out = []
    if s.per_layer_input:
        width = s.layers * s.per_layer_input
        rows = (s.gguf_vocab or s.vocab) if layout == "gguf" else (s.per_layer_vocab or s.vocab)
        out += [Tensor("per_layer_token_embd.weight", (width, rows), "embedding"),
                Tensor("per_layer_model_proj.weight", (s.hidden, width), "linear"),
                Tensor("per_layer_proj_norm.weight", (s.per_layer_input,), "norm")]
    if layout == "gguf":
        out.append(Tensor("rope_freqs.weight", ((s.global_head_dim or s.head_dim) // 2,), "rope"))
    return out


def _gemma4_block(s: ModelShape, i: int) -> list[Tensor]:
    """One Gemma 4 block (build 11434 src/models/gemma4.cpp load_arch_tensors, dense: no MoE router).

    The shared-KV layers (the last ``shared_kv_layers``) compute no K/V, and the loader marks their ``attn_k``,
    ``attn_k_norm`` (and every ``attn_v``) TENSOR_NOT_REQUIRED — but the converter writes whatever the checkpoint
    holds, and the published checkpoints hold k_proj / v_proj / k_norm on every layer: llama.cpp's converter log
    of a Gemma 4 E4B (``blk.34.attn_k.weight {2560, 512}`` on a layer ≥ 42 − 18) and Ollama's ``gemma4:e2b``
    GGUF (``blk.15``–``blk.34`` ``attn_k`` / ``attn_v`` / ``attn_k_norm``) both carry them. So every layer here
    has them (transformers builds none on those layers, so its parameter count — the profile's ``params`` — is
    smaller by Σ over the shared layers of 2·hidden·kv_heads·d + d)."""
    h, nh, nkv = s.hidden, s.heads, s.kv_heads
    d = (s.global_head_dim or s.head_dim) if i in s.full_attention_layers else s.head_dim
    ff = s.intermediate_per_layer[i] if s.intermediate_per_layer else s.intermediate
    out = [_blk(i, "attn_norm.weight", (h,), "norm"), _blk(i, "attn_q.weight", (h, nh * d), "linear"),
           _blk(i, "attn_k.weight", (h, nkv * d), "linear"), _blk(i, "attn_v.weight", (h, nkv * d), "linear"),
           _blk(i, "attn_q_norm.weight", (d,), "norm"), _blk(i, "attn_k_norm.weight", (d,), "norm"),
           _blk(i, "attn_output.weight", (nh * d, h), "linear"), _blk(i, "post_attention_norm.weight", (h,), "norm"),
           _blk(i, "layer_output_scale.weight", (1,), "norm"),  # the checkpoint's layer_scalar
           _blk(i, "ffn_norm.weight", (h,), "norm"), _blk(i, "ffn_gate.weight", (h, ff), "linear"),
           _blk(i, "ffn_up.weight", (h, ff), "linear"), _blk(i, "ffn_down.weight", (ff, h), "linear"),
           _blk(i, "post_ffw_norm.weight", (h,), "norm")]
    if s.per_layer_input:
        p = s.per_layer_input
        out += [_blk(i, "inp_gate.weight", (h, p), "linear"), _blk(i, "proj.weight", (p, h), "linear"),
                _blk(i, "post_norm.weight", (h,), "norm")]
    return out


def _gemma3n_global(s: ModelShape, per_layer_rows: int) -> list[Tensor]:
    h, a, width = s.hidden, GEMMA3N_ALTUP_INPUTS, s.layers * s.per_layer_input
    return [Tensor("per_layer_token_embd.weight", (width, per_layer_rows), "embedding"),
            Tensor("per_layer_model_proj.weight", (h, width), "linear"),
            Tensor("per_layer_proj_norm.weight", (s.per_layer_input,), "norm"),
            Tensor("altup_proj.weight", (h, h, a - 1), "linear"),
            Tensor("altup_unembd_proj.weight", (h, h, a - 1), "linear")]


def _gemma3n_block(s: ModelShape, i: int) -> list[Tensor]:
    h, a, p, r = s.hidden, GEMMA3N_ALTUP_INPUTS, s.per_layer_input, GEMMA3N_LAUREL_RANK
    return [_blk(i, "inp_gate.weight", (h, p), "linear"), _blk(i, "proj.weight", (p, h), "linear"),
            _blk(i, "post_norm.weight", (h,), "norm"),
            _blk(i, "altup_correct_coef.weight", (a, a), "linear"), _blk(i, "altup_correct_scale.weight", (h,), "norm"),
            _blk(i, "altup_predict_coef.weight", (a, a * a), "linear"), _blk(i, "altup_router.weight", (h, a), "linear"),
            _blk(i, "altup_router_norm.weight", (h,), "norm"),
            _blk(i, "laurel_l.weight", (h, r), "linear"), _blk(i, "laurel_r.weight", (r, h), "linear"),
            _blk(i, "laurel_post_norm.weight", (h,), "norm")]
def _mamba2_mixer(s: ModelShape, i: int, gated_norm: bool = True) -> list[Tensor]:
    # src/models/granite-hybrid.cpp / nemotron-h.cpp / falcon-h1.cpp load_arch_tensors; conversion/mamba.py
    # Mamba2Model modify_tensors: conv1d squeezed to [channels, kernel], A (−exp(A_log)) and D reshaped to
    # [heads, 1], the gated norm to [groups, d_inner / groups] (Falcon-H1 has none: mamba_rms_norm false)
    h, nh, g, ds, k = s.hidden, s.ssm_heads, s.ssm_groups, s.ssm_state_size, s.conv_kernel
    d_inner = nh * s.ssm_head_dim
    conv = d_inner + 2 * g * ds  # x, B, C run through the conv
    out = [_blk(i, "ssm_in.weight", (h, 2 * d_inner + 2 * g * ds + nh), "linear"),  # z, x, B, C, dt
           _blk(i, "ssm_conv1d.weight", (k, conv), "conv"), _blk(i, "ssm_conv1d.bias", (conv,), "bias"),
           _blk(i, "ssm_dt.bias", (nh,), "bias"), _blk(i, "ssm_a", (1, nh), "ssm"), _blk(i, "ssm_d", (1, nh), "ssm"),
           _blk(i, "ssm_out.weight", (d_inner, h), "linear")]
    if gated_norm:  # ggml drops a last 1
        out.append(_blk(i, "ssm_norm.weight", (d_inner // g, g) if g > 1 else (d_inner,), "norm"))
    return out


def _moe(s: ModelShape, i: int) -> list[Tensor]:
    """qwen35moe's MoE block (src/models/qwen35moe.cpp load_arch_tensors): router, routed experts as 3-D stacks,
    the shared expert and its sigmoid gate ``ffn_gate_inp_shexp`` [hidden] (the checkpoint's [1, hidden], one
    ggml dim: never quantized, F32 as the converter writes FFN_GATE_INP_SHEXP)."""
    h, e, ff = s.hidden, s.n_expert, s.expert_intermediate
    sh = ff * s.n_shared_experts
    return [_blk(i, "ffn_gate_inp.weight", (h, e), "router"), _blk(i, "ffn_gate_exps.weight", (h, ff, e), "experts"),
            _blk(i, "ffn_up_exps.weight", (h, ff, e), "experts"), _blk(i, "ffn_down_exps.weight", (ff, h, e), "experts"),
            _blk(i, "ffn_gate_inp_shexp.weight", (h,), "router"), _blk(i, "ffn_gate_shexp.weight", (h, sh), "linear"),
            _blk(i, "ffn_up_shexp.weight", (h, sh), "linear"), _blk(i, "ffn_down_shexp.weight", (sh, h), "linear")]


def _lfm2_moe(s: ModelShape, i: int) -> list[Tensor]:
    """lfm2moe's MoE block (build 11434 src/models/lfm2moe.cpp load_arch_tensors, ``is_moe_layer``): the router,
    3-D expert stacks and the expert bias ``exp_probs_b.bias`` [n_expert] (LLM_TENSOR_FFN_EXP_PROBS_B; the
    checkpoint's ``feed_forward.expert_bias``, renamed ``expert_bias.bias`` by conversion/lfm2.py
    ``LFM2MoeModel.filter_tensors``, so F32: its name does not end in ``.weight``); no shared expert."""
    h, e, ff = s.hidden, s.n_expert, s.expert_intermediate
    return [_blk(i, "ffn_gate_inp.weight", (h, e), "router"), _blk(i, "ffn_gate_exps.weight", (h, ff, e), "experts"),
            _blk(i, "ffn_up_exps.weight", (h, ff, e), "experts"), _blk(i, "ffn_down_exps.weight", (ff, h, e), "experts"),
            _blk(i, "exp_probs_b.bias", (e,), "bias")]


def _gated_deltanet_mixer(s: ModelShape, i: int) -> list[Tensor]:
    # src/models/qwen35.cpp load_arch_tensors (recurrent branch); conversion/qwen.py Qwen3NextModel /
    # _LinearAttentionVReorderBase: in_proj_qkv → attn_qkv, in_proj_z → attn_gate, in_proj_b/a → ssm_beta/alpha,
    # conv1d squeezed to [channels, kernel], A_log → ssm_a = −exp(A_log) [value heads], dt_bias → ssm_dt.bias
    h, k = s.hidden, s.conv_kernel
    key_dim, value_dim = s.linear_key_heads * s.linear_key_head_dim, s.linear_value_heads * s.linear_value_head_dim
    conv = 2 * key_dim + value_dim
    nv = s.linear_value_heads
    return [_blk(i, "attn_qkv.weight", (h, conv), "linear"), _blk(i, "attn_gate.weight", (h, value_dim), "linear"),
            _blk(i, "ssm_conv1d.weight", (k, conv), "conv"), _blk(i, "ssm_dt.bias", (nv,), "bias"),
            _blk(i, "ssm_a", (nv,), "ssm"), _blk(i, "ssm_beta.weight", (h, nv), "linear"),
            _blk(i, "ssm_alpha.weight", (h, nv), "linear"),
            _blk(i, "ssm_norm.weight", (s.linear_value_head_dim,), "norm"),
            _blk(i, "ssm_out.weight", (value_dim, h), "linear")]


def _hybrid_block(s: ModelShape, i: int) -> list[Tensor]:
    """One block of a hybrid, as the converter writes it (build 11434's load_arch_tensors of each arch)."""
    h, hd = s.hidden, s.head_dim
    q, kv = s.heads * hd, s.kv_heads * hd
    out = [_blk(i, "attn_norm.weight", (h,), "norm")]
    mlp = [_blk(i, "ffn_gate.weight", (h, s.intermediate), "linear"),
           _blk(i, "ffn_up.weight", (h, s.intermediate), "linear"),
           _blk(i, "ffn_down.weight", (s.intermediate, h), "linear")]
    attn = [_blk(i, "attn_q.weight", (h, q), "linear"), _blk(i, "attn_k.weight", (h, kv), "linear"),
            _blk(i, "attn_v.weight", (h, kv), "linear"), _blk(i, "attn_output.weight", (q, h), "linear")]
    qk_norms = [_blk(i, "attn_q_norm.weight", (hd,), "norm"), _blk(i, "attn_k_norm.weight", (hd,), "norm")]
    state = i in s.state_layers
    if s.arch in ("lfm2", "lfm2moe"):  # src/models/lfm2.cpp, lfm2moe.cpp; conversion/lfm2.py squeezes conv.conv
        # to [hidden, L_cache]; lfm2moe: the MLP below leading_dense_layers, the MoE block (_lfm2_moe) after
        moe = s.arch == "lfm2moe" and i >= s.leading_dense_layers
        out += [_blk(i, "ffn_norm.weight", (h,), "norm")] + (_lfm2_moe(s, i) if moe else mlp)
        if state:
            return out + [_blk(i, "shortconv.conv.weight", (s.conv_kernel, h), "conv"),
                          _blk(i, "shortconv.in_proj.weight", (h, 3 * h), "linear"),  # B, C, x gates
                          _blk(i, "shortconv.out_proj.weight", (h, h), "linear")]
        return out + qk_norms + attn
    if s.arch in ("qwen35", "qwen35moe"):  # src/models/qwen35.cpp, qwen35moe.cpp: post_attention_norm is the FFN's
        # input norm; qwen35moe has the MoE block on every layer in place of the MLP
        out += [_blk(i, "post_attention_norm.weight", (h,), "norm")] + (_moe(s, i) if s.arch == "qwen35moe" else mlp)
        if state:
            return out + _gated_deltanet_mixer(s, i)
        attn[0] = _blk(i, "attn_q.weight", (h, 2 * q), "linear")  # the query and its output gate, interleaved
        return out + qk_norms + attn
    if s.arch == "falcon-h1":  # src/models/falcon-h1.cpp: every block holds Mamba2, attention and the MLP side by
        # side; its FFN norm is "blk.N.ffn_norm" with no suffix (gguf-py maps the checkpoint's whole
        # pre_ff_layernorm.weight to FFN_PRE_NORM, and the loader asks for tn(LLM_TENSOR_FFN_NORM, i))
        return (out + [_blk(i, "ffn_norm", (h,), "norm")] + mlp + attn
                + _mamba2_mixer(s, i, gated_norm=False))
    if s.arch == "granitehybrid":  # src/models/granite-hybrid.cpp (dense: the shared MLP as ffn_gate/up/down)
        if s.n_expert:  # load_arch_tensors' MoE branch: router, 3-D expert stacks, the shared MLP as *_shexp
            e, ff, sh = s.n_expert, s.expert_intermediate, s.expert_intermediate * s.n_shared_experts
            mlp = [_blk(i, "ffn_gate_inp.weight", (h, e), "router"),
                   _blk(i, "ffn_gate_exps.weight", (h, ff, e), "experts"),
                   _blk(i, "ffn_up_exps.weight", (h, ff, e), "experts"),
                   _blk(i, "ffn_down_exps.weight", (ff, h, e), "experts")]
            if sh:
                mlp += [_blk(i, "ffn_gate_shexp.weight", (h, sh), "linear"),
                        _blk(i, "ffn_up_shexp.weight", (h, sh), "linear"),
                        _blk(i, "ffn_down_shexp.weight", (sh, h), "linear")]
        out += [_blk(i, "ffn_norm.weight", (h,), "norm")] + mlp
        return out + (_mamba2_mixer(s, i) if state else attn)
    # nemotron_h (src/models/nemotron-h.cpp): one mixer per block, its only norm attn_norm; MLP blocks
    # are up + down (squared ReLU, no gate)
    if state:
        return out + _mamba2_mixer(s, i)
    if i in s.feedforward_layers:
        return out + [mlp[1], mlp[2]]
    return out + attn


def _mtp_block(s: ModelShape, i: int) -> list[Tensor]:
    """One MTP block (block ``i`` ≥ ``s.layers``): Qwen3.5's gated attention block, its FFN (qwen35moe: the MoE
    block with its shared expert) and the nextn tensors (src/models/qwen35.cpp, qwen35moe.cpp load_block_mtp)."""
    if s.arch not in ("qwen35", "qwen35moe"):
        raise ValueError(f"no tensor layout for the MTP block of architecture {s.architecture!r}; "
                         "known: qwen35, qwen35moe")
    h = s.hidden
    block = [t for t in _hybrid_block(ModelShape(**{**s.__dict__, "state_layers": ()}), i)]
    return block + [_blk(i, "nextn.eh_proj.weight", (2 * h, h), "linear"),
                    _blk(i, "nextn.enorm.weight", (h,), "norm"), _blk(i, "nextn.hnorm.weight", (h,), "norm"),
                    _blk(i, "nextn.shared_head_norm.weight", (h,), "norm")]


def mtp_tensors(shape: ModelShape) -> tuple[Tensor, ...]:
    """The tensors of the model's MTP blocks (blocks ``layers`` … ``layers + mtp_layers − 1``).

    Parameters
    ----------
    shape : ModelShape
        The model's shapes, ``mtp_layers`` ≥ 0.

    Returns
    -------
    tuple of Tensor
        Empty when ``mtp_layers`` is 0.
    """
    out: list[Tensor] = []
    for i in range(shape.layers, shape.layers + shape.mtp_layers):
        out += _mtp_block(shape, i)
    return tuple(out)


def has_output_tensor(shape: ModelShape) -> bool:
    """True when the GGUF holds a separate ``output.weight`` (untied, and not gemma2, whose converter drops it).

    Parameters
    ----------
    shape : ModelShape
        The model's shapes.

    Returns
    -------
    bool
        ``not tied_embeddings and arch != "gemma2"``.
    """
    return not shape.tied_embeddings and shape.arch != "gemma2"


def _sort_key(t: Tensor) -> tuple[int, str]:
    # llama_model_loader's weights_map comparator: by block number (none = -1), then by name.
    return (t.layer, t.name)


def tensor_inventory(shape: ModelShape, layout: str = "gguf") -> tuple[Tensor, ...]:
    """Every weight tensor of the model, in the order llama-quantize visits them.

    Parameters
    ----------
    shape : ModelShape
    layout : ``"gguf"`` (as convert_hf_to_gguf.py writes it) or ``"hf"`` (the checkpoint's own tensors,
        named the GGUF way)

    Returns
    -------
    tuple of Tensor sorted like ``llama_model_loader::weights_map`` (src/llama-model-loader.h,
    ``weight_name_comparer``): tensors outside blocks first, then block by block, by name.
    """
    if layout not in ("gguf", "hf"):
        raise ValueError(f"layout must be 'gguf' or 'hf', got {layout!r}")
    tensors = _global_tensors(shape, layout)
    if shape.arch in STATE_MIXER:
        if layout != "gguf":
            raise ValueError(f"the state layers of {shape.arch!r} are priced as llama.cpp's GGUF only "
                             "(the checkpoint formats' rules for conv and SSM tensors are not modelled)")
        if shape.state_mixer != STATE_MIXER[shape.arch]:
            raise ValueError(f"architecture {shape.architecture!r} holds {STATE_MIXER[shape.arch]} state layers, "
                             f"the shape names {shape.state_mixer or 'none'}")
        for i in range(shape.layers):
            tensors += _hybrid_block(shape, i)
        tensors += mtp_tensors(shape)
        return tuple(sorted(tensors, key=_sort_key))
    if shape.mtp_layers:
        raise ValueError(f"no tensor layout for the MTP block of architecture {shape.architecture!r}; "
                         "known: qwen35, qwen35moe")
    if shape.state_mixer:
        raise ValueError(f"no tensor layout for {shape.state_mixer} state layers in architecture "
                         f"{shape.architecture!r}; known hybrids: {', '.join(sorted(STATE_MIXER))}")
    if shape.arch == "gemma4":
        for i in range(shape.layers):
            tensors += _gemma4_block(shape, i)
        return tuple(sorted(tensors, key=_sort_key))
    for i in range(shape.layers):
        tensors.append(_blk(i, "attn_norm.weight", (shape.hidden,), "norm"))
        tensors += _attention(shape, i, layout)
        tensors += _ffn(shape, i)
        if shape.arch == "gemma3n":
            tensors += _gemma3n_block(shape, i)
    return tuple(sorted(tensors, key=_sort_key))


def n_params(tensors: tuple[Tensor, ...]) -> int:
    """Total number of stored values across ``tensors``.

    Parameters
    ----------
    tensors : tuple of Tensor
        The tensors (:func:`tensor_inventory`).

    Returns
    -------
    int [count]
        ``Σ n_values``.
    """
    return sum(t.n_values for t in tensors)
