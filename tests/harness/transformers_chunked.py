#!/usr/bin/env python3
"""Measure the cache Hugging Face transformers keeps for Llama 4's chunked attention.

Opt-in harness (not run by CI): it needs torch and transformers (a venv of its own, tests/harness/README.md).

Two measurements from the real Llama-4-Scout text config (tests/data/hf_configs/llama-4-scout-17b-16e.json):

* ``model``: the model itself with random weights, every figure that shapes the cache kept (48 layers, 8 KV heads
  of 128, attention_chunk_size 8192, no_rope_layers), only what never reaches it shrunk (hidden_size 256, 8 query
  heads, 2 experts 64 wide, vocabulary 512); a prefill of N − 1 tokens and one decode step with ``use_cache=True``,
  N in --lengths (a 107.8B-parameter model does not fit this machine, and a prefill past one chunk of 8,192 tokens
  through it would take hours on 2 cores);
* ``driven``: ``DynamicCache(config=Llama4TextConfig(real text_config))`` driven with the K/V tensors every layer
  hands its cache (``[1, 8, n, 128]``, bfloat16): a prefill of N − 1 tokens then a decode token, N in --driven-lengths
  (past one chunk).

Each run records the cache class, each layer's class and every tensor it holds (shape, dtype, bytes).

Usage:
    /tmp/tfvenv/bin/python tests/harness/transformers_chunked.py --out tests/data/runtimes/transformers/chunked/\
llama-4-scout-17b-16e.json
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "tests/data/hf_configs/llama-4-scout-17b-16e.json"
SHRUNK = {"hidden_size": 256, "num_attention_heads": 8, "intermediate_size": 64, "intermediate_size_mlp": 64,
          "num_local_experts": 2, "vocab_size": 512, "pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2}


def tensors_of(layer) -> list[dict]:
    import torch

    out = []
    for name, value in sorted(vars(layer).items()):
        if isinstance(value, torch.Tensor) and value.numel() > 0 and value.dim() > 0:
            out.append({"name": name, "shape": list(value.shape), "dtype": str(value.dtype).removeprefix("torch."),
                        "bytes": value.numel() * value.element_size(),
                        # a view (a sliding layer's tail of torch.cat's result) keeps its whole storage alive
                        "storage_bytes": value.untyped_storage().nbytes()})
    return out


def storage_of(cache) -> int:
    return sum(t["storage_bytes"] for layer in cache.layers for t in tensors_of(layer))


def summary(cache, kind: str, n: int, peak_storage: int) -> dict:
    layers = [{"index": i, "class": type(layer).__name__, "tensors": tensors_of(layer)}
              for i, layer in enumerate(cache.layers)]
    return {"kind": kind, "tokens": n, "cache_class": type(cache).__name__, "layers": layers,
            "total_bytes": sum(t["bytes"] for layer in layers for t in layer["tensors"]),
            "storage_bytes": sum(t["storage_bytes"] for layer in layers for t in layer["tensors"]),
            "peak_after_prefill_storage_bytes": peak_storage}


def model_run(text: dict, n: int) -> dict:
    import torch
    from transformers import Llama4ForCausalLM, Llama4TextConfig

    config = Llama4TextConfig(**{**text, **SHRUNK, "moe_layers": None})
    torch.manual_seed(0)
    model = Llama4ForCausalLM(config).to(torch.bfloat16).eval()
    ids = torch.randint(0, SHRUNK["vocab_size"], (1, n - 1))
    with torch.no_grad():
        out = model(ids, use_cache=True)
        peak = storage_of(out.past_key_values)
        out = model(ids[:, -1:], past_key_values=out.past_key_values, use_cache=True)
    return summary(out.past_key_values, "model", n, peak)


def driven_run(text: dict, n: int) -> dict:
    import torch
    from transformers import DynamicCache, Llama4TextConfig

    config = Llama4TextConfig(**text)
    cache = DynamicCache(config=config)
    kv, d = config.num_key_value_heads, config.head_dim
    peak = 0
    for tokens in (n - 1, 1):  # the prefill, then one decode token, as every layer's attention hands them
        for i in range(config.num_hidden_layers):
            k = torch.zeros(1, kv, tokens, d, dtype=torch.bfloat16)
            cache.update(k, torch.zeros_like(k), i)
        peak = peak or storage_of(cache)
    return summary(cache, "driven", n, peak)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lengths", nargs="+", type=int, default=[16, 512])
    ap.add_argument("--driven-lengths", nargs="+", type=int, default=[512, 8191, 8192, 8193, 16385])
    ap.add_argument("--out", type=Path)
    a = ap.parse_args(argv)
    import torch
    import transformers

    text = json.loads(CONFIG.read_text())["text_config"]
    # the 4.51.0 config writes attn_temperature_tuning 4; 5.17.0's strict Llama4TextConfig takes a bool
    text = {**text, "attn_temperature_tuning": bool(text.get("attn_temperature_tuning", True))}
    runs = []
    for kind, lengths, run in (("model", a.lengths, model_run), ("driven", a.driven_lengths, driven_run)):
        for n in lengths:
            t0 = time.time()
            runs.append(run(text, n))
            print(f"{kind} {n}: {runs[-1]['total_bytes']:,} B in {time.time() - t0:.1f} s", file=sys.stderr)
    doc = {"model": "llama-4-scout-17b-16e", "transformers": transformers.__version__, "torch": torch.__version__,
           "python": platform.python_version(), "config": str(CONFIG.relative_to(REPO)), "shrunk_in_model_runs": SHRUNK,
           "runs": runs}
    text_out = json.dumps(doc, indent=1)
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(text_out + "\n")
    else:
        print(text_out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
