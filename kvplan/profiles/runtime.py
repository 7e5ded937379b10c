"""Runtime-exact cache models: the bytes llama.cpp and transformers really allocate.

The contract's closed form (``ideal``) is the plan; a runtime pads, splits and keeps
views in its own way. A :class:`LlamaCppSpec` or :class:`TransformersSpec` carries the
runtime's options; :func:`cache_model` turns a spec and a model into a
:class:`~kvplan.plan.CacheModel`. Which rules apply is decided from the profile's
``architecture`` (the Hugging Face ``model_type``), because each runtime decides it
that way. See ``docs/runtimes.md`` for every rule and the source it comes from.

Semantics of ``ctx`` and ``sequences`` per runtime:

- ``ideal`` and ``transformers``: ``ctx`` is the tokens of each sequence; ``sequences``
  sequences each hold their own cache (transformers: the batch dimension).
- ``mlx-lm``: ``ctx`` is the prompt of each sequence as ``generate_step`` processes it (chunked prefill, then
  the cache after its last prompt token); ``sequences`` sequences each hold their own cache objects.
- ``llama.cpp``: ``ctx`` is llama.cpp's ``-c`` (``n_ctx``), the TOTAL context shared
  by the ``-np`` parallel sequences; ``sequences`` is ``-np`` (``n_seq_max``).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import ClassVar

from kvplan.engine.llamacpp_process import BUILDS as LLAMACPP_BUILDS, DEFAULT_BUILD
from kvplan.errors import FieldError

FLASH_ATTN_CHOICES = ("auto", "on", "off")
CACHE_CHOICES = ("dynamic", "static")
JUDGE_CHOICES = ("resident", "non_reclaimable")
LLAMA_MAX_SEQ = 256  # llama.cpp src/llama-cparams.h: #define LLAMA_MAX_SEQ 256


class RuntimeSpec:
    """One runtime's options, as a frozen dataclass: the base every runtime spec derives from.

    A runtime is one subclass listed in :data:`RUNTIME_SPECS`: its ``name`` (what ``--runtime`` and a file's
    ``runtime:`` say), the ``aliases`` it also answers to, its fields (the options, keyed as a file writes them),
    ``option_kinds`` (how a file's value of a field is checked: ``bool``, ``int``, ``tokens`` or ``text``) and
    :meth:`from_options`, which checks the options that were given and builds the spec. Adding a runtime is a
    subclass and a line in :data:`RUNTIME_SPECS`; nothing else here names a runtime.
    """

    name: ClassVar[str]
    aliases: ClassVar[tuple[str, ...]] = ()
    option_kinds: ClassVar[dict[str, str]] = {}
    #: the field that names the scenario's sequence count in the runtime's own terms (llama.cpp's ``-np``), if any
    sequences_field: ClassVar[str | None] = None

    @classmethod
    def from_options(cls, **given):
        """The spec of the options ``given`` (only those the user set); raises FieldError naming ``runtime.<key>``."""
        return cls(**given)

    @classmethod
    def option_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))


def _at_least(options: dict, least: int, *keys: str) -> None:
    for key in keys:
        value = options.get(key)
        if value is not None and value < least:
            raise FieldError(f"runtime.{key}", f"must be at least {least}, got {value}")


@dataclass(frozen=True)
class LlamaCppSpec(RuntimeSpec):
    """llama.cpp context options that change the KV allocation.

    ``parallel`` is ``-np`` (None: take the scenario's ``sequences``), ``kv_unified``
    is ``--kv-unified``, ``ubatch``/``batch`` are ``-ub``/``-b`` (defaults 512 / 2048,
    common/common.h), ``swa_full`` is ``--swa-full``, ``flash_attn`` is ``-fa``
    (``auto`` is llama.cpp's default; it resolves to on where the backend supports it).

    The process (:mod:`kvplan.engine.llamacpp_process`): ``mmap`` maps the weights (llama-server's default;
    ``--no-mmap``, ``-lm none``, reads them into memory), ``repack`` lets the CPU backend repack them (``--repack``
    / ``--no-repack``), ``build`` names the llama.cpp build whose rules apply (:data:`LLAMACPP_BUILDS`),
    ``prompt_tokens`` is the longest prompt the process sees (None: the whole context, the compute buffer's
    worst case), ``judge`` is what the verdict holds against the budget: the ``resident`` peak or its
    ``non_reclaimable`` part.
    """

    parallel: int | None = None
    kv_unified: bool = False
    ubatch: int = 512
    batch: int = 2048
    swa_full: bool = False
    flash_attn: str = "auto"
    mmap: bool = True
    repack: bool = True
    build: str = DEFAULT_BUILD
    prompt_tokens: int | None = None
    judge: str = "resident"

    name: ClassVar[str] = "llama.cpp"
    aliases: ClassVar[tuple[str, ...]] = ("llamacpp", "llama-cpp")
    sequences_field: ClassVar[str | None] = "parallel"
    option_kinds: ClassVar[dict[str, str]] = {
        "parallel": "int", "kv_unified": "bool", "ubatch": "int", "batch": "int", "swa_full": "bool",
        "flash_attn": "switch", "mmap": "bool", "repack": "bool", "build": "build", "prompt_tokens": "int",
        "judge": "text"}

    @classmethod
    def from_options(cls, **given) -> LlamaCppSpec:
        flash_attn = given.get("flash_attn")
        fa = (flash_attn or "auto").strip().lower()
        fa = {"1": "on", "true": "on", "0": "off", "false": "off"}.get(fa, fa)
        if fa not in FLASH_ATTN_CHOICES:
            raise FieldError("runtime.flash_attn", f"expected on, off or auto, got {flash_attn!r}")
        _at_least(given, 1, "parallel", "ubatch", "batch")
        parallel = given.get("parallel")
        if parallel is not None and parallel > LLAMA_MAX_SEQ:
            raise FieldError("runtime.parallel", f"llama.cpp allows at most {LLAMA_MAX_SEQ} sequences, got {parallel}")
        _at_least(given, 1, "prompt_tokens")
        build = given.get("build")
        build_name = (build or DEFAULT_BUILD).strip().lower()
        build_name = "b" + build_name if build_name.isdigit() else build_name
        if build_name not in LLAMACPP_BUILDS:
            raise FieldError("runtime.build", f"kvplan follows llama.cpp builds {', '.join(LLAMACPP_BUILDS)}; "
                             f"got {build!r}")
        judge = given.get("judge")
        judged = (judge or JUDGE_CHOICES[0]).strip().lower().replace("-", "_")
        if judged not in JUDGE_CHOICES:
            raise FieldError("runtime.judge", f"expected resident or non_reclaimable, got {judge!r}")
        return cls(**{**given, "flash_attn": fa, "build": build_name, "judge": judged})


@dataclass(frozen=True)
class TransformersSpec(RuntimeSpec):
    """transformers cache options: ``DynamicCache`` (default) or ``StaticCache(max_cache_len)``.

    ``max_cache_len`` None with a static cache means "the context itself" (what
    ``generate`` picks for a generation of ``ctx`` tokens).
    """

    cache: str = "dynamic"
    max_cache_len: int | None = None

    name: ClassVar[str] = "transformers"
    aliases: ClassVar[tuple[str, ...]] = ("hf",)
    option_kinds: ClassVar[dict[str, str]] = {"cache": "text", "max_cache_len": "tokens"}

    @classmethod
    def from_options(cls, **given) -> TransformersSpec:
        cache, max_cache_len = given.get("cache"), given.get("max_cache_len")
        kind = (cache or "dynamic").strip().lower()
        if kind not in CACHE_CHOICES:
            raise FieldError("runtime.cache", f"expected dynamic or static, got {cache!r}")
        if max_cache_len is not None and kind != "static":
            raise FieldError("runtime.max_cache_len", "only for {runtime.cache=static}", mentions=("runtime.cache",))
        _at_least(given, 1, "max_cache_len")
        return cls(cache=kind, max_cache_len=max_cache_len)


@dataclass(frozen=True)
class MlxLmSpec(RuntimeSpec):
    """MLX-LM's ``generate_step`` options that change the cache (mlx-lm 0.32.2, ``mlx_lm/generate.py``).

    ``max_kv_size`` is ``--max-kv-size`` (None: a growing ``KVCache`` per layer; else a
    ``RotatingKVCache(max_size=max_kv_size, keep=4)`` per layer, for a model without its own ``make_cache``),
    ``prefill_step_size`` ``--prefill-step-size`` (2048), ``quantized_kv_start`` ``--quantized-kv-start``
    (5000: the offset from which ``--kv-bits`` quantizes the cache). ``--kv-bits`` and ``--kv-group-size``
    are the scenario's cache format (the ``kv_bits`` / ``kv_group_size`` knobs, group 64 by default).

    ``prompt_cache_size`` is ``mlx_lm.server --prompt-cache-size`` (the server's default is 10): the server keeps
    up to that many earlier prompts' caches beside the live one (``LRUPromptCache``); None prices
    ``mlx_lm.generate``, which keeps none.
    """

    max_kv_size: int | None = None
    prefill_step_size: int = 2048
    quantized_kv_start: int = 5000
    prompt_cache_size: int | None = None

    name: ClassVar[str] = "mlx-lm"
    aliases: ClassVar[tuple[str, ...]] = ("mlx", "mlx_lm")
    option_kinds: ClassVar[dict[str, str]] = {"max_kv_size": "tokens", "prefill_step_size": "int",
                                              "quantized_kv_start": "int", "prompt_cache_size": "int"}

    @classmethod
    def from_options(cls, **given) -> MlxLmSpec:
        _at_least(given, 1, "max_kv_size", "prefill_step_size")
        _at_least(given, 0, "quantized_kv_start", "prompt_cache_size")  # 0: a server that keeps no earlier cache
        if given.get("prompt_cache_size") is not None and given.get("max_kv_size") is not None:
            # mlx_lm/server.py (0.32.2) has no --max-kv-size: its stream_generate call passes none
            raise FieldError(("runtime.max_kv_size", "runtime.prompt_cache_size"), "mlx_lm.server has no "
                             "rotating cache option (only mlx_lm.generate takes the first); give one of them",
                             lead=" with ")
        return cls(**given)


#: the llama.cpp cache types (``--cache-type-k/-v``) Ollama can pass through ``OLLAMA_KV_CACHE_TYPE``
OLLAMA_KV_CACHE_TYPES = ("f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "iq4_nl")


@dataclass(frozen=True)
class OllamaSpec(RuntimeSpec):
    """Ollama's settings that change memory (Ollama v0.32.15, which serves every GGUF model from ``llama-server``;
    :mod:`kvplan.engine.ollama_args` has each rule and its source line).

    ``num_parallel`` is ``OLLAMA_NUM_PARALLEL`` (None: the scenario's ``sequences``; Ollama forces 1 for the
    architectures of :data:`kvplan.engine.ollama_args.SINGLE_SLOT_ARCHITECTURES`), ``kv_cache_type``
    ``OLLAMA_KV_CACHE_TYPE`` (None: not passed, llama.cpp's own type), ``flash_attention``
    ``OLLAMA_FLASH_ATTENTION`` (None: unset, llama.cpp's ``auto`` on every device kvplan models), ``num_batch``
    the ``num_batch`` option (512; passed as ``-b`` and ``-ub``; 0: not passed), ``use_mmap`` the ``use_mmap``
    option (False: ``--load-mode none``). Under this runtime ``ctx`` is Ollama's ``num_ctx``: the tokens of each
    sequence; llama.cpp's ``-c`` is ``num_ctx × parallel``.
    """

    num_parallel: int | None = None
    kv_cache_type: str | None = None
    flash_attention: bool | None = None
    num_batch: int = 512
    use_mmap: bool = True

    name: ClassVar[str] = "ollama"
    option_kinds: ClassVar[dict[str, str]] = {"num_parallel": "int", "kv_cache_type": "text",
                                              "flash_attention": "bool", "num_batch": "int", "use_mmap": "bool"}
    sequences_field: ClassVar[str | None] = "num_parallel"
    #: of the llama.cpp builds kvplan follows, the one whose rules price Ollama's: Ollama v0.32.15 pins b10488,
    #: which is after llama-server began reserving the logits of -np rows only (ggml-org/llama.cpp#23861, merged
    #: 2026-05-30, and #23988, 2026-06-01; builds of 2026-05-22 were at 9272), the rule that tells b11434 from
    #: 0c1e57098 here; b11434's rules are taken (b10488 itself not measured)
    pricing_build: ClassVar[str] = DEFAULT_BUILD

    @classmethod
    def from_options(cls, **given) -> OllamaSpec:
        _at_least(given, 1, "num_parallel")
        _at_least(given, 0, "num_batch")
        parallel = given.get("num_parallel")
        if parallel is not None and parallel > LLAMA_MAX_SEQ:
            raise FieldError("runtime.num_parallel", f"llama.cpp allows at most {LLAMA_MAX_SEQ} sequences, "
                             f"got {parallel}")
        kv_type = given.get("kv_cache_type")
        if kv_type is not None:
            kv_type = kv_type.strip().lower()  # llm/server.go :: NewLlamaServer lowercases it
            if kv_type == "":
                kv_type = None  # set but empty: Ollama passes nothing
            elif kv_type not in OLLAMA_KV_CACHE_TYPES:
                raise FieldError("runtime.kv_cache_type", f"llama.cpp has no cache type {given['kv_cache_type']!r}; "
                                 f"its types: {', '.join(OLLAMA_KV_CACHE_TYPES)}")
        return cls(**{**given, "kv_cache_type": kv_type})

    @property
    def llamacpp(self) -> LlamaCppSpec:
        """The llama.cpp options the ``llama-server`` command line Ollama starts amounts to: ``-b``/``-ub``
        ``num_batch`` (when positive), ``--flash-attn``, the load mode, the pricing build; ``-np`` is the
        scenario's sequences (resolved by :func:`resolve_sequences`). Ollama passes neither ``--kv-unified`` nor
        ``--swa-full``."""
        batch = {"batch": self.num_batch, "ubatch": self.num_batch} if self.num_batch else {}
        flash = {None: "auto", True: "on", False: "off"}[self.flash_attention]
        return LlamaCppSpec.from_options(flash_attn=flash, mmap=self.use_mmap, build=self.pricing_build, **batch)


def llamacpp_spec_of(spec: RuntimeSpec | None) -> LlamaCppSpec | None:
    """The llama.cpp options a runtime runs llama.cpp with: llama.cpp's own, Ollama's translated; None for a
    runtime that is not llama.cpp underneath."""
    if isinstance(spec, LlamaCppSpec):
        return spec
    if isinstance(spec, OllamaSpec):
        return spec.llamacpp
    return None


@dataclass(frozen=True)
class OrtGenAiSpec(RuntimeSpec):
    """ONNX Runtime GenAI's search options that size the KV cache (onnxruntime-genai v0.15.2).

    ``max_length`` is ``search.max_length`` (tokens; None: the context itself, as a genai_config whose
    ``max_length`` is the context the generation reaches), ``past_present_share_buffer`` is
    ``search.past_present_share_buffer``: False when a genai_config omits it (``src/config.h`` line 451,
    ``bool past_present_share_buffer{}``); the model builder writes True for GroupQueryAttention models
    (``src/python/py/models/builders/base.py`` line 562), so give it for such a model.
    """

    max_length: int | None = None
    past_present_share_buffer: bool = False

    name: ClassVar[str] = "onnxruntime-genai"
    aliases: ClassVar[tuple[str, ...]] = ("ort-genai", "ortgenai", "onnxruntime_genai")
    option_kinds: ClassVar[dict[str, str]] = {"max_length": "tokens", "past_present_share_buffer": "bool"}

    @classmethod
    def from_options(cls, **given) -> OrtGenAiSpec:
        _at_least(given, 1, "max_length")
        return cls(**given)


LITERT_BACKENDS = ("cpu", "gpu")
LITERT_DEFAULT_MAX_NUM_TOKENS = 4096  # LiteRT-LM runtime/engine/engine_settings.cc lines 80-88 (767d74f9)


@dataclass(frozen=True)
class LiteRtLmSpec(RuntimeSpec):
    """LiteRT-LM's settings that size the KV cache (google-ai-edge/LiteRT-LM at 767d74f9).

    ``max_num_tokens`` is the executor's ``max_num_tokens`` (4096 when neither the settings nor the model's
    metadata set it: ``runtime/engine/engine_settings.cc`` lines 80-88); ``kv_cache_tokens`` the KV length the
    model was exported with (its ``kv_cache_k_*`` inputs' static shape; None: ``max_num_tokens``, which
    LiteRT-LM treats as the KV cache size); ``litert_backend`` the executor backend (``cpu``, the settings'
    default, ``runtime/executor/executor_settings_base.h`` line 203, or ``gpu``; named apart from other runtimes'
    backends, as every runtime's fields share one table).
    """

    max_num_tokens: int = LITERT_DEFAULT_MAX_NUM_TOKENS
    kv_cache_tokens: int | None = None
    litert_backend: str = "cpu"

    name: ClassVar[str] = "litert-lm"
    aliases: ClassVar[tuple[str, ...]] = ("litertlm", "litert")
    option_kinds: ClassVar[dict[str, str]] = {"max_num_tokens": "tokens", "kv_cache_tokens": "tokens",
                                              "litert_backend": "text"}

    @classmethod
    def from_options(cls, **given) -> LiteRtLmSpec:
        _at_least(given, 1, "max_num_tokens", "kv_cache_tokens")
        backend = given.get("litert_backend")
        chosen = (backend or "cpu").strip().lower()
        if chosen not in LITERT_BACKENDS:
            raise FieldError("runtime.litert_backend", f"expected cpu or gpu, got {backend!r}")
        return cls(**{**given, "litert_backend": chosen})


# every runtime kvplan prices exactly, in the order --help and the docs list them

ET_DTYPES = ("fp32", "fp16", "bf16")  # export_llama_lib.py --dtype-override choices (ExecuTorch v1.4.1, line 397)


@dataclass(frozen=True)
class ExecuTorchSpec(RuntimeSpec):
    """ExecuTorch's Llama export options that size the program's KV cache (ExecuTorch v1.4.1,
    ``examples/models/llama/export_llama_lib.py``).

    ``max_context_length`` is ``--max_context_length`` (``export.max_context_length``; None: the context itself,
    spelled out in the command kvplan prints, as ExecuTorch's own default is 128), ``dtype_override``
    ``--dtype-override`` (fp32, fp16 or bf16; fp32 by default), ``quantize_kv_cache`` ``--quantize_kv_cache``
    (the int8 per-token cache).
    """

    max_context_length: int | None = None
    dtype_override: str = "fp32"
    quantize_kv_cache: bool = False

    name: ClassVar[str] = "executorch"
    aliases: ClassVar[tuple[str, ...]] = ("et",)
    option_kinds: ClassVar[dict[str, str]] = {"max_context_length": "tokens", "dtype_override": "text",
                                              "quantize_kv_cache": "bool"}

    @classmethod
    def from_options(cls, **given) -> ExecuTorchSpec:
        _at_least(given, 1, "max_context_length")
        dtype = given.get("dtype_override")
        name = (dtype or "fp32").strip().lower()
        if name not in ET_DTYPES:
            raise FieldError("runtime.dtype_override", f"expected fp32, fp16 or bf16, got {dtype!r}")
        return cls(**{**given, "dtype_override": name})

# every runtime kvplan prices exactly, in the order --help and the docs list them
RUNTIME_SPECS: tuple[type[RuntimeSpec], ...] = (LlamaCppSpec, TransformersSpec, MlxLmSpec, OllamaSpec,
                                                OrtGenAiSpec, LiteRtLmSpec, ExecuTorchSpec)
RUNTIME_NAMES = ("ideal", *(spec.name for spec in RUNTIME_SPECS))
_BY_NAME = {alias: spec for spec in RUNTIME_SPECS for alias in (spec.name, *spec.aliases)}
_OFF_BY_DEFAULT = {f.name: f.default is False for spec in RUNTIME_SPECS for f in fields(spec)}


def runtime_class(name: str | None) -> type[RuntimeSpec] | None:
    """The spec class a runtime name (or alias) names; None for ``ideal``, no name or an unknown one."""
    return _BY_NAME.get((name or "").strip().lower())


def is_given(key: str, value: object) -> bool:
    """Whether the runtime option ``key`` (a spec field) was given: not None, nor False for a flag that is off by
    default (``kv_unified``); ``mmap`` False is given (``--no-mmap``)."""
    if value is None:
        return False
    return not (value is False and _OFF_BY_DEFAULT.get(key, False))


def runtime_spec(name: str | None, **options) -> RuntimeSpec | None:
    """Build the spec a runtime name and its options ask for (None: the ideal formula).

    ``options`` are keyed by the specs' field names; None (and False for an off-by-default flag) means not
    given. Options of another runtime are usage errors, so a typo never silently does nothing.
    """
    key = (name or "ideal").strip().lower()
    spec = _BY_NAME.get(key)
    if spec is None and key != "ideal":
        raise FieldError("runtime", f"unknown runtime {name!r}; known: {', '.join(RUNTIME_NAMES)}")
    owner = {k: s for s in RUNTIME_SPECS for k in s.option_names()}
    unknown = [k for k in options if k not in owner]
    if unknown:
        raise FieldError("runtime", f"unknown option {unknown[0]!r}")
    for other in RUNTIME_SPECS:
        if other is spec:
            continue
        used = tuple(f"runtime.{k}" for k in other.option_names() if k in options
                     and is_given(k, options[k]))
        if used:
            raise FieldError(used, f"{other.name} options; they need {{runtime={other.name}}}", mentions=("runtime",))
    if spec is None:
        return None
    mine = spec.option_names()
    return spec.from_options(**{k: v for k, v in options.items() if k in mine and is_given(k, v)})


def runtime_specs(names: list[str], **options) -> list[RuntimeSpec | None]:
    """The specs of several runtimes side by side (``compare --runtime llama.cpp,mlx-lm``): each takes the
    options that are its own; an option none of them owns is refused as under :func:`runtime_spec`."""
    if not names:
        raise FieldError("runtime", "name at least one runtime")
    specs = [_BY_NAME.get(n.strip().lower()) for n in names]
    for name, spec in zip(names, specs):
        if spec is None and name.strip().lower() != "ideal":
            raise FieldError("runtime", f"unknown runtime {name!r}; known: {', '.join(RUNTIME_NAMES)}")
    keys = [s.name if s else "ideal" for s in specs]
    if len(set(keys)) != len(keys):
        twice = next(k for k in keys if keys.count(k) > 1)
        raise FieldError("runtime", f"{twice} is named twice")
    owned = {k for s in specs if s is not None for k in s.option_names()}
    stray = {k: v for k, v in options.items() if k not in owned and is_given(k, v)}
    if stray:  # nobody's option: the single-runtime check words the error (whose option it is, or unknown)
        runtime_spec(names[0], **stray)
    return [None if spec is None else runtime_spec(spec.name, **{k: v for k, v in options.items()
                                                               if k in spec.option_names()})
            for spec in specs]


def parse_runtime(value: object) -> RuntimeSpec | None:
    """A runtime named in a file: ``"llama.cpp"`` or ``{name: llama.cpp, parallel: 2, …}``.

    Keys are the spec's field names (``parallel``, ``kv_unified``, ``ubatch``, ``batch``,
    ``swa_full``, ``flash_attn``, ``mmap``, ``repack``, ``build``, ``prompt_tokens``, ``judge``, ``cache``,
    ``max_cache_len``, ``max_kv_size``, ``prefill_step_size``, ``quantized_kv_start``, ``prompt_cache_size``, ``max_context_length``,
    ``dtype_override``, ``quantize_kv_cache``, and each newer
    runtime's own: every field of a spec in :data:`RUNTIME_SPECS`).
    """
    if value is None or isinstance(value, str):
        return runtime_spec(value)
    if not isinstance(value, dict):
        raise FieldError("runtime", f"expected a name or a mapping, got {type(value).__name__}")
    options = dict(value)
    name = options.pop("name", None)
    kinds = {k: s.option_kinds.get(k, "text") for s in RUNTIME_SPECS for k in s.option_names()}
    unknown = sorted(set(options) - set(kinds))
    if unknown:
        raise FieldError("runtime", f"unknown option {unknown[0]!r}; known: name, {', '.join(sorted(kinds))}")
    return runtime_spec(_text(name, "name"), **{key: _option_value(kinds[key], key, v) for key, v in options.items()})


def file_runtime(value: object) -> RuntimeSpec | None:
    """:func:`parse_runtime` for a file's ``runtime:`` key: errors name the keys inside it (``parallel``).

    Raises ``ValueError`` (pydantic reports it as ``file:line: runtime: message``).
    """
    from kvplan.errors import KvplanError

    if isinstance(value, RuntimeSpec):
        return value
    try:
        return parse_runtime(value)
    except FieldError as exc:  # reported at runtime: its own keys by their name, "runtime" itself left out
        def in_runtime(field: str, value: str | None) -> str:
            if field == "runtime":  # inside the runtime mapping, the runtime is its name key
                return "name" if value is None else f"name: {value}"
            key = field.removeprefix("runtime.")
            return key if value is None else f"{key} {value}"

        raise ValueError(exc.worded(in_runtime, lead=exc.fields != ("runtime",))) from None
    except KvplanError as exc:
        raise ValueError(str(exc)) from None


def runtime_value(spec: RuntimeSpec | None) -> str | dict:
    """A spec as a file would write it: the name alone, or ``{name, …}`` with the options that differ
    from the runtime's defaults (JSON-able; :func:`parse_runtime` reads it back to the same spec)."""
    if spec is None:
        return "ideal"
    defaults = type(spec)()
    options = {f.name: getattr(spec, f.name) for f in fields(spec)
               if getattr(spec, f.name) != getattr(defaults, f.name)}
    return {"name": spec.name, **options} if options else spec.name


def _text(value: object, key: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise FieldError(f"runtime.{key}", f"expected a name, got {value!r}")
    return value


def _option_value(kind: str, key: str, value: object) -> object:
    """A runtime option from a file, checked for its ``kind`` (``flash_attn: on`` reads as YAML true)."""
    if kind == "bool":
        if not isinstance(value, bool):
            raise FieldError(f"runtime.{key}", f"expected true or false, got {value!r}")
        return value
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise FieldError(f"runtime.{key}", f"expected a whole number, got {value!r}")
        return value
    if kind == "build" and isinstance(value, int) and not isinstance(value, bool):
        return str(value)  # a build number (11434)
    if kind == "switch" and isinstance(value, bool):
        return "on" if value else "off"
    if kind == "tokens" and value is not None:
        from kvplan.errors import KvplanError
        from kvplan.units import parse_tokens

        try:
            return parse_tokens(value)
        except KvplanError as exc:
            raise FieldError(f"runtime.{key}", str(exc)) from None
    return _text(value, key)


def resolve_sequences(spec: RuntimeSpec | None, sequences: int, pinned_prefix_tokens: int = 0,
                      architecture: str | None = None) -> tuple[RuntimeSpec | None, int]:
    """Reconcile the scenario's ``sequences`` with a runtime's own notion of them.

    llama.cpp: ``sequences`` is ``-np``; ``parallel`` names the same number, so the two
    must agree when both are given. A pinned prefix has no meaning there: llama.cpp
    allocates the whole ``-c`` up front and a shared prefix lives inside it.
    Ollama: ``sequences`` is ``OLLAMA_NUM_PARALLEL`` (``num_parallel``), the same way; a model of an
    ``architecture`` Ollama runs in one slot runs one sequence whatever was asked (``num_parallel`` keeps the
    number asked, so the cache model can say so).
    """
    if isinstance(spec, LiteRtLmSpec) and pinned_prefix_tokens:
        raise FieldError("pinned_prefix_tokens", "LiteRT-LM runs one sequence in KV buffers allocated up front and a "
                         "shared prefix lives inside them; drop {pinned_prefix_tokens} with {runtime=litert-lm}",
                         mentions=("runtime",))
    if isinstance(spec, OllamaSpec):
        return _ollama_sequences(spec, sequences, pinned_prefix_tokens, architecture)
    if isinstance(spec, ExecuTorchSpec):
        return _executorch_sequences(spec, sequences, pinned_prefix_tokens)
    if not isinstance(spec, LlamaCppSpec):
        return spec, sequences
    return _slot_sequences(spec, sequences, pinned_prefix_tokens, "llama.cpp", "llama.cpp", "-np")




def _slot_sequences(spec: RuntimeSpec, sequences: int, pinned_prefix_tokens: int, allocator: str, runtime: str,
                    option: str) -> tuple[RuntimeSpec, int]:
    """llama.cpp's parallel sequences, as llama.cpp's ``-np`` or Ollama's ``OLLAMA_NUM_PARALLEL`` name them: the
    spec's :attr:`~RuntimeSpec.sequences_field` and the scenario's ``sequences`` are one number (``allocator``:
    what allocates the context, ``runtime`` and ``option``: how the error names them)."""
    from dataclasses import replace

    field = spec.sequences_field
    if pinned_prefix_tokens:
        raise FieldError("pinned_prefix_tokens", f"{allocator} allocates the whole -c context up front and a shared "
                         f"prefix lives inside it; drop {{pinned_prefix_tokens}} with {{runtime={spec.name}}}",
                         mentions=("runtime",))
    given = getattr(spec, field)
    if given is None:
        if sequences > LLAMA_MAX_SEQ:
            raise FieldError("sequences", f"llama.cpp allows at most {LLAMA_MAX_SEQ} sequences, got {sequences}")
        return replace(spec, **{field: sequences}), sequences
    if sequences not in (1, given):
        raise FieldError(f"runtime.{field}", f"{{runtime.{field}}} {given} and {{sequences}} {sequences} disagree; "
                         f"under {runtime} both are {option}, give one", lead=None, mentions=("sequences",))
    return spec, given


def _ollama_sequences(spec: OllamaSpec, sequences: int, pinned_prefix_tokens: int, architecture: str | None):
    """:func:`_slot_sequences`, then one sequence for the families Ollama runs in one slot (``num_parallel`` keeps
    the number asked)."""
    from kvplan.engine.ollama_args import runs_one_slot

    spec, parallel = _slot_sequences(spec, sequences, pinned_prefix_tokens, "Ollama's llama-server", "Ollama",
                                     "OLLAMA_NUM_PARALLEL")
    return spec, 1 if runs_one_slot(architecture) else parallel


def _executorch_sequences(spec: ExecuTorchSpec, sequences: int, pinned_prefix_tokens: int
                          ) -> tuple[ExecuTorchSpec, int]:
    """ExecuTorch's Llama export is one sequence: ``examples/models/llama/model.py`` (v1.4.1, line 118) builds
    ``ModelArgs(max_batch_size=1)``, and the program holds one cache of ``max_context_length`` slots from load,
    which a shared prefix lives inside."""
    if sequences != 1:
        raise FieldError("sequences", f"ExecuTorch's Llama export has max_batch_size 1 (one sequence per program), "
                         f"got {sequences}", mentions=("runtime",))
    if pinned_prefix_tokens:
        raise FieldError("pinned_prefix_tokens", "ExecuTorch's program allocates its whole cache at load and a "
                         "prefix lives inside it; drop {pinned_prefix_tokens} with {runtime=executorch}",
                         mentions=("runtime",))
    return spec, sequences
