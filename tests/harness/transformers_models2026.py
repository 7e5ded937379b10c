#!/usr/bin/env python3
"""Measure the KV cache Hugging Face transformers really returns for the 2026 attention models (gpt-oss, Qwen3 MoE,
SmolLM3, Phi-4-mini, Gemma 3n E2B / E4B), from their real config.json copies.

Opt-in harness (not run by CI): it needs torch and transformers, which kvplan does not depend on. Run it in a venv
of its own and commit the JSON it writes (tests/data/runtimes/transformers/models2026/).

Every figure that shapes the cache stays the config's: layers, layer_types (gpt-oss's alternating 128-token
window), KV heads, head_dim, sliding_window. What never reaches the cache is shrunk so a 2-core CPU can run it:
vocabulary 512, hidden_size 256 (head_dim is set explicitly, so the attention's K/V width is the real one),
MLP / expert widths 64, experts 4 (2 per token). A random-weight model in each dtype runs a prefill of N − 1 tokens
and one decode step with ``use_cache=True`` (DynamicCache); the harness records the cache's class, each layer's
class and the bytes of the tensors it holds (``numel × element_size``, and the bytes of the storage a view keeps
alive), right after the prefill (the peak) and after the decode step.

Usage:
    /tmp/etvenv/bin/python tests/harness/transformers_models2026.py [--models gpt-oss-20b …] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MODELS = ("gpt-oss-20b", "qwen3-30b-a3b", "smollm3-3b", "phi-4-mini")
SHRUNK = {"vocab_size": 512, "hidden_size": 256, "intermediate_size": 64, "moe_intermediate_size": 64,
          "num_local_experts": 4, "num_experts": 4, "num_experts_per_tok": 2, "experts_per_token": 2}
LENGTHS = (16, 300, 1000)
DTYPES = ("bfloat16", "float32")


# Gemma 3n (a multimodal wrapper: its text_config is built, as Gemma3nForCausalLM): widths that never reach the
# cache shrunk as above, plus the per-layer embeddings (rows and width) and LAuReL's rank; layers, layer_types,
# num_kv_shared_layers, KV heads, head_dim and sliding_window stay the config's
GEMMA3N_SHRUNK = {"vocab_size_per_layer_input": 512, "hidden_size_per_layer_input": 16, "laurel_rank": 8}


def gemma3n_config_of(cfg: dict) -> dict:
    tc = dict(cfg["text_config"])
    tc["intermediate_size"] = [SHRUNK["intermediate_size"]] * int(tc["num_hidden_layers"])
    tc.update(vocab_size=SHRUNK["vocab_size"], hidden_size=SHRUNK["hidden_size"], **GEMMA3N_SHRUNK)
    tc.update(pad_token_id=0, bos_token_id=2, eos_token_id=1)
    return tc


def config_of(name: str) -> dict:
    cfg = json.loads((REPO / "tests" / "data" / "hf_configs" / f"{name}.json").read_text())
    if cfg.get("model_type") == "gemma3n":
        return gemma3n_config_of(cfg)
    cfg.pop("quantization_config", None)  # random weights in plain dtypes (the MXFP4 kernels need a GPU)
    if "head_dim" not in cfg:
        cfg["head_dim"] = cfg["hidden_size"] // cfg["num_attention_heads"]  # keep the real K/V width
    for key, value in SHRUNK.items():
        if key in cfg:
            cfg[key] = value
    cfg["hidden_size"] = SHRUNK["hidden_size"]
    cfg.setdefault("pad_token_id", 0)  # a config default (SmolLM3: 128004) would lie outside the shrunk vocabulary
    for key in ("pad_token_id", "bos_token_id", "eos_token_id"):  # token ids must lie in the shrunk vocabulary
        if isinstance(cfg.get(key), int):
            cfg[key] = min(cfg[key], SHRUNK["vocab_size"] - 1)
        elif isinstance(cfg.get(key), list):
            cfg[key] = [min(t, SHRUNK["vocab_size"] - 1) for t in cfg[key]]
    if cfg.get("partial_rotary_factor") and cfg["model_type"] == "phi3":
        pass  # rotary width follows head_dim × factor; the cache does not depend on it
    cfg.pop("rope_scaling", None) if cfg["model_type"] == "phi3" else None  # longrope factors are per hidden size
    return cfg


def tensors_of(layer) -> list[dict]:
    import torch

    out = []
    for name in ("keys", "values", "conv_states", "recurrent_states"):
        t = getattr(layer, name, None)
        if isinstance(t, torch.Tensor):
            out.append({"name": name, "shape": list(t.shape), "dtype": str(t.dtype).removeprefix("torch."),
                        "bytes": t.numel() * t.element_size(),
                        # a view (a sliding layer's tail of torch.cat's result) keeps its whole storage alive
                        "storage_bytes": t.untyped_storage().nbytes()})
    return out


def measure(name: str, dtype: str, n: int) -> dict:
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    cfg_dict = config_of(name)
    config = AutoConfig.for_model(**cfg_dict)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config, dtype=getattr(torch, dtype), attn_implementation="eager")
    model.eval()
    ids = torch.randint(0, cfg_dict["vocab_size"], (1, n))
    t0 = time.monotonic()
    with torch.no_grad():
        out = model(input_ids=ids[:, :-1], use_cache=True)
        cache = out.past_key_values
        peak = [sum(t["bytes"] for t in tensors_of(layer)) for layer in cache.layers]
        peak_storage = [sum(t["storage_bytes"] for t in tensors_of(layer)) for layer in cache.layers]
        out = model(input_ids=ids[:, -1:], past_key_values=cache, use_cache=True)
    cache = out.past_key_values
    layers = [{"class": type(layer).__name__, "tensors": tensors_of(layer)} for layer in cache.layers]
    return {"dtype": dtype, "tokens": n, "cache_class": type(cache).__name__, "layers": layers,
            "total_bytes": sum(t["bytes"] for ly in layers for t in ly["tensors"]),
            "storage_bytes": sum(t["storage_bytes"] for ly in layers for t in ly["tensors"]),
            "peak_after_prefill_bytes": sum(peak), "peak_after_prefill_storage_bytes": sum(peak_storage), "seconds": round(time.monotonic() - t0, 2)}


def main(argv=None) -> None:
    import torch
    import transformers

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="+", default=list(MODELS))
    ap.add_argument("--dtypes", nargs="+", default=list(DTYPES))
    ap.add_argument("--lengths", nargs="+", type=int, default=list(LENGTHS))
    ap.add_argument("--out", type=Path, default=REPO / "tests" / "data" / "runtimes" / "transformers" / "models2026")
    a = ap.parse_args(argv)
    torch.set_num_threads(2)
    a.out.mkdir(parents=True, exist_ok=True)
    for name in a.models:
        runs = [measure(name, dtype, n) for dtype in a.dtypes for n in a.lengths]
        doc = {"model": name, "transformers": transformers.__version__, "torch": torch.__version__,
               "python": platform.python_version(), "config": config_of(name),
               "note": "random weights; widths that never reach the cache shrunk (SHRUNK); eager attention; a "
                       "prefill of N - 1 tokens then one decode step", "runs": runs}
        path = a.out / f"{name}_transformers-{transformers.__version__}.json"
        path.write_text(json.dumps(doc, indent=1) + "\n")
        print(name, [(r["dtype"], r["tokens"], r["total_bytes"], r["peak_after_prefill_bytes"]) for r in runs],
              flush=True)


if __name__ == "__main__":
    main()
