"""Measure ONNX Runtime GenAI's key/value tensors (opt-in harness, not run by CI).

Builds a tiny decoder-only ONNX graph with random weights whose attention is a plain Concat of the past and the
new keys/values (so it runs on the CPU provider without GroupQueryAttention), writes its genai_config.json, and
runs onnxruntime-genai's own Generator over prompts and decode steps, recording after every step the shape and
bytes of each layer's ``past_key_values.<i>.*`` input and ``present.<i>.*`` output (``Generator.get_input`` /
``get_output``: the tensors the DefaultKeyValueCache holds). Without a shared buffer only; a shared buffer needs
GroupQueryAttention, which this graph does not use.

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

LAYERS, HEADS, HEAD, VOCAB = 3, 2, 16, 32  # tiny: 3 layers × 2 KV heads × 16 values, float32


def build(folder: Path, dtype=np.float32) -> None:
    elem = TensorProto.FLOAT if dtype == np.float32 else TensorProto.FLOAT16
    rng = np.random.default_rng(0)
    nodes, inits = [], []
    inputs = [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"]),
              helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "total"])]
    outputs = [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", "seq", VOCAB])]
    inits.append(numpy_helper.from_array(rng.standard_normal((VOCAB, HEADS * HEAD)).astype(dtype), "embed"))
    inits.append(numpy_helper.from_array(np.array([0, 0, HEADS, HEAD], dtype=np.int64), "kv_shape"))
    # logits: a fixed table that never picks the end token (VOCAB − 1)
    table = rng.standard_normal((VOCAB, VOCAB)).astype(np.float32)
    table[:, VOCAB - 1] = -1e9
    inits.append(numpy_helper.from_array(table, "lm_table"))
    nodes.append(helper.make_node("Gather", ["embed", "input_ids"], ["h"]))
    nodes.append(helper.make_node("Reshape", ["h", "kv_shape"], ["h4"]))
    nodes.append(helper.make_node("Transpose", ["h4"], ["kv_new"], perm=[0, 2, 1, 3]))
    nodes.append(helper.make_node("Gather", ["lm_table", "input_ids"], ["logits"]))
    for i in range(LAYERS):
        for part in ("key", "value"):
            inputs.append(helper.make_tensor_value_info(f"past_key_values.{i}.{part}", elem,
                                                        ["batch", HEADS, "past", HEAD]))
            outputs.append(helper.make_tensor_value_info(f"present.{i}.{part}", elem,
                                                         ["batch", HEADS, "total", HEAD]))
            nodes.append(helper.make_node("Concat", [f"past_key_values.{i}.{part}", "kv_new"],
                                          [f"present.{i}.{part}"], axis=2))
    graph = helper.make_graph(nodes, "tiny", inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, folder / "model.onnx")
    config = {
        "model": {
            "bos_token_id": 1, "context_length": 4096, "eos_token_id": VOCAB - 1, "pad_token_id": 0,
            "type": "llama", "vocab_size": VOCAB,
            "decoder": {
                "session_options": {"log_id": "onnxruntime-genai", "provider_options": []},
                "filename": "model.onnx", "head_size": HEAD, "hidden_size": HEADS * HEAD,
                "num_attention_heads": HEADS, "num_hidden_layers": LAYERS, "num_key_value_heads": HEADS,
                "inputs": {"input_ids": "input_ids", "attention_mask": "attention_mask",
                           "past_key_names": "past_key_values.%d.key", "past_value_names": "past_key_values.%d.value"},
                "outputs": {"logits": "logits", "present_key_names": "present.%d.key",
                            "present_value_names": "present.%d.value"},
            },
        },
        "search": {"max_length": 4096, "past_present_share_buffer": False, "num_beams": 1, "do_sample": False},
    }
    (folder / "genai_config.json").write_text(json.dumps(config, indent=1))


def held(generator) -> dict:
    """Shape and bytes of every past input and present output the generator holds now."""
    out = {"past_bytes": 0, "present_bytes": 0}
    for i in range(LAYERS):
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
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        build(folder)
        model = og.Model(str(folder))
        for batch, prompt, steps in ((1, 5, 4), (1, 37, 3), (2, 10, 2)):
            params = og.GeneratorParams(model)
            params.set_search_options(max_length=4096, batch_size=batch)
            generator = og.Generator(model, params)
            tokens = np.tile(2 + np.arange(prompt, dtype=np.int32) % (VOCAB - 3), (batch, 1))
            generator.append_tokens(tokens)
            rows.append({"batch": batch, "prompt": prompt, "step": 0, **held(generator)})
            for step in range(1, steps + 1):
                generator.generate_next_token()
                rows.append({"batch": batch, "prompt": prompt, "step": step, **held(generator)})
    json.dump({"onnxruntime_genai": og.__version__, "layers": LAYERS, "kv_heads": HEADS, "head_size": HEAD,
               "dtype": "float32", "rows": rows}, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
