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

from kvplan.engine.llamacpp_process import BUILDS as LLAMACPP_BUILDS, DEFAULT_BUILD
from kvplan.errors import FieldError

RUNTIME_NAMES = ("ideal", "llama.cpp", "transformers", "mlx-lm")
FLASH_ATTN_CHOICES = ("auto", "on", "off")
CACHE_CHOICES = ("dynamic", "static")
JUDGE_CHOICES = ("resident", "non_reclaimable")
LLAMA_MAX_SEQ = 256  # llama.cpp src/llama-cparams.h: #define LLAMA_MAX_SEQ 256


@dataclass(frozen=True)
class LlamaCppSpec:
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

    name = "llama.cpp"


@dataclass(frozen=True)
class TransformersSpec:
    """transformers cache options: ``DynamicCache`` (default) or ``StaticCache(max_cache_len)``.

    ``max_cache_len`` None with a static cache means "the context itself" (what
    ``generate`` picks for a generation of ``ctx`` tokens).
    """

    cache: str = "dynamic"
    max_cache_len: int | None = None

    name = "transformers"


@dataclass(frozen=True)
class MlxLmSpec:
    """MLX-LM's ``generate_step`` options that change the cache (mlx-lm 0.32.2, ``mlx_lm/generate.py``).

    ``max_kv_size`` is ``--max-kv-size`` (None: a growing ``KVCache`` per layer; else a
    ``RotatingKVCache(max_size=max_kv_size, keep=4)`` per layer, for a model without its own ``make_cache``),
    ``prefill_step_size`` ``--prefill-step-size`` (2048), ``quantized_kv_start`` ``--quantized-kv-start``
    (5000: the offset from which ``--kv-bits`` quantizes the cache). ``--kv-bits`` and ``--kv-group-size``
    are the scenario's cache format (the ``kv_bits`` / ``kv_group_size`` knobs, group 64 by default).
    """

    max_kv_size: int | None = None
    prefill_step_size: int = 2048
    quantized_kv_start: int = 5000

    name = "mlx-lm"


RuntimeSpec = LlamaCppSpec | TransformersSpec | MlxLmSpec


def runtime_spec(name: str | None, *, parallel: int | None = None, kv_unified: bool = False,
                 ubatch: int | None = None, batch: int | None = None, swa_full: bool = False,
                 flash_attn: str | None = None, cache: str | None = None,
                 max_cache_len: int | None = None, mmap: bool | None = None, repack: bool | None = None,
                 build: str | None = None, prompt_tokens: int | None = None,
                 judge: str | None = None, max_kv_size: int | None = None,
                 prefill_step_size: int | None = None, quantized_kv_start: int | None = None) -> RuntimeSpec | None:
    """Build the spec a runtime name and its options ask for (None: the ideal formula).

    Options of another runtime are usage errors, so a typo never silently does nothing.
    """
    key = (name or "ideal").strip().lower()
    key = {"llamacpp": "llama.cpp", "llama-cpp": "llama.cpp", "hf": "transformers", "mlx": "mlx-lm",
           "mlx_lm": "mlx-lm"}.get(key, key)
    llama_opts = {"parallel": parallel is not None, "kv_unified": kv_unified, "ubatch": ubatch is not None,
                  "batch": batch is not None, "swa_full": swa_full, "flash_attn": flash_attn is not None,
                  "mmap": mmap is not None, "repack": repack is not None, "build": build is not None,
                  "prompt_tokens": prompt_tokens is not None, "judge": judge is not None}
    hf_opts = {"cache": cache is not None, "max_cache_len": max_cache_len is not None}
    mlx_opts = {"max_kv_size": max_kv_size is not None, "prefill_step_size": prefill_step_size is not None,
                "quantized_kv_start": quantized_kv_start is not None}
    if key not in RUNTIME_NAMES:
        raise FieldError("runtime", f"unknown runtime {name!r}; known: {', '.join(RUNTIME_NAMES)}")
    for runtime, options in (("llama.cpp", llama_opts), ("transformers", hf_opts), ("mlx-lm", mlx_opts)):
        if key != runtime and any(options.values()):
            used = tuple(f"runtime.{k}" for k, v in options.items() if v)
            raise FieldError(used, f"{runtime} options; they need {{runtime={runtime}}}", mentions=("runtime",))
    if key == "ideal":
        return None
    if key == "llama.cpp":
        fa = (flash_attn or "auto").strip().lower()
        fa = {"1": "on", "true": "on", "0": "off", "false": "off"}.get(fa, fa)
        if fa not in FLASH_ATTN_CHOICES:
            raise FieldError("runtime.flash_attn", f"expected on, off or auto, got {flash_attn!r}")
        for option, value in (("parallel", parallel), ("ubatch", ubatch), ("batch", batch)):
            if value is not None and value < 1:
                raise FieldError(f"runtime.{option}", f"must be at least 1, got {value}")
        if parallel is not None and parallel > LLAMA_MAX_SEQ:
            raise FieldError("runtime.parallel", f"llama.cpp allows at most {LLAMA_MAX_SEQ} sequences, got {parallel}")
        if prompt_tokens is not None and prompt_tokens < 1:
            raise FieldError("runtime.prompt_tokens", f"must be at least 1, got {prompt_tokens}")
        build_name = (build or DEFAULT_BUILD).strip().lower()
        build_name = "b" + build_name if build_name.isdigit() else build_name
        if build_name not in LLAMACPP_BUILDS:
            raise FieldError("runtime.build", f"kvplan follows llama.cpp builds {', '.join(LLAMACPP_BUILDS)}; "
                             f"got {build!r}")
        judged = (judge or JUDGE_CHOICES[0]).strip().lower().replace("-", "_")
        if judged not in JUDGE_CHOICES:
            raise FieldError("runtime.judge", f"expected resident or non_reclaimable, got {judge!r}")
        return LlamaCppSpec(parallel=parallel, kv_unified=kv_unified, ubatch=ubatch or 512, batch=batch or 2048,
                            swa_full=swa_full, flash_attn=fa, mmap=True if mmap is None else mmap,
                            repack=True if repack is None else repack, build=build_name,
                            prompt_tokens=prompt_tokens, judge=judged)
    if key == "mlx-lm":
        for option, value, least in (("max_kv_size", max_kv_size, 1), ("prefill_step_size", prefill_step_size, 1),
                                     ("quantized_kv_start", quantized_kv_start, 0)):
            if value is not None and value < least:
                raise FieldError(f"runtime.{option}", f"must be at least {least}, got {value}")
        return MlxLmSpec(max_kv_size=max_kv_size, prefill_step_size=prefill_step_size or 2048,
                         quantized_kv_start=5000 if quantized_kv_start is None else quantized_kv_start)
    kind = (cache or "dynamic").strip().lower()
    if kind not in CACHE_CHOICES:
        raise FieldError("runtime.cache", f"expected dynamic or static, got {cache!r}")
    if max_cache_len is not None and kind != "static":
        raise FieldError("runtime.max_cache_len", "only for {runtime.cache=static}", mentions=("runtime.cache",))
    if max_cache_len is not None and max_cache_len < 1:
        raise FieldError("runtime.max_cache_len", f"must be at least 1, got {max_cache_len}")
    return TransformersSpec(cache=kind, max_cache_len=max_cache_len)


def parse_runtime(value: object) -> RuntimeSpec | None:
    """A runtime named in a file: ``"llama.cpp"`` or ``{name: llama.cpp, parallel: 2, …}``.

    Keys are the spec's field names (``parallel``, ``kv_unified``, ``ubatch``, ``batch``,
    ``swa_full``, ``flash_attn``, ``mmap``, ``repack``, ``build``, ``prompt_tokens``, ``judge``, ``cache``,
    ``max_cache_len``, ``max_kv_size``, ``prefill_step_size``, ``quantized_kv_start``).
    """
    if value is None or isinstance(value, str):
        return runtime_spec(value)
    if not isinstance(value, dict):
        raise FieldError("runtime", f"expected a name or a mapping, got {type(value).__name__}")
    options = dict(value)
    name = options.pop("name", None)
    known = ({f.name for f in fields(LlamaCppSpec)} | {f.name for f in fields(TransformersSpec)}
             | {f.name for f in fields(MlxLmSpec)})
    unknown = sorted(set(options) - known)
    if unknown:
        raise FieldError("runtime", f"unknown option {unknown[0]!r}; known: name, {', '.join(sorted(known))}")
    return runtime_spec(_text(name, "name"), **{key: _option_value(key, v) for key, v in options.items()})


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


def _option_value(key: str, value: object) -> object:
    """A runtime option from a file, checked for its type (``flash_attn: on`` reads as YAML true)."""
    if key in ("kv_unified", "swa_full", "mmap", "repack"):
        if not isinstance(value, bool):
            raise FieldError(f"runtime.{key}", f"expected true or false, got {value!r}")
        return value
    if key in ("parallel", "ubatch", "batch", "prompt_tokens", "prefill_step_size", "quantized_kv_start"):
        if isinstance(value, bool) or not isinstance(value, int):
            raise FieldError(f"runtime.{key}", f"expected a whole number, got {value!r}")
        return value
    if key == "build" and isinstance(value, int) and not isinstance(value, bool):
        return str(value)  # a build number (11434)
    if key == "flash_attn" and isinstance(value, bool):
        return "on" if value else "off"
    if key in ("max_cache_len", "max_kv_size") and value is not None:
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


