"""Ollama's cache: llama.cpp's allocation for the ``llama-server`` command line Ollama v0.32.15 builds.

A pure translation (:func:`kvplan.engine.ollama_args.ollama_launch`) of Ollama's settings into a
:class:`~kvplan.profiles.runtime.LlamaCppSpec` and the ``-c`` / ``-np`` it passes; the bytes are the llama.cpp
cache model's (:mod:`kvplan.caches.llamacpp`), never priced twice.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvplan.engine.ollama_args import OllamaLaunch
from kvplan.profiles.runtime import LlamaCppSpec

#: Ollama v0.32.15 pins llama.cpp b10488 (``LLAMA_CPP_VERSION``); of the builds kvplan follows, commit 0c1e57098
#: is the older one, whose rules are taken as Ollama's (not re-measured for b10488).
OLLAMA_PRICING_BUILD = "0c1e57098"


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


def ollama_cache(plan: OllamaPlan, model):
    """llama.cpp's cache model for ``model`` under the plan (``--cache-type-k/-v`` as Ollama passes them)."""
    from kvplan.caches.llamacpp import llamacpp_cache
    from kvplan.engine.formats import format_from_name

    fmt = format_from_name(plan.launch.cache_type) if plan.launch.cache_type else format_from_name("f16")
    return llamacpp_cache(plan.spec, model, fmt, fmt)
