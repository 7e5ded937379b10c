"""The ``llama-server`` command line Ollama builds for a GGUF model (Ollama v0.32.15).

Since v0.30 Ollama serves every GGUF model from the upstream ``llama-server`` binary, so its memory is
llama.cpp's allocation for the arguments below. This module is the pure translation of Ollama's settings
into those arguments; the bytes are priced by kvplan's llama.cpp cache model, not here.

Rules, each from ollama/ollama at tag v0.32.15 (file :: function, lines):

- Context: ``-c num_ctx × num_parallel``, ``-np num_parallel`` (``llm/llama_server.go`` :: ``startLlamaServer``,
  375-376), so ``num_ctx`` is per sequence. A ``num_ctx`` above the model's training context is lowered to it
  (``llm/server.go`` :: ``NewLlamaServer``, 112-116).
- Default ``num_ctx``: ``OLLAMA_CONTEXT_LENGTH`` (``api/types.go`` :: ``DefaultOptions``, 1115; ``envconfig/config.go``
  230, default 0); when 0, by the summed GPU memory less ``OLLAMA_GPU_OVERHEAD``: ≥ 47 GiB → 262144, ≥ 23 GiB →
  32768, else 4096 (``server/routes.go`` :: ``Serve``, 2048-2057; applied in ``modelOptionsWithEmbeddingBatchDefault``,
  130-132).
- Parallel: ``max(OLLAMA_NUM_PARALLEL, 1)`` (default 1, ``envconfig/config.go`` 275); 1 for embedding models and for
  the architectures in :data:`SINGLE_SLOT_ARCHITECTURES` (``server/sched.go`` :: ``Scheduler.load``, 497-510).
- KV cache type: ``OLLAMA_KV_CACHE_TYPE`` lowercased (``llm/server.go`` :: ``NewLlamaServer``, 118), passed as
  ``--cache-type-k T --cache-type-v T`` only when non-empty (``llm/llama_server.go`` :: ``startLlamaServer``,
  393-396). Ollama no longer refuses it without flash attention; llama.cpp decides.
- Flash attention (``llm/llama_server.go`` :: ``LlamaServerFlashAttention`` / ``appendFlashAttentionArgs``,
  596-621): ``OLLAMA_FLASH_ATTENTION`` set → ``--flash-attn on``/``off``; unset → ``off`` where no GPU supports it
  (``ml.FlashAttentionSupported``), else ``auto``.
- Batch: ``num_batch`` (default 512, ``api/types.go`` :: ``DefaultOptions``, 1116) → ``-b n -ub n`` whenever
  positive (``llm/llama_server.go`` :: ``appendBatchArgs``, 581-593), so llama.cpp's own 2048 / 512 are not used.
- Loading: ``use_mmap: false`` → ``--load-mode none`` (``llm/llama_server.go`` :: ``appendLoadModeArgs``, 627-637);
  otherwise llama-server maps the weights (the integrated-GPU ``--load-mode dio`` case is not modelled).
- Not passed: ``--kv-unified``, ``--swa-full`` (llama.cpp's defaults apply).
- The llama.cpp build Ollama ships is ``b10488`` (``LLAMA_CPP_VERSION`` at v0.32.15, read by
  ``llama/server/CMakeLists.txt`` 114-116).
"""

from __future__ import annotations

from dataclasses import dataclass

OLLAMA_VERSION = "v0.32.15"
#: The llama.cpp build Ollama v0.32.15 pins (``LLAMA_CPP_VERSION``).
OLLAMA_LLAMACPP_BUILD = "b10488"

#: ``server/sched.go`` :: ``Scheduler.load``, 505-510 (ref. ollama/ollama#4165): forced to ``-np 1``.
SINGLE_SLOT_ARCHITECTURES = (
    "mllama", "qwen3vl", "qwen3vlmoe", "qwen35", "qwen35moe", "qwen3next", "lfm2", "lfm2moe",
    "nemotron_h", "nemotron_h_moe", "nemotron_h_omni")



def runs_one_slot(architecture: str | None) -> bool:
    """Whether Ollama runs a model of this architecture with one parallel slot (``-np 1``).

    Parameters
    ----------
    architecture : str or None
        The GGUF ``general.architecture`` (``qwen35``) or the Hugging Face ``model_type`` kvplan's profiles
        carry (``qwen3_5``): the two spell these families alike but for underscores, so they compare without them.

    Returns
    -------
    bool
        True for the families of :data:`SINGLE_SLOT_ARCHITECTURES` (``server/sched.go`` :: ``Scheduler.load``,
        505-510, v0.32.15).
    """
    plain = (architecture or "").lower().replace("_", "")
    return any(plain == a.replace("_", "") for a in SINGLE_SLOT_ARCHITECTURES)


#: ``server/routes.go`` :: ``Serve``, 2050-2057: (GPU memory at least [bytes], default num_ctx [tokens]).
GIB = 1024 ** 3
DEFAULT_CTX_TIERS = ((47 * GIB, 262144), (23 * GIB, 32768), (0, 4096))

#: ``api/types.go`` :: ``DefaultOptions``, 1116.
DEFAULT_NUM_BATCH_TOKENS = 512


@dataclass(frozen=True)
class OllamaLaunch:
    """What Ollama passes to ``llama-server`` that changes memory (worded as a command line in render)."""

    n_ctx_tokens: int  # -c: num_ctx × parallel
    num_ctx_tokens: int  # per sequence, after the training-context clamp
    parallel: int  # -np
    cache_type: str | None  # --cache-type-k/-v (None: not passed, llama.cpp's f16)
    flash_attn: str  # --flash-attn on | off | auto
    batch_tokens: int | None  # -b and -ub (None: not passed)
    mmap: bool  # False: load mode none
    embedding: bool  # an embedding model (no completion capability)


def default_num_ctx_tokens(gpu_memory_bytes: int) -> int:
    """Ollama's default ``num_ctx`` for the summed GPU memory (less ``OLLAMA_GPU_OVERHEAD``) [tokens].

    Parameters
    ----------
    gpu_memory_bytes : int [bytes]

    Returns
    -------
    int [tokens]

    Notes
    -----
    ≥ 47 GiB → 262144, ≥ 23 GiB → 32768, else 4096 (``server/routes.go`` :: ``Serve``, 2050-2057, v0.32.15).
    """
    return next(ctx for floor, ctx in DEFAULT_CTX_TIERS if gpu_memory_bytes >= floor)


def ollama_launch(*, gpu_memory_bytes: int, num_ctx_tokens: int | None = None, context_length_env: int = 0,
                  num_parallel: int = 1, architecture: str | None = None, embedding: bool = False,
                  kv_cache_type: str = "", flash_attention: bool | None = None, flash_supported: bool = True,
                  num_batch_tokens: int = DEFAULT_NUM_BATCH_TOKENS, use_mmap: bool = True,
                  n_ctx_train_tokens: int | None = None) -> OllamaLaunch:
    """Translate Ollama's settings into the ``llama-server`` arguments it starts (rules: module docstring).

    Parameters
    ----------
    gpu_memory_bytes : int [bytes]  summed GPU memory (unified memory on Apple silicon) for the default context
    num_ctx_tokens : int or None [tokens]  the request's / Modelfile's ``num_ctx``; None: the default
    context_length_env : int [tokens]  ``OLLAMA_CONTEXT_LENGTH`` (0: unset)
    num_parallel : int [sequences]  ``OLLAMA_NUM_PARALLEL``
    flash_attention : bool or None  ``OLLAMA_FLASH_ATTENTION`` (None: unset)
    flash_supported : bool  whether a GPU supports flash attention (``ml.FlashAttentionSupported``)
    n_ctx_train_tokens : int or None [tokens]  the GGUF's training context (None/0: no clamp)
    architecture : str or None  the GGUF's ``general.architecture``
    embedding : bool  an embedding model (no completion capability)
    kv_cache_type : str  ``OLLAMA_KV_CACHE_TYPE`` ("" unset)
    num_batch_tokens : int [tokens]  ``num_batch``
    use_mmap : bool  the ``use_mmap`` option

    Returns
    -------
    OllamaLaunch
    """
    num_ctx = num_ctx_tokens or context_length_env or default_num_ctx_tokens(gpu_memory_bytes)
    if n_ctx_train_tokens and num_ctx > n_ctx_train_tokens:
        num_ctx = n_ctx_train_tokens
    parallel = max(num_parallel, 1)
    if embedding or runs_one_slot(architecture):
        parallel = 1
    cache_type = kv_cache_type.strip().lower() or None
    if flash_attention is not None:
        flash = "on" if flash_attention else "off"
    else:
        flash = "auto" if flash_supported else "off"
    batch = num_batch_tokens if num_batch_tokens > 0 else None
    if embedding and batch:
        # appendBatchArgs / embeddingBatchSize (561-571, 581-588): an embedding batch is capped at the whole context
        batch = min(batch, num_ctx * parallel)
    return OllamaLaunch(num_ctx * parallel, num_ctx, parallel, cache_type, flash, batch, use_mmap, embedding)
