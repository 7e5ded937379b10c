"""Measure the KV cache buffers ExecuTorch's Llama export really builds (opt-in ground truth, not run by CI).

Builds ExecuTorch's own Llama ``Transformer`` (``executorch.examples.models.llama``, the ``executorch`` wheel) with
``use_kv_cache=True`` and ``max_batch_size=1`` as ``model.py`` does, applies the export's own source transforms
(``export_llama_lib._get_source_transforms``: ``--use_sdpa_with_kv_cache``, ``--quantize_kv_cache``,
``--local_global_attention`` and the final cast to ``--dtype-override``), and records every buffer of every
cache module (``kv_cache``: name, shape, dtype, ``nbytes``). With ``--export`` it also runs ``torch.export`` on the
transformed model and records the cache buffers of the exported program (``graph_signature.buffers``), the
state the ExecuTorch program keeps, or the export's error.

What is shrunk, and why it cannot change the cache: the layer count (each layer owns its own cache module; rows
record the layers used and kvplan's figure is per layer), the MLP width (``hidden_dim``) and the vocabulary (no
cache shape depends on them). Heads, KV heads and head_dim are Llama-3.2-1B's (32, 8, 64).

Run (a few minutes on 2 cores)::

    python3 -m venv /tmp/etvenv && /tmp/etvenv/bin/pip install executorch==1.4.1
    /tmp/etvenv/bin/python tests/harness/executorch_cache.py --export --pte --out tests/data/runtimes/executorch_cache.json
"""

from __future__ import annotations

import argparse
import importlib.metadata
import itertools
import json
import time
from pathlib import Path

LAYERS = 2
SHAPE = {"dim": 2048, "n_heads": 32, "n_kv_heads": 8, "head_dim": 64, "hidden_dim": 256, "vocab_size": 256}
CONTEXTS = (128, 1000)
DTYPES = ("fp32", "fp16", "bf16")
WINDOWS = (None, (0, 48), (40,))  # --local_global_attention: none, layer 1 windowed (48), every layer (40)


def build(max_context_length: int, dtype: str, quantize: bool, local_global):
    import torch
    from executorch.examples.models.llama.export_llama_lib import _get_source_transforms
    from executorch.examples.models.llama.llama_transformer import construct_transformer
    from executorch.examples.models.llama.model_args import ModelArgs
    from executorch.extension.llm.export.builder import DType

    args = ModelArgs(n_layers=LAYERS, max_seq_len=min(128, max_context_length), max_context_len=max_context_length,
                     max_batch_size=1, use_kv_cache=True, enable_dynamic_shape=True, **SHAPE)
    with torch.device("cpu"):
        model = construct_transformer(args)
    transforms = _get_source_transforms(DType[dtype], use_kv_cache=True, use_sdpa_with_kv_cache=True,
                                        quantize_kv_cache=quantize,
                                        local_global_attention=list(local_global) if local_global else None)
    for transform in transforms:
        model = transform(model)
    return model.eval(), args


def cache_buffers(model) -> list[dict]:
    out = []
    for name, buf in model.named_buffers():
        if ".kv_cache." in name:
            out.append({"name": name, "shape": list(buf.shape), "dtype": str(buf.dtype).removeprefix("torch."),
                        "nbytes": buf.numel() * buf.element_size()})
    return out


def exported_cache_bytes(model, pte: bool = False) -> dict:
    """``torch.export`` the model as the export does (non-strict, the example inputs of ``model.py``) and sum the
    cache buffers the exported program keeps as state; the error's first line when the export fails."""
    import torch

    tokens = torch.tensor([[2, 3, 4]], dtype=torch.long)
    attn_options = {"input_pos": torch.tensor([0], dtype=torch.long)}  # model.py get_example_inputs_kvcache_sdpa
    try:
        ep = torch.export.export(model, (tokens, attn_options), strict=False)
    except Exception as exc:  # noqa: BLE001 - the failure is the measurement
        return {"export_error": f"{type(exc).__name__}: {str(exc).splitlines()[0]}"}
    result = {}
    if pte:  # lower to an ExecuTorch program: the planned (non-constant) memory its method allocates at load
        from executorch.exir import EdgeCompileConfig, to_edge

        try:
            program = to_edge(ep, compile_config=EdgeCompileConfig(_check_ir_validity=False)).to_executorch()
            result["pte_planned_bytes"] = sum(program.executorch_program.execution_plan[0].non_const_buffer_sizes)
        except Exception as exc:  # noqa: BLE001 - recorded: this plain lowering is not the export's own
            result["pte_error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
    state = {**ep.state_dict, **ep.constants}
    # one tensor may sit under two names (the quantized SDPA keeps a reference to its layer's cache): by storage
    tensors = {}
    for name in ep.graph_signature.buffers:
        if ".kv_cache." in name:
            tensors.setdefault(state[name].untyped_storage().data_ptr(), state[name])
    return {**result, "exported_cache_buffers": len(tensors),
            "exported_cache_bytes": sum(t.numel() * t.element_size() for t in tensors.values())}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--export", action="store_true", help="also torch.export each model (slower)")
    parser.add_argument("--pte", action="store_true", help="with --export, also lower it to an ExecuTorch program "
                        "(to_edge, to_executorch: portable ops, no delegate) and record its planned memory")
    opts = parser.parse_args()
    import torch

    rows = []
    for m, dtype, quantize, windows in itertools.product(CONTEXTS, DTYPES, (False, True), WINDOWS):
        start = time.time()
        model, args = build(m, dtype, quantize, windows)
        buffers = cache_buffers(model)
        row = {"max_context_length": m, "dtype_override": dtype, "quantize_kv_cache": quantize,
               "local_global_attention": list(windows) if windows else None, "layers_used": LAYERS, **SHAPE,
               "cache_bytes": sum(b["nbytes"] for b in buffers), "buffers": buffers}
        if opts.export:
            with torch.no_grad():
                row.update(exported_cache_bytes(model, opts.pte))
        row["seconds"] = round(time.time() - start, 1)
        print(m, dtype, quantize, windows, row["cache_bytes"], row.get("exported_cache_bytes", row.get("export_error")), row["seconds"], flush=True)
        rows.append(row)
    versions = {p: importlib.metadata.version(p) for p in ("executorch", "torch")}
    opts.out.parent.mkdir(parents=True, exist_ok=True)
    opts.out.write_text(json.dumps({"versions": versions, "harness": "tests/harness/executorch_cache.py",
                                    "rows": rows}, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
