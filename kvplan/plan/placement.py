"""Where each part of a configuration lives when it is offloaded, and what each memory then holds and reads.

The rules are llama.cpp's (:mod:`kvplan.engine.offload`): ``-ngl`` (``n_gpu_layers``), ``--n-cpu-moe``
(``n_cpu_moe``), ``-ot`` (``override_tensor``), plus expert stacks streamed from flash (``stream_experts``, with
``expert_cache_hit`` of their reads found in RAM). The memories:

* ``gpu``: a discrete GPU's own memory (the device's ``gpu_memory``, read at ``gpu_memory_bandwidth``), or, on
  unified memory, the share the GPU may use (``gpu_working_set`` or ``--gpu-limit``; unknown: the whole budget),
  read at the device's ``memory_bandwidth``;
* ``ram``: host memory (``ram − os_reserve``). On unified memory it holds the GPU's share too, so its total is
  every resident part;
* ``flash``: streamed expert stacks, not resident (their reads cost ``flash_read``).
"""

from __future__ import annotations

import re

from kvplan.engine import offload as eo
from kvplan.engine.memory import VERDICTS, headroom_bytes, verdict_code
from kvplan.errors import FieldError
from kvplan.records import Figures

_LAYER = re.compile(r"^blk\.(\d+)\.")


class Part(Figures):
    """One resident (or streamed) part in one memory [bytes]."""

    __slots__ = _fields = ("part", "memory", "bytes", "read_bytes")
    part: str  # embedding, layers, experts, output (weights), kv_cache, output_buffer, compute_buffer
    memory: str  # gpu, ram, flash
    bytes: int
    read_bytes: int  # what one decode step reads of it (streamed experts: from flash, after cache hits)


class MemoryUse(Figures):
    """One memory's budget, what it holds and its verdict [bytes]."""

    __slots__ = _fields = ("memory", "budget_bytes", "total_bytes", "headroom_bytes", "verdict",
                           "bandwidth_bytes_per_s", "read_bytes_per_step", "budget_source")
    memory: str
    budget_bytes: int | None  # None: no limit known (flash)
    total_bytes: int
    headroom_bytes: int | None
    verdict: object  # a Verdict, or None without a budget
    bandwidth_bytes_per_s: float
    read_bytes_per_step: int
    budget_source: str  # gpu_memory, gpu_working_set, budget (unknown GPU limit: the RAM budget), ram, none


class Offload(Figures):
    """The placement of one configuration at one point."""

    __slots__ = _fields = ("n_gpu_layers", "layers_on_gpu", "layers", "output_on_gpu", "n_cpu_moe",
                           "override_tensor", "stream_experts", "expert_cache_hit", "unified", "parts", "memories",
                           "seconds_per_step", "decode_tokens_per_s", "decode_tokens_per_s_roofline", "verdict",
                           "ram_verdict", "ram_headroom_bytes",
                           "main_total_bytes")
    n_gpu_layers: int  # as given (-1: all)
    layers_on_gpu: int
    layers: int
    output_on_gpu: bool
    n_cpu_moe: int
    override_tensor: str | None
    stream_experts: int
    expert_cache_hit: float
    unified: bool  # one physical memory (the GPU's share is inside RAM)
    parts: tuple
    memories: tuple
    seconds_per_step: float
    decode_tokens_per_s: float
    decode_tokens_per_s_roofline: float
    verdict: object  # the worst of the memories' verdicts
    ram_verdict: object  # the main memory figures' own verdict (every part against the RAM budget)
    ram_headroom_bytes: int  # and their headroom
    main_total_bytes: int  # and their total (every part, streamed ones included, as if all were in RAM)


def _tensors(b):
    """(name, kind, layer, bytes) of every weight tensor: the pricing's, or the inventory at the uniform width
    (each tensor's share of the weights by its values, the shares summing to the weights exactly)."""
    s = b.scenario
    if b.weights_pricing is not None:
        out = []
        for t in b.weights_pricing.tensors:
            m = _LAYER.match(t.name)
            out.append((t.name, t.kind, int(m.group(1)) if m else -1, t.bytes))
        return out
    from kvplan.engine.tensors import tensor_inventory
    from kvplan.plan.weights import model_shape

    try:
        inventory = tensor_inventory(model_shape(s.model))
    except FieldError as exc:
        raise FieldError("n_gpu_layers", f"placing {s.model.name!r} layer by layer: {exc.worded(lead=False)}") from None
    except ValueError as exc:
        raise FieldError("n_gpu_layers", f"placing {s.model.name!r} layer by layer: {exc}") from None
    total = sum(t.n_values for t in inventory)
    out, done, acc = [], 0, 0
    for t in inventory:
        acc += t.n_values
        upto = b.weights_bytes * acc // total
        out.append((t.name, t.kind, t.layer, upto - done))
        done = upto
    return out


def _rules(s):
    """The override rules in force, in order: ``-ot`` first, then ``--n-cpu-moe``, then streamed experts."""
    rules = list(eo.parse_override_rules(s.override_tensor)) if s.override_tensor else []
    rules += [(rx, eo.HOST) for rx in eo.n_cpu_moe_patterns(s.n_cpu_moe or 0)]
    rules += [(rx, eo.FLASH) for rx in eo.n_cpu_moe_patterns(min(s.stream_experts or 0, s.model.layers))]
    return rules


def placement_of(b):
    """The :class:`kvplan.engine.offload.Placement` of a basis (None when the scenario offloads nothing)."""
    s = b.scenario
    if not s.offloads:
        return None
    model = s.model
    experts = getattr(model, "experts", None) or 0
    for name in ("n_cpu_moe", "stream_experts"):
        if getattr(s, name) and not experts:
            raise FieldError(name, f"{model.name!r} has no experts (not a mixture of experts)")
    ngl = -1 if s.n_gpu_layers is None else s.n_gpu_layers
    return eo.place_tensors(_tensors(b), model.layers, ngl, _rules(s), bool(model.tie_embeddings), experts,
                            getattr(model, "experts_per_token", None) or 0)


def placement_ngl(s) -> int:
    """``-ngl`` in force: as given, else all (-1)."""
    return -1 if s.n_gpu_layers is None else s.n_gpu_layers


class Layout(Figures):
    """What an offloaded configuration fixes before its context varies: the placement, the weights each memory
    holds and a step reads, how the cache splits over the memories, each memory's budget and bandwidth."""

    __slots__ = _fields = ("placement", "discrete", "weights_bytes", "weights_read_bytes", "streamed_read_bytes",
                           "kv_runs", "state_values", "gpu_budget_bytes", "gpu_budget_source", "bandwidth")
    placement: object  # kvplan.engine.offload.Placement
    discrete: bool  # the device has a GPU memory of its own (gpu_memory)
    weights_bytes: dict  # gpu / ram / flash → weight bytes held there
    weights_read_bytes: dict  # gpu / ram → weight bytes one step reads there
    streamed_read_bytes: int  # the active experts of the streamed stacks (before cache hits)
    kv_runs: tuple  # (window tokens or None, K+V values per token on the GPU, K+V values per token in all)
    state_values: tuple  # (state values on the GPU, in all) per sequence
    gpu_budget_bytes: int
    gpu_budget_source: str  # gpu_memory, gpu_working_set, budget
    bandwidth: dict  # gpu / ram / flash → bytes/s


def layout_of(b) -> Layout:
    """The :class:`Layout` of an offloaded basis, built once (``b.placement_memo``)."""
    memo = b.placement_memo
    if "layout" in memo:
        return memo["layout"]
    s, device = b.scenario, b.scenario.device
    placement = placement_of(b)
    held = {_memory(m): placement.bytes_in(m) for m in eo.MEMORIES}
    read = {_memory(m): placement.read_bytes_in(m) for m in (eo.GPU, eo.HOST)}
    runs: dict = {}
    state = [0, 0]
    ngl, layers = placement_ngl(s), s.model.layers
    for il, layer in enumerate(s.model.schedule.layer_kinds()):
        kind = getattr(layer, "kind", "")
        on_gpu = eo.layer_on_gpu(il, layers, ngl)
        if kind == "attention":
            run = runs.setdefault(layer.window_tokens, [0, 0])
            run[0] += (layer.k_values + layer.v_values) if on_gpu else 0
            run[1] += layer.k_values + layer.v_values
        elif kind == "state":
            state[0] += layer.state_values if on_gpu else 0
            state[1] += layer.state_values
    discrete = getattr(device, "gpu_memory", None) is not None
    if discrete:
        gpu_budget, source = device.gpu_memory, "gpu_memory"
    else:
        limit = s.gpu_working_set_in_force_bytes
        gpu_budget, source = (limit, "gpu_working_set") if limit else (b.budget_bytes, "budget")
    gpu_bw = device.gpu_memory_bandwidth if discrete and device.gpu_memory_bandwidth else device.memory_bandwidth
    memo["layout"] = layout = Layout(
        placement, discrete, held, read, placement.read_bytes_in(eo.FLASH),
        tuple((w, g, a) for w, (g, a) in runs.items()), tuple(state), gpu_budget, source,
        {"gpu": gpu_bw, "ram": device.memory_bandwidth, "flash": device.flash_read})
    return layout


def kv_gpu_share_bytes(layout: Layout, kv_bytes, ctx):
    """The part of ``kv_bytes`` (all sequences, at ``ctx`` tokens: numbers or arrays) held by the layers on the GPU
    [bytes]: the cache split by each layer's share as the ideal rule prices it, ``(K + V values) · cached tokens``
    (a window's tokens at most) for an attention layer, its state's values for a state layer. Exact for a model
    whose layers all cache the same (llama.cpp's one K and one V tensor per layer), the ideal rule's proportions
    otherwise; the rest is the RAM's, so the two shares sum to the cache exactly."""
    windowed = any(w is not None for w, _, _ in layout.kv_runs)
    gpu_full = sum(g for w, g, _ in layout.kv_runs if w is None)
    all_full = sum(a for w, _, a in layout.kv_runs if w is None)
    if not windowed and not any(layout.state_values):  # one proportion at every context: exact in int64
        return eo.kv_share_bytes(kv_bytes, gpu_full, all_full)
    if getattr(ctx, "ndim", 0) > 0 or getattr(kv_bytes, "ndim", 0) > 0:  # Python integers point by point
        import numpy as np

        kv_arr, ctx_arr = np.broadcast_arrays(np.asarray(kv_bytes, dtype=np.int64), np.asarray(ctx, dtype=np.int64))
        out = [kv_gpu_share_bytes(layout, int(k), int(c)) for k, c in zip(kv_arr.reshape(-1), ctx_arr.reshape(-1))]
        return np.asarray(out, dtype=np.int64).reshape(kv_arr.shape)
    gpu, total = layout.state_values
    for window, g, a in layout.kv_runs:
        tokens = max(ctx if window is None else min(ctx, window), 1)
        gpu, total = gpu + g * tokens, total + a * tokens
    return int(eo.kv_share_bytes(kv_bytes, gpu, total))


class Placed(Figures):
    """Each memory of an offloaded configuration at each point: what it holds, its headroom and verdict, what a
    decode step reads from it, and the step's time [bytes, s] (numbers or arrays, as the core's figures)."""

    __slots__ = _fields = ("kv_gpu_bytes", "kv_ram_bytes", "kv_gpu_read_bytes", "kv_ram_read_bytes",
                           "compute_gpu_bytes", "compute_ram_bytes", "output_buffer_bytes",
                           "gpu_total_bytes", "ram_total_bytes", "flash_bytes", "gpu_budget_bytes", "ram_budget_bytes",
                           "gpu_headroom_bytes", "ram_headroom_bytes", "gpu_verdict_code", "ram_verdict_code",
                           "verdict_code", "headroom_bytes", "gpu_read_bytes", "ram_read_bytes", "flash_read_bytes",
                           "ram_hit_read_bytes", "seconds_per_step", "roofline_seconds_per_step")
    kv_gpu_bytes: object  # the cache (peak, pinned prefix included) of the layers on the GPU
    kv_ram_bytes: object  # and of those in RAM
    kv_gpu_read_bytes: object  # the steady cache a step reads, on the GPU
    kv_ram_read_bytes: object  # and in RAM
    compute_gpu_bytes: object  # llama.cpp's compute buffer on the GPU (0 under the other cache models)
    compute_ram_bytes: object  # and on the CPU
    output_buffer_bytes: object  # llama.cpp's output buffer (host memory)
    gpu_total_bytes: object
    ram_total_bytes: object  # discrete GPU: what host RAM holds; unified memory: every resident part
    flash_bytes: int  # streamed expert stacks (not resident)
    gpu_budget_bytes: int
    ram_budget_bytes: int
    gpu_headroom_bytes: object
    ram_headroom_bytes: object
    gpu_verdict_code: object  # 0 fit, 1 tight, 2 over (kvplan.engine.VERDICTS)
    ram_verdict_code: object
    verdict_code: object  # the worse of the two
    headroom_bytes: object  # the deciding memory's: the worse verdict, then the less headroom
    gpu_read_bytes: object  # what one decode step reads from each memory
    ram_read_bytes: object
    flash_read_bytes: int
    ram_hit_read_bytes: int  # of the RAM's reads, the streamed experts found in RAM (expert_cache_hit)
    seconds_per_step: object  # Σ_m read_m / (bandwidth_m · efficiency) + flash / flash_read + latency
    roofline_seconds_per_step: object  # the same at 100 % bandwidth, no latency


def placed_of(b, layout: Layout, ctx, kv_held_bytes, kv_read_bytes, compute_gpu_bytes, compute_ram_bytes,
              output_buffer_bytes, main_total_bytes, parts_bytes, parts_read_bytes) -> Placed:
    """Each memory's figures at each point (:class:`Placed`), from the core's figures there: the cache held and
    read (all sequences, pinned prefix included), llama.cpp's buffers split by memory, the main total (every
    part against the RAM budget, as if nothing were offloaded) and the resident parts in RAM (a draft, an
    encoder: kvplan places them in RAM)."""
    s, device = b.scenario, b.scenario.device
    import numpy as np

    kv_gpu = kv_gpu_share_bytes(layout, kv_held_bytes, ctx)
    kv_gpu_read = kv_gpu_share_bytes(layout, kv_read_bytes, ctx)
    w = layout.weights_bytes
    gpu_total = w["gpu"] + kv_gpu + compute_gpu_bytes
    if layout.discrete:
        ram_total = (w["ram"] + (kv_held_bytes - kv_gpu) + output_buffer_bytes + compute_ram_bytes
                     + b.overhead_bytes + b.process_bytes + parts_bytes)
    else:  # unified memory: RAM holds every resident part, the streamed stacks aside
        ram_total = main_total_bytes - w["flash"]
    margin = s.margin_fraction
    gpu_room, ram_room = headroom_bytes(layout.gpu_budget_bytes, gpu_total), headroom_bytes(b.budget_bytes, ram_total)
    gpu_code = verdict_code(gpu_room, layout.gpu_budget_bytes, margin)
    ram_code = verdict_code(ram_room, b.budget_bytes, margin)
    code = np.maximum(gpu_code, ram_code)
    # the memory that decides: the worse verdict, then the less headroom
    room = np.where(gpu_code > ram_code, gpu_room, np.where(ram_code > gpu_code, ram_room,
                                                             np.minimum(gpu_room, ram_room)))
    if not any(getattr(v, "ndim", 0) for v in (gpu_total, ram_total)):
        code, room = int(code), int(room)
        gpu_code, ram_code = int(gpu_code), int(ram_code)
    else:
        code, gpu_code, ram_code = (np.asarray(c, dtype=np.int8) for c in (code, gpu_code, ram_code))
    flash_read, ram_hits = eo.streamed_expert_bytes(layout.streamed_read_bytes, s.expert_cache_hit or 0.0)
    read = {"gpu": layout.weights_read_bytes["gpu"] + kv_gpu_read,
            "ram": layout.weights_read_bytes["ram"] + ram_hits + (kv_read_bytes - kv_gpu_read) + parts_read_bytes,
            "flash": flash_read}
    # a memory nothing is read from adds no time (and its bandwidth may be unknown)
    read_from = {m: r for m, r in read.items() if np.any(np.asarray(r) != 0)}
    step = eo.decode_time_s(read_from, layout.bandwidth, device.bandwidth_efficiency, device.decode_latency)
    roofline = eo.decode_time_s(read_from, layout.bandwidth)
    return Placed(kv_gpu, kv_held_bytes - kv_gpu, kv_gpu_read, kv_read_bytes - kv_gpu_read, compute_gpu_bytes,
                  compute_ram_bytes, output_buffer_bytes, gpu_total, ram_total, w["flash"], layout.gpu_budget_bytes,
                  b.budget_bytes, gpu_room, ram_room, gpu_code, ram_code, code, room, read["gpu"], read["ram"],
                  flash_read, ram_hits, step, roofline)


def _memory(name: str) -> str:
    return {eo.GPU: "gpu", eo.HOST: "ram", eo.FLASH: "flash"}[name]


def offload_at(b, placed: Placed, ram_verdict=None, ram_headroom_bytes=None, main_total_bytes=0) -> Offload:
    """Every part in its memory, each memory's verdict and the decode rate at one point, from its
    :class:`Placed` figures (scalars); ``ram_verdict`` / ``ram_headroom_bytes`` / ``main_total_bytes``: the main
    memory figures' (every part against the RAM budget)."""
    s = b.scenario
    layout = layout_of(b)
    placement = layout.placement
    hit = s.expert_cache_hit or 0.0
    parts = []
    for role in ("embedding", "layers", "experts", "output"):
        for mem in (eo.GPU, eo.HOST, eo.FLASH):
            held = placement.bytes_in(mem, role)
            if not held:
                continue
            read = sum(t.read_bytes for t in placement.tensors if t.memory == mem and t.role == role)
            parts.append(Part(role, _memory(mem), held, read))
    if placed.kv_gpu_bytes or placed.kv_gpu_read_bytes:
        parts.append(Part("kv_cache", "gpu", int(placed.kv_gpu_bytes), int(placed.kv_gpu_read_bytes)))
    if placed.kv_ram_bytes or placed.kv_ram_read_bytes:
        parts.append(Part("kv_cache", "ram", int(placed.kv_ram_bytes), int(placed.kv_ram_read_bytes)))
    if placed.output_buffer_bytes:
        parts.append(Part("output_buffer", "ram", int(placed.output_buffer_bytes), 0))
    for mem, size in (("gpu", placed.compute_gpu_bytes), ("ram", placed.compute_ram_bytes)):
        if size:
            parts.append(Part("compute_buffer", mem, int(size), 0))
    memories = [MemoryUse("gpu", placed.gpu_budget_bytes, int(placed.gpu_total_bytes), int(placed.gpu_headroom_bytes),
                          VERDICTS[int(placed.gpu_verdict_code)], layout.bandwidth["gpu"], int(placed.gpu_read_bytes),
                          layout.gpu_budget_source),
                MemoryUse("ram", placed.ram_budget_bytes, int(placed.ram_total_bytes), int(placed.ram_headroom_bytes),
                          VERDICTS[int(placed.ram_verdict_code)], layout.bandwidth["ram"], int(placed.ram_read_bytes),
                          "ram")]
    if placed.flash_bytes:
        memories.append(MemoryUse("flash", None, placed.flash_bytes, None, None, layout.bandwidth["flash"],
                                  placed.flash_read_bytes, "none"))
    step, roofline = float(placed.seconds_per_step), float(placed.roofline_seconds_per_step)
    return Offload(placement_ngl(s), placement.layers_on_gpu, s.model.layers,
                   placement.output_on_gpu, s.n_cpu_moe or 0, s.override_tensor, s.stream_experts or 0, hit,
                   not layout.discrete, tuple(parts), tuple(memories), step, 1.0 / step, 1.0 / roofline,
                   VERDICTS[int(placed.verdict_code)], ram_verdict, ram_headroom_bytes, main_total_bytes)


def compute_split_of(b, buffers, ctx: int, sequences: int) -> tuple[int, int]:
    """llama.cpp's compute buffer (gpu, ram) at one point [bytes], from its CPU-only figure ``buffers``
    (:func:`kvplan.engine.offload.compute_split_bytes`); (0, 0) without buffers (another cache model)."""
    if buffers is None:
        return 0, 0
    s = b.scenario
    model, cache = s.model, b.cache
    placement = layout_of(b).placement
    host_expert_layers = len({t.name.split(".")[1] for t in placement.tensors
                              if t.role == "experts" and t.memory == eo.HOST and t.name.startswith("blk.")})
    cells = cache.llamacpp_ctx(ctx, sequences) if hasattr(cache, "llamacpp_ctx") else ctx
    cells = -(-int(cells) // 256) * 256
    split = eo.compute_split_bytes(buffers.resident_compute_bytes, model.hidden_size or 0, model.vocab_size or 0,
                                   min(buffers.ubatch, max(int(ctx), 1)), cells, placement.layers_on_gpu,
                                   model.layers, placement.output_on_gpu, sequences, host_expert_layers,
                                   getattr(model, "experts_per_token", None) or 0,
                                   getattr(model, "expert_intermediate_size", None) or 0)
    by_memory = {_memory(mem): size for mem, (size, _) in split.items()}
    return by_memory.get("gpu", 0), by_memory.get("ram", 0)
