#!/usr/bin/env python3
"""Measure the KV cache Hugging Face transformers really holds for an MLA model (DeepSeek-V2/V3).

Opt-in harness (not run by CI): it needs torch and transformers, which kvplan does not depend on.
Run it in a venv of its own (tests/harness/README.md) and commit the JSON it writes.

For each architecture (deepseek_v2, deepseek_v3), dtype and length N it builds a random-weight
model whose attention has the real per-layer shapes of a library profile (from the model's
config.json copy in tests/data/hf_configs/), with ``--layers`` layers (the cache is per layer;
the first layer dense, the rest MoE, as first_k_dense_replace 1 gives). What only costs time
and never reaches the cache is shrunk: vocabulary, MLP / expert widths and expert counts.
Then:

- DynamicCache: a prefill of N − 1 tokens with ``use_cache=True``, then one decode step,
  so the cache holds N tokens and has been through both code paths;
- StaticCache(max_cache_len=N): a prefill of 16 tokens and one decode step (the tensors
  are allocated whole at the first update, so their size does not depend on the prompt).

It records every tensor each cache layer holds (shape, dtype, ``numel × element_size``,
and the bytes of its storage, which a view may keep larger) and the sum per layer.

``--attention sdpa`` runs torch's scaled-dot-product attention; ``--attention skip``
registers an attention function that returns zeros without reading K/V. The cache is
written by ``cache.update`` in ``DeepseekV2Attention.forward`` *before* the attention
function is called, so the bytes are the same (the data file records both where they
overlap); ``skip`` makes 32k-token prefills affordable on a 2-core CPU.

Usage:
    /work/tfvenv/bin/python tests/harness/transformers_cache.py \
        [--profile deepseek-v2-lite] [--archs deepseek_v2 deepseek_v3] [--layers 2] \
        [--dtypes bfloat16 float16 float32] [--lengths 512 1024 ... 32768] \
        [--attention skip] [--caches dynamic static] [--out FILE.json]
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LENGTHS = (512, 1024, 2048, 4096, 8192, 16384, 32768)
# Cache-neutral sizes: they change what the MLP and the logits cost, never what the cache holds.
SHRUNK = {"vocab_size": 512, "intermediate_size": 256, "moe_intermediate_size": 128, "n_routed_experts": 8,
          "num_experts_per_tok": 2, "n_shared_experts": 1}
ATTENTION_KEYS = ("hidden_size", "num_attention_heads", "num_key_value_heads", "q_lora_rank", "kv_lora_rank",
                  "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "attention_bias", "rope_theta",
                  "rope_scaling", "max_position_embeddings", "rms_norm_eps")
STATIC_PROMPT = 16


def _no_attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    """An attention function that reads nothing: zeros of the output's shape ``[B, q_len, heads, v_dim]``."""
    import torch

    batch, heads, q_len, _ = query.shape
    return torch.zeros(batch, q_len, heads, value.shape[-1], dtype=query.dtype, device=query.device), None


def build_config(arch: str, hf: dict, layers: int, attention: str):
    import transformers

    values = {k: hf[k] for k in ATTENTION_KEYS if k in hf}
    values.update(SHRUNK, num_hidden_layers=layers, first_k_dense_replace=1, n_group=1, topk_group=1,
                  tie_word_embeddings=False, use_cache=True)
    cls = {"deepseek_v2": transformers.DeepseekV2Config, "deepseek_v3": transformers.DeepseekV3Config}[arch]
    config = cls(**values)
    config._attn_implementation = attention
    return config


def tensor_record(t) -> dict:
    return {"shape": list(t.shape), "dtype": str(t.dtype).removeprefix("torch."),
            "bytes": t.numel() * t.element_size(), "storage_bytes": t.untyped_storage().nbytes()}


def cache_record(cache) -> list[dict]:
    """Every tensor of every cache layer; ``bytes`` sums them, ``storage_bytes`` sums distinct storages."""
    import torch

    out = []
    for i, layer in enumerate(cache.layers):
        tensors = {name: v for name, v in sorted(vars(layer).items()) if isinstance(v, torch.Tensor)}
        records = {name: tensor_record(t) for name, t in tensors.items()}
        storages = {t.untyped_storage().data_ptr(): t.untyped_storage().nbytes() for t in tensors.values()}
        out.append({"layer": i, "class": type(layer).__name__, "tensors": records,
                    "bytes": sum(r["bytes"] for r in records.values()), "storage_bytes": sum(storages.values())})
    return out


def run_one(model, cache_kind: str, n: int) -> dict:
    import torch
    from transformers import DynamicCache, StaticCache

    config = model.config
    gen = torch.Generator().manual_seed(n)
    with torch.no_grad():
        if cache_kind == "dynamic":
            cache = DynamicCache(config=config)
            prompt = n - 1
        else:
            cache = StaticCache(config=config, max_cache_len=n)
            prompt = STATIC_PROMPT
        ids = torch.randint(0, config.vocab_size, (1, prompt), generator=gen)
        out = model(input_ids=ids, past_key_values=cache, use_cache=True, logits_to_keep=1)
        returned = getattr(out, "cache", None) or out.past_key_values
        assert returned is cache, "the model built its own cache instead of filling the one passed"
        step = torch.randint(0, config.vocab_size, (1, 1), generator=gen)
        model(input_ids=step, past_key_values=cache, use_cache=True, logits_to_keep=1)
    layers = cache_record(cache)
    return {"cache": cache_kind, "tokens": n, "prompt_tokens": prompt, "decode_steps": 1,
            "seq_length": int(cache.get_seq_length()), "layers": layers,
            "bytes_per_layer": sorted({layer["bytes"] for layer in layers}),
            "bytes_total": sum(layer["bytes"] for layer in layers)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--profile", default="deepseek-v2-lite")
    p.add_argument("--archs", nargs="+", default=["deepseek_v2", "deepseek_v3"])
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--dtypes", nargs="+", default=["bfloat16", "float16", "float32"])
    p.add_argument("--lengths", nargs="+", type=int, default=list(LENGTHS))
    p.add_argument("--caches", nargs="+", default=["dynamic", "static"], choices=["dynamic", "static"])
    p.add_argument("--attention", default="skip", choices=["skip", "sdpa", "eager"])
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--out", type=Path)
    args = p.parse_args(argv)

    import torch
    import transformers

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    attention = args.attention
    if attention == "skip":
        transformers.AttentionInterface.register("kvplan_no_attention", _no_attention)
        attention = "kvplan_no_attention"
    hf = json.loads((REPO / "tests/data/hf_configs" / f"{args.profile}.json").read_text())
    runs = []
    started = time.time()
    for arch in args.archs:
        config = build_config(arch, hf, args.layers, attention)
        for dtype_name in args.dtypes:
            dtype = getattr(torch, dtype_name)
            model = transformers.AutoModelForCausalLM.from_config(config, dtype=dtype).eval()
            for cache_kind in args.caches:
                for n in args.lengths:
                    t0 = time.time()
                    run = run_one(model, cache_kind, n)
                    run.update(arch=arch, dtype=dtype_name, attention=args.attention,
                               seconds=round(time.time() - t0, 2))
                    runs.append(run)
                    print(f"{arch} {dtype_name} {cache_kind} N={n}: {run['bytes_per_layer']} B/layer "
                          f"({run['seconds']} s)", file=sys.stderr, flush=True)
            del model
    result = {
        "what": "bytes of every tensor in transformers' cache after a forward with use_cache=True "
                "(tests/harness/transformers_cache.py)",
        "transformers": transformers.__version__, "torch": torch.__version__, "python": platform.python_version(),
        "profile": args.profile, "layers": args.layers, "attention": args.attention,
        "config_from": f"tests/data/hf_configs/{args.profile}.json",
        "attention_config": {k: hf.get(k) for k in ATTENTION_KEYS},
        "shrunk_cache_neutral": SHRUNK,
        "seconds_total": round(time.time() - started, 1),
        "runs": runs,
    }
    text = json.dumps(result, indent=1) + "\n"
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
