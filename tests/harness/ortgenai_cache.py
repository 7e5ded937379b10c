"""Measure ONNX Runtime GenAI's key/value tensors (opt-in harness, not run by CI).

Builds tiny decoder-only ONNX graphs with random weights and runs onnxruntime-genai's own Generator over a prompt
and a few decode steps, recording after every call the shape and bytes of each layer's ``past_key_values.<i>.*``
input and ``present.<i>.*`` output (``Generator.get_input`` / ``get_output``: the tensors DefaultKeyValueCache binds).
Two graphs: ``concat`` (float32; attention reduced to a Concat of the past and the new keys/values) without a shared
buffer, and ``gqa`` (float16; com.microsoft GroupQueryAttention, what the model builder emits) with and without
``past_present_share_buffer``. get_input/get_output copy the tensors out, so that a shared past and present are one
buffer is read from the source (kv_cache.cpp 543-547), not measured.

    python -m venv /tmp/ortg && /tmp/ortg/bin/pip install onnxruntime-genai==0.15.2 onnx numpy
    /tmp/ortg/bin/python tests/harness/ortgenai_cache.py > tests/data/runtimes/ortgenai/cache.json
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

VOCAB = 32
SHAPES = {"concat": (3, 2, 16, np.float32), "gqa": (2, 2, 16, np.float16)}  # layers, KV heads, head_size, dtype
MAX_LENGTH = 256


def _elem(dtype) -> int:
    return TensorProto.FLOAT if dtype == np.float32 else TensorProto.FLOAT16


def build(folder: Path, attention: str, share: bool) -> None:
    layers, heads, head, dtype = SHAPES[attention]
    rng = np.random.default_rng(0)
    nodes, inits = [], []
    inputs = [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
              helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "total"])]
    outputs = [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", "seq", VOCAB])]
    table = rng.standard_normal((VOCAB, VOCAB)).astype(np.float32)
    table[:, VOCAB - 1] = -1e9  # never the end token
    inits.append(numpy_helper.from_array(table, "lm_table"))
    nodes.append(helper.make_node("Gather", ["lm_table", "input_ids"], ["logits"]))
    for name in ("eq", "ek", "ev"):
        inits.append(numpy_helper.from_array(rng.standard_normal((VOCAB, heads * head)).astype(dtype), name))
    for name in ("eq", "ek", "ev"):
        nodes.append(helper.make_node("Gather", [name, "input_ids"], [name[1]]))
    if attention == "concat":
        inits.append(numpy_helper.from_array(np.array([0, 0, heads, head], dtype=np.int64), "kv_shape"))
        nodes.append(helper.make_node("Reshape", ["k", "kv_shape"], ["k4"]))
        nodes.append(helper.make_node("Transpose", ["k4"], ["kv_new"], perm=[0, 2, 1, 3]))
    else:  # seqlens_k = Σ mask − 1, total_sequence_length = the mask's width (as the model builder computes them)
        inits += [numpy_helper.from_array(np.array([1], dtype=np.int64), "axis1"),
                  numpy_helper.from_array(np.array(1, dtype=np.int64), "one")]
        nodes += [helper.make_node("ReduceSum", ["attention_mask", "axis1"], ["mask_sum"], keepdims=0),
                  helper.make_node("Sub", ["mask_sum", "one"], ["seqlens64"]),
                  helper.make_node("Cast", ["seqlens64"], ["seqlens_k"], to=TensorProto.INT32),
                  helper.make_node("Shape", ["attention_mask"], ["mask_shape"]),
                  helper.make_node("Gather", ["mask_shape", "one"], ["total64"]),
                  helper.make_node("Cast", ["total64"], ["total_len"], to=TensorProto.INT32)]
    for i in range(layers):
        for part in ("key", "value"):
            inputs.append(helper.make_tensor_value_info(f"past_key_values.{i}.{part}", _elem(dtype),
                                                        ["batch", heads, "past", head]))
            outputs.append(helper.make_tensor_value_info(f"present.{i}.{part}", _elem(dtype),
                                                         ["batch", heads, "total", head]))
            if attention == "concat":
                nodes.append(helper.make_node("Concat", [f"past_key_values.{i}.{part}", "kv_new"],
                                              [f"present.{i}.{part}"], axis=2))
        if attention == "gqa":
            nodes.append(helper.make_node(
                "GroupQueryAttention", ["q", "k", "v", f"past_key_values.{i}.key", f"past_key_values.{i}.value",
                                        "seqlens_k", "total_len"],
                [f"attn_{i}", f"present.{i}.key", f"present.{i}.value"], domain="com.microsoft",
                num_heads=heads, kv_num_heads=heads))
    graph = helper.make_graph(nodes, "tiny", inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 8
    onnx.save(model, folder / "model.onnx")
    config = {
        "model": {
            "bos_token_id": 1, "context_length": 4096, "eos_token_id": VOCAB - 1, "pad_token_id": 0,
            "type": "llama", "vocab_size": VOCAB,
            "decoder": {
                "session_options": {"log_id": "onnxruntime-genai", "provider_options": []},
                "filename": "model.onnx", "head_size": head, "hidden_size": heads * head,
                "num_attention_heads": heads, "num_hidden_layers": layers, "num_key_value_heads": heads,
                "inputs": {"input_ids": "input_ids", "attention_mask": "attention_mask",
                           "past_key_names": "past_key_values.%d.key", "past_value_names": "past_key_values.%d.value"},
                "outputs": {"logits": "logits", "present_key_names": "present.%d.key",
                            "present_value_names": "present.%d.value"},
            },
        },
        "search": {"max_length": MAX_LENGTH, "past_present_share_buffer": share, "num_beams": 1, "do_sample": False},
    }
    (folder / "genai_config.json").write_text(json.dumps(config, indent=1))


def held(generator, layers: int) -> dict:
    """Shape and bytes of every past input and present output the generator binds now."""
    out = {"past_bytes": 0, "present_bytes": 0}
    for i in range(layers):
        for part in ("key", "value"):
            past = generator.get_input(f"past_key_values.{i}.{part}")
            present = generator.get_output(f"present.{i}.{part}")
            out["past_bytes"] += past.nbytes
            out["present_bytes"] += present.nbytes
            if i == 0 and part == "key":
                out["past_shape"], out["present_shape"] = list(past.shape), list(present.shape)
    return out


def main() -> None:
    import onnxruntime_genai as og

    rows = []
    runs = [("concat", False, 1, 5, 4), ("concat", False, 1, 37, 3), ("concat", False, 2, 10, 2),
            ("gqa", False, 1, 5, 3), ("gqa", True, 1, 5, 3), ("gqa", True, 2, 9, 2)]
    for attention, share, batch, prompt, steps in runs:
        layers, heads, head, dtype = SHAPES[attention]
        with tempfile.TemporaryDirectory() as tmp:
            build(Path(tmp), attention, share)
            model = og.Model(tmp)
            params = og.GeneratorParams(model)
            params.set_search_options(max_length=MAX_LENGTH, batch_size=batch)
            generator = og.Generator(model, params)
            generator.append_tokens(np.tile(2 + np.arange(prompt, dtype=np.int32) % (VOCAB - 3), (batch, 1)))
            common = {"attention": attention, "share_buffer": share, "layers": layers, "kv_heads": heads,
                      "head_size": head, "dtype": np.dtype(dtype).name, "max_length": MAX_LENGTH, "batch": batch,
                      "prompt": prompt}
            rows.append({**common, "step": 0, **held(generator, layers)})
            for step in range(1, steps + 1):
                generator.generate_next_token()
                rows.append({**common, "step": step, **held(generator, layers)})
            del generator, model
    json.dump({"onnxruntime_genai": og.__version__, "rows": rows}, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
