"""What ``kvplan check`` shows about a runtime-exact cache (``--runtime``): JSON object and a table."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvplan.render import fmt
from kvplan.render.runtime_rules import rule_text
from kvplan.render.tables import Table

if TYPE_CHECKING:
    from kvplan.plan.results import Evaluation


def runtime_cache(ev: Evaluation):
    return ev.cache if hasattr(ev.cache, "describe") and getattr(ev.cache, "name", None) else None


def mlx_command(options: dict) -> str:
    """The ``mlx_lm.generate`` (or, with a prompt cache, ``mlx_lm.server``) command line whose cache the mlx-lm
    model priced (its options as in force; the defaults — prefill 2048, group 64, start 5000, from
    ``mlx_lm/generate.py`` — left out; the server's --prompt-cache-size always written, as kvplan prices it)."""
    server = options.get("prompt_cache_size") is not None
    parts = [f"mlx_lm.server --model MODEL --prompt-cache-size {options['prompt_cache_size']}" if server
             else "mlx_lm.generate --model MODEL --prompt -"]
    if options["max_kv_size"] is not None:
        parts.append(f"--max-kv-size {options['max_kv_size']}")
    if options["prefill_step_size"] != 2048:
        parts.append(f"--prefill-step-size {options['prefill_step_size']}")
    if options["kv_bits"] is not None:
        parts.append(f"--kv-bits {options['kv_bits']}")
        if options["kv_group_size"] != 64:
            parts.append(f"--kv-group-size {options['kv_group_size']}")
        if options["quantized_kv_start"] != 5000:
            parts.append(f"--quantized-kv-start {options['quantized_kv_start']}")
    return " ".join(parts)


def ollama_command(options: dict) -> str:
    """The ``llama-server`` command line Ollama starts for this request (its memory-relevant arguments, in
    Ollama's order: :func:`kvplan.render.ollama_command.llama_server_args`)."""
    from types import SimpleNamespace

    from kvplan.render.ollama_command import llama_server_args

    a = options["llama_server"]
    launch = SimpleNamespace(n_ctx_tokens=a["n_ctx"], parallel=a["parallel"], mmap=a["mmap"],
                             cache_type=a["cache_type"], flash_attn=a["flash_attn"], embedding=False,
                             batch_tokens=a["batch"])
    return " ".join(("llama-server", "--model", "BLOB", *llama_server_args(launch)))


def ortgenai_command(options: dict) -> str:
    """The genai_config.json ``search`` options whose cache the onnxruntime-genai model priced."""
    max_length = options["max_length"] if options["max_length"] is not None else "the context"
    share = "true" if options["past_present_share_buffer"] else "false"
    return (f"genai_config.json search: max_length {max_length}, past_present_share_buffer {share}, "
            f"batch_size {options['batch_size']}, num_beams 1")


def litertlm_command(options: dict) -> str:
    """The ``litert_lm_main`` command line whose KV buffers the litert-lm model priced."""
    return f"litert_lm_main --model_path MODEL --backend {options['backend']}"


ET_DEFAULT_MAX_SEQ_LENGTH = 128  # ExecuTorch v1.4.1 export.max_seq_length default, refused above max_context_length


def executorch_command(options: dict) -> str:
    """The ``export_llm`` command line (ExecuTorch v1.4.1, ``extension/llm/export/export_llm.py``, the README's
    way to export Llama) whose program's cache the executorch model priced; options as in force."""
    m = options["max_context_length"]
    parts = ["python -m extension.llm.export.export_llm +base.model_class=MODEL_CLASS +base.checkpoint=CHECKPOINT "
             "+base.params=PARAMS model.use_kv_cache=True model.use_sdpa_with_kv_cache=True",
             f"model.dtype_override={options['dtype_override']}"]
    if options["quantize_kv_cache"]:
        parts.append("model.quantize_kv_cache=True")
    if options["local_global_attention"] is not None:
        parts.append("'model.local_global_attention=[" + ",".join(map(str, options["local_global_attention"])) + "]'")
    parts.append(f"export.max_context_length={m}")
    if m < ET_DEFAULT_MAX_SEQ_LENGTH:
        parts.append(f"export.max_seq_length={m}")
    return " ".join(parts)


# the runtime's own command line (or config) whose cache is priced, by runtime name: options in force → text
COMMANDS = {"mlx-lm": mlx_command, "ollama": ollama_command, "onnxruntime-genai": ortgenai_command,
            "litert-lm": litertlm_command, "executorch": executorch_command}

# when a runtime's KV peak happens, by runtime name (the peak row and its table line); the rest peak right after
# a one-shot prefill (transformers' views of the prompt tensors)
PEAK_WORDS = {
    "mlx-lm": ("+ KV at the peak during the chunked prefill (rotating and chunked caches' chunk overhang, the cache "
               "before quantization; peak {peak} in all)", "KV peak (during the chunked prefill)"),
    "onnxruntime-genai": ("+ the past tensors beside the present ones, held from the first decode step on (peak "
                          "{peak} in all)", "KV held at every decode step (past + present)"),
}
#: the tables' note on the KV peak column, whichever runtimes their rows are under
PEAK_NOTE = ("total = weights + KV peak + pinned prefix + runtime overhead (the peak: the most the cache holds at any "
             "moment, as its runtime reaches it: right after a one-shot prefill, during a chunked prefill, at a step "
             "that holds past and present, or before an eviction; check's runtime table says which)")
ONE_SHOT_PEAK = ("+ KV at the peak right after prefill (views of the prompt tensors; peak {peak} in all)",
                 "KV peak (right after a one-shot prefill)")


def _described(cache, ev: Evaluation) -> dict:
    """The cache's facts for this request, with the runtime's command line where one is priced."""
    d = cache.describe(ev.scenario.ctx, ev.scenario.sequences)
    command = COMMANDS.get(d["name"])
    if command is not None:
        d["command"] = command(d["options"])
    return d


def runtime_json(ev: Evaluation) -> dict:
    """``{"name": "ideal", …}`` for the contract's formula, else the runtime's rules, cells and extra buffers."""
    cache = runtime_cache(ev)
    if cache is None:
        rule = "contract closed form: Σ_ℓ c_ℓ(ctx) · n_kv · (d_k · bytes_k + d_v · bytes_v)"
        return {"name": "ideal", "rules": [rule], "cells": None, "from_profile": False,
                "llamacpp_buffers_bytes": ev.llamacpp_buffers_bytes}
    d = _described(cache, ev)
    d["rules"] = [rule_text(r) for r in d["rules"]]
    from_profile = bool(getattr(ev.scenario, "runtime_from_profile", False))
    if from_profile:
        d["rules"] = [profile_rule(ev)] + d["rules"]
    if "compute_buffer_bytes" in d:  # llama.cpp: the buffers counted in memory.total_bytes (null: shape unknown)
        d["compute_buffer_bytes"] = ev.compute_buffer_bytes or None
        d["output_buffer_bytes"] = ev.output_buffer_bytes or None
    return {**d, "from_profile": from_profile}


def compute_buffer_label(ev: Evaluation) -> str:
    spec = ev.cache.spec  # llama.cpp's options, as given or as Ollama passes them
    fa = "on" if spec.flash_attn != "off" else "off"
    return (f"llama.cpp compute buffer (worst-case micro-batch of {min(spec.ubatch, spec.batch):,} "
            f"tokens, flash attention {fa})")


def output_buffer_label(ev: Evaluation) -> str:
    n = ev.scenario.sequences
    return f"llama.cpp output buffer (logits of {n} sequence{'s' if n != 1 else ''})"


def prompt_cache_of(ev: Evaluation) -> tuple[int, int]:
    """(earlier caches kept, their bytes) of ``mlx_lm.server``'s prompt cache, part of the KV peak; (0, 0)
    elsewhere."""
    held = getattr(ev.cache, "prompt_cache_bytes", None)
    caches = getattr(getattr(ev.cache, "spec", None), "prompt_cache_size", None)
    if held is None or not caches:
        return 0, 0
    return caches, int(held(ev.scenario.ctx))


def prompt_cache_label(caches: int) -> str:
    return (f"+ mlx_lm.server prompt cache: {caches} earlier prompts' caches, each priced at this context "
            "(--prompt-cache-size)")


def peak_label(ev: Evaluation, peak: str) -> str:
    """The memory table's row for a runtime cache's transient peak above its steady size."""
    return PEAK_WORDS.get(getattr(ev.cache, "name", None), ONE_SHOT_PEAK)[0].format(peak=peak)


def profile_rule(ev: Evaluation) -> str:
    return (f"runtime {ev.scenario.runtime.name} named by the model profile {ev.scenario.model.name!r} "
            "(no --runtime given; --runtime ideal overrides it)")


def runtime_table(ev: Evaluation, units: str = "si") -> Table | None:
    cache = runtime_cache(ev)
    if cache is None:
        return None
    d = _described(cache, ev)
    t = Table(f"runtime: {d['name']}", ["rule or figure", "value"])
    if getattr(ev.scenario, "runtime_from_profile", False):
        t.add(profile_rule(ev), "model profile")
    for rule in d["rules"]:
        t.add(rule_text(rule), "applied")
    for part in d.get("caches", []):
        total = part["k_bytes"] + part["v_bytes"]
        t.add(f"llama_kv_cache: {part['cells']:,} cells, {part['layers']} layers, {part['streams']} stream(s)",
              f"{fmt.exact_bytes(total)} ({total / 2**20:.2f} MiB)")
    recurrent = d.get("recurrent")
    if recurrent:
        total = recurrent["r_bytes"] + recurrent["s_bytes"]
        t.add(f"llama_memory_recurrent: {recurrent['cells']:,} cells, {recurrent['layers']} layers, "
              f"R ({recurrent['type']}) {recurrent['r_bytes'] / 2**20:.2f} MiB, "
              f"S ({recurrent['type']}) {recurrent['s_bytes'] / 2**20:.2f} MiB",
              f"{fmt.exact_bytes(total)} ({total / 2**20:.2f} MiB)")
    if "command" in d:  # the runtime's own command line whose cache this prices
        t.add(f"command priced ({d['name']} {d['version']})", d["command"])
    t.add("KV allocated (steady state)", f"{fmt.exact_bytes(ev.kv_bytes)} ({fmt.bytes_(ev.kv_bytes, units)})")
    caches, held = prompt_cache_of(ev)
    if held:
        t.add(f"prompt cache ({caches} earlier prompts' caches; in the KV peak)",
              f"{fmt.exact_bytes(held)} ({fmt.bytes_(held, units)})")
    if ev.kv_peak_bytes != ev.kv_bytes:
        t.add(PEAK_WORDS.get(d["name"], ONE_SHOT_PEAK)[1],
              f"{fmt.exact_bytes(ev.kv_peak_bytes)} ({fmt.bytes_(ev.kv_peak_bytes, units)})")
    if ev.compute_buffer_bytes:
        t.add("compute buffer (CPU backend; in the total)",
              f"{fmt.exact_bytes(ev.compute_buffer_bytes)} ({fmt.bytes_(ev.compute_buffer_bytes, units)})")
    if ev.output_buffer_bytes:
        t.add("output (logits) buffer (in the total)",
              f"{fmt.exact_bytes(ev.output_buffer_bytes)} ({fmt.bytes_(ev.output_buffer_bytes, units)})")
    if "compute_buffer_bytes" in d and ev.compute_buffer_bytes:  # else a warning under the memory table says why
        t.notes.append("compute buffer: llama.cpp's worst-case graph on the CPU backend, replayed through ggml's "
                       "allocator; GPU backends add their own buffers (see docs/runtimes.md)")
    return t
