"""What each profile field means, and the JSON Schema fragments of the quantities a file may write.

Plain data with no imports: the pydantic models (:mod:`kvplan.profiles.spec`) attach the fragments to
their quantity types, and :mod:`kvplan.profiles.jsonschema` adds the descriptions to the schema. The
patterns are ECMA-262 (what JSON Schema validators use) and mirror the regular expressions of
:mod:`kvplan.units`.
"""

from __future__ import annotations

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"

_NUM = r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?"


def _quantity(number: dict, suffix: str, example: str, description: str) -> dict:
    """A count: a plain number, or a string with an optional prefix."""
    return {
        "anyOf": [number, {"type": "string", "pattern": rf"^\s*{_NUM}\s*({suffix})?\s*$"}],
        "description": description,
        "examples": [example],
    }


def _with_unit(suffix: str, example: str, description: str, *, zero: bool) -> dict:
    """A size or rate: a string with its unit; a bare number only when it is 0 and ``zero`` allows it
    (:mod:`kvplan.units` refuses any other bare number)."""
    text = {"type": "string", "pattern": rf"^\s*{_NUM}\s*({suffix})\s*$"}
    return {"anyOf": [{"const": 0}, text] if zero else [text], "description": description, "examples": [example]}


SIZE_SCHEMA = _with_unit(r"([kKMGTP]i?)?B", "8 GB", "a size with its unit: '8 GB' (10^9 bytes), '8 GiB' (2^30), "
                         "'512 MB', '8000000000 B'; a bare number other than 0 is refused", zero=True)
POSITIVE_SIZE_SCHEMA = _with_unit(r"([kKMGTP]i?)?B", "8 GB", "a positive size with its unit: '8 GB', '8 GiB', "
                                  "'8000000000 B'; a bare number is refused", zero=False)
RATE_SCHEMA = _with_unit(r"([kKMGTP]i?)?(B/s|Bps)", "51.2 GB/s", "a transfer rate with its unit: '51.2 GB/s', "
                         "'3 GiB/s', '2100 MB/s'; a bare number is refused", zero=False)
FLOPS_SCHEMA = _with_unit(r"[kKMGTP]?(FLOP/s|FLOPS)", "2.1 TFLOP/s", "a compute throughput with its unit: "
                          "'2.1 TFLOP/s' (or 'TFLOPS'); a bare number is refused", zero=False)
COUNT_SCHEMA = _quantity({"type": "integer", "minimum": 1}, r"[kKMBGT]", "6.74B",
                         "a count: '6.74B' (10^9), '494M', '7e9', or a plain integer")
TOKENS_SCHEMA = {
    "anyOf": [{"type": "integer", "minimum": 1},
              {"type": "string", "pattern": r"^\s*(\d{1,3}(,\d{3})+|(\d+(\.\d*)?|\.\d+)\s*[kKMm]?)\s*$"}],
    "description": "a token count: 131072, '131,072' or '128k' (k = 1,024, M = 1,048,576); no exponents",
    "examples": ["8k"],
}
DURATION_SCHEMA = {
    "anyOf": [{"const": 0}, {"type": "string", "pattern": rf"^\s*{_NUM}\s*(s|ms|us|µs|μs|ns)\s*$"}],
    "description": "a duration with its unit: '4.69 ms', '0.004 s', '250 us' (or 'µs'); a bare number other than 0 "
                   "is refused",
    "examples": ["4.69 ms"],
}
FRACTION_SCHEMA = {
    "anyOf": [{"type": "number", "exclusiveMinimum": 0, "maximum": 1},
              {"type": "string", "pattern": rf"^\s*{_NUM}\s*%?\s*$"}],
    "description": "a fraction in (0, 1]: 0.6 or '60%' (a bare number above 1 is refused)",
    "examples": [0.6, "60%"],
}


_COMMON_DOCS = {
    "name": "slug naming the profile (lowercase letters, digits, '.', '_', '-'); the file is NAME.yaml",
    "aliases": "other names people type for it; unique across all profiles of the same kind",
    "description": "one line for humans",
    "sources": "where each figure came from: one entry per field (a URL and what it says, or the arithmetic)",
}

DEVICE_FIELD_DOCS = {
    **_COMMON_DOCS,
    "platform": "operating system family: android, ios, macos, linux, windows",
    "ram": "installed RAM [bytes]",
    "os_reserve": "memory the OS and other apps keep, never available to the model [bytes]; must be below ram",
    "memory_bandwidth": "peak DRAM bandwidth [bytes/s] (bus bits / 8 × transfers/s)",
    "flash_read": "sequential flash read [bytes/s]",
    "flash_write": "sequential flash write [bytes/s]",
    "bandwidth_efficiency": "fraction (0-1] of the roofline that decode reaches in practice (0.6 or '60%'); "
                            "1.0 = roofline",
    "compute": "sustained FLOP/s usable for prefill",
    "compute_efficiency": "fraction (0-1] of compute that prefill sustains (0.6 or '60%'); 1.0 = compute is "
                          "already the sustained rate",
    "decode_latency": "fixed time per decode step beyond streaming the bytes ('4.69 ms'; kvplan calibrate fits it); "
                      "0 = unknown, pure bandwidth",
    "runtime_overhead": "runtime memory beyond weights and cache (buffers, graph) [bytes]",
    "cpu_features": "the CPU's SIMD features that decide which weights llama.cpp's CPU backend repacks: avx2, "
                    "avx512, neon-i8mm, neon-dotprod or none (default: neon-i8mm on android; none on ios and "
                    "macos, where llama.cpp runs on Metal, which repacks nothing; avx2 elsewhere)",
    "gpu_working_set": "Apple GPU: Metal's recommendedMaxWorkingSetSize as llama.cpp or MLX report it [bytes] "
                       "(MLX-LM warns when the weights pass 90 % of it; ggml when its Metal buffers pass it); "
                       "omit when unknown",
    "gpu_memory": "a discrete GPU's own memory (VRAM) usable for weights, KV cache and compute buffers [bytes], "
                  "separate from ram; omit for unified memory (an Apple GPU's limit is gpu_working_set)",
    "gpu_memory_bandwidth": "the discrete GPU memory's bandwidth [bytes/s] (what a decode step reads from it); "
                            "needed with gpu_memory",
    "app_memory_limit": "the most memory the OS lets one app (process) hold before it kills it [bytes]: iOS's "
                        "per-app limit without the increased-memory-limit entitlement, a Linux cgroup's memory.max; "
                        "the budget is min(ram − os_reserve, this); omit where there is no fixed per-app cap "
                        "(Android: the low-memory killer decides)",
    "app_memory_limit_increased": "iOS: the per-app limit with the com.apple.developer.kernel.increased-memory-limit "
                                  "entitlement [bytes] (kvplan's default where given; app_limit picks)",
}

MODEL_FIELD_DOCS = {
    **_COMMON_DOCS,
    "family": "models of one family can stand in for each other (a smaller model of the same family)",
    "architecture": "the Hugging Face config model_type (llama, qwen2, gemma3_text, deepseek_v2, …)",
    "params": "parameter count (all experts for a mixture of experts)",
    "params_active": "parameters one token uses (mixture of experts), counted like params: embedding table included",
    "layers": "transformer blocks (num_hidden_layers)",
    "attention_heads": "query heads (num_attention_heads)",
    "kv_heads": "key/value heads (num_key_value_heads), or a list with one entry per layer",
    "head_dim": "key (query) head width; config head_dim, else hidden_size / attention_heads",
    "v_head_dim": "value head width when it differs from head_dim (default: head_dim)",
    "global_head_dim": "key and value head width of the full-attention (unwindowed) layers when it differs from "
                       "head_dim, which then holds the sliding layers' (Gemma 4: 256 sliding, 512 global)",
    "hidden_size": "model width; with vocab_size gives the input-embedding table decode does not stream",
    "intermediate_size": "MLP width, or a list with one entry per layer (Gemma 3n)",
    "shared_kv_layers": "the last N layers read the KV cache of the last earlier layer of their type and hold none "
                        "(Gemma 3n's num_kv_shared_layers)",
    "mtp_layers": "multi-token-prediction blocks after the layers (config mtp_num_hidden_layers, GGUF "
                  "nextn_predict_layers): not in layers nor params; a GGUF holds them unless the converter was told "
                  "to leave them out, and llama.cpp loads them only for MTP speculative decoding",
    "mtp_weights": "bytes of the MTP blocks' tensors in the model's file (an imported GGUF's; else priced from "
                   "the weight type or bits)",
    "hidden_size_per_layer_input": "per-layer embedding width (Gemma 3n PLE): the table is layers × this wide",
    "vocab_size_per_layer_input": "rows of the per-layer embedding table (Gemma 3n PLE); a step reads one row",
    "vocab_size": "vocabulary size",
    "tie_embeddings": "input embedding shared with the output layer (then it is streamed every token)",
    "max_context": "trained context length [tokens] (max_position_embeddings)",
    "sliding_window": "attention window of the local layers [tokens]; only if the model really applies it",
    "attention_chunk_size": "chunked attention (Llama 4): the chunk of the layers sliding_window_pattern names "
                            "[tokens]; a token attends only the earlier tokens of its own chunk",
    "sliding_window_pattern": "which layers use the window: all | alternating (even layers local) | "
                              "'N:1' (layer i local when i % (N+1) < N) | [0-based local layer indices]",
    "mla": "multi-head latent attention: the cache holds kv_lora_rank + qk_rope_head_dim values per token per layer",
    "state": "state layers of a hybrid model: which layers keep a fixed-size state per sequence (no KV cache) and "
             "the widths that size it (docs/profiles.md, State layers)",
    "weight_bits": "deployment bits per weight (may be fractional: q4_0 is 4.5)",
    "weight_type": "deployment weight format by name: a GGUF file type (q4_k_m, q4_0, q8_0, …, priced tensor by "
                   "tensor as llama.cpp's quantizer assigns types) or mlx-4bit, mlx-8bit, gptq-4bit, awq-4bit, "
                   "executorch-8da4w[-g32]; overrides weight_bits",
    "experts": "routed experts per MoE layer (n_routed_experts / num_local_experts)",
    "experts_per_token": "experts the router picks per token (num_experts_per_tok)",
    "expert_intermediate_size": "FFN width of one expert (moe_intermediate_size)",
    "shared_experts": "always-on shared experts per MoE layer (n_shared_experts)",
    "dense_layers": "leading layers with a dense FFN instead of experts (first_k_dense_replace)",
    "rope_scaling": "config rope_scaling type (llama3, longrope, yarn …): llama3 and longrope add RoPE factor tensors",
    "gguf_vocab_size": "rows of the token embedding in a GGUF when the converter trims the vocabulary (Gemma 3)",
    "weights": "explicit weight size [bytes]; overrides params × weight_bits / 8",
    "kv_bits": "bits per cached K and V value (default 16)",
    "k_bits": "bits per cached key value (overrides kv_bits)",
    "v_bits": "bits per cached value value (overrides kv_bits)",
    "kv_group_size": "group-quantized cache: one fp16 scale per this many values",
    "kv_type": "cache type by runtime name: f32 f16 bf16 fp8 q8_0 q4_0 q4_1 q5_0 q5_1 iq4_nl",
    "kv_policy": "KV cache compression policy (docs/kv-policies.md)",
    "runtime": "the runtime this model is deployed with, used when no --runtime is given (docs/runtimes.md)",
    "k_type": "key cache type by runtime name (overrides kv_type)",
    "v_type": "value cache type by runtime name (overrides kv_type)",
}

STATE_FIELD_DOCS = {
    "mixer": "what computes the state: short_conv (LFM2), mamba2 (Granite 4.0-H, Nemotron-H), gated_deltanet (Qwen3.5)",
    "layers": "0-based indices of the state layers; every layer not listed here or in feedforward_layers attends",
    "feedforward_layers": "0-based indices of MLP-only layers (no attention, no state)",
    "parallel_attention": "true: each state layer also attends, attention and the mixer side by side (Falcon-H1); "
                          "it caches K/V rows and keeps its state",
    "conv_kernel_tokens": "taps of the causal depthwise conv [tokens] (conv_L_cache, linear_conv_kernel_dim, mamba_d_conv)",
    "conv_channels": "short_conv: channels of the conv (hidden_size)",
    "ssm_heads": "mamba2: SSM heads (mamba_n_heads)",
    "ssm_head_dim": "mamba2: values per SSM head (mamba_d_head); d_inner = ssm_heads × ssm_head_dim",
    "ssm_groups": "mamba2: B/C groups (mamba_n_groups)",
    "ssm_state_size": "mamba2: state size per channel (mamba_d_state)",
    "linear_key_heads": "gated_deltanet: key heads (linear_num_key_heads)",
    "linear_key_head_dim": "gated_deltanet: values per key head (linear_key_head_dim)",
    "linear_value_heads": "gated_deltanet: value heads (linear_num_value_heads)",
    "linear_value_head_dim": "gated_deltanet: values per value head (linear_value_head_dim)",
}

MLA_FIELD_DOCS = {
    "kv_lora_rank": "width of the compressed latent cached per token per layer",
    "qk_rope_head_dim": "width of the shared decoupled RoPE key cached beside it",
}
