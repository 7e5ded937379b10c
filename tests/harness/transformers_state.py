#!/usr/bin/env python3
"""Measure the cache Hugging Face transformers really returns for a hybrid model with state layers.

Opt-in harness (not run by CI): it needs torch and transformers, which kvplan does not depend on.
Run it in a venv of its own (tests/harness/README.md) and commit the JSON it writes.

For a kvplan model profile with a ``state`` mapping (lfm2-1.2b, …) it writes the model's config from the
profile's own figures (layer types, heads, head dims, conv kernel, SSM / linear-attention widths: every
figure that shapes the cache or the state, hidden_size included — it is the conv's channels in LFM2 and
Mamba2's d_inner comes from it), shrinks only what never reaches the cache (vocabulary, MLP width), builds the
model with random weights in each dtype, runs a prefill of N − 1 tokens and one decode step with
``use_cache=True``, and records the class of the returned cache, the class of each cache layer and every tensor
it holds (shape, dtype, ``numel × element_size``).

Usage:
    /tmp/tfvenv/bin/python tests/harness/transformers_state.py --profile lfm2-1.2b \
        [--dtypes bfloat16 float32] [--lengths 16 512] [--out FILE.json]
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
SHRUNK = {"vocab_size": 512, "intermediate_size": 256}


def config_of(profile: dict) -> dict:
    """The HF config fields of a kvplan hybrid profile (those that shape the cache are the profile's)."""
    state = profile["state"]
    layers = profile["layers"]
    arch = profile["architecture"]
    if arch == "qwen3_5":  # the multimodal checkpoint's profile prices its text model: write that model's config
        arch = "qwen3_5_text"
    common = {"hidden_size": profile["hidden_size"], "num_hidden_layers": layers,
              "num_attention_heads": profile["attention_heads"], "num_key_value_heads": profile["kv_heads"],
              "max_position_embeddings": profile.get("max_context", 4096), **SHRUNK}
    if arch == "lfm2":
        types = ["conv" if i in state["layers"] else "full_attention" for i in range(layers)]
        return {"model_type": "lfm2", **common, "layer_types": types, "conv_L_cache": state["conv_kernel_tokens"],
                "block_ff_dim": SHRUNK["intermediate_size"], "block_auto_adjust_ff_dim": False, "conv_bias": False}
    if arch in ("qwen3_5_text", "qwen3_next"):
        types = ["linear_attention" if i in state["layers"] else "full_attention" for i in range(layers)]
        return {"model_type": arch, **common, "layer_types": types, "head_dim": profile["head_dim"],
                "linear_conv_kernel_dim": state["conv_kernel_tokens"],
                "linear_num_key_heads": state["linear_key_heads"], "linear_key_head_dim": state["linear_key_head_dim"],
                "linear_num_value_heads": state["linear_value_heads"],
                "linear_value_head_dim": state["linear_value_head_dim"],
                **({"num_experts": 0} if arch == "qwen3_next" else {})}
    if arch == "granitemoehybrid":
        types = ["mamba" if i in state["layers"] else "attention" for i in range(layers)]
        return {"model_type": arch, **common, "layer_types": types, "mamba_d_conv": state["conv_kernel_tokens"],
                "mamba_n_heads": state["ssm_heads"], "mamba_d_head": state["ssm_head_dim"],
                "mamba_n_groups": state["ssm_groups"], "mamba_d_state": state["ssm_state_size"],
                "mamba_expand": state["ssm_heads"] * state["ssm_head_dim"] // profile["hidden_size"],
                "num_local_experts": 0, "num_experts_per_tok": 0, "shared_intermediate_size": SHRUNK["intermediate_size"]}
    if arch == "falcon_h1":  # every layer hybrid (attention and Mamba2 side by side): no layer_types to write
        return {"model_type": arch, **common, "head_dim": profile["head_dim"],
                "mamba_d_conv": state["conv_kernel_tokens"], "mamba_n_heads": state["ssm_heads"],
                "mamba_d_head": state["ssm_head_dim"], "mamba_d_ssm": state["ssm_heads"] * state["ssm_head_dim"],
                "mamba_n_groups": state["ssm_groups"], "mamba_d_state": state["ssm_state_size"],
                "mamba_rms_norm": False, "tie_word_embeddings": False}
    if arch == "qwen3_5_moe":  # the text model, experts shrunk (they never reach the cache)
        types = ["linear_attention" if i in state["layers"] else "full_attention" for i in range(layers)]
        return {"model_type": "qwen3_5_moe_text", **common, "layer_types": types, "head_dim": profile["head_dim"],
                "linear_conv_kernel_dim": state["conv_kernel_tokens"],
                "linear_num_key_heads": state["linear_key_heads"], "linear_key_head_dim": state["linear_key_head_dim"],
                "linear_num_value_heads": state["linear_value_heads"],
                "linear_value_head_dim": state["linear_value_head_dim"],
                "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 64,
                "shared_expert_intermediate_size": 64}
    raise SystemExit(f"no config writer for architecture {arch!r}")


def tensors_of(layer) -> list[dict]:
    import torch

    out = []
    for name, value in sorted(vars(layer).items()):
        items = value.items() if isinstance(value, dict) else [(None, value)]
        for key, t in items:
            if isinstance(t, torch.Tensor) and t.numel() > 0 and t.dim() > 0:
                out.append({"name": name if key is None else f"{name}[{key}]", "shape": list(t.shape),
                            "dtype": str(t.dtype).removeprefix("torch."), "bytes": t.numel() * t.element_size()})
    return out


def measure(cfg: dict, dtype_name: str, n: int) -> dict:
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    dtype = getattr(torch, dtype_name)
    config = AutoConfig.for_model(**cfg)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config, dtype=dtype).eval()
    ids = torch.randint(0, cfg["vocab_size"], (1, n - 1))
    with torch.no_grad():
        out = model(ids, use_cache=True)
        cache = out.past_key_values
        out = model(ids[:, -1:], past_key_values=cache, use_cache=True)
        cache = out.past_key_values
    layers = [{"index": i, "class": type(layer).__name__, "tensors": tensors_of(layer)}
              for i, layer in enumerate(cache.layers)]
    return {"dtype": dtype_name, "tokens": n, "cache_class": type(cache).__name__, "layers": layers,
            "total_bytes": sum(t["bytes"] for layer in layers for t in layer["tensors"])}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", required=True, help="a built-in profile name, or a path to a profile YAML")
    ap.add_argument("--dtypes", nargs="+", default=["bfloat16", "float32"])
    ap.add_argument("--lengths", nargs="+", type=int, default=[16, 512])
    ap.add_argument("--out", type=Path)
    a = ap.parse_args(argv)
    import torch
    import transformers

    path = Path(a.profile) if a.profile.endswith((".yaml", ".yml")) else REPO / "model_profiles" / f"{a.profile}.yaml"
    profile = yaml.safe_load(path.read_text())
    cfg = config_of(profile)
    runs = []
    for dtype in a.dtypes:
        for n in a.lengths:
            t0 = time.time()
            runs.append(measure(cfg, dtype, n))
            print(f"{a.profile} {dtype} {n}: {runs[-1]['total_bytes']:,} B in {time.time() - t0:.1f} s",
                  file=sys.stderr)
    doc = {"profile": a.profile, "transformers": transformers.__version__, "torch": torch.__version__,
           "python": platform.python_version(), "config": cfg, "runs": runs}
    text = json.dumps(doc, indent=1)
    if a.out:
        a.out.write_text(text + "\n")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
