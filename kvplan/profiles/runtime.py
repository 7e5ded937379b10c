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


# every runtime kvplan prices exactly, in the order --help and the docs list them
RUNTIME_SPECS: tuple[type[RuntimeSpec], ...] = (LlamaCppSpec, TransformersSpec, MlxLmSpec)
RUNTIME_NAMES = ("ideal", *(spec.name for spec in RUNTIME_SPECS))
_BY_NAME = {alias: spec for spec in RUNTIME_SPECS for alias in (spec.name, *spec.aliases)}
_OFF_BY_DEFAULT = {f.name: f.default is False for spec in RUNTIME_SPECS for f in fields(spec)}


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
    ``max_cache_len``, ``max_kv_size``, ``prefill_step_size``, ``quantized_kv_start``, ``prompt_cache_size``, and each newer
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


def resolve_sequences(spec: RuntimeSpec | None, sequences: int, pinned_prefix_tokens: int = 0
                      ) -> tuple[RuntimeSpec | None, int]:
    """Reconcile the scenario's ``sequences`` with a runtime's own notion of them.

    llama.cpp: ``sequences`` is ``-np``; ``parallel`` names the same number, so the two
    must agree when both are given. A pinned prefix has no meaning there: llama.cpp
    allocates the whole ``-c`` up front and a shared prefix lives inside it.
    """
    if not isinstance(spec, LlamaCppSpec):
        return spec, sequences
    if pinned_prefix_tokens:
        raise FieldError("pinned_prefix_tokens", "llama.cpp allocates the whole -c context up front and a shared "
                         "prefix lives inside it; drop {pinned_prefix_tokens} with {runtime=llama.cpp}",
                         mentions=("runtime",))
    if spec.parallel is None:
        if sequences > LLAMA_MAX_SEQ:
            raise FieldError("sequences", f"llama.cpp allows at most {LLAMA_MAX_SEQ} sequences, got {sequences}")
        from dataclasses import replace

        return replace(spec, parallel=sequences), sequences
    if sequences not in (1, spec.parallel):
        raise FieldError("runtime.parallel", f"{{runtime.parallel}} {spec.parallel} and {{sequences}} {sequences} "
                         "disagree; under llama.cpp both are -np, give one", lead=None, mentions=("sequences",))
    return spec, spec.parallel


