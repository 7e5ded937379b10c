#!/usr/bin/env python3
"""Write a weight-less F16 GGUF with the real tensor names, shapes and metadata
of a kvplan model profile, as llama.cpp's convert_hf_to_gguf.py would.

Opt-in harness (not run by CI). Needs the `gguf` and `pyyaml` packages
(gguf from llama.cpp's gguf-py, e.g. `pip install ./vendor/llama.cpp/gguf-py`).

Usage:
    python tests/harness/make_gguf.py MODEL [MODEL ...] --out DIR
    python tests/harness/make_gguf.py --all --out DIR

MODEL is a profile name from model_profiles/ (e.g. llama-2-7b). The figures
come from the profile YAML; what the profile lacks (biases, q/k norms, MoE
expert counts, rope scaling, eps, theta) comes from the HF config copy in
tests/data/hf_configs/<model>.json.

The tensor data is a sparse hole: the header is written, then the file is
truncated to its full size, so a 13 GB model takes a few MB on disk. All
weights read back as zero, which is enough for llama-quantize (type choice
and sizes depend only on names/shapes/metadata) and for context creation.

Tensor types follow the converter's --outtype f16 rules: 2-D+ weights F16;
1-D tensors, *_norm.weight, biases, ffn_gate_inp (router) and generated
rope factor tensors F32.

Tokenizer: a dummy SentencePiece ("llama") vocabulary of exactly the
number of rows of token_embd (<unk>, <s>, </s>, 256 byte tokens, then
filler tokens), so llama.cpp derives the same n_vocab. The tokenizer does
not change any memory figure except through n_vocab.

Tensor order: layers are written in numeric order (blk.0, blk.1, ... blk.10).
llama-quantize counts attn_v/ffn_down tensors in file order to decide which
layers get the extra bits of *_M mixes, so which layer names get q6_K can
differ from a GGUF converted from lexicographically ordered safetensors;
totals do not (all layers of a dense model have the same shapes).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

import numpy as np
import yaml
import gguf

REPO = Path(__file__).resolve().parents[2]
PROFILES = REPO / "model_profiles"
HF_CONFIGS = REPO / "tests" / "data" / "hf_configs"

F16 = gguf.GGMLQuantizationType.F16
F32 = gguf.GGMLQuantizationType.F32

ARCH_OF_MODEL_TYPE = {
    "llama": "llama",
    "mistral": "llama",      # MistralForCausalLM converts to the llama arch
    "qwen2": "qwen2",
    "qwen3": "qwen3",
    "gemma2": "gemma2",
    "gemma3_text": "gemma3",
    "gemma3": "gemma3",
    "phi3": "phi3",
    "deepseek_v2": "deepseek2",
    "gpt_oss": "gpt-oss",
    "qwen3_moe": "qwen3moe",
    "smollm3": "smollm3",    # LLM_ARCH_OPENAI_MOE (src/llama-arch.cpp), GptOssModel in the converter
    "gemma3n": "gemma3n",    # Gemma3NModel (conversion/gemma.py), LLM_ARCH_GEMMA3N
    "gemma3n_text": "gemma3n",
    "gemma4": "gemma4",      # Gemma4Model (conversion/gemma.py), LLM_ARCH_GEMMA4
    "gemma4_text": "gemma4",
    "llama4_text": "llama4",  # Llama4Model (conversion/llama.py), LLM_ARCH_LLAMA4
    "llama4": "llama4",
    "mixtral": "llama",      # MixtralForCausalLM converts to the llama arch with experts (conversion/__init__.py)
}

# conversion/base.py prepare_tensors: tensors the converter keeps F32 whatever --outtype says (the router, the
# shared expert's gate, the state layers' conv kernels; the rest of its list names no tensor built here)
ALWAYS_F32 = ("ffn_gate_inp.", "ffn_gate_inp_shexp.", "ssm_conv1d.", "shortconv.conv.")

# Gemma 3: the converter drops token_embd rows beyond the tokenizer.model size
# (modify_tensors, "remove OOV rows"). The Gemma 3 SentencePiece model has
# 262,144 pieces; gemma-3-4b's config says 262,208 (padding for image tokens).
GEMMA3_TOKENIZER_SIZE = 262144


def load(model: str):
    prof = yaml.safe_load((PROFILES / f"{model}.yaml").read_text())
    cfg = json.loads((HF_CONFIGS / f"{model}.json").read_text())
    if "text_config" in cfg:  # multimodal wrapper (gemma-3-4b): use the language model
        tc = dict(cfg["text_config"])
        tc.setdefault("model_type", cfg.get("model_type"))
        cfg = {**tc, "_wrapper": cfg.get("architectures")}
    return prof, cfg


class Spec:
    checkpoint_kv = True  # Gemma 4: write the checkpoint's K/V weights on the shared-KV layers too

    def __init__(self, model: str):
        self.model = model
        self.prof, self.cfg = load(model)
        p, c = self.prof, self.cfg
        mt = c.get("model_type") or p["architecture"]
        self.arch = ARCH_OF_MODEL_TYPE[mt]
        self.n_layer = int(p["layers"])
        self.n_head = int(p["attention_heads"])
        self.n_head_kv = int(p["kv_heads"])
        self.head_dim = int(p["head_dim"])
        self.v_head_dim = int(p.get("v_head_dim") or p["head_dim"])
        self.n_embd = int(p["hidden_size"])
        ff = p["intermediate_size"]
        self.n_ff_layers = [int(x) for x in ff] if isinstance(ff, list) else [int(ff)] * self.n_layer
        self.n_ff = max(self.n_ff_layers)
        self.n_vocab = int(p["vocab_size"])
        if self.arch == "gemma3" and self.n_vocab > GEMMA3_TOKENIZER_SIZE:
            self.n_vocab = GEMMA3_TOKENIZER_SIZE
        self.tied = bool(p.get("tie_embeddings"))
        self.n_ctx_train = int(c.get("max_position_embeddings") or p["max_context"])
        self.tensors: list[tuple[str, list[int], int]] = []  # name, ggml shape (ne0 first), type
        self.kv: list[tuple[str, object, str]] = []

    # -- helpers -------------------------------------------------------------
    def t(self, name, shape, typ=None):
        if typ is None:
            typ = F32 if (len(shape) == 1 or name.endswith("_norm.weight") or not name.endswith(".weight")
                          or any(f in name for f in ALWAYS_F32)) else F16
        self.tensors.append((name, [int(x) for x in shape], typ))

    def k(self, key, val, kind):
        self.kv.append((key, val, kind))

    # -- metadata -----------------------------------------------------------------
    def base_kv(self):
        a, c = self.arch, self.cfg
        self.k(f"{a}.context_length", self.n_ctx_train, "u32")
        self.k(f"{a}.embedding_length", self.n_embd, "u32")
        self.k(f"{a}.block_count", self.n_layer, "u32")
        self.k(f"{a}.feed_forward_length", self.n_ff, "u32")
        self.k(f"{a}.attention.head_count", self.n_head, "u32")
        self.k(f"{a}.attention.head_count_kv", self.n_head_kv, "u32")
        self.k(f"{a}.attention.layer_norm_rms_epsilon", float(c.get("rms_norm_eps", 1e-6)), "f32")
        theta = c.get("rope_theta")
        if theta is None and isinstance(c.get("rope_parameters"), dict):
            theta = c["rope_parameters"].get("rope_theta")
        if theta is not None:
            self.k(f"{a}.rope.freq_base", float(theta), "f32")

    def build(self):
        getattr(self, "build_" + self.arch.replace("-", "_"))()
        return self

    # -- architectures ------------------------------------------------------
    def _embd(self):
        self.t("token_embd.weight", [self.n_embd, self.n_vocab])

    def _head(self):
        self.t("output_norm.weight", [self.n_embd])
        if not self.tied:
            self.t("output.weight", [self.n_embd, self.n_vocab])

    def _attn(self, i, bias=False, qk_norm=False):
        E, H, Hk, D, Dv = self.n_embd, self.n_head, self.n_head_kv, self.head_dim, self.v_head_dim
        self.t(f"blk.{i}.attn_q.weight", [E, H * D])
        self.t(f"blk.{i}.attn_k.weight", [E, Hk * D])
        self.t(f"blk.{i}.attn_v.weight", [E, Hk * Dv])
        if bias:
            self.t(f"blk.{i}.attn_q.bias", [H * D])
            self.t(f"blk.{i}.attn_k.bias", [Hk * D])
            self.t(f"blk.{i}.attn_v.bias", [Hk * Dv])
        if qk_norm:
            self.t(f"blk.{i}.attn_q_norm.weight", [D])
            self.t(f"blk.{i}.attn_k_norm.weight", [D])
        self.t(f"blk.{i}.attn_output.weight", [H * Dv, E])

    def _mlp(self, i):
        E, F = self.n_embd, self.n_ff
        self.t(f"blk.{i}.ffn_gate.weight", [E, F])
        self.t(f"blk.{i}.ffn_up.weight", [E, F])
        self.t(f"blk.{i}.ffn_down.weight", [F, E])

    def _llama_like(self, bias=False, qk_norm=False):
        a, c = self.arch, self.cfg
        self.base_kv()
        self.k(f"{a}.rope.dimension_count", self.head_dim, "u32")
        if c.get("head_dim") is not None:
            self.k(f"{a}.attention.key_length", self.head_dim, "u32")
            self.k(f"{a}.attention.value_length", self.v_head_dim, "u32")
        self._embd()
        rs = c.get("rope_scaling") or {}
        if a == "llama" and (rs.get("rope_type") or rs.get("type")) == "llama3":
            # convert_hf_to_gguf LlamaModel.generate_extra_tensors -> rope_freqs.weight [head_dim/2] F32
            self.t("rope_freqs.weight", [self.head_dim // 2], F32)
        for i in range(self.n_layer):
            self.t(f"blk.{i}.attn_norm.weight", [self.n_embd])
            self._attn(i, bias=bias, qk_norm=qk_norm)
            self.t(f"blk.{i}.ffn_norm.weight", [self.n_embd])
            if "num_local_experts" in c and a == "llama":
                self._mixtral_experts(i)
            else:
                self._mlp(i)
        self._head()

    def _mixtral_experts(self, i):
        """Mixtral (build 11434: conversion/llama.py LlamaModel.modify_tensors stacks block_sparse_moe.experts.N.w1/
        w2/w3 into 3-D ffn_gate/down/up_exps; src/models/llama.cpp load_arch_tensors, n_expert > 0): a router (F32)
        and experts of feed_forward_length (intermediate_size); the expert keys come from conversion/base.py."""
        E, F, n_exp = self.n_embd, self.n_ff, int(self.cfg["num_local_experts"])
        self.t(f"blk.{i}.ffn_gate_inp.weight", [E, n_exp], F32)
        self.t(f"blk.{i}.ffn_gate_exps.weight", [E, F, n_exp])
        self.t(f"blk.{i}.ffn_up_exps.weight", [E, F, n_exp])
        self.t(f"blk.{i}.ffn_down_exps.weight", [F, E, n_exp])

    def build_llama(self):
        self.k("llama.vocab_size", self.n_vocab, "u32")
        if "num_local_experts" in self.cfg:  # Mixtral: conversion/base.py set_gguf_parameters
            self.k("llama.expert_count", int(self.cfg["num_local_experts"]), "u32")
            self.k("llama.expert_used_count", int(self.cfg["num_experts_per_tok"]), "u32")
        self._llama_like()

    def build_qwen2(self):
        self._llama_like(bias=True)

    def build_qwen3(self):
        self._llama_like(qk_norm=True)

    def _gemma(self, qk_norm):
        a, c = self.arch, self.cfg
        self.base_kv()
        self.k(f"{a}.attention.key_length", self.head_dim, "u32")
        self.k(f"{a}.attention.value_length", self.v_head_dim, "u32")
        if a == "gemma2":
            self.k("gemma2.attn_logit_softcapping", float(c["attn_logit_softcapping"]), "f32")
            self.k("gemma2.final_logit_softcapping", float(c["final_logit_softcapping"]), "f32")
            self.k("gemma2.attention.sliding_window", int(c["sliding_window"]), "u32")
        else:
            if c.get("final_logit_softcapping"):
                self.k("gemma3.final_logit_softcapping", float(c["final_logit_softcapping"]), "f32")
            sw = c.get("sliding_window") or self.prof.get("sliding_window")
            if c.get("sliding_window_pattern", 6) != 1 and sw:
                self.k("gemma3.attention.sliding_window", int(sw), "u32")
            if c.get("rope_theta") is None:
                self.k("gemma3.rope.freq_base", 1_000_000.0, "f32")
        self._embd()
        E = self.n_embd
        for i in range(self.n_layer):
            self.t(f"blk.{i}.attn_norm.weight", [E])
            self._attn(i, qk_norm=qk_norm)
            self.t(f"blk.{i}.post_attention_norm.weight", [E])
            self.t(f"blk.{i}.ffn_norm.weight", [E])
            self._mlp(i)
            self.t(f"blk.{i}.post_ffw_norm.weight", [E])
        self.tied = True  # gemma: output shares token_embd
        self._head()

    def build_gemma2(self):
        self._gemma(qk_norm=False)

    def build_gemma3(self):
        self._gemma(qk_norm=True)

    def build_gemma3n(self):
        """Gemma 3n's text model as conversion/gemma.py Gemma3NModel writes it and src/models/gemma3n.cpp
        load_arch_tensors loads it: the Gemma 3 block plus AltUp (altup_proj / altup_unembd_proj stacked 3-D, per
        layer router, coefficients and correct scale), LAuReL (laurel_l / laurel_r, rank laurel_rank) and per-layer
        embeddings (per_layer_token_embd [n_layer · n_embd_altup, n_vocab], per_layer_model_proj, per layer inp_gate /
        proj / post_norm). The converter pads token_embd and per_layer_token_embd to vocab_size rows (262,400)."""
        import math as _m
        from statistics import NormalDist

        a, c = self.arch, self.cfg
        self.k(f"{a}.context_length", self.n_ctx_train, "u32")
        self.k(f"{a}.embedding_length", self.n_embd, "u32")
        self.k(f"{a}.block_count", self.n_layer, "u32")
        self.k(f"{a}.feed_forward_length", self.n_ff_layers, "arr")
        self.k(f"{a}.attention.head_count", self.n_head, "u32")
        self.k(f"{a}.attention.head_count_kv", self.n_head_kv, "u32")
        self.k(f"{a}.attention.layer_norm_rms_epsilon", float(c.get("rms_norm_eps", 1e-6)), "f32")
        self.k(f"{a}.attention.key_length", self.head_dim, "u32")
        self.k(f"{a}.attention.value_length", self.v_head_dim, "u32")
        self.k(f"{a}.rope.freq_base", float(c.get("rope_theta", 1_000_000.0)), "f32")
        self.k(f"{a}.rope.freq_base_swa", float(c.get("rope_local_base_freq", 10_000.0)), "f32")
        self.k(f"{a}.final_logit_softcapping", float(c["final_logit_softcapping"]), "f32")
        self.k(f"{a}.attention.sliding_window", int(c["sliding_window"]), "u32")
        self.k(f"{a}.altup.active_idx", int(c["altup_active_idx"]), "u32")
        self.k(f"{a}.altup.num_inputs", int(c["altup_num_inputs"]), "u32")
        self.k(f"{a}.embedding_length_per_layer_input", int(c["hidden_size_per_layer_input"]), "u32")
        self.k(f"{a}.attention.shared_kv_layers", int(c["num_kv_shared_layers"]), "u32")
        scale = [NormalDist().inv_cdf(x) if 0 < x < 1 else (-_m.inf if x <= 0 else _m.inf)
                 for x in c["activation_sparsity_pattern"]]
        self.k(f"{a}.activation_sparsity_scale", [float(x) for x in scale], "arr")
        self.k(f"{a}.attention.sliding_window_pattern", [t == "sliding_attention" for t in c["layer_types"]], "arr")
        E, A, P, R = self.n_embd, int(c["altup_num_inputs"]), int(c["hidden_size_per_layer_input"]), int(c["laurel_rank"])
        L = self.n_layer
        self.n_vocab = int(c["vocab_size"])  # token_embd and per_layer_token_embd padded to vocab_size rows
        self._embd()
        self.t("per_layer_token_embd.weight", [L * P, self.n_vocab])
        self.t("altup_proj.weight", [E, E, A - 1])
        self.t("altup_unembd_proj.weight", [E, E, A - 1])
        self.t("per_layer_model_proj.weight", [E, L * P])
        self.t("per_layer_proj_norm.weight", [P])
        for i in range(L):
            F = self.n_ff_layers[i]
            self.t(f"blk.{i}.attn_norm.weight", [E])
            self._attn(i, qk_norm=True)
            self.t(f"blk.{i}.post_attention_norm.weight", [E])
            self.t(f"blk.{i}.ffn_norm.weight", [E])
            self.t(f"blk.{i}.ffn_gate.weight", [E, F])
            self.t(f"blk.{i}.ffn_up.weight", [E, F])
            self.t(f"blk.{i}.ffn_down.weight", [F, E])
            self.t(f"blk.{i}.post_ffw_norm.weight", [E])
            self.t(f"blk.{i}.inp_gate.weight", [E, P])
            self.t(f"blk.{i}.proj.weight", [P, E])
            self.t(f"blk.{i}.post_norm.weight", [E])
            self.t(f"blk.{i}.altup_correct_coef.weight", [A, A])
            self.t(f"blk.{i}.altup_correct_scale.weight", [E])
            self.t(f"blk.{i}.altup_predict_coef.weight", [A, A * A])
            self.t(f"blk.{i}.altup_router.weight", [E, A])
            self.t(f"blk.{i}.altup_router_norm.weight", [E])
            self.t(f"blk.{i}.laurel_l.weight", [E, R])
            self.t(f"blk.{i}.laurel_r.weight", [R, E])
            self.t(f"blk.{i}.laurel_post_norm.weight", [E])
        self.tied = True
        self._head()

    def build_gemma4(self):
        """Gemma 4's dense text model as conversion/gemma.py Gemma4Model writes it and src/models/gemma4.cpp
        load_arch_tensors loads it: key_length / value_length global_head_dim (full-attention layers) and
        key_length_swa / value_length_swa head_dim (sliding layers), feed_forward_length per layer (doubled on the
        shared-KV layers with use_double_wide_mlp), per-layer embeddings (per_layer_token_embd [n_layer · P,
        n_vocab], per_layer_model_proj, per layer inp_gate / proj / post_norm), one rope_freqs [global_head_dim / 2]
        for the full layers, layer_output_scale per layer. The shared-KV layers (from n_layer − shared_kv_layers on)
        compute no K/V and the loader marks attn_k / attn_v / attn_k_norm TENSOR_NOT_REQUIRED there, but the
        published checkpoints hold them on every layer and the converter writes them (kvplan/engine/tensors.py
        _gemma4_block names the evidence): written on every layer unless --no-shared-kv-weights (checkpoint_kv
        False), which gives the smallest file the loader accepts."""
        a, c, p = self.arch, self.cfg, self.prof
        L, E, H, Hk = self.n_layer, self.n_embd, self.n_head, self.n_head_kv
        D_swa, D_full = int(c["head_dim"]), int(c["global_head_dim"])
        P = int(c.get("hidden_size_per_layer_input") or 0)
        shared = int(c.get("num_kv_shared_layers") or 0)
        swa = [t == "sliding_attention" for t in c["layer_types"]]
        rope = c.get("rope_parameters") or {}
        self.k(f"{a}.context_length", self.n_ctx_train, "u32")
        self.k(f"{a}.embedding_length", E, "u32")
        self.k(f"{a}.block_count", L, "u32")
        self.k(f"{a}.feed_forward_length", self.n_ff_layers, "arr")
        self.k(f"{a}.attention.head_count", H, "u32")
        self.k(f"{a}.attention.head_count_kv", Hk, "u32")
        self.k(f"{a}.attention.layer_norm_rms_epsilon", float(c.get("rms_norm_eps", 1e-6)), "f32")
        self.k(f"{a}.attention.key_length", D_full, "u32")
        self.k(f"{a}.attention.value_length", D_full, "u32")
        self.k(f"{a}.attention.key_length_swa", D_swa, "u32")
        self.k(f"{a}.attention.value_length_swa", D_swa, "u32")
        self.k(f"{a}.rope.dimension_count", D_full, "u32")
        self.k(f"{a}.rope.dimension_count_swa", D_swa, "u32")
        self.k(f"{a}.rope.freq_base", float(rope.get("full_attention", {}).get("rope_theta", 1_000_000.0)), "f32")
        self.k(f"{a}.rope.freq_base_swa", float(rope.get("sliding_attention", {}).get("rope_theta", 10_000.0)), "f32")
        self.k(f"{a}.final_logit_softcapping", float(c["final_logit_softcapping"]), "f32")
        self.k(f"{a}.attention.sliding_window", int(c["sliding_window"]), "u32")
        self.k(f"{a}.attention.sliding_window_pattern", swa, "arr")
        self.k(f"{a}.attention.shared_kv_layers", shared, "u32")
        self.k(f"{a}.embedding_length_per_layer_input", P, "u32")
        self._embd()
        if P:
            self.t("per_layer_token_embd.weight", [L * P, self.n_vocab])
            self.t("per_layer_model_proj.weight", [E, L * P])
            self.t("per_layer_proj_norm.weight", [P])
        self.t("rope_freqs.weight", [D_full // 2])
        for i in range(L):
            D, F, own = (D_swa if swa[i] else D_full), self.n_ff_layers[i], i < L - shared
            self.t(f"blk.{i}.attn_norm.weight", [E])
            self.t(f"blk.{i}.attn_q.weight", [E, H * D])
            if own or self.checkpoint_kv:
                self.t(f"blk.{i}.attn_k.weight", [E, Hk * D])
                self.t(f"blk.{i}.attn_v.weight", [E, Hk * D])
                self.t(f"blk.{i}.attn_k_norm.weight", [D])
            self.t(f"blk.{i}.attn_q_norm.weight", [D])
            self.t(f"blk.{i}.attn_output.weight", [H * D, E])
            self.t(f"blk.{i}.post_attention_norm.weight", [E])
            self.t(f"blk.{i}.layer_output_scale.weight", [1])
            self.t(f"blk.{i}.ffn_norm.weight", [E])
            self.t(f"blk.{i}.ffn_gate.weight", [E, F])
            self.t(f"blk.{i}.ffn_up.weight", [E, F])
            self.t(f"blk.{i}.ffn_down.weight", [F, E])
            self.t(f"blk.{i}.post_ffw_norm.weight", [E])
            if P:
                self.t(f"blk.{i}.inp_gate.weight", [E, P])
                self.t(f"blk.{i}.proj.weight", [P, E])
                self.t(f"blk.{i}.post_norm.weight", [E])
        self.tied = True
        self._head()

    def build_phi3(self):
        c = self.cfg
        self.base_kv()
        self.k("phi3.rope.dimension_count", self.head_dim, "u32")
        self.k("phi3.attention.sliding_window", int(c.get("sliding_window") or 0), "u32")
        rs = c.get("rope_scaling") or {}
        self._embd()
        E, F, H, Hk, D = self.n_embd, self.n_ff, self.n_head, self.n_head_kv, self.head_dim
        if rs.get("long_factor"):
            # Phi3MiniModel.generate_extra_tensors -> rope_factors_{long,short}.weight [head_dim/2] F32
            self.k("phi3.rope.scaling.attn_factor",
                   float(math.sqrt(1 + math.log(c["max_position_embeddings"] / c["original_max_position_embeddings"])
                                   / math.log(c["original_max_position_embeddings"]))), "f32")
            self.k("phi3.rope.scaling.original_context_length", int(c["original_max_position_embeddings"]), "u32")
            self.t("rope_factors_long.weight", [D // 2], F32)
            self.t("rope_factors_short.weight", [D // 2], F32)
        for i in range(self.n_layer):
            self.t(f"blk.{i}.attn_norm.weight", [E])
            self.t(f"blk.{i}.attn_qkv.weight", [E, H * D + 2 * Hk * D])   # fused qkv_proj
            self.t(f"blk.{i}.attn_output.weight", [H * D, E])
            self.t(f"blk.{i}.ffn_norm.weight", [E])
            self.t(f"blk.{i}.ffn_up.weight", [E, 2 * F])                  # fused gate_up_proj
            self.t(f"blk.{i}.ffn_down.weight", [F, E])
        self._head()

    def build_qwen3moe(self):
        """llama_model_qwen3moe::load_arch_tensors (src/models/qwen3moe.cpp, build 11434): qwen3's attention with q/k
        norms, a router and 3-D expert tensors of expert_feed_forward_length (experts F16 here)."""
        c, a = self.cfg, self.arch
        self.base_kv()
        n_exp, n_used, F = int(c["num_experts"]), int(c["num_experts_per_tok"]), int(c["moe_intermediate_size"])
        self.k(f"{a}.rope.dimension_count", self.head_dim, "u32")
        self.k(f"{a}.attention.key_length", self.head_dim, "u32")
        self.k(f"{a}.attention.value_length", self.head_dim, "u32")
        self.k(f"{a}.expert_count", n_exp, "u32")
        self.k(f"{a}.expert_used_count", n_used, "u32")
        self.k(f"{a}.expert_feed_forward_length", F, "u32")
        self._embd()
        E = self.n_embd
        for i in range(self.n_layer):
            self.t(f"blk.{i}.attn_norm.weight", [E])
            self._attn(i, qk_norm=True)
            self.t(f"blk.{i}.ffn_norm.weight", [E])
            self.t(f"blk.{i}.ffn_gate_inp.weight", [E, n_exp], F32)  # router kept F32 by the converter
            self.t(f"blk.{i}.ffn_gate_exps.weight", [E, F, n_exp])
            self.t(f"blk.{i}.ffn_up_exps.weight", [E, F, n_exp])
            self.t(f"blk.{i}.ffn_down_exps.weight", [F, E, n_exp])
        self._head()

    def build_llama4(self):
        """llama_model_llama4::load_arch_hparams / load_arch_tensors (src/models/llama4.cpp, build 11434) as
        conversion/llama.py Llama4Model writes the text model: feed_forward_length intermediate_size_mlp (the
        converter swaps the two widths), expert_feed_forward_length intermediate_size, interleave_moe_layer_step, no
        attention.sliding_window key (so the loader sets LLAMA_SWA_TYPE_CHUNKED, n_swa 8192, pattern 4); per MoE
        layer a router (F32), 3-D experts and the shared expert (ffn_*_shexp, as wide as one expert); rope_freqs
        [head_dim / 2] for the llama3 rope scaling (LlamaModel.generate_extra_tensors)."""
        c, a = self.cfg, self.arch
        self.base_kv()
        n_exp, n_used, F = int(c["num_local_experts"]), int(c["num_experts_per_tok"]), int(c["intermediate_size"])
        step = int(c.get("interleave_moe_layer_step") or 1)
        self.k(f"{a}.vocab_size", self.n_vocab, "u32")
        self.k(f"{a}.rope.dimension_count", self.head_dim, "u32")
        self.k(f"{a}.attention.key_length", self.head_dim, "u32")
        self.k(f"{a}.attention.value_length", self.head_dim, "u32")
        self.k(f"{a}.expert_count", n_exp, "u32")
        self.k(f"{a}.expert_used_count", n_used, "u32")
        self.k(f"{a}.expert_feed_forward_length", F, "u32")
        self.k(f"{a}.interleave_moe_layer_step", step, "u32")
        self._embd()
        rs = c.get("rope_scaling") or {}
        if (rs.get("rope_type") or rs.get("type")) == "llama3":
            self.t("rope_freqs.weight", [self.head_dim // 2], F32)
        E = self.n_embd
        for i in range(self.n_layer):
            self.t(f"blk.{i}.attn_norm.weight", [E])
            self._attn(i)
            self.t(f"blk.{i}.ffn_norm.weight", [E])
            if (i + 1) % step == 0:
                self.t(f"blk.{i}.ffn_gate_inp.weight", [E, n_exp], F32)  # router kept F32 by the converter
                self.t(f"blk.{i}.ffn_gate_exps.weight", [E, F, n_exp])
                self.t(f"blk.{i}.ffn_up_exps.weight", [E, F, n_exp])
                self.t(f"blk.{i}.ffn_down_exps.weight", [F, E, n_exp])
                self.t(f"blk.{i}.ffn_gate_shexp.weight", [E, F])
                self.t(f"blk.{i}.ffn_up_shexp.weight", [E, F])
                self.t(f"blk.{i}.ffn_down_shexp.weight", [F, E])
            else:
                self._mlp(i)
        self._head()

    def build_smollm3(self):
        """llama_model_smollm3 (src/models/smollm3.cpp): llama's tensors; every 4th layer without RoPE is the
        loader's own rule (n_no_rope_layer_step), the cache the same on every layer."""
        self._llama_like()

    def build_gpt_oss(self):
        """llama_model_openai_moe::load_arch_hparams / load_arch_tensors (src/models/openai-moe.cpp, build 11434):
        biases on q/k/v/o, attn_sinks [n_head], post_attention_norm, a router with bias and 3-D expert tensors with
        biases; the window pattern is load_swa_pattern(ml, 2) unless the file names one (none written here). The
        experts are F16 here (the real file keeps MXFP4): the weights' type does not size the cache."""
        c, a = self.cfg, self.arch
        self.base_kv()
        n_exp, n_used = int(c["num_local_experts"]), int(c["num_experts_per_tok"])
        self.k(f"{a}.rope.dimension_count", self.head_dim, "u32")
        self.k(f"{a}.attention.key_length", self.head_dim, "u32")
        self.k(f"{a}.attention.value_length", self.head_dim, "u32")
        self.k(f"{a}.attention.sliding_window", int(c["sliding_window"]), "u32")
        self.k(f"{a}.expert_count", n_exp, "u32")
        self.k(f"{a}.expert_used_count", n_used, "u32")
        self.k(f"{a}.expert_feed_forward_length", self.n_ff, "u32")
        self._embd()
        E, F, H, Hk, D = self.n_embd, self.n_ff, self.n_head, self.n_head_kv, self.head_dim
        for i in range(self.n_layer):
            self.t(f"blk.{i}.attn_norm.weight", [E])
            self.t(f"blk.{i}.post_attention_norm.weight", [E])
            self._attn(i, bias=True)
            self.t(f"blk.{i}.attn_output.bias", [E])
            self.t(f"blk.{i}.attn_sinks.weight", [H], F32)
            self.t(f"blk.{i}.ffn_gate_inp.weight", [E, n_exp], F32)  # router kept F32 by the converter
            self.t(f"blk.{i}.ffn_gate_inp.bias", [n_exp])
            self.t(f"blk.{i}.ffn_gate_exps.weight", [E, F, n_exp])
            self.t(f"blk.{i}.ffn_up_exps.weight", [E, F, n_exp])
            self.t(f"blk.{i}.ffn_down_exps.weight", [F, E, n_exp])
            self.t(f"blk.{i}.ffn_gate_exps.bias", [F, n_exp])
            self.t(f"blk.{i}.ffn_up_exps.bias", [F, n_exp])
            self.t(f"blk.{i}.ffn_down_exps.bias", [E, n_exp])
        self._head()

    def build_deepseek2(self):
        c, a = self.cfg, "deepseek2"
        # DeepseekV2Model.set_gguf_parameters: MLA is written as MQA (head_count_kv 1)
        self.n_head_kv = 1
        self.base_kv()
        kvr = int(c["kv_lora_rank"]); rope = int(c["qk_rope_head_dim"]); nope = int(c["qk_nope_head_dim"])
        vd = int(c["v_head_dim"]); n_exp = int(c["n_routed_experts"]); n_sh = int(c["n_shared_experts"])
        ffe = int(c["moe_intermediate_size"]); dense = int(c.get("first_k_dense_replace") or 0)
        self.k(f"{a}.leading_dense_block_count", dense, "u32")
        self.k(f"{a}.vocab_size", self.n_vocab, "u32")
        if c.get("q_lora_rank"):
            self.k(f"{a}.attention.q_lora_rank", int(c["q_lora_rank"]), "u32")
        self.k(f"{a}.attention.kv_lora_rank", kvr, "u32")
        self.k(f"{a}.attention.key_length", kvr + rope, "u32")
        self.k(f"{a}.attention.value_length", kvr, "u32")
        self.k(f"{a}.attention.key_length_mla", nope + rope, "u32")
        self.k(f"{a}.attention.value_length_mla", vd, "u32")
        self.k(f"{a}.expert_feed_forward_length", ffe, "u32")
        self.k(f"{a}.expert_count", n_exp, "u32")
        self.k(f"{a}.expert_used_count", int(c["num_experts_per_tok"]), "u32")
        self.k(f"{a}.expert_shared_count", n_sh, "u32")
        if c.get("routed_scaling_factor") is not None:
            self.k(f"{a}.expert_weights_scale", float(c["routed_scaling_factor"]), "f32")
        if c.get("norm_topk_prob"):
            self.k(f"{a}.expert_weights_norm", True, "bool")
        self.k(f"{a}.rope.dimension_count", rope, "u32")
        rs = c.get("rope_scaling") or {}
        if (rs.get("type") or rs.get("rope_type")) == "yarn":
            self.k(f"{a}.rope.scaling.type", "yarn", "str")
            self.k(f"{a}.rope.scaling.factor", float(rs["factor"]), "f32")
            self.k(f"{a}.rope.scaling.original_context_length", int(rs["original_max_position_embeddings"]), "u32")
            self.k(f"{a}.rope.scaling.yarn_beta_fast", float(rs["beta_fast"]), "f32")
            self.k(f"{a}.rope.scaling.yarn_beta_slow", float(rs["beta_slow"]), "f32")
            if rs.get("mscale_all_dim") is not None:
                self.k(f"{a}.rope.scaling.yarn_log_multiplier", 0.1 * float(rs["mscale_all_dim"]), "f32")
        E, H = self.n_embd, self.n_head
        self._embd()
        for i in range(self.n_layer):
            self.t(f"blk.{i}.attn_norm.weight", [E])
            if c.get("q_lora_rank"):
                raise NotImplementedError("q_lora_rank models")
            self.t(f"blk.{i}.attn_q.weight", [E, H * (nope + rope)])
            self.t(f"blk.{i}.attn_kv_a_mqa.weight", [E, kvr + rope])
            self.t(f"blk.{i}.attn_kv_a_norm.weight", [kvr])
            # kv_b_proj split by the converter into k_b (transposed) and v_b, 3-D per head
            self.t(f"blk.{i}.attn_k_b.weight", [nope, kvr, H])
            self.t(f"blk.{i}.attn_v_b.weight", [kvr, vd, H])
            self.t(f"blk.{i}.attn_output.weight", [H * vd, E])
            self.t(f"blk.{i}.ffn_norm.weight", [E])
            if i < dense:
                self._mlp(i)
            else:
                self.t(f"blk.{i}.ffn_gate_inp.weight", [E, n_exp], F32)  # router kept F32 by the converter
                self.t(f"blk.{i}.ffn_down_exps.weight", [ffe, E, n_exp])
                self.t(f"blk.{i}.ffn_gate_exps.weight", [E, ffe, n_exp])
                self.t(f"blk.{i}.ffn_up_exps.weight", [E, ffe, n_exp])
                self.t(f"blk.{i}.ffn_gate_shexp.weight", [E, ffe * n_sh])
                self.t(f"blk.{i}.ffn_down_shexp.weight", [ffe * n_sh, E])
                self.t(f"blk.{i}.ffn_up_shexp.weight", [E, ffe * n_sh])
        self._head()


def nbytes(shape, typ):
    bs, ts = gguf.GGML_QUANT_SIZES[typ]
    n = 1
    for x in shape:
        n *= x
    return n // bs * ts


def quant_types(model: str, qtype: str) -> dict[str, int]:
    """Per-tensor ggml types llama-quantize chose for `qtype` (tests/data/llamacpp/quant/<model>.json.gz,
    written by quantize_all.py from a --dry-run): lets write() lay out a quantized file, still sparse."""
    import gzip
    doc = json.loads(gzip.open(REPO / "tests" / "data" / "llamacpp" / "quant" / f"{model}.json.gz").read())
    return {t["name"]: int(gguf.GGMLQuantizationType[t["type"].upper()]) for t in doc["types"][qtype]["tensors"]}


def write_sparse_tensors(w: "gguf.GGUFWriter", path: Path, tensors) -> int:
    """Finish `w` (metadata already added) with the tensor table of `tensors` — (name, shape in numpy order,
    ggml type) — and no data: the file is truncated to where the data would end, a sparse hole that reads as
    zeros. Shared by make_mmproj_gguf.py. Returns the tensor bytes (unpadded)."""
    total = 0
    for name, shape, typ in tensors:
        nb = nbytes(shape, typ)
        np_dtype = np.float16 if typ == F16 else np.float32
        w.add_tensor_info(name, list(shape), np.dtype(np_dtype), nb, raw_dtype=typ)
        total += gguf.GGUFWriter.ggml_pad(nb, w.data_alignment)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    fout = w.fout[0]
    w.write_padding(fout, fout.tell())
    data_start = fout.tell()
    fout.flush()
    fout.close()
    w.fout = None
    os.truncate(path, data_start + total)  # sparse hole: no weights stored
    return sum(nbytes(s, t) for _, s, t in tensors)


def write(spec: Spec, path: Path, types: dict[str, int] | None = None,
          file_type: int = gguf.LlamaFileType.MOSTLY_F16) -> dict:
    """types: tensor name -> ggml type, overriding the F16/F32 choice (a quantized layout)."""
    if types is not None:
        missing = [n for n, _, _ in spec.tensors if n not in types]
        if missing:
            raise SystemExit(f"no quantized type for {missing[:3]} (quant data out of date?)")
        spec.tensors = [(n, s, types[n]) for n, s, _ in spec.tensors]
    w = gguf.GGUFWriter(str(path), spec.arch)
    # general.name is neutral on purpose: llama.cpp's vocab loader applies
    # per-model token fix-ups by name (e.g. "phi-3" expects <|end|> tokens)
    w.add_name("kvplan weightless GGUF")
    w.add_description(f"kvplan profile {spec.model}; weights are a sparse hole (all zero)")
    w.add_file_type(file_type)
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)
    for key, val, kind in spec.kv:
        {"u32": w.add_uint32, "f32": w.add_float32, "bool": w.add_bool, "str": w.add_string,
         "arr": w.add_array}[kind](key, val)
    # dummy SentencePiece vocabulary with exactly n_vocab entries
    V = spec.n_vocab
    toks = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    toks += [f"t{i}" for i in range(V - len(toks))]
    types = [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL] + [gguf.TokenType.BYTE] * 256
    types += [gguf.TokenType.NORMAL] * (V - len(types))
    w.add_tokenizer_model("llama")
    w.add_token_list(toks)
    w.add_token_scores([0.0] * V)
    w.add_token_types(types)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)
    write_sparse_tensors(w, path, [(n, list(reversed(s)), t) for n, s, t in spec.tensors])
    return {
        "model": spec.model, "arch": spec.arch, "path": str(path), "n_tensors": len(spec.tensors),
        "n_params": sum(int(np.prod(s)) for _, s, _ in spec.tensors),
        "tensor_bytes": sum(nbytes(s, t) for _, s, t in spec.tensors), "n_vocab": V,
    }


def all_models():
    return sorted(p.stem for p in PROFILES.glob("*.yaml") if (HF_CONFIGS / f"{p.stem}.json").exists())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*")
    ap.add_argument("--all", action="store_true")
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--no-shared-kv-weights", action="store_true",
                    help="Gemma 4: leave out attn_k/attn_v/attn_k_norm on the shared-KV layers (the loader allows it)")
    a = ap.parse_args(argv)
    Spec.checkpoint_kv = not a.no_shared_kv_weights
    models = all_models() if a.all else a.models
    a.out.mkdir(parents=True, exist_ok=True)
    for m in models:
        info = write(Spec(m).build(), a.out / f"{m}-F16.gguf")
        print(json.dumps(info))


if __name__ == "__main__":
    sys.exit(main())
