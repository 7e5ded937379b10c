"""Options that pick a runtime's exact allocation (``--runtime`` and each runtime's own options).

Any command that describes a configuration can declare these and hand them to
:func:`runtime_knob`; the result goes into ``Knobs(runtime=…)``.
"""

from __future__ import annotations

from typing import Annotated

import typer

from kvplan.cli.options.declarations import TOKENS_HELP, knob_option

RuntimeOpt = knob_option("runtime")  # the knob; the options below are the runtime's own
ParallelOpt = Annotated[int | None, typer.Option(
    "--parallel", help="llama.cpp: parallel sequences (-np); same number as --sequences.")]
KvUnifiedOpt = Annotated[bool, typer.Option(
    "--kv-unified", help="llama.cpp: one KV stream shared by all sequences (--kv-unified).")]
UbatchOpt = Annotated[int | None, typer.Option("--ubatch", help="llama.cpp: physical batch (-ub, default 512).")]
BatchOpt = Annotated[int | None, typer.Option("--batch", help="llama.cpp: logical batch (-b, default 2048).")]
SwaFullOpt = Annotated[bool, typer.Option("--swa-full", help="llama.cpp: full-size cache on sliding-window layers.")]
FlashAttnOpt = Annotated[str | None, typer.Option(
    "--flash-attn", help="llama.cpp: flash attention on, off or auto (default auto); a quantized V cache "
    "needs it.")]
MmapOpt = Annotated[bool | None, typer.Option(
    "--mmap/--no-mmap", help="llama.cpp: map the weights from their file (llama-server's default; its --no-mmap is "
    "spelled -lm none by recent builds) or read them into memory.", show_default=False)]
RepackOpt = Annotated[bool | None, typer.Option(
    "--repack/--no-repack", help="llama.cpp: let the CPU backend repack Q4_0/Q4_K/IQ4_NL/MXFP4 (and on Arm "
    "Q5_K/Q6_K/Q8_0) matrix weights (default on; with mmap the mapped pages stay resident beside the copy).",
    show_default=False)]
LlamacppBuildOpt = Annotated[str | None, typer.Option(
    "--llamacpp-build", help="llama.cpp: the build whose rules apply: b11434 (default; the compute buffer reserves "
    "the logits of -np rows) or 0c1e57098 (older builds, and Ollama's: a whole micro-batch of logits).")]
PromptTokensOpt = Annotated[str | None, typer.Option(
    "--prompt-tokens", help="llama.cpp: the longest prompt the process will see; the compute buffer is touched "
    f"only as far as its graph reaches (default: the whole context, the worst case). {TOKENS_HELP}")]
JudgeOpt = Annotated[str | None, typer.Option(
    "--judge", help="llama.cpp: what the verdict holds against the budget: resident (the resident peak, "
    "default) or non-reclaimable (without the mapped weights the kernel can drop and read again).")]
CacheOpt = Annotated[str | None, typer.Option("--cache", help="transformers: dynamic (default) or static cache.")]
MaxCacheLenOpt = Annotated[str | None, typer.Option(
    "--max-cache-len", help=f"transformers: StaticCache length in tokens (default: --ctx). {TOKENS_HELP}")]

MaxKvSizeOpt = Annotated[str | None, typer.Option(
    "--max-kv-size", help="mlx-lm: RotatingKVCache of this many tokens per layer (--max-kv-size), for a model "
    f"without its own make_cache. {TOKENS_HELP}")]
PrefillStepSizeOpt = Annotated[int | None, typer.Option(
    "--prefill-step-size", help="mlx-lm: prompt tokens per prefill chunk (--prefill-step-size, default 2048).")]
QuantizedKvStartOpt = Annotated[int | None, typer.Option(
    "--quantized-kv-start", help="mlx-lm: the cache offset from which --kv-bits quantizes it "
    "(--quantized-kv-start, default 5000).")]


def runtime_knob(runtime: str | None = None, parallel: int | None = None, kv_unified: bool = False,
                 ubatch: int | None = None, batch: int | None = None, swa_full: bool = False,
                 flash_attn: str | None = None, cache: str | None = None, max_cache_len: str | None = None,
                 mmap: bool | None = None, repack: bool | None = None, llamacpp_build: str | None = None,
                 prompt_tokens: str | None = None, judge: str | None = None, max_kv_size: str | None = None,
                 prefill_step_size: int | None = None, quantized_kv_start: int | None = None):
    """The RuntimeSpec these options ask for; ``"ideal"`` for an explicit ``--runtime ideal`` (it overrides a
    model profile's runtime); None without any runtime option (the model profile's runtime, else ideal)."""
    process = (mmap, repack, llamacpp_build, prompt_tokens, judge)
    if runtime is None and not (parallel is not None or kv_unified or ubatch is not None or batch is not None
                                or swa_full or flash_attn is not None or cache is not None
                                or max_cache_len is not None or any(v is not None for v in process)
                                or max_kv_size is not None or prefill_step_size is not None
                                or quantized_kv_start is not None):
        return None
    from kvplan.cli.options.declarations import parse_ctx
    from kvplan.profiles.runtime import runtime_spec

    length = parse_ctx(max_cache_len, "--max-cache-len", "a cache length") if max_cache_len is not None else None
    prompt = parse_ctx(prompt_tokens, "--prompt-tokens", "a prompt") if prompt_tokens is not None else None
    kv_size = parse_ctx(max_kv_size, "--max-kv-size", "a cache size") if max_kv_size is not None else None
    spec = runtime_spec(runtime, parallel=parallel, kv_unified=kv_unified, ubatch=ubatch, batch=batch,
                        swa_full=swa_full, flash_attn=flash_attn, cache=cache, max_cache_len=length, mmap=mmap,
                        repack=repack, build=llamacpp_build, prompt_tokens=prompt, judge=judge,
                        max_kv_size=kv_size, prefill_step_size=prefill_step_size,
                        quantized_kv_start=quantized_kv_start)
    return "ideal" if spec is None else spec


def runtime_argv(runtime: str | None = None, parallel: int | None = None, kv_unified: bool = False,
                 ubatch: int | None = None, batch: int | None = None, swa_full: bool = False,
                 flash_attn: str | None = None, cache: str | None = None,
                 max_cache_len: str | None = None, mmap: bool | None = None, repack: bool | None = None,
                 llamacpp_build: str | None = None, prompt_tokens: str | None = None,
                 judge: str | None = None, max_kv_size: str | None = None,
                 prefill_step_size: int | None = None, quantized_kv_start: int | None = None) -> list[str]:
    """These options as command-line arguments (for a suggested ``kvplan check`` command)."""
    argv = [] if runtime is None else ["--runtime", runtime]
    for option, value in (("--parallel", parallel), ("--ubatch", ubatch), ("--batch", batch),
                          ("--flash-attn", flash_attn), ("--cache", cache), ("--max-cache-len", max_cache_len),
                          ("--llamacpp-build", llamacpp_build), ("--prompt-tokens", prompt_tokens),
                          ("--judge", judge), ("--max-kv-size", max_kv_size),
                          ("--prefill-step-size", prefill_step_size), ("--quantized-kv-start", quantized_kv_start)):
        if value is not None:
            argv += [option, str(value)]
    argv += (["--kv-unified"] if kv_unified else []) + (["--swa-full"] if swa_full else [])
    argv += [] if mmap is None else ["--mmap" if mmap else "--no-mmap"]
    return argv + ([] if repack is None else ["--repack" if repack else "--no-repack"])
