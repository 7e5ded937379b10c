"""Ollama's cache: llama.cpp's allocation for the ``llama-server`` command line Ollama v0.32.15 builds.

A pure translation (:func:`kvplan.engine.ollama_args.ollama_launch`) of Ollama's settings into the llama.cpp
options and the ``-c`` / ``-np`` it passes; the bytes are the llama.cpp cache model's
(:mod:`kvplan.caches.llamacpp`), never priced twice. The one difference is what ``ctx`` means: under Ollama it is
``num_ctx``, the tokens of each sequence, and llama.cpp's ``-c`` is ``min(num_ctx, n_ctx_train) × parallel``.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from kvplan.caches.errors import CacheTypeError
from kvplan.caches.facts import rule
from kvplan.caches.llamacpp import LlamaCppCache, llamacpp_cache
from kvplan.engine.ollama_args import OLLAMA_VERSION, OllamaLaunch, ollama_launch, runs_one_slot
from kvplan.errors import FieldError
from kvplan.profiles.memo import PerModel
from kvplan.profiles.runtime import LlamaCppSpec, OllamaSpec

#: Ollama v0.32.15 pins llama.cpp b10488 (``LLAMA_CPP_VERSION``); priced with the rules of the build kvplan
#: follows that, like b10488, reserves the logits of -np rows (:attr:`OllamaSpec.pricing_build`).
OLLAMA_PRICING_BUILD = OllamaSpec.pricing_build


@dataclass(frozen=True)
class OllamaPlan:
    """The llama.cpp spec and the ``-c`` / ``-np`` that price an Ollama launch."""

    launch: OllamaLaunch
    spec: LlamaCppSpec
    ctx: int  # llama.cpp's -c [tokens]
    sequences: int  # llama.cpp's -np


def llamacpp_plan(launch: OllamaLaunch, *, build: str = OLLAMA_PRICING_BUILD) -> OllamaPlan:
    """The llama.cpp options Ollama's launch amounts to: ``-np``, ``-b``/``-ub``, ``-fa``, the load mode.

    ``--kv-unified`` and ``--swa-full`` are not passed by Ollama (llama.cpp's defaults: off). With no ``-b``
    (an embedding model whose batch is 0) llama.cpp's own defaults stay.
    """
    batch = {"batch": launch.batch_tokens, "ubatch": launch.batch_tokens} if launch.batch_tokens else {}
    spec = LlamaCppSpec.from_options(parallel=launch.parallel, flash_attn=launch.flash_attn, mmap=launch.mmap,
                                     build=build, **batch)
    return OllamaPlan(launch, spec, launch.n_ctx_tokens, launch.parallel)


@dataclass(frozen=True)
class OllamaCache(LlamaCppCache):
    """llama.cpp's allocation under Ollama: ``ctx`` is ``num_ctx`` per sequence; every figure is llama.cpp's at
    ``-c min(num_ctx, n_ctx_train) × parallel``. ``family`` stays llama.cpp: its buffers and process apply."""

    ollama: OllamaSpec | None = None
    architecture: str | None = None  # the profile's, for the one-slot families

    name = "ollama"
    # the search stops at the training context, and says so only where it binds (kvplan.plan.core.max_ctx_limited_by)
    limit_binds_at_cap_only = True

    @property
    def ctx_limit(self) -> tuple[int, str] | None:
        """``(n_ctx_train, "n_ctx_train")``: past the training context Ollama lowers ``num_ctx``, so no larger one
        is ever allocated [tokens]."""
        return (self.n_ctx_train, "n_ctx_train") if self.n_ctx_train else None

    def llamacpp_ctx(self, ctx, sequences=1):
        """llama.cpp's ``-c`` for ``num_ctx`` ``ctx``: lowered to the training context (``llm/server.go`` ::
        ``NewLlamaServer``, 112-116), times the parallel slots (``llm/llama_server.go`` 375-376) [tokens]."""
        from kvplan.engine._ops import minimum

        clamped = minimum(ctx, self.n_ctx_train) if self.n_ctx_train else ctx
        return clamped * sequences

    def cells(self, ctx: int, sequences: int = 1):
        if not ctx:
            return super().cells(ctx, sequences)  # 0: the training context, as llama.cpp's -c 0
        return super().cells(self.llamacpp_ctx(int(ctx), int(sequences)), sequences)

    def _kv_bytes_arrays(self, ctx, sequences):
        import numpy as np

        ctx, n = np.broadcast_arrays(np.asarray(ctx, dtype=np.int64), np.asarray(sequences, dtype=np.int64))
        return super()._kv_bytes_arrays(self.llamacpp_ctx(ctx, n), n)

    def max_ctx(self, allowance_bytes, sequences=1, ctx_limit=float("inf")):
        """Largest ``num_ctx`` that fits: past the training context Ollama lowers ``num_ctx`` and the
        allocation stops growing, so the search stops there."""
        if self.n_ctx_train:
            ctx_limit = min(ctx_limit, self.n_ctx_train)
        return super().max_ctx(allowance_bytes, sequences, ctx_limit)

    def launch(self, ctx: int, sequences: int = 1) -> OllamaLaunch:
        """The ``llama-server`` arguments Ollama builds for this request (``num_ctx`` ``ctx``)."""
        spec = self.ollama
        return ollama_launch(gpu_memory_bytes=0, num_ctx_tokens=int(ctx) or None, num_parallel=spec.num_parallel or
                             sequences, architecture=self.architecture, kv_cache_type=spec.kv_cache_type or "",
                             flash_attention=spec.flash_attention, num_batch_tokens=spec.num_batch,
                             use_mmap=spec.use_mmap, n_ctx_train_tokens=self.n_ctx_train)

    def describe(self, ctx: int, sequences: int = 1) -> dict:
        d = super().describe(ctx, sequences)  # its cells() are llama.cpp's at Ollama's -c
        launch = self.launch(ctx, sequences)
        spec = self.ollama
        ours = []
        if self.n_ctx_train and ctx > self.n_ctx_train:
            ours.append(rule("num_ctx_lowered", num_ctx=int(ctx), n_ctx_train=self.n_ctx_train))
        if spec.num_parallel and spec.num_parallel > 1 and runs_one_slot(self.architecture):
            ours.append(rule("one_slot", architecture=self.architecture, asked=spec.num_parallel))
        ours.append(rule("ollama_ctx", num_ctx=launch.num_ctx_tokens, parallel=launch.parallel,
                         n_ctx=launch.n_ctx_tokens))
        if spec.num_batch:
            ours.append(rule("ollama_batch", num_batch=spec.num_batch))
        d["rules"] = ours + d["rules"]
        d["name"] = self.name
        d["version"] = OLLAMA_VERSION
        d["options"] = {"num_ctx": launch.num_ctx_tokens, "num_parallel": launch.parallel,
                        "kv_cache_type": spec.kv_cache_type, "flash_attention": spec.flash_attention,
                        "num_batch": spec.num_batch, "use_mmap": spec.use_mmap,
                        "llama_server": {"n_ctx": launch.n_ctx_tokens, "parallel": launch.parallel,
                                         "cache_type": launch.cache_type, "flash_attn": launch.flash_attn,
                                         "batch": launch.batch_tokens, "mmap": launch.mmap,
                                         "build": self.spec.build}}
        return d


_CACHES = PerModel()


def ollama_cache(spec, model, k_format=None, v_format=None):
    """The cache of ``model`` under Ollama: an :class:`OllamaSpec` (the runtime), or an :class:`OllamaPlan`
    (a launch already translated: its llama.cpp cache at the launch's cache types)."""
    from kvplan.engine.formats import format_from_name

    if isinstance(spec, OllamaPlan):
        fmt = format_from_name(spec.launch.cache_type or "f16")
        return llamacpp_cache(spec.spec, model, fmt, fmt)
    return _CACHES.get(model, (spec, k_format, v_format), lambda: _ollama_cache(spec, model, k_format, v_format))


def _ollama_cache(spec: OllamaSpec, model, k_format, v_format) -> OllamaCache:
    from kvplan.engine.formats import format_from_name

    if spec.kv_cache_type is not None:
        own = format_from_name(spec.kv_cache_type)
        for given, field in ((k_format, "k_type"), (v_format, "v_type")):
            if given is not None and given != own:
                raise FieldError((field, "runtime.kv_cache_type"), f"{given.name} and "
                                 f"{{runtime.kv_cache_type}} {spec.kv_cache_type} disagree; under Ollama the cache "
                                 "type is OLLAMA_KV_CACHE_TYPE, give one", lead=None)
        k_format = v_format = own
    try:
        inner = llamacpp_cache(spec.llamacpp, model, k_format, v_format)
    except CacheTypeError:
        if spec.kv_cache_type is None:
            raise
        raise FieldError("runtime.kv_cache_type", f"llama.cpp cannot store {spec.kv_cache_type} here") from None
    values = {f.name: getattr(inner, f.name) for f in fields(inner)}
    return OllamaCache(**values, ollama=spec, architecture=getattr(model, "architecture", None))
