"""The state layers of a hybrid Hugging Face config: which layers keep a fixed-size state, their widths, and the
parameters of a dense hybrid.

Five model types (transformers 5.17.0 ``models/<type>/configuration_<type>.py`` and ``modeling_<type>.py``):

* ``lfm2``, ``lfm2_moe``: ``layer_types`` (``conv`` / ``full_attention``, or ``full_attn_idxs``), a short
  convolution over ``hidden_size`` channels with ``conv_L_cache`` taps (``Lfm2ShortConv``, ``Lfm2MoeShortConv``;
  LFM2-MoE's first ``num_dense_layers`` have a dense MLP, the others a ``Lfm2MoeSparseMoeBlock``).
* ``qwen3_5`` / ``qwen3_5_text`` / ``qwen3_5_moe`` / ``qwen3_5_moe_text`` / ``qwen3_next``: ``layer_types`` (``linear_attention`` / ``full_attention``, or
  every ``full_attention_interval``-th layer), Gated DeltaNet with ``linear_num_key_heads ×
  linear_key_head_dim`` keys, ``linear_num_value_heads × linear_value_head_dim`` values and a
  ``linear_conv_kernel_dim`` conv (``Qwen3_5GatedDeltaNet``).
* ``granitemoehybrid``: ``layer_types`` (``mamba`` / ``attention``), Mamba2 with ``mamba_n_heads × mamba_d_head``,
  ``mamba_n_groups``, ``mamba_d_state``, ``mamba_d_conv`` (``GraniteMoeHybridMambaLayer``).
* ``nemotron_h``: ``hybrid_override_pattern`` (``M`` Mamba2, ``*`` attention, ``-`` MLP only, ``E`` MoE) or
  ``layer_types``, Mamba2 with ``mamba_num_heads × mamba_head_dim``, ``n_groups``, ``ssm_state_size``,
  ``conv_kernel`` (``NemotronHMamba2Mixer``).

* ``falcon_h1``: every layer runs attention and Mamba2 side by side (``layers_block_type`` is ``hybrid`` on each:
  ``FalconH1DecoderLayer`` builds ``self.mamba`` and ``self.self_attn``), Mamba2 of ``mamba_n_heads ×
  mamba_d_head`` (``auto``: ``d_inner / mamba_n_heads``), ``d_inner = mamba_d_ssm`` (or ``mamba_expand ×
  hidden_size``), ``mamba_n_groups``, ``mamba_d_state``, ``mamba_d_conv`` (``FalconH1Mixer``): a profile whose
  ``state.layers`` are every layer, with ``parallel_attention``.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvplan.errors import ProfileError

STATE_MODEL_TYPES = ("lfm2", "lfm2_moe", "qwen3_5", "qwen3_5_text", "qwen3_5_moe", "qwen3_5_moe_text", "qwen3_next",
                     "granitemoehybrid", "nemotron_h", "falcon_h1")
_QWEN3_5 = ("qwen3_5", "qwen3_5_text", "qwen3_5_moe", "qwen3_5_moe_text")
_NEMOTRON_KINDS = {"M": "mamba", "*": "attention", "-": "mlp", "E": "moe"}
_NEMOTRON_TYPES = {"mamba": "mamba", "linear_attention": "mamba", "attention": "attention",
                   "full_attention": "attention", "mlp": "mlp", "moe": "moe"}


@dataclass(frozen=True)
class HybridLayout:
    """A hybrid config as a profile's ``state`` mapping holds it, plus what the parameter count needs."""

    state: dict  # the profile's state mapping
    note: str  # where each figure came from (sources.state)
    kinds: tuple[str, ...]  # per layer: attention | state | parallel (attention and state) | mlp | moe
    moe: bool  # experts somewhere: the weights are not derived here


def hybrid_layout(c: dict, model_type: str, layers: int, label: str) -> HybridLayout:
    """The state layers of a ``model_type`` in :data:`STATE_MODEL_TYPES` (a ProfileError naming the keys a config
    lacks or the layout the profile cannot hold)."""
    missing: list[str] = []

    def count(key: str, default=None) -> int:
        value = c.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            missing.append(key)
            return 0
        return value

    if model_type in ("lfm2", "lfm2_moe"):
        kinds = _lfm2_kinds(c, layers, label)
        state = {"mixer": "short_conv", "conv_kernel_tokens": count("conv_L_cache", 3),
                 "conv_channels": count("hidden_size")}
        note = "layer_types / full_attn_idxs (conv layers), conv_L_cache taps over hidden_size channels"
        moe = model_type == "lfm2_moe"
    elif model_type in (*_QWEN3_5, "qwen3_next"):
        kinds = _typed_kinds(c, layers, label, {"linear_attention": "state", "full_attention": "attention"},
                             interval_key="full_attention_interval")
        state = {"mixer": "gated_deltanet", "conv_kernel_tokens": count("linear_conv_kernel_dim", 4),
                 "linear_key_heads": count("linear_num_key_heads", 16),
                 "linear_key_head_dim": count("linear_key_head_dim", 128),
                 "linear_value_heads": count("linear_num_value_heads", 32),
                 "linear_value_head_dim": count("linear_value_head_dim", 128)}
        note = ("layer_types (linear_attention layers), linear_conv_kernel_dim, linear_num_key_heads × "
                "linear_key_head_dim, linear_num_value_heads × linear_value_head_dim")
        moe = model_type == "qwen3_next" or bool(c.get("num_experts"))
    elif model_type == "granitemoehybrid":
        kinds = _typed_kinds(c, layers, label, {"mamba": "state", "attention": "attention"})
        state = {"mixer": "mamba2", "conv_kernel_tokens": count("mamba_d_conv", 4),
                 "ssm_heads": count("mamba_n_heads", 128), "ssm_head_dim": count("mamba_d_head"),
                 "ssm_groups": count("mamba_n_groups", 1), "ssm_state_size": count("mamba_d_state", 256)}
        note = "layer_types (mamba layers), mamba_d_conv, mamba_n_heads × mamba_d_head, mamba_n_groups, mamba_d_state"
        moe = bool(c.get("num_local_experts"))
    elif model_type == "nemotron_h":
        kinds = _nemotron_kinds(c, layers, label)
        state = {"mixer": "mamba2", "conv_kernel_tokens": count("conv_kernel", count("mamba_d_conv", 4)),
                 "ssm_heads": count("mamba_num_heads", 128), "ssm_head_dim": count("mamba_head_dim", 64),
                 "ssm_groups": count("n_groups", c.get("mamba_n_groups", 8)),
                 "ssm_state_size": count("ssm_state_size", 128)}
        note = ("hybrid_override_pattern (M Mamba2, * attention, - MLP), conv_kernel, mamba_num_heads × "
                "mamba_head_dim, n_groups, ssm_state_size")
        missing[:] = [k for k in missing if not (k == "mamba_d_conv" and c.get("conv_kernel"))]
        moe = "moe" in kinds
    elif model_type == "falcon_h1":
        kinds = ["parallel"] * layers
        heads = count("mamba_n_heads", 128)
        if "mamba_d_ssm" in c and c["mamba_d_ssm"] is None:  # FalconH1Mixer: mamba_expand × hidden_size
            inner = count("mamba_expand", 2) * count("hidden_size")
        else:  # FalconH1Config's default 1024 when the key is absent
            inner = count("mamba_d_ssm", 1024)
        head_dim = c.get("mamba_d_head", "auto")
        if head_dim == "auto" and heads:
            head_dim = inner // heads
        elif not isinstance(head_dim, int) or isinstance(head_dim, bool) or head_dim <= 0:
            missing.append("mamba_d_head")
            head_dim = 0
        if heads and inner and head_dim and heads * head_dim != inner:
            raise ProfileError([f"{label}: mamba_n_heads {heads} × mamba_d_head {head_dim} is not the Mamba2 width "
                                f"mamba_d_ssm {inner} (FalconH1Config.validate_architecture refuses it too)"])
        state = {"mixer": "mamba2", "conv_kernel_tokens": count("mamba_d_conv", 4), "ssm_heads": heads,
                 "ssm_head_dim": head_dim, "ssm_groups": count("mamba_n_groups", 1),
                 "ssm_state_size": count("mamba_d_state", 256), "parallel_attention": True}
        note = ("every layer hybrid (FalconH1DecoderLayer: attention and Mamba2 side by side), mamba_d_conv, "
                "mamba_n_heads × mamba_d_head = mamba_d_ssm, mamba_n_groups, mamba_d_state")
        moe = False
    else:
        raise ProfileError([f"{label}: model_type {model_type!r} has no state-layer reader"])
    if missing:
        raise ProfileError([f"{label}: cannot read the state layers of this {model_type} config: missing or not a "
                            f"positive whole number: {', '.join(dict.fromkeys(missing))}"])
    state["layers"] = [i for i, k in enumerate(kinds) if k in ("state", "parallel")]
    if any(k in ("mlp", "moe") for k in kinds):
        state["feedforward_layers"] = [i for i, k in enumerate(kinds) if k in ("mlp", "moe")]
    if "attention" not in kinds and "parallel" not in kinds:
        raise ProfileError([f"{label}: every layer of this {model_type} config keeps a state and none attends: "
                            "kvplan plans hybrids with at least one attention layer"])
    return HybridLayout(state, note, tuple(kinds), moe)


def _lfm2_kinds(c: dict, layers: int, label: str) -> list[str]:
    types = c.get("layer_types")
    if isinstance(types, list):
        return _checked([{"conv": "state", "full_attention": "attention"}.get(t) for t in types], types, layers, label)
    idxs = c.get("full_attn_idxs")
    if isinstance(idxs, list) and all(isinstance(i, int) and 0 <= i < layers for i in idxs):
        return ["attention" if i in idxs else "state" for i in range(layers)]
    raise ProfileError([f"{label}: an lfm2 config needs layer_types or full_attn_idxs to say which layers attend"])


def _typed_kinds(c: dict, layers: int, label: str, names: dict, interval_key: str | None = None) -> list[str]:
    types = c.get("layer_types")
    if isinstance(types, list):
        return _checked([names.get(t) for t in types], types, layers, label)
    if interval_key:
        interval = c.get(interval_key, 4)
        if isinstance(interval, int) and not isinstance(interval, bool) and interval > 0:
            return ["attention" if (i + 1) % interval == 0 else "state" for i in range(layers)]
    raise ProfileError([f"{label}: this config needs layer_types to say which layers keep a state"])


def _nemotron_kinds(c: dict, layers: int, label: str) -> list[str]:
    pattern = c.get("hybrid_override_pattern")
    if isinstance(pattern, str):
        kinds = [_NEMOTRON_KINDS.get(ch) for ch in pattern]
        return _checked([{"mamba": "state"}.get(k, k) for k in kinds], list(pattern), layers, label)
    types = c.get("layer_types") or c.get("layers_block_type")
    if isinstance(types, list):
        kinds = [_NEMOTRON_TYPES.get(t) for t in types]
        return _checked([{"mamba": "state"}.get(k, k) for k in kinds], types, layers, label)
    raise ProfileError([f"{label}: a nemotron_h config needs hybrid_override_pattern or layer_types"])


def _checked(kinds: list, raw: list, layers: int, label: str) -> list[str]:
    unknown = sorted({str(r) for k, r in zip(kinds, raw) if k is None})
    if unknown:
        raise ProfileError([f"{label}: layer kinds kvplan does not know: {', '.join(unknown)}"])
    if len(kinds) != layers:
        raise ProfileError([f"{label}: {len(kinds)} layer kinds for num_hidden_layers {layers}"])
    return kinds


def lfm2_mlp_width(c: dict) -> int:
    """LFM2's MLP width as ``Lfm2MLP.__init__`` computes it: ``block_ff_dim`` (or ``intermediate_size``), with
    ``block_auto_adjust_ff_dim`` taken to ``int(2 · ff / 3)``, times ``block_ffn_dim_multiplier``, rounded up to a
    multiple of ``block_multiple_of`` (LFM2-1.2B: 12,288 → 8,192) [values]."""
    ff = int(c.get("block_ff_dim") or c.get("intermediate_size"))
    if c.get("block_auto_adjust_ff_dim", True):
        ff = int(2 * ff / 3)
        if c.get("block_ffn_dim_multiplier") is not None:
            ff = int(float(c["block_ffn_dim_multiplier"]) * ff)
        mult = int(c.get("block_multiple_of", 256))
        ff = mult * ((ff + mult - 1) // mult)
    return ff


def _moe_block(moe, h: int) -> tuple[int, int, str]:
    """(parameters, parameters one token uses, the arithmetic) of one MoE block of ``moe``
    (:class:`~kvplan.importers.hf_arch.MoeLayout`): router, routed and shared experts, the extra terms."""
    expert = 3 * h * moe.expert_intermediate_size + moe.per_expert_extra
    always = moe.experts * h + moe.extra_per_layer
    total = (moe.experts + moe.shared_experts) * expert + always
    active = (moe.experts_per_token + moe.shared_experts) * expert + always
    extra = f" + {moe.extra_what}" if moe.extra_what else ""
    what = (f"MoE ({moe.experts} routed + {moe.shared_experts} shared) experts × 3×{h}×{moe.expert_intermediate_size} "
            f"+ router {moe.experts}×{h}{extra} = {total:,}, active ({moe.experts_per_token} + {moe.shared_experts}) "
            f"experts + router{extra} = {active:,}")
    return total, active, what


def hybrid_params(c: dict, model_type: str, layout: HybridLayout, heads: int, kv_heads: int, head_dim: int,
                  moe=None) -> tuple[int, str] | tuple[int, int, str]:
    """The parameter count of a dense hybrid from its shapes, and the arithmetic (for sources.params): embeddings,
    each layer's mixer (attention, or the state layer's projections, conv and gates), MLP and norms, the final
    norm. The weights of the layer each transformers class builds (``modeling_<type>.py``), checked against
    ``sum(p.numel())`` of the meta-device model (tests/unit/test_hf_state.py). With ``moe`` (a
    :class:`~kvplan.importers.hf_arch.MoeLayout`: Qwen3.5-MoE's block on every layer) ``(total, active, text)``."""
    active_mlp = None
    h, vocab = int(c["hidden_size"]), int(c["vocab_size"])
    tied = bool(c.get("tie_word_embeddings"))
    s = layout.state
    embed = vocab * h
    qkv_o = h * heads * head_dim + 2 * h * kv_heads * head_dim + heads * head_dim * h
    if model_type == "lfm2_moe":  # dense MLPs (intermediate_size, not adjusted) then MoE blocks: by layer index
        k, ff = s["conv_kernel_tokens"], int(c["intermediate_size"])
        mixer = {"state": 3 * h * h + h * k + h * h + (4 * h if c.get("conv_bias") else 0),
                 "attention": qkv_o + 2 * head_dim}
        moe_mlp, active_mlp, moe_what = _moe_block(moe, h)
        dense = moe.dense_layers
        mlps = [3 * h * ff if i < dense else moe_mlp for i in range(len(layout.kinds))]
        total = embed * (1 if tied else 2) + h + sum(mixer[kind] + 2 * h + m for kind, m in zip(layout.kinds, mlps))
        active = total - (len(layout.kinds) - dense) * (moe_mlp - active_mlp)
        counts = {kind: layout.kinds.count(kind) for kind in ("state", "attention")}
        text = (f"derived from config: embeddings {vocab}×{h} = {embed:,}"
                f"{' (tied output layer)' if tied else f' + untied lm_head {embed:,}'}; short conv: in_proj 3×{h}² + "
                f"conv {h}×{k} + out_proj {h}² = {mixer['state']:,} ({counts['state']} layers); attention + q/k norms "
                f"{mixer['attention']:,} ({counts['attention']} layers); {dense} dense MLP layers 3×{h}×{ff}, "
                f"{len(layout.kinds) - dense} layers of {moe_what}; 2 norms per layer; embedding norm {h:,}; total "
                f"{total:,}, active {active:,} (embeddings included)")
        return total, active, text
    if model_type == "lfm2":
        k = s["conv_kernel_tokens"]
        ff = lfm2_mlp_width(c)
        mixer = {"state": 3 * h * h + h * k + h * h, "attention": qkv_o + 2 * head_dim}
        mlp, norms, final = 3 * h * ff, 2 * h, h
        what = f"short conv: in_proj 3×{h}² + conv {h}×{k} + out_proj {h}²; attention + q/k norms; MLP 3×{h}×{ff}"
    elif model_type in _QWEN3_5:
        kd, vd = s["linear_key_heads"] * s["linear_key_head_dim"], s["linear_value_heads"] * s["linear_value_head_dim"]
        conv = 2 * kd + vd
        nv = s["linear_value_heads"]
        gdn = h * conv + h * vd + 2 * h * nv + conv * s["conv_kernel_tokens"] + 2 * nv + s["linear_value_head_dim"] \
            + vd * h
        gated_q = h * heads * head_dim * 2 + 2 * h * kv_heads * head_dim + heads * head_dim * h + 2 * head_dim
        mixer = {"state": gdn, "attention": gated_q}
        norms, final = 2 * h, h
        what = (f"Gated DeltaNet: in_proj_qkv {h}×{conv}, in_proj_z {h}×{vd}, in_proj_b/a 2×{h}×{nv}, conv "
                f"{conv}×{s['conv_kernel_tokens']}, dt_bias + A_log 2×{nv}, norm {s['linear_value_head_dim']}, "
                f"out_proj {vd}×{h}; gated attention (q ×2) + q/k norms")
        if moe is None:
            inter = int(c["intermediate_size"])
            mlp = 3 * h * inter
            what += f"; MLP 3×{h}×{inter}"
        else:  # Qwen3_5MoeSparseMoeBlock on every layer: routed experts, the shared expert and its gate
            mlp, active_mlp, moe_what = _moe_block(moe, h)
            what += f"; {moe_what}"
    elif model_type in ("granitemoehybrid", "nemotron_h", "falcon_h1"):
        nh, hd, g, ds, k = s["ssm_heads"], s["ssm_head_dim"], s["ssm_groups"], s["ssm_state_size"], \
            s["conv_kernel_tokens"]
        di = nh * hd
        conv = di + 2 * g * ds
        proj_bias = bool(c.get("mamba_proj_bias", c.get("use_bias", False)))
        conv_bias = bool(c.get("mamba_conv_bias", c.get("use_conv_bias", True)))
        if model_type == "falcon_h1":  # FalconH1Mixer: the gated norm only with mamba_rms_norm, out_proj's bias
            # from projectors_bias
            norm = di if c.get("mamba_rms_norm", False) else 0
            out_bias = h if c.get("projectors_bias", False) else 0
        else:
            norm, out_bias = di, (h if proj_bias else 0)
        mamba = (h * (di + conv + nh) + (di + conv + nh if proj_bias else 0) + conv * k + (conv if conv_bias else 0)
                 + 3 * nh + norm + di * h + out_bias)
        bias = bool(c.get("attention_bias"))
        attn = qkv_o + ((heads + 2 * kv_heads) * head_dim + h if bias else 0)
        if model_type == "falcon_h1":
            inter = int(c["intermediate_size"])
            mlp_bias = 2 * inter + h if c.get("mlp_bias") else 0
            mixer = {"parallel": mamba + attn}
            mlp, norms, final = 3 * h * inter + mlp_bias, 2 * h, h
            what = (f"attention and Mamba2 side by side in every layer: Mamba2 (in_proj {h}×({di}+{conv}+{nh}), conv "
                    f"{conv}×{k}, dt_bias/A_log/D 3×{nh}{f', norm {di}' if norm else ''}, out_proj {di}×{h}) + attention; "
                    f"MLP 3×{h}×{inter}")
        elif model_type == "granitemoehybrid":
            mixer = {"state": mamba, "attention": attn}
            norms, final = 2 * h, h
            what = (f"Mamba2: in_proj {h}×({di}+{conv}+{nh}), conv {conv}×{k}, dt_bias/A_log/D 3×{nh}, norm {di}, "
                    f"out_proj {di}×{h}; attention")
            if moe is None:
                inter = int(c.get("shared_intermediate_size") or c["intermediate_size"])
                mlp = 3 * h * inter
                what += f"; shared MLP 3×{h}×{inter}"
            else:  # every layer: the routed experts and router (block_sparse_moe) plus the shared MLP
                mlp, active_mlp, moe_what = _moe_block(moe, h)
                what += f"; {moe_what} (the shared MLP {c.get('shared_intermediate_size')} wide as shared experts)"
        else:
            inter = int(c["intermediate_size"])
            mlp_only = 2 * h * inter + (inter + h if c.get("mlp_bias") else 0)
            mixer = {"state": mamba, "attention": attn, "mlp": mlp_only}
            mlp, norms, final = 0, h, h
            what = (f"one block per layer: Mamba2 (in_proj {h}×({di}+{conv}+{nh}), conv {conv}×{k}, dt_bias/A_log/D "
                    f"3×{nh}, norm {di}, out_proj {di}×{h}) | attention | MLP up + down 2×{h}×{inter}; one norm")
    else:
        raise ProfileError([f"model_type {model_type!r}: no parameter count for its layers"])
    counts = {kind: layout.kinds.count(kind) for kind in set(layout.kinds)}
    total = embed * (1 if tied else 2) + final
    total += sum(n * (mixer[kind] + mlp + norms) for kind, n in counts.items())
    per = ", ".join(f"{n} {kind} layers × {mixer[kind] + mlp + norms:,}" for kind, n in sorted(counts.items()))
    text = (f"derived from config: embeddings {vocab}×{h} = {embed:,}"
            f"{' (tied output layer)' if tied else f' + untied lm_head {embed:,}'}; {what}; {per}; final norm "
            f"{final:,}; total {total:,}")
    if active_mlp is None:
        return total, text
    active = total - len(layout.kinds) * (mlp - active_mlp)
    text += f", active {active:,} (embeddings included)"
    return total, active, text
