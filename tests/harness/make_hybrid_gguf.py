#!/usr/bin/env python3
"""Write a weight-less F16 GGUF of a kvplan hybrid model profile (state layers: LFM2's short convolution), with the
tensor names and shapes llama.cpp's loader asks for (build 11434; LFM2, LFM2-MoE, Granite 4.0-H, Qwen3.5, Nemotron-H and
Falcon-H1 — the builders below name their source files; for LFM2: src/models/lfm2.cpp ::
llama_model_lfm2::load_arch_tensors) and the metadata its hparams loader reads (``lfm2.shortconv.l_cache``, a
per-layer ``attention.head_count_kv`` array whose zeros mark the conv layers: ``is_recr_impl[il] = n_head_kv(il)
== 0``).

Opt-in harness (not run by CI), the same writer as make_gguf.py (sparse file, dummy vocabulary). Every figure
comes from the profile YAML (model_profiles/NAME.yaml); nothing is shrunk: the recurrent and KV buffers llama.cpp
allocates depend on the real widths. Also built: granitehybrid, nemotron_h (Mamba2) and qwen35 (Gated DeltaNet; with
--mtp its MTP block, as the converter writes it without --no-mtp), see each build_<arch>. Types as convert_hf_to_gguf.py writes them: F32 for 1-D tensors, norms, names not
ending in ".weight" (ssm_a, ssm_d, biases) and the conv kernels (ssm_conv1d.weight, shortconv.conv.weight:
conversion/base.py prepare_tensors keeps SSM_CONV1D and SHORTCONV_CONV F32), F16 for the other matrices.

Usage:
    PYTHONPATH=LLAMA_CPP/gguf-py python tests/harness/make_hybrid_gguf.py lfm2-1.2b --out DIR
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_gguf  # noqa: E402  (the shared writer)

F16, F32 = make_gguf.F16, make_gguf.F32


class HybridSpec(make_gguf.Spec):
    def __init__(self, model: str):  # the profile alone: no HF config copy needed
        self.model = model
        path = Path(model) if model.endswith((".yaml", ".yml")) else make_gguf.PROFILES / f"{model}.yaml"
        p = yaml.safe_load(path.read_text())
        self.model = p["name"]
        self.prof, self.cfg = p, {}
        self.arch = {"lfm2": "lfm2", "lfm2_moe": "lfm2moe", "granitemoehybrid": "granitehybrid", "qwen3_5_text": "qwen35",
                     "qwen3_5": "qwen35", "nemotron_h": "nemotron_h", "falcon_h1": "falcon-h1",
                     "qwen3_5_moe": "qwen35moe"}[p["architecture"]]
        self.n_layer = int(p["layers"])
        self.n_head = int(p["attention_heads"])
        self.n_head_kv = int(p["kv_heads"])
        self.head_dim = self.v_head_dim = int(p["head_dim"])
        self.n_embd = int(p["hidden_size"])
        self.n_ff = int(p.get("intermediate_size") or 0)  # a MoE without dense layers has none
        self.n_vocab = int(p["vocab_size"])
        self.tied = bool(p.get("tie_embeddings"))
        self.n_ctx_train = int(p["max_context"])
        self.state = p["state"]
        self.mtp = 0  # MTP blocks to write after the trunk (--mtp: the profile's mtp_layers)
        self.tensors, self.kv = [], []

    # -- shared pieces (one per tensor group; each builder lists only what differs) ------------------------
    def hparams(self, rows):
        """(key, value, kind) rows under the architecture's prefix."""
        for key, val, kind in rows:
            self.k(f"{self.arch}.{key}", val, kind)

    def common_hparams(self, feed_forward, head_count_kv):
        return [("context_length", self.n_ctx_train, "u32"), ("embedding_length", self.n_embd, "u32"),
                ("block_count", self.n_layer, "u32"), *feed_forward,
                ("attention.head_count", self.n_head, "u32"), ("attention.head_count_kv", *head_count_kv)]

    def ssm_hparams(self, inner):
        """The ssm.* keys a Mamba2 / Gated DeltaNet loader reads (conversion/mamba.py, qwen.py)."""
        s = self.state
        if s["mixer"] == "gated_deltanet":  # llama.cpp reads key heads as groups, value heads as dt rank
            size, rank, groups = s["linear_key_head_dim"], s["linear_value_heads"], s["linear_key_heads"]
        else:
            size, rank, groups = s["ssm_state_size"], s["ssm_heads"], s["ssm_groups"]
        return [("ssm.conv_kernel", s["conv_kernel_tokens"], "u32"), ("ssm.inner_size", inner, "u32"),
                ("ssm.state_size", size, "u32"), ("ssm.time_step_rank", rank, "u32"),
                ("ssm.group_count", groups, "u32")]

    def head_kv(self):
        """attention.head_count_kv as a per-layer array, 0 on the layers without attention (lfm2, granite, nemotron:
        ``is_recr_impl[il] = n_head_kv(il) == 0``)."""
        skip = set(self.state["layers"]) | set(self.state.get("feedforward_layers", []))
        return [0 if i in skip else self.n_head_kv for i in range(self.n_layer)], "arr"

    def embeddings(self, norm="output_norm.weight"):
        e = self.n_embd
        self.t("token_embd.weight", [e, self.n_vocab])
        self.t(norm, [e])
        if not self.tied:
            self.t("output.weight", [e, self.n_vocab])

    def attention(self, b, q_width=None):
        e, hd = self.n_embd, self.head_dim
        self.t(f"{b}.attn_q.weight", [e, q_width or self.n_head * hd])
        self.t(f"{b}.attn_k.weight", [e, self.n_head_kv * hd])
        self.t(f"{b}.attn_v.weight", [e, self.n_head_kv * hd])
        self.t(f"{b}.attn_output.weight", [self.n_head * hd, e])

    def qk_norms(self, b):
        self.t(f"{b}.attn_q_norm.weight", [self.head_dim])
        self.t(f"{b}.attn_k_norm.weight", [self.head_dim])

    def mlp(self, b, gate=True):
        e, f = self.n_embd, self.n_ff
        if gate:
            self.t(f"{b}.ffn_gate.weight", [e, f])
        self.t(f"{b}.ffn_up.weight", [e, f])
        self.t(f"{b}.ffn_down.weight", [f, e])

    def mamba2(self, b, gated_norm=True):
        """conversion/mamba.py Mamba2Model.modify_tensors: in_proj (z, x, B, C, dt), conv1d squeezed (F32), its bias,
        dt bias, A and D as [1, heads] (no ".weight"), the grouped norm [d_inner / g, g], out_proj."""
        s, e = self.state, self.n_embd
        nh, g, ds, k = s["ssm_heads"], s["ssm_groups"], s["ssm_state_size"], s["conv_kernel_tokens"]
        di = nh * s["ssm_head_dim"]
        self.t(f"{b}.ssm_in.weight", [e, 2 * di + 2 * g * ds + nh])
        self.t(f"{b}.ssm_conv1d.weight", [k, di + 2 * g * ds])
        self.t(f"{b}.ssm_conv1d.bias", [di + 2 * g * ds])
        self.t(f"{b}.ssm_dt.bias", [nh])
        self.t(f"{b}.ssm_a", [1, nh], F32)
        self.t(f"{b}.ssm_d", [1, nh], F32)
        if gated_norm:
            self.t(f"{b}.ssm_norm.weight", [di // g, g])
        self.t(f"{b}.ssm_out.weight", [di, e])

    # -- architectures ---------------------------------------------------------------------------------------
    def build_lfm2(self, moe=False):
        """src/models/lfm2.cpp :: load_arch_tensors; conversion/lfm2.py squeezes conv.conv to [L_cache, hidden]."""
        s, e, p = self.state, self.n_embd, self.prof
        recurrent = set(s["layers"])
        moe_rows = []
        if moe:  # conversion/lfm2.py LFM2MoeModel.set_gguf_parameters (expert_count / used from TextModel)
            moe_rows = [("expert_count", int(p["experts"]), "u32"),
                        ("expert_used_count", int(p["experts_per_token"]), "u32"),
                        ("expert_feed_forward_length", int(p["expert_intermediate_size"]), "u32"),
                        ("leading_dense_block_count", int(p["dense_layers"]), "u32"),
                        ("expert_gating_func", 2, "u32")]  # gguf ExpertGatingFuncType.SIGMOID
        self.hparams(self.common_hparams([("feed_forward_length", self.n_ff, "u32")], self.head_kv()) + [
            ("attention.layer_norm_rms_epsilon", 1e-5, "f32"), ("rope.freq_base", 1_000_000.0, "f32"),
            ("shortconv.l_cache", int(s["conv_kernel_tokens"]), "u32"), ("vocab_size", self.n_vocab, "u32")]
            + moe_rows)
        self.embeddings("token_embd_norm.weight")  # LLM_TENSOR_OUTPUT_NORM_LFM2
        for i in range(self.n_layer):
            b = f"blk.{i}"
            self.t(f"{b}.attn_norm.weight", [e])
            self.t(f"{b}.ffn_norm.weight", [e])
            if moe and i >= int(p["dense_layers"]):
                # the router F32 (make_gguf.ALWAYS_F32), the stacked experts, the expert bias (F32: its name
                # "exp_probs_b.bias" does not end in ".weight"; filter_tensors renames expert_bias)
                n_exp, f_exp = int(p["experts"]), int(p["expert_intermediate_size"])
                self.t(f"{b}.ffn_gate_inp.weight", [e, n_exp])
                self.t(f"{b}.ffn_gate_exps.weight", [e, f_exp, n_exp])
                self.t(f"{b}.ffn_up_exps.weight", [e, f_exp, n_exp])
                self.t(f"{b}.ffn_down_exps.weight", [f_exp, e, n_exp])
                self.t(f"{b}.exp_probs_b.bias", [n_exp])
            else:
                self.mlp(b)
            if i in recurrent:
                self.t(f"{b}.shortconv.conv.weight", [int(s["conv_kernel_tokens"]), e])  # SHORTCONV_CONV: F32
                self.t(f"{b}.shortconv.in_proj.weight", [e, 3 * e])
                self.t(f"{b}.shortconv.out_proj.weight", [e, e])
            else:
                self.qk_norms(b)
                self.attention(b)

    def build_lfm2moe(self):
        """src/models/lfm2moe.cpp :: load_arch_hparams / load_arch_tensors: lfm2's layers, a dense MLP below
        leading_dense_block_count, then the router, expert stacks and exp_probs_b (sigmoid gating)."""
        self.build_lfm2(moe=True)

    def build_granitehybrid(self):
        """src/models/granite-hybrid.cpp :: load_arch_hparams / load_arch_tensors (dense: expert_count 0; with
        experts, as conversion/granite.py GraniteMoeModel writes them: feed_forward_length the experts' width,
        expert_shared_feed_forward_length the shared MLP's, the router F32, ffn_*_exps and ffn_*_shexp)."""
        s, e, p = self.state, self.n_embd, self.prof
        n_exp, used = int(p.get("experts") or 0), int(p.get("experts_per_token") or 0)
        if n_exp:
            self.n_ff = int(p["expert_intermediate_size"])
        f_sh = self.n_ff * int(p.get("shared_experts") or 0)
        recurrent = set(s["layers"])
        self.hparams(self.common_hparams([("feed_forward_length", self.n_ff, "u32")], self.head_kv()) + [
            ("attention.layer_norm_rms_epsilon", 1e-5, "f32"), ("rope.freq_base", 10000.0, "f32"),
            *self.ssm_hparams(s["ssm_heads"] * s["ssm_head_dim"]), ("expert_count", n_exp, "u32"),
            ("expert_used_count", used, "u32"), ("vocab_size", self.n_vocab, "u32")]
            + ([("expert_shared_feed_forward_length", f_sh, "u32")] if n_exp and f_sh else []))
        self.embeddings()
        for i in range(self.n_layer):
            b = f"blk.{i}"
            self.t(f"{b}.attn_norm.weight", [e])
            if i in recurrent:
                self.mamba2(b)
            else:
                self.attention(b)
            self.t(f"{b}.ffn_norm.weight", [e])
            if n_exp:
                self.t(f"{b}.ffn_gate_inp.weight", [e, n_exp], F32)
                self.t(f"{b}.ffn_gate_exps.weight", [e, self.n_ff, n_exp])
                self.t(f"{b}.ffn_up_exps.weight", [e, self.n_ff, n_exp])
                self.t(f"{b}.ffn_down_exps.weight", [self.n_ff, e, n_exp])
                if f_sh:
                    self.t(f"{b}.ffn_gate_shexp.weight", [e, f_sh])
                    self.t(f"{b}.ffn_up_shexp.weight", [e, f_sh])
                    self.t(f"{b}.ffn_down_shexp.weight", [f_sh, e])
                continue
            self.mlp(b)

    def build_qwen35moe(self):
        """src/models/qwen35moe.cpp :: load_arch_hparams / load_arch_tensors (and load_block_mtp): qwen35's layers with a
        MoE block (router, routed experts, the shared expert and its gate) in place of the dense MLP."""
        self.build_qwen35(moe=True)

    def build_qwen35(self, moe=False):
        """src/models/qwen35.cpp :: load_arch_hparams / load_arch_tensors (and load_block_mtp with --mtp); llama.cpp reads value
        heads of ssm.state_size, so the profile's key and value head dims must be equal."""
        s, p, e, hd = self.state, self.prof, self.n_embd, self.head_dim
        assert s["linear_key_head_dim"] == s["linear_value_head_dim"]
        recurrent = set(s["layers"])
        nk, nv, dk = s["linear_key_heads"], s["linear_value_heads"], s["linear_key_head_dim"]
        kd, vd = nk * dk, nv * dk
        conv = 2 * kd + vd
        ff = ([("expert_count", int(p["experts"]), "u32"), ("expert_used_count", int(p["experts_per_token"]), "u32"),
               ("expert_feed_forward_length", int(p["expert_intermediate_size"]), "u32"),
               ("expert_shared_feed_forward_length", int(p["expert_intermediate_size"]) * int(p["shared_experts"]),
                "u32")] if moe else [("feed_forward_length", self.n_ff, "u32")])
        # conversion/qwen.py _QwenMtpMixin: block_count counts the MTP blocks, flagged non-recurrent, and
        # nextn_predict_layers says how many (Qwen3NextModel.set_gguf_parameters: recurrent += [False] * n_mtp)
        rows = self.common_hparams(ff, (self.n_head_kv, "u32"))
        rows = [("block_count", self.n_layer + self.mtp, "u32") if r[0] == "block_count" else r for r in rows]
        if self.mtp:
            rows.append(("nextn_predict_layers", self.mtp, "u32"))
        self.hparams(rows + [
            ("attention.key_length", hd, "u32"), ("attention.value_length", hd, "u32"),
            ("attention.layer_norm_rms_epsilon", 1e-6, "f32"), ("rope.freq_base", 1e7, "f32"),
            ("rope.dimension_count", hd // 4, "u32"), ("rope.dimension_sections", [11, 11, 10, 0], "arr"),
            ("attention.recurrent_layers", [i in recurrent for i in range(self.n_layer)] + [False] * self.mtp, "arr"),
            *self.ssm_hparams(vd), ("vocab_size", self.n_vocab, "u32")])
        self.embeddings()
        for i in range(self.n_layer + self.mtp):
            b = f"blk.{i}"
            self.t(f"{b}.attn_norm.weight", [e])
            self.t(f"{b}.post_attention_norm.weight", [e])
            if i >= self.n_layer:
                # the MTP block (qwen35.cpp / qwen35moe.cpp load_block_mtp): a full-attention block plus the
                # converter's renamed mtp.fc → nextn.eh_proj [2h, h], mtp.pre_fc_norm_embedding / _hidden →
                # nextn.enorm / hnorm, mtp.norm → nextn.shared_head_norm (no embed_tokens or shared_head_head:
                # Qwen3.5's MTP uses the trunk's token_embd and output)
                self.t(f"{b}.nextn.eh_proj.weight", [2 * e, e])
                self.t(f"{b}.nextn.enorm.weight", [e], F32)
                self.t(f"{b}.nextn.hnorm.weight", [e], F32)
                self.t(f"{b}.nextn.shared_head_norm.weight", [e], F32)
            if i in recurrent:
                self.t(f"{b}.attn_qkv.weight", [e, conv])
                self.t(f"{b}.attn_gate.weight", [e, vd])
                self.t(f"{b}.ssm_conv1d.weight", [s["conv_kernel_tokens"], conv])  # SSM_CONV1D: F32
                self.t(f"{b}.ssm_dt.bias", [nv])
                self.t(f"{b}.ssm_a", [nv], F32)
                self.t(f"{b}.ssm_beta.weight", [e, nv])
                self.t(f"{b}.ssm_alpha.weight", [e, nv])
                self.t(f"{b}.ssm_norm.weight", [dk])
                self.t(f"{b}.ssm_out.weight", [vd, e])
            else:
                self.attention(b, q_width=self.n_head * hd * 2)  # the query and its output gate
                self.qk_norms(b)
            if moe:  # the converter writes the router F32 (make_gguf.ALWAYS_F32), experts as 3-D tensors
                n_exp, f_exp = int(p["experts"]), int(p["expert_intermediate_size"])
                f_sh = f_exp * int(p["shared_experts"])
                self.t(f"{b}.ffn_gate_inp.weight", [e, n_exp])
                self.t(f"{b}.ffn_gate_exps.weight", [e, f_exp, n_exp])
                self.t(f"{b}.ffn_up_exps.weight", [e, f_exp, n_exp])
                self.t(f"{b}.ffn_down_exps.weight", [f_exp, e, n_exp])
                self.t(f"{b}.ffn_gate_inp_shexp.weight", [e])
                self.t(f"{b}.ffn_gate_shexp.weight", [e, f_sh])
                self.t(f"{b}.ffn_up_shexp.weight", [e, f_sh])
                self.t(f"{b}.ffn_down_shexp.weight", [f_sh, e])
                continue
            self.mlp(b)

    def build_nemotron_h(self):
        """src/models/nemotron-h.cpp :: load_arch_hparams / load_arch_tensors (dense): a Mamba2 layer has neither
        KV heads nor feed-forward length, an attention layer KV heads, an MLP-only layer a feed-forward length."""
        s, e, hd = self.state, self.n_embd, self.head_dim
        recurrent, mlp = set(s["layers"]), set(s.get("feedforward_layers", []))
        self.hparams(self.common_hparams(
            [("feed_forward_length", [self.n_ff if i in mlp else 0 for i in range(self.n_layer)], "arr")],
            self.head_kv()) + [
            ("attention.key_length", hd, "u32"), ("attention.value_length", hd, "u32"),
            ("attention.layer_norm_epsilon", 1e-5, "f32"), ("attention.layer_norm_rms_epsilon", 1e-5, "f32"),
            ("rope.freq_base", 10000.0, "f32"), *self.ssm_hparams(s["ssm_heads"] * s["ssm_head_dim"]),
            ("vocab_size", self.n_vocab, "u32")])
        self.embeddings()
        for i in range(self.n_layer):
            b = f"blk.{i}"
            self.t(f"{b}.attn_norm.weight", [e])
            if i in recurrent:
                self.mamba2(b)
            elif i in mlp:  # up + down (squared ReLU, no gate), down first as the converter writes them
                self.t(f"{b}.ffn_down.weight", [self.n_ff, e])
                self.t(f"{b}.ffn_up.weight", [e, self.n_ff])
            else:
                self.attention(b)

    def build_falcon_h1(self):
        """src/models/falcon-h1.cpp :: load_arch_hparams / load_arch_tensors: every layer has the Mamba2 mixer, the
        attention and the MLP (convert_hf_to_gguf's FalconH1Model writes one head_count_kv, key_length and
        value_length head_dim, ssm.inner_size mamba_d_ssm); no ssm_norm (mamba_rms_norm false), untied output."""
        s, e, hd = self.state, self.n_embd, self.head_dim
        self.hparams(self.common_hparams([("feed_forward_length", self.n_ff, "u32")], (self.n_head_kv, "u32")) + [
            ("attention.key_length", hd, "u32"), ("attention.value_length", hd, "u32"),
            ("attention.layer_norm_rms_epsilon", 1e-5, "f32"), ("rope.freq_base", 1e11, "f32"),
            *self.ssm_hparams(s["ssm_heads"] * s["ssm_head_dim"]), ("vocab_size", self.n_vocab, "u32")])
        self.embeddings()
        for i in range(self.n_layer):
            b = f"blk.{i}"
            self.mamba2(b, gated_norm=False)
            self.attention(b)
            self.t(f"{b}.attn_norm.weight", [e])
            # load_arch_tensors asks for tn(LLM_TENSOR_FFN_NORM, i): gguf-py maps the checkpoint's whole
            # pre_ff_layernorm.weight to FFN_PRE_NORM, "blk.N.ffn_norm" without a ".weight" suffix
            self.t(f"{b}.ffn_norm", [e], F32)
            self.mlp(b)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="+")
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--mtp", action="store_true",
                    help="also write the profile's mtp_layers MTP blocks (qwen35/qwen35moe), as the converter does "
                         "without --no-mtp; the file is named NAME-mtp-F16.gguf")
    a = ap.parse_args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    for m in a.models:
        spec = HybridSpec(m)
        if a.mtp:
            spec.mtp = int(spec.prof.get("mtp_layers") or 0)
            if not spec.mtp or spec.arch not in ("qwen35", "qwen35moe"):
                raise SystemExit(f"{spec.model}: no mtp_layers in its profile, or not qwen35/qwen35moe")
        getattr(spec, "build_" + spec.arch.replace("-", "_"))()
        name = f"{spec.model}-mtp-F16.gguf" if spec.mtp else f"{spec.model}-F16.gguf"
        print(json.dumps(make_gguf.write(spec, a.out / name)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
