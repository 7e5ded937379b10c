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
    "the logits of -np rows) or 0c1e57098 (builds before mid-2026: a whole micro-batch of logits).")]
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
PromptCacheSizeOpt = Annotated[int | None, typer.Option(
    "--prompt-cache-size", help="mlx-lm: price mlx_lm.server, which keeps up to this many earlier prompts' caches "
    "beside the live one (its --prompt-cache-size, default 10), each as long as --ctx.")]

NumParallelOpt = Annotated[int | None, typer.Option(
    "--num-parallel", help="ollama: parallel slots, OLLAMA_NUM_PARALLEL (default: that variable, else 1; "
    "same number as --sequences); -c is --ctx (num_ctx) × this.")]
KvCacheTypeOpt = Annotated[str | None, typer.Option(
    "--kv-cache-type", help="ollama: the K and V cache type, OLLAMA_KV_CACHE_TYPE (f16, q8_0, q4_0 …; default: "
    "that variable, else not passed: llama.cpp's f16).")]
FlashAttentionOpt = Annotated[bool | None, typer.Option(
    "--flash-attention/--no-flash-attention", help="ollama: OLLAMA_FLASH_ATTENTION (default: that variable, else "
    "unset: llama-server --flash-attn auto).", show_default=False)]
NumBatchOpt = Annotated[int | None, typer.Option(
    "--num-batch", help="ollama: the num_batch option, passed as -b and -ub (default 512; 0: not passed).")]
UseMmapOpt = Annotated[bool | None, typer.Option(
    "--use-mmap/--no-use-mmap", help="ollama: the use_mmap option (default on; off: --load-mode none).",
    show_default=False)]
MaxLengthOpt = Annotated[str | None, typer.Option(
    "--max-length", help="onnxruntime-genai: search.max_length, the most tokens a sequence reaches (default: "
    f"--ctx); a shared buffer holds this many. {TOKENS_HELP}")]
PastPresentShareBufferOpt = Annotated[bool | None, typer.Option(
    "--past-present-share-buffer/--no-past-present-share-buffer", help="onnxruntime-genai: one KV buffer of "
    "max_length tokens shared by past and present (search.past_present_share_buffer; off when genai_config omits "
    "it, the model builder writes it on for GroupQueryAttention models); off: past and present coexist at every "
    "step.", show_default=False)]
MaxNumTokensOpt = Annotated[str | None, typer.Option(
    "--max-num-tokens", help="litert-lm: max_num_tokens, the most tokens a sequence reaches (default 4096, or the "
    f"model's metadata). {TOKENS_HELP}")]
KvCacheTokensOpt = Annotated[str | None, typer.Option(
    "--kv-cache-tokens", help="litert-lm: the KV length the model was exported with (its kv_cache_k_* inputs; "
    f"default: --max-num-tokens). {TOKENS_HELP}")]
LitertBackendOpt = Annotated[str | None, typer.Option(
    "--litert-backend", help="litert-lm: the executor backend, cpu (default; one KV buffer set) or gpu (input and "
    "output sets).")]
MaxContextLengthOpt = Annotated[str | None, typer.Option(
    "--max-context-length", help="executorch: the export's --max_context_length, the cache slots of every layer "
    f"allocated at load (default: --ctx; ExecuTorch's own default is 128). {TOKENS_HELP}")]
EtDtypeOpt = Annotated[str | None, typer.Option(
    "--et-dtype", help="executorch: the export's --dtype-override, fp32 (default), fp16 or bf16: the cache's "
    "dtype.")]
QuantizeKvCacheOpt = Annotated[bool, typer.Option(
    "--quantize-kv-cache", help="executorch: the export's --quantize_kv_cache (int8 per token, with a scale and "
    "a zero point per token and head).")]


# each runtime's options, in the order --help lists them: (parameter name, its declaration, its default);
# the parameter name is the option's long name with dashes (``llamacpp_build`` is ``--llamacpp-build``)
LLAMACPP_OPTIONS = (
    ("parallel", ParallelOpt, None), ("kv_unified", KvUnifiedOpt, False), ("ubatch", UbatchOpt, None),
    ("batch", BatchOpt, None), ("swa_full", SwaFullOpt, False), ("flash_attn", FlashAttnOpt, None))
TRANSFORMERS_OPTIONS = (("cache", CacheOpt, None), ("max_cache_len", MaxCacheLenOpt, None))
PROCESS_OPTIONS = (
    ("mmap", MmapOpt, None), ("repack", RepackOpt, None), ("llamacpp_build", LlamacppBuildOpt, None),
    ("prompt_tokens", PromptTokensOpt, None), ("judge", JudgeOpt, None))
MLX_OPTIONS = (("max_kv_size", MaxKvSizeOpt, None), ("prefill_step_size", PrefillStepSizeOpt, None),
               ("quantized_kv_start", QuantizedKvStartOpt, None), ("prompt_cache_size", PromptCacheSizeOpt, None))
OLLAMA_OPTIONS = (("num_parallel", NumParallelOpt, None), ("kv_cache_type", KvCacheTypeOpt, None),
                  ("flash_attention", FlashAttentionOpt, None), ("num_batch", NumBatchOpt, None),
                  ("use_mmap", UseMmapOpt, None))
ORTGENAI_OPTIONS = (("max_length", MaxLengthOpt, None), ("past_present_share_buffer", PastPresentShareBufferOpt, None))
LITERTLM_OPTIONS = (("max_num_tokens", MaxNumTokensOpt, None), ("kv_cache_tokens", KvCacheTokensOpt, None),
                    ("litert_backend", LitertBackendOpt, None))
EXECUTORCH_OPTIONS = (("max_context_length", MaxContextLengthOpt, None), ("et_dtype", EtDtypeOpt, None),
                      ("quantize_kv_cache", QuantizeKvCacheOpt, False))
RUNTIME_OPTIONS = (LLAMACPP_OPTIONS + TRANSFORMERS_OPTIONS + PROCESS_OPTIONS + MLX_OPTIONS + OLLAMA_OPTIONS
                   + ORTGENAI_OPTIONS + LITERTLM_OPTIONS + EXECUTORCH_OPTIONS)

# a parameter whose spec field is named otherwise (the build is llama.cpp's, and says so on the command line)
SPEC_FIELD = {"llamacpp_build": "build", "et_dtype": "dtype_override"}
# options given in tokens (``32k``): parsed here, so a bad value names its flag; (what it is, in an error)
TOKEN_OPTIONS = {"max_cache_len": "a cache length", "prompt_tokens": "a prompt", "max_kv_size": "a cache size",
                 "max_length": "a length", "max_num_tokens": "a length", "kv_cache_tokens": "a cache length",
                 "max_context_length": "a context length"}


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _given(name: str, value: object) -> bool:
    from kvplan.profiles.runtime import is_given

    return is_given(SPEC_FIELD.get(name, name), value)


def _spec_values(options: dict) -> dict:
    """The options as the specs take them: keyed by spec field, token counts parsed (a bad one names its flag)."""
    from kvplan.cli.options.declarations import parse_ctx

    values = {}
    for name, value in options.items():
        if name in TOKEN_OPTIONS and value is not None:
            value = parse_ctx(value, _flag(name), TOKEN_OPTIONS[name])
        values[SPEC_FIELD.get(name, name)] = value
    return values


def runtime_knob(runtime: str | None = None, **options):
    """The RuntimeSpec these options ask for; ``"ideal"`` for an explicit ``--runtime ideal`` (it overrides a
    model profile's runtime); None without any runtime option (the model profile's runtime, else ideal).

    ``options`` are keyed by parameter name (:data:`RUNTIME_OPTIONS`)."""
    if runtime is None and not any(_given(name, value) for name, value in options.items()):
        return None
    from kvplan.profiles.runtime import runtime_spec

    spec = runtime_spec(runtime, **_with_environment(runtime, _spec_values(options)))
    return "ideal" if spec is None else spec


def runtime_knobs(runtime: str, **options) -> list:
    """Several runtimes side by side (``--runtime llama.cpp,mlx-lm``): one ``Knobs.runtime`` value each
    (``"ideal"`` for the formula), each runtime taking the options that are its own."""
    from kvplan.profiles.runtime import runtime_specs

    names = [n for n in (part.strip() for part in runtime.split(",")) if n]
    values = _spec_values(options)
    for name in names:
        values = _with_environment(name, values)
    return ["ideal" if spec is None else spec for spec in runtime_specs(names, **values)]


def _with_environment(runtime: str | None, values: dict) -> dict:
    """Ollama's options that its server reads from the environment (``OLLAMA_NUM_PARALLEL`` …), where the option
    is not given: kvplan prices what ``ollama serve`` started in this environment would run. A gate file's
    runtime reads no environment (its figures stay the file's)."""
    from kvplan.profiles.runtime import OllamaSpec, is_given, runtime_class

    if runtime_class(runtime) is not OllamaSpec:
        return values
    from kvplan.files.env import ollama_environment

    found = ollama_environment()
    return {**values, **{k: v for k, v in found.items() if not is_given(k, values.get(k))}}


def runtime_argv(runtime: str | None = None, **options) -> list[str]:
    """These options as command-line arguments (for a suggested ``kvplan check`` command): valued options
    first, then the flags, each in :data:`RUNTIME_OPTIONS` order."""
    argv = [] if runtime is None else ["--runtime", runtime]
    flags = []
    for name, _, _ in RUNTIME_OPTIONS:
        value = options.get(name)
        if not _given(name, value):
            continue
        if isinstance(value, bool):  # an on/off flag, or a --x/--no-x pair
            flags.append(_flag(name) if value else _flag("no_" + name))
        else:
            argv += [_flag(name), str(value)]
    return argv + flags


def spec_argv(spec) -> list[str]:
    """A runtime spec as command-line arguments that give it back (for a suggested ``kvplan check`` command):
    ``--runtime NAME`` and each option that differs from the runtime's default, in :data:`RUNTIME_OPTIONS` order.
    The field that is the sequence count (``-np``) is left out: the command's ``--sequences`` says it."""
    from dataclasses import fields

    defaults = type(spec)()
    own = {f.name for f in fields(spec)} - {spec.sequences_field}
    options = {}
    for name, _, _ in RUNTIME_OPTIONS:
        field = SPEC_FIELD.get(name, name)
        if field in own and getattr(spec, field) != getattr(defaults, field):
            options[name] = getattr(spec, field)
    return runtime_argv(spec.name, **options)
