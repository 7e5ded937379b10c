"""Architecture names: a Hugging Face config's ``model_type`` → the llama.cpp architecture its GGUF is written as.

One table, in a module of its own so that the llama.cpp buffer replay can read it without importing the tensor
inventory (:mod:`kvplan.engine.tensors`, which re-exports it).
"""

#: HF config model_type → llama.cpp architecture name
GGUF_ARCH = {
    "llama": "llama", "mistral": "llama", "qwen2": "qwen2", "qwen3": "qwen3", "gemma2": "gemma2",
    "gemma3": "gemma3", "gemma3_text": "gemma3", "phi3": "phi3", "deepseek_v2": "deepseek2", "deepseek2": "deepseek2",
    "gpt_oss": "gpt-oss", "gpt-oss": "gpt-oss", "qwen3_moe": "qwen3moe", "qwen3moe": "qwen3moe",
    "smollm3": "smollm3", "gemma3n": "gemma3n", "gemma3n_text": "gemma3n",
    # hybrids: state layers beside attention (see _state_layer)
    "lfm2": "lfm2", "lfm2_moe": "lfm2moe", "lfm2moe": "lfm2moe", "qwen3_5": "qwen35", "qwen3_5_text": "qwen35", "qwen35": "qwen35",
    "granitemoehybrid": "granitehybrid", "granitehybrid": "granitehybrid", "nemotron_h": "nemotron_h",
    "falcon_h1": "falcon-h1", "falcon-h1": "falcon-h1",
    "qwen3_5_moe": "qwen35moe", "qwen3_5_moe_text": "qwen35moe", "qwen35moe": "qwen35moe",
    "gemma4": "gemma4", "gemma4_text": "gemma4",
    "llama4": "llama4", "llama4_text": "llama4",
    "mixtral": "llama",  # conversion/__init__.py: MixtralForCausalLM is written as arch llama (with experts)
}
