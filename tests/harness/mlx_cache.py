"""Measure the KV cache MLX-LM really holds (opt-in ground truth, not run by CI).

Builds mlx_lm models from the real config.json files in ``tests/data/hf_configs/`` with random weights (cast to
the config's ``torch_dtype``), runs mlx_lm's own ``generate_step`` (its chunked prefill, ``maybe_quantize_kv_cache``,
``make_prompt_cache``) over prompts of a few hundred to over 10,000 tokens, and records every cache object's bytes
(the sum of ``nbytes`` of its arrays, the cache's own ``nbytes`` property), its offset and its capacity (the token
slots its arrays hold) after the prompt, and the largest total seen after any model call during the prefill (the
peak, when it differs).

What is shrunk, and why it cannot change the cache: ``num_hidden_layers`` (each layer owns its own cache object:
one layer, six for gemma-3-1b — one whole 5:1 sliding pattern; rows record the layer count used, the real one and
the cache of each layer, and kvplan's figure for the real model is the per-layer bytes over the real layer count —
``qwen2.5-0.5b`` also runs at its full depth of 24 layers, ``--full-depth``), ``intermediate_size`` (the MLP width, not in any cache
shape) and ``vocab_size`` (the embedding rows). Hidden size, attention heads, KV heads, head_dim, sliding windows
and their pattern stay as the config gives them, except for Llama 4 (``llama-4-scout-17b-16e``): 4 layers, one
``(i + 1) % 4`` pattern of ``llama4.py`` ``make_cache`` (three ``ChunkedKVCache(8192)``, one ``KVCache``),
``SHRINK``'s widths (its hidden size too: its head_dim is the config's own) and its routed experts in float32
(:func:`float32_experts`); its grid is ``CHUNKED_ROWS`` (prompts around the chunk).

Run (about 40 minutes on 2 cores)::

    python3 -m venv /work/mlx-venv && /work/mlx-venv/bin/pip install "mlx[cpu]" mlx-lm transformers
    /work/mlx-venv/bin/python tests/harness/mlx_cache.py --out tests/data/mlx/cache.json --zero-attention
    /work/mlx-venv/bin/python tests/harness/mlx_cache.py --out tests/data/mlx/cache.json --full-depth \
        --zero-attention --models qwen2.5-0.5b      # all 24 layers
    /work/mlx-venv/bin/python tests/harness/mlx_cache.py --out tests/data/mlx/cache.json --models qwen3-0.6b
                                                    # real attention on a few settings: the cross-check

Observation points: ``generate_step`` calls ``maybe_quantize_kv_cache`` after every prefill chunk and after every
``_step``; the harness wraps that function (module attribute, looked up when ``generate_step`` runs) and records the
caches' bytes before and after the real function runs. ``max_tokens=0`` processes exactly the prompt (the last
prompt token through ``_step``, no generated token fed back); ``decode_tokens`` > 0 feeds that many generated tokens.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
from pathlib import Path

import mlx.core as mx
import mlx_lm
import mlx_lm.generate  # noqa: F401  (the package's `generate` attribute is the function)
from mlx.utils import tree_flatten
from mlx_lm.models import cache as cache_mod
from mlx_lm.utils import MODEL_REMAPPING

gen = sys.modules["mlx_lm.generate"]
ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "tests" / "data" / "hf_configs"
DTYPES = {"bfloat16": mx.bfloat16, "float16": mx.float16, "float32": mx.float32}

# model → the layer count the harness builds (None: the real one)
MODELS = {
    "llama-3.2-1b": 1,
    "qwen2.5-0.5b": 1,
    "qwen3-0.6b": 1,
    "gemma-3-1b": 6,  # one sliding_window_pattern: 5 RotatingKVCache(512) layers, then a KVCache one
    "phi-3-mini-4k": 1,
    "mistral-7b-v0.1": 1,  # config sliding_window 4096, mlx_lm maps mistral to llama: no layer_types, plain KVCache
    "gemma-2-2b": 1,  # sliding window 4096 in the config; mlx_lm's gemma2 has no make_cache: plain KVCache
    "llama-3.2-3b": 1,  # the issue's command: 16k prompt, --kv-bits 4 (grid: ISSUE_ROWS)
    "llama-4-scout-17b-16e": 4,  # one (i + 1) % 4 pattern: 3 ChunkedKVCache(8192) layers, then a KVCache one
}
# widths cut on top of intermediate_size / vocab_size, per model: none shapes a cache. llama4's head_dim is the
# config's own 128 (not hidden_size / heads) and its K/V projections are 8 × 128 wide whatever hidden_size is;
# experts only change the MLP. The cut keeps a 33k-token prefill at a minute on 2 cores.
SHRINK = {"llama-4-scout-17b-16e": {"hidden_size": 512, "intermediate_size_mlp": 64, "num_local_experts": 2}}
# llama4's chunk is 8192: contexts around it (one chunk, one token past, several chunks), two prefill steps, a
# chunk that is not a multiple of 256, decode across the chunk edge, and --kv-bits (only its KVCache layers
# quantize: ChunkedKVCache has no to_quantized, maybe_quantize_kv_cache skips it)
CHUNKED_ROWS = [{"prompt_tokens": n, "prefill_step_size": p} for p in (2048, 512)
                for n in (100, 8191, 8192, 8193, 8194, 10000, 20000, 33000)] + [
    {"prompt_tokens": 20000, "prefill_step_size": 1000},
    {"prompt_tokens": 8190, "decode_tokens": 5},
    {"prompt_tokens": 8000, "decode_tokens": 400},
    {"prompt_tokens": 10000, "decode_tokens": 300},
    {"prompt_tokens": 10000, "kv_bits": 4},
    {"prompt_tokens": 33000, "kv_bits": 8, "prefill_step_size": 512},
]
ISSUE_ROWS = {"llama-3.2-3b": [{"prompt_tokens": 16_384, "kv_bits": 4}, {"prompt_tokens": 16_384}]}
PROMPTS = (300, 2049, 5000, 10500)
# without --zero-attention: the real attention product, on a few settings, to show it leaves the cache alone
REAL_ATTENTION_ROWS = [{"prompt_tokens": 300}, {"prompt_tokens": 2049},
                       {"prompt_tokens": 2049, "kv_bits": 4, "quantized_kv_start": 1000}]


def build(name: str, layers: int | None):
    outer = json.loads((CONFIGS / f"{name}.json").read_text())
    nested = outer.get("model_type") == "llama4"  # llama4.ModelArgs takes the text_config itself
    config = dict(outer.get("text_config", {}), **{k: v for k, v in outer.items() if k != "text_config"}) \
        if "text_config" in outer and not nested else outer
    text = config["text_config"] if nested else config
    real_layers = text["num_hidden_layers"]
    if layers is not None:
        text["num_hidden_layers"] = layers
        for key in ("layer_types", "no_rope_layers", "moe_layers"):
            if isinstance(text.get(key), list):
                text[key] = text[key][:layers]
    text["intermediate_size"] = 64
    text["vocab_size"] = 512
    text.update(SHRINK.get(name, {}))
    if nested:
        config = dict(config, torch_dtype=text.get("torch_dtype"), num_hidden_layers=text["num_hidden_layers"])
    model_type = MODEL_REMAPPING.get(config["model_type"], config["model_type"])
    if model_type == "gemma3":
        model_type = "gemma3_text"
    arch = importlib.import_module(f"mlx_lm.models.{model_type}")
    args = arch.ModelArgs.from_dict(config)
    model = arch.Model(args)
    dtype = DTYPES[config.get("torch_dtype") or "bfloat16"]
    model.set_dtype(dtype)
    if model_type == "llama4":
        float32_experts(model)
    if ZERO_ATTENTION:
        patch_attention(arch)
    mx.eval(model.parameters())
    return model, config, real_layers, str(dtype).split(".")[-1], model_type


ZERO_ATTENTION = False


def float32_experts(model) -> None:
    """Run llama4's routed experts in float32: this CPU wheel's ``gather_mm`` (``SwitchGLU``) raises "GatherMM::eval
    Currently only supports float32" on bfloat16. Their output is cast back to the block's dtype, so the residual
    stream, the K/V projections and the cache stay in the config's bfloat16."""
    from mlx_lm.models.switch_layers import SwitchGLU

    for layer in model.layers:
        experts = getattr(layer.feed_forward, "experts", None)
        if isinstance(experts, SwitchGLU):
            experts.set_dtype(mx.float32)
    if not getattr(SwitchGLU, "_float32", False):
        plain = SwitchGLU.__call__

        def call(self, x, indices):
            return plain(self, x.astype(mx.float32), indices).astype(x.dtype)

        SwitchGLU.__call__, SwitchGLU._float32 = call, True


def patch_attention(module) -> None:
    """Replace the attention product (not the cache) by zeros of its shape: the cache update runs before the
    product, unchanged, and the values are random anyway. Only speed changes (bf16 attention on this CPU wheel)."""
    def zeros_attention(queries, keys, values, cache, scale, mask, sinks=None):
        return mx.zeros(queries.shape, dtype=queries.dtype)

    for mod in (module, *(sys.modules[n] for n in list(sys.modules) if n.startswith("mlx_lm.models."))):
        if hasattr(mod, "scaled_dot_product_attention"):
            mod.scaled_dot_product_attention = zeros_attention


def describe(c) -> dict:
    arrays = [v for _, v in tree_flatten((c.keys, c.values))] if getattr(c, "keys", None) is not None else []
    capacity = 0
    if arrays:
        capacity = int(arrays[0].shape[2])
    out = {"class": type(c).__name__, "nbytes": int(c.nbytes), "offset": int(c.offset), "capacity_tokens": capacity,
           "array_nbytes": int(sum(a.nbytes for a in arrays))}
    for attr in ("max_size", "keep", "bits", "group_size", "chunk_size", "start_position"):
        if hasattr(c, attr):
            out[attr] = getattr(c, attr)
    return out


def run(model, prompt_tokens: int, *, kv_bits=None, kv_group_size=64, quantized_kv_start=None, max_kv_size=None,
        prefill_step_size=2048, decode_tokens=0) -> dict:
    seen: list[int] = []
    original = cache_mod_quantize = gen.maybe_quantize_kv_cache

    def observe(prompt_cache, *a, **k):
        mx.eval([c.state for c in prompt_cache])
        seen.append(sum(int(c.nbytes) for c in prompt_cache))
        cache_mod_quantize(prompt_cache, *a, **k)
        mx.eval([c.state for c in prompt_cache])
        seen.append(sum(int(c.nbytes) for c in prompt_cache))
        caches[:] = prompt_cache

    caches: list = []
    gen.maybe_quantize_kv_cache = observe
    try:
        prompt = mx.array([(7 * i + 3) % 500 for i in range(prompt_tokens)], dtype=mx.uint32)
        extra = {} if quantized_kv_start is None else {"quantized_kv_start": quantized_kv_start}
        t0 = time.time()
        error = None
        try:
            for _ in gen.generate_step(prompt, model, max_tokens=decode_tokens, kv_bits=kv_bits,
                                       kv_group_size=kv_group_size, max_kv_size=max_kv_size,
                                       prefill_step_size=prefill_step_size, **extra):
                pass
        except Exception as exc:  # noqa: BLE001 — mlx_lm's own refusal is a measurement too
            error = f"{type(exc).__name__}: {exc}"
        elapsed = time.time() - t0
    finally:
        gen.maybe_quantize_kv_cache = original
    settings = {"prompt_tokens": prompt_tokens, "decode_tokens": decode_tokens, "kv_bits": kv_bits,
                "kv_group_size": kv_group_size,
                "quantized_kv_start": gen.DEFAULT_QUANTIZED_KV_START if quantized_kv_start is None
                else quantized_kv_start, "max_kv_size": max_kv_size, "prefill_step_size": prefill_step_size}
    if error is not None:
        return {**settings, "error": error, "seconds": round(elapsed, 1)}
    per_layer = [describe(c) for c in caches]
    final = sum(d["nbytes"] for d in per_layer)
    return {**settings, "kv_bytes": final, "peak_kv_bytes": max(seen + [final]), "layers": per_layer,
            "seconds": round(elapsed, 1)}


CHUNKED = {"llama-4-scout-17b-16e"}


def grid(name: str):
    """The settings measured for one model: every prompt × plain / 8-bit / 4-bit, plus the rules' edges."""
    if name in CHUNKED:
        yield from CHUNKED_ROWS
        return
    for p in PROMPTS:
        for bits in ((None,) if p == 2049 else (None, 8, 4)):  # 2049 < quantized_kv_start: 8/4 bits = plain
            yield {"prompt_tokens": p, "kv_bits": bits}
    yield {"prompt_tokens": 300, "decode_tokens": 300}
    yield {"prompt_tokens": 3000, "prefill_step_size": 1000}  # a chunk that is not a multiple of 256: trims
    yield {"prompt_tokens": 3000, "prefill_step_size": 1000, "kv_bits": 4, "quantized_kv_start": 0}
    yield {"prompt_tokens": 2049, "kv_bits": 4, "kv_group_size": 32, "quantized_kv_start": 1000}
    yield {"prompt_tokens": 2049, "kv_bits": 8, "kv_group_size": 128, "quantized_kv_start": 1000}
    yield {"prompt_tokens": 2049, "kv_bits": 4, "quantized_kv_start": 2049}
    if name != "gemma-3-1b":  # RotatingKVCache.to_quantized raises NotImplementedError
        yield {"prompt_tokens": 5000, "max_kv_size": 1024}
        yield {"prompt_tokens": 700, "max_kv_size": 1024}
        yield {"prompt_tokens": 5000, "max_kv_size": 1024, "prefill_step_size": 512}
    else:
        yield {"prompt_tokens": 1000, "prefill_step_size": 512}
        yield {"prompt_tokens": 400, "decode_tokens": 200}
        yield {"prompt_tokens": 4500, "kv_bits": 8, "quantized_kv_start": 100_000}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--models", nargs="*", default=list(MODELS))
    ap.add_argument("--quick", action="store_true", help="one short prompt per model")
    ap.add_argument("--zero-attention", action="store_true",
                    help="replace the attention product by zeros of its shape (speed only; see patch_attention)")
    ap.add_argument("--full-depth", action="store_true", help="build the listed models at their real depth "
                    "and measure three settings")
    ap.add_argument("--append", type=json.loads, default=None, metavar="JSON",
                    help='settings to run and append to the model\'s rows already in --out, e.g. '
                         '\'[{"prompt_tokens": 32768}]\'')
    args = ap.parse_args()
    global ZERO_ATTENTION
    ZERO_ATTENTION = args.zero_attention
    import mlx_lm as _m

    data = {"mlx": mx.__version__, "mlx_lm": _m.__version__, "device": str(mx.default_device()),
            "note": "cache bytes of each layer's cache object (nbytes); kvplan's figure for the real layer count is "
                    "the per-layer bytes scaled to it (rows with layers_used < real_layers)", "models": {}}
    if args.out.exists():
        data["models"] = json.loads(args.out.read_text()).get("models", {})
    for name in args.models:
        for layers in ((None,) if args.full_depth else (MODELS[name],)):
            model, config, real_layers, dtype, model_type = build(name, layers)
            key = name if layers is not None else f"{name}@full"
            if not ZERO_ATTENTION and layers is not None:  # the cross-check: real attention, a few settings
                key = f"{name}@real-attention"
            rows = []
            settings = list(grid(name)) if layers is not None else [{"prompt_tokens": 300}, {"prompt_tokens": 2049},
                                                                    {"prompt_tokens": 5000, "kv_bits": 4}]
            if not ZERO_ATTENTION and layers is not None:
                settings = REAL_ATTENTION_ROWS
            if name in ISSUE_ROWS and layers is not None:
                settings = ISSUE_ROWS[name]
            if args.quick:
                settings = settings[:1]
            if args.append is not None:  # one more setting on a model already measured: keep its rows
                settings = args.append
                rows = list(data["models"][key]["rows"])
            for s in settings:
                row = run(model, **s)
                rows.append(row)
                print(key, {k: v for k, v in row.items() if k != "layers"}, flush=True, file=sys.stderr)
            data["models"][key] = {"config": f"tests/data/hf_configs/{name}.json", "model_type": config["model_type"],
                                   "mlx_lm_module": model_type, "dtype": dtype,
                                   "layers_used": config["num_hidden_layers"], "real_layers": real_layers,
                                   "has_make_cache": hasattr(model, "make_cache"),
                                   "attention": "zeros" if ZERO_ATTENTION else "real",
                                   "shrunk": {"intermediate_size": 64, "vocab_size": 512, **SHRINK.get(name, {})},
                                   "rows": rows}
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(data, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
