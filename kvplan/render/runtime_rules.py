"""The words for the rules a runtime's cache model applied (:class:`kvplan.caches.facts.Rule`): ``check``'s
runtime table and its JSON ``runtime.rules`` list. One entry per kind; each takes the rule's facts."""

from __future__ import annotations

from kvplan.render.reasons import reason_text


def _architecture(v) -> str:
    return f"architecture {v['architecture'] or 'unknown'}"


def _streams(v) -> str:
    return (f"{v['sequences']} sequences not unified: pad({v['padded']:,} / {v['sequences']}, 256) = "
            f"{v['cells']:,} cells per stream × {v['streams']} streams = {v['total']:,} cells")


def _swa_cells(v) -> str:
    return (f"windowed layers: pad(min({v['n_ctx_seq']:,}, {v['window']:,} × {v['streams_per_window']} + "
            f"n_ubatch {v['n_ubatch']}), 256) = {v['cells']:,} cells per stream")


def _chunked_cells(v) -> str:
    other = "" if v["profile_chunk"] == v["chunk"] else f"; not the profile's {v['profile_chunk']:,}"
    return (f"chunked attention: {v['layers']} layers attend in chunks of {v['chunk']:,} (LLAMA_SWA_TYPE_CHUNKED, "
            f"the loader's n_swa{other}), cached as the windowed layers")


def _mla_latent(v) -> str:
    return (f"MLA latent cached (transformers ≥ {v['since']}): {v['kv_lora_rank']} + {v['qk_rope_head_dim']} "
            f"values per token per layer, {v['latent_bytes_per_token']:,} B/token; ≤ {v['before']} cached "
            f"per-head K/V, {v['expanded_bytes_per_token']:,} B/token")


def _static_preallocated(v) -> str:
    sliding = f", {v['sliding']:,} per sliding layer" if v["sliding"] is not None else ""
    return f"StaticCache preallocates {v['full']:,} tokens per full layer{sliding}"


_WORDS = {
    "architecture": _architecture,
    "linear_attention_layers": lambda v: (f"state layers: {v['layers']} LinearAttentionLayer in the DynamicCache, "
                                          f"conv_states of the whole kernel in {v['dtype']}, recurrent_states in "
                                          f"float32, {v['bytes_per_sequence']:,} B per sequence"),
    "parallel_layers": lambda v: (f"parallel layers: each of {v['layers']} layers attends and keeps a state side by "
                                  f"side, K/V in {v['kv']} and a state in {v['state']}"),
    "recurrent_state": lambda v: (f"state layers: llama_memory_recurrent, {v['layers']} layers × {v['cells']} cells "
                                  f"(max(1, -np)), r + s rows in f32 whatever the KV cache type, "
                                  f"{v['bytes_per_cell']:,} B per cell"),
    "shared_kv_no_cache": lambda v: (f"shared KV: layers {v['first']}–{v['first'] + v['layers'] - 1} read an earlier "
                                     "layer's cache and get none of their own"),
    # llama.cpp (kvplan.caches.llamacpp)
    "shared_kv": lambda v: (f"shared KV: layers {v['first']}–{v['first'] + v['layers'] - 1} reuse an earlier layer's "
                            f"cache (n_layer_kv_from_start {v['from_start']}) and hold no K/V tensor"),
    "type_as_runtime": lambda v: f"{v['side'].upper()} cache {v['asked']} is llama.cpp's {v['runtime_type']}",
    "window_ignored": lambda v: (f"sliding window {v['window']:,} ignored: {reason_text(v['reason'])}; full context "
                                 "on every layer"),
    "mla_k_row": lambda v: (f"MLA: one K row of {v['kv_lora_rank']} + {v['qk_rope_head_dim']} values per cell "
                            "per layer, no V tensor"),
    "v_rows_padded": lambda v: f"flash attention off: V transposed, every V row padded to {v['values']} values",
    "flash_attn_auto_on": lambda v: ("flash attention auto: assumed on (llama.cpp refuses a quantized V cache if it "
                                     "resolves off)"),
    "windowed_layers": lambda v: (f"{v['windowed']} of {v['layers']} layers windowed ({v['window']:,} tokens), "
                                  "the rest full context"),
    "padded_ctx": lambda v: f"-c {v['requested']:,} padded to {v['padded']:,} cells",
    "kv_unified": lambda v: (f"--kv-unified: one stream of {v['cells']:,} cells shared by {v['sequences']} "
                             "sequence(s)"),
    "streams": _streams,
    "swa_full": lambda v: f"--swa-full: windowed layers get the full {v['cells']:,} cells",
    "swa_cells": _swa_cells,
    "chunked_cells": _chunked_cells,
    "beyond_training": lambda v: (f"n_ctx_seq {v['n_ctx_seq']:,} exceeds the training context {v['n_ctx_train']:,} "
                                  "(llama.cpp only warns)"),
    # ollama (kvplan.caches.ollama)
    "num_ctx_lowered": lambda v: (f"num_ctx {v['num_ctx']:,} lowered to the training context {v['n_ctx_train']:,} "
                                  "(Ollama: requested context size too large for model)"),
    "one_slot": lambda v: (f"Ollama runs {v['architecture']} in one slot: -np 1, not the {v['asked']} asked "
                           "(OLLAMA_NUM_PARALLEL)"),
    "ollama_ctx": lambda v: f"-c = num_ctx {v['num_ctx']:,} × {v['parallel']} parallel = {v['n_ctx']:,}",
    "ollama_batch": lambda v: f"-b and -ub {v['num_batch']} (num_batch), not llama.cpp's 2048 / 512",
    # transformers (kvplan.caches.transformers)
    "cache_dtype": lambda v: f"cache dtype {v['dtype']}",
    "cache_class": lambda v: ("DynamicCache: full-attention layers hold every token" if v["cache"] == "dynamic"
                              else "StaticCache: tensors preallocated"),
    "mla_latent": _mla_latent,
    "sliding_layers": lambda v: f"{v['sliding']} of {v['layers']} layers slide (window {v['window']:,})",
    "sliding_view": lambda v: (f"sliding layers keep {v['reachable']:,} tokens reachable, {v['allocated']:,} "
                               f"allocated (a view of the torch.cat result); {v['peak']:,} right after a one-shot "
                               "prefill"),
    "static_preallocated": _static_preallocated,
    # mlx-lm (kvplan.caches.mlx)
    "mlx_own_cache": lambda v: (f"model module {v['module']} builds its own caches (make_cache)"
                                + ("; --max-kv-size is ignored" if v["ignores_max_kv_size"] else "")),
    "mlx_max_kv_size": lambda v: (f"RotatingKVCache(max_size={v['max_size']:,}, keep={v['keep']}) on every layer "
                                  "(--max-kv-size)"),
    "mlx_window_mask_only": lambda v: (f"sliding window {v['window']:,} only masks attention in {v['module']}: "
                                       "its layers cache the whole context"),
    "mlx_kv_growth": lambda v: (f"KVCache grows in steps of {v['step']} slots (prefill chunks of {v['chunk']:,}): "
                                f"{v['capacity']:,} slots for {v['offset']:,} tokens"),
    "mlx_rotating_peak": lambda v: (f"RotatingKVCache({v['max_size']:,}) holds {v['peak']:,} tokens after a prefill "
                                    f"chunk of {v['chunk']:,} (max_size + chunk − 1 at most), {v['steady']:,} after "
                                    "the prompt"),
    "mlx_chunked": lambda v: (f"ChunkedKVCache({v['chunk']:,}) on {v['layers']} layers (llama4 make_cache): trimmed "
                              f"to its last {v['chunk']:,} tokens before each call, then grown as a KVCache: "
                              f"{v['slots']:,} slots after the prompt, {v['peak']:,} after a prefill chunk of "
                              f"{v['prefill']:,} at most"),
    "mlx_prompt_cache": lambda v: (f"mlx_lm.server's prompt cache (LRUPromptCache) keeps up to {v['caches']} earlier "
                                   f"prompts' caches beside the live one: {v['caches']} × {v['cache_bytes']:,} B = "
                                   f"{v['held_bytes']:,} B if each is as long as this one (--prompt-cache-size)"),
    "mlx_quantized": lambda v: (f"QuantizedKVCache {v['bits']}-bit, group {v['group']}, scales and biases "
                                f"{v['dtype']}, from offset {v['start']:,}"
                                + ("" if v["applies"] else ": not reached, the cache stays " + v["dtype"])),
    # onnxruntime-genai (kvplan.caches.ortgenai)
    "ortgenai_shared_buffer": lambda v: (f"past_present_share_buffer: one key and one value tensor per layer of "
                                         f"{v['max_length']:,} tokens (max_length), allocated once"),
    "ortgenai_past_present": lambda v: (f"no shared buffer: at {v['present']:,} tokens the past ({v['past']:,} rows) "
                                        f"and the present ({v['present']:,}) tensors both exist, from the first decode "
                                        "step on"),
    "ortgenai_window_not_capped": lambda v: (f"sliding window {v['window']:,} not applied to the cache (only the "
                                             "NvTensorRtRtx device caps it): every layer holds the whole length"),
    # litert-lm (kvplan.caches.litertlm)
    "litert_static_kv": lambda v: (f"KV inputs of {v['tokens']:,} tokens on {v['layers']} layers, allocated when "
                                   "the executor is created"
                                   + (" (the exported length)" if v["exported"] else
                                      f" (max_num_tokens {v['max_num_tokens']:,}, taken as the exported length)")),
    "litert_buffer_sets": lambda v: (f"{v['backend']} backend: {v['sets']} KV buffer set"
                                     + (" (the output is the input's buffer)" if v["sets"] == 1 else
                                        "s (input and output, swapped every step)")),
    "litert_kv_dtype": lambda v: (f"KV inputs in {v['dtype']}"
                                  + (" (ai-edge-torch's default export; give the cache type the model was exported "
                                     "with)" if v["exporter_default"] else " (the export's, as asked)")),
    "litert_window_not_capped": lambda v: (f"sliding window {v['window']:,} not applied to the KV inputs: every "
                                           "layer holds the exported length"),
    # ExecuTorch (kvplan.caches.executorch)
    "et_dtype": lambda v: ("cache in int8 per token (--quantize_kv_cache)" if v["quantized"]
                           else f"cache dtype {v['dtype']} (--dtype-override)"),
    "et_quantized": lambda v: (f"QuantizedKVCache (--quantize_kv_cache): per token and head {v['head_dim']} int8 "
                               f"values + a {v['scale_dtype']} scale + an int8 zero point = {v['bytes_per_head']} B, "
                               "K and V each"),
    "et_ring": lambda v: (f"{v['layers']} layers windowed ({v['window']:,} tokens, --local_global_attention): ring "
                          f"buffers of 2 × {v['window']:,} = {v['slots']:,} slots + int64 cache positions"),
    "et_static": lambda v: (f"static cache: {v['slots']:,} slots on each of {v['layers']} full layers, allocated when "
                            "the program loads" + ("" if v["given"] else " (max_context_length: the context)")),
}

KINDS = frozenset(_WORDS)


def rule_text(rule) -> str:
    """The sentence for one :class:`~kvplan.caches.facts.Rule`."""
    return _WORDS[rule.kind](rule.facts())
