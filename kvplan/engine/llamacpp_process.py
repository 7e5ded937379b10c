"""A llama.cpp process beyond its buffers: what is resident at its peak, and what the kernel can reclaim.

The weights, the KV cache and the compute and output buffers (:mod:`kvplan.engine.llamacpp_buffers`) are what
llama.cpp allocates. The process that holds them also holds (measured on ``llama-server`` build 11434, CPU
backend, x86-64, with ``tests/harness/process.py``; the measurements are ``tests/data/llamacpp/process/``):

* **a baseline**: the binary and its shared libraries, mapped from their files (14.7–14.8 MiB of ``RssFile``
  on every run without mmap), and a heap of its own (the vocabulary and metadata, the server's slots and
  threads): ``RssAnon`` less every anonymous buffer and less what the prompt's graph touched, 25.5–31.2 MiB on
  the 15 runs of models with one KV cache;
* **the weights as loaded**: with mmap (llama-server's default) the weight buffer is the GGUF file mapped
  (``CPU_Mapped``): file-backed pages, resident once read, which the kernel may drop and read again (every
  token, if it must: the process then runs at flash speed instead of being killed). Without mmap
  (``--no-mmap``, spelled ``-lm none`` by recent builds) the weights are read into anonymous memory, which it
  cannot drop;
* **the repacked copy**: the CPU backend re-lays the matrix weights of some types for its kernels
  (``ggml/src/ggml-cpu/repack.cpp``, ``ggml_repack_get_optimal_repack_type``) into a ``CPU_REPACK`` buffer of
  the same size. Without mmap it replaces them; with mmap the mapped pages it read stay resident beside it,
  so the repacked part of the weights is held twice (Llama-3.1-8B Q4_0: 4,453 MiB of file pages and 3,744 MiB
  of repacked copy);
* **the compute buffer as touched**: the buffer is reserved for the worst-case graph (a full micro-batch at the
  whole context), but its pages become resident only where a graph writes. The largest graph a process runs is
  its longest prompt's last micro-batch, so the touched part is the buffer llama.cpp would reserve for a context
  of that prompt's length.

All sizes are in bytes; pure: no I/O.
"""

from __future__ import annotations

from kvplan.records import Figures

#: llama.cpp builds whose rules kvplan follows, newest first; the first is the default
BUILDS = ("b11434", "0c1e57098")
DEFAULT_BUILD = BUILDS[0]

#: binary and shared libraries resident from their files [bytes]: the largest ``RssFile`` of the build's runs
#: without mmap (9 runs, 15,368,192 … 15,568,896 bytes)
BASELINE_FILE_BYTES = 15_568_896

#: the process's own heap grows with the vocabulary (its tokens, scores and lookup tables): a least-squares line
#: through ``VmHWM`` less everything else kvplan prices, over the 18 runs of build 11434 (2.66 MiB + 188.9 bytes
#: per entry, deviations −4.6 … +7.3 MiB), raised by its largest deviation so it lies on or above every run
#: [bytes, bytes per vocabulary entry]
BASELINE_ANON_FIXED_BYTES = 10_506_240
BASELINE_ANON_BYTES_PER_TOKEN = 189


def baseline_anon_bytes(n_vocab: int) -> int:
    """The process's own heap for a vocabulary of ``n_vocab`` entries [bytes].

    Parameters
    ----------
    n_vocab : int [tokens]
        Vocabulary size.

    Returns
    -------
    int [bytes]
        ``BASELINE_ANON_FIXED_BYTES + BASELINE_ANON_BYTES_PER_TOKEN · n_vocab``.
    """
    return int(BASELINE_ANON_FIXED_BYTES + BASELINE_ANON_BYTES_PER_TOKEN * int(n_vocab))

#: with mmap, the mapped pages a process keeps resident while the kernel drops the rest and it thrashes (each token
#: reads its weights from flash again) [bytes]: the smallest memory limit under which it still loads and answers
#: was 3 MiB above its other non-reclaimable memory (Llama-3.2-1B F16, 4k; the bisection's resolution is 4 MiB);
#: rounded up to 16 MiB
MMAP_WORKING_SET_BYTES = 16 * 2**20

#: CPU feature sets and the weight types the CPU backend repacks on them, with the row multiple each needs
#: (``ne[1] % n == 0``), in build 11434's ``ggml_repack_get_optimal_repack_type``
REPACKED_TYPES: dict[str, dict[str, int]] = {
    "avx2": {"q4_0": 8, "q4_k": 8, "iq4_nl": 8, "mxfp4": 8},
    "avx512": {"q4_0": 8, "q4_k": 8, "q2_k": 8, "iq4_nl": 8, "mxfp4": 8},
    "neon-i8mm": {"q4_0": 4, "q4_k": 8, "q5_k": 8, "q6_k": 8, "iq4_nl": 4, "mxfp4": 4, "q8_0": 4},
    "neon-dotprod": {"q4_0": 4, "q4_k": 8, "q5_k": 8, "q6_k": 8, "iq4_nl": 4, "mxfp4": 4, "q8_0": 4},
    "none": {},
}
CPU_FEATURES = tuple(REPACKED_TYPES)

#: tensor kinds a matrix multiplication reads (the token embedding is read by GET_ROWS, which repack does not
#: serve, so it stays in the plain CPU buffer even when its type is repackable)
_MATMUL_KINDS = ("linear", "experts", "output")


def repacked_tensor_bytes(tensors, cpu_features: str) -> list[int]:
    """Bytes of each weight tensor the CPU backend repacks [bytes].

    Parameters
    ----------
    tensors : iterable of objects with ``kind``, ``dtype`` (ggml type name), ``shape`` (ggml order) and ``bytes``
        The priced weight tensors (:class:`kvplan.engine.quantize.PricedTensor`).
    cpu_features : str
        One of :data:`CPU_FEATURES`.

    Returns
    -------
    list of int [bytes]
        The matrix weights (2-D, or 3-D expert stacks) of a repacked type whose rows ``ne[1]`` are a multiple of
        the type's interleave.
    """
    types = REPACKED_TYPES[cpu_features]
    out = []
    for t in tensors:
        rows = types.get(str(t.dtype).lower())
        if rows and t.kind in _MATMUL_KINDS and len(t.shape) >= 2 and t.shape[1] % rows == 0:
            out.append(int(t.bytes))
    return out


def repacked_bytes(tensors, cpu_features: str) -> int:
    """Bytes of the weights the CPU backend repacks [bytes].

    Parameters
    ----------
    tensors : iterable of objects with ``kind``, ``dtype`` (ggml type name), ``shape`` (ggml order) and ``bytes``
        The priced weight tensors (:class:`kvplan.engine.quantize.PricedTensor`).
    cpu_features : str
        One of :data:`CPU_FEATURES`.

    Returns
    -------
    int [bytes]
        The ``CPU_REPACK`` buffer: the matrix weights (2-D, or 3-D expert stacks) of a repacked type whose rows
        ``ne[1]`` are a multiple of the type's interleave.
    """
    return sum(repacked_tensor_bytes(tensors, cpu_features))


class ProcessParts(Figures):
    """What a llama.cpp process holds beyond its KV cache and its buffers as reserved [bytes]."""

    __slots__ = _fields = ("baseline_anon_bytes", "baseline_file_bytes", "repacked_bytes", "repack_copy_bytes",
                           "weights_file_bytes", "weights_anon_bytes", "staging_bytes")
    _defaults = {"staging_bytes": 0}

    baseline_anon_bytes: int  # the process's own heap
    baseline_file_bytes: int  # binary and libraries, resident from their files
    repacked_bytes: int  # the weights the CPU backend repacks (a buffer of their own)
    repack_copy_bytes: int  # the second copy that repacking leaves resident (with mmap), else 0
    weights_file_bytes: int  # weights as mapped file pages (with mmap), else 0
    weights_anon_bytes: int  # weights in anonymous memory (loaded, or the repacked part)
    staging_bytes: int  # without mmap: the loader's staging buffer for a repacked tensor (the largest)

    @property
    def reclaimable_bytes(self) -> int:
        """What the kernel can drop and read again without killing the process: the mapped weights less the
        working set a thrashing process keeps (:data:`MMAP_WORKING_SET_BYTES`) [bytes]."""
        return max(self.weights_file_bytes - MMAP_WORKING_SET_BYTES, 0)

    @property
    def extra_bytes(self) -> int:
        """What the process adds to weights + cache + buffers [bytes]: baseline, the repacked second copy and the
        loader's staging buffer."""
        return self.baseline_anon_bytes + self.baseline_file_bytes + self.repack_copy_bytes + self.staging_bytes


def process_parts(weights_bytes: int, repacked: int, *, mmap: bool, repack: bool, build: str = DEFAULT_BUILD,
                  largest_repacked: int = 0, n_vocab: int = 0) -> ProcessParts:
    """The process's parts for weights of ``weights_bytes`` of which ``repacked`` are of a repacked type.

    Parameters
    ----------
    weights_bytes : int [bytes]
        The weights (every tensor, as priced).
    repacked : int [bytes]
        Of those, what the CPU backend would repack (:func:`repacked_bytes`).
    mmap : bool
        Weights memory-mapped (llama-server's default) rather than read into memory.
    repack : bool
        Repacking on (the default; ``--no-repack`` turns it off).
    build : str
        One of :data:`BUILDS`. The baseline was measured on the first; the older build is given the same.
    n_vocab : int [tokens]
        Vocabulary size (the heap holds the vocabulary).
    largest_repacked : int [bytes]
        The largest tensor repacked. Without mmap the loader reads each such tensor into a staging buffer of its
        size before repacking it (``llama_model_loader::load_all_data``: "only one staging buffer is alive at a
        time"); the heap keeps the largest one's pages.

    Returns
    -------
    ProcessParts
        With mmap, the weights are file pages and the repacked part is also held as an anonymous copy; without,
        all the weights are anonymous (the repacked part replaces its source).
    """
    repacked = repacked if repack else 0
    copy = repacked if mmap else 0
    return ProcessParts(
        baseline_anon_bytes=baseline_anon_bytes(n_vocab),
        baseline_file_bytes=BASELINE_FILE_BYTES,
        repacked_bytes=repacked,
        repack_copy_bytes=copy,
        weights_file_bytes=weights_bytes if mmap else 0,
        weights_anon_bytes=copy if mmap else weights_bytes,
        staging_bytes=largest_repacked if (repack and not mmap and repacked) else 0,
    )
