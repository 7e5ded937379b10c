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


def _kv_layer_weights(s) -> list[int]:
    """Each layer's share of the cache, as the ideal rule prices it at the scenario's context [bytes per
    sequence]: ``(K + V values) · cached tokens`` (a window's tokens at most) for an attention layer, its state's
    values for a state layer, 0 for a layer that caches nothing. The cache model's total is split by these weights:
    exact for a model whose layers all cache the same (llama.cpp's one K and one V tensor per layer), the ideal
    rule's proportions otherwise."""
    out = []
    for layer in s.model.schedule.layer_kinds():
        kind = getattr(layer, "kind", "")
        if kind == "attention":
            tokens = s.ctx if layer.window_tokens is None else min(s.ctx, layer.window_tokens)
            out.append((layer.k_values + layer.v_values) * max(tokens, 1))
        elif kind == "state":
            out.append(layer.state_values)
        else:
            out.append(0)
    return out


def _memory(name: str) -> str:
    return {eo.GPU: "gpu", eo.HOST: "ram", eo.FLASH: "flash"}[name]


def offload_at(b, placement, kv_bytes: int, kv_read_bytes: int, output_buffer_bytes: int,
               compute_by_memory: dict, ram_total_bytes: int, ram_verdict=None, ram_headroom_bytes=None) -> Offload:
    """Every part in its memory, each memory's verdict and the decode rate at one point.

    ``kv_bytes`` / ``kv_read_bytes``: the cache held / read per step (all sequences, pinned prefix included),
    split over the layers where they live; ``compute_by_memory``: llama.cpp's compute buffer per memory;
    ``ram_total_bytes``: on unified memory, the resident total the main figures count (the RAM holds every part).
    """
    s, device = b.scenario, b.scenario.device
    hit = s.expert_cache_hit or 0.0
    discrete = getattr(device, "gpu_memory", None) is not None
    parts = []
    for role in ("embedding", "layers", "experts", "output"):
        for mem in (eo.GPU, eo.HOST, eo.FLASH):
            held = placement.bytes_in(mem, role)
            if not held:
                continue
            read = sum(t.read_bytes for t in placement.tensors if t.memory == mem and t.role == role)
            parts.append(Part(role, _memory(mem), held, read))
    layers = s.model.layers
    weights = _kv_layer_weights(s)
    on_gpu = sum(w for il, w in enumerate(weights) if eo.layer_on_gpu(il, layers, placement_ngl(s)))
    total_w = sum(weights)
    gpu_held = int(eo.kv_share_bytes(kv_bytes, on_gpu, total_w))
    gpu_read = int(eo.kv_share_bytes(kv_read_bytes, on_gpu, total_w))
    if on_gpu:
        parts.append(Part("kv_cache", "gpu", gpu_held, gpu_read))
    if total_w - on_gpu:  # the rest: the two shares sum to the cache exactly
        parts.append(Part("kv_cache", "ram", kv_bytes - gpu_held, kv_read_bytes - gpu_read))
    if output_buffer_bytes:
        parts.append(Part("output_buffer", "ram", output_buffer_bytes, 0))
    for mem, size in compute_by_memory.items():
        if size:
            parts.append(Part("compute_buffer", mem, size, 0))
    # streamed experts: the hits are read from RAM, the misses from flash
    flash_read, ram_hits = eo.streamed_expert_bytes(sum(p.read_bytes for p in parts if p.memory == "flash"), hit)
    read = {"gpu": 0, "ram": ram_hits, "flash": flash_read}
    held = {"gpu": 0, "ram": 0, "flash": 0}
    for p in parts:
        held[p.memory] += p.bytes
        if p.memory != "flash":
            read[p.memory] += p.read_bytes
    gpu_bw = device.gpu_memory_bandwidth if discrete and device.gpu_memory_bandwidth else device.memory_bandwidth
    bandwidth = {"gpu": gpu_bw, "ram": device.memory_bandwidth, "flash": device.flash_read}
    margin = s.margin_fraction
    memories = []
    if discrete:
        gpu_budget, gpu_source = device.gpu_memory, "gpu_memory"
        ram_total = held["ram"] + b.overhead_bytes + b.process_bytes
    else:
        limit = s.gpu_working_set_in_force_bytes
        gpu_budget, gpu_source = (limit, "gpu_working_set") if limit else (b.budget_bytes, "budget")
        ram_total = ram_total_bytes - (placement.bytes_in(eo.FLASH))
    for name, budget, total, source in (("gpu", gpu_budget, held["gpu"], gpu_source),
                                        ("ram", b.budget_bytes, ram_total, "ram")):
        room = headroom_bytes(budget, total)
        memories.append(MemoryUse(name, budget, total, room, VERDICTS[verdict_code(room, budget, margin)],
                                  bandwidth[name], read[name], source))
    if held["flash"]:
        memories.append(MemoryUse("flash", None, held["flash"], None, None, bandwidth["flash"], read["flash"],
                                  "none"))
    step = eo.decode_time_s({m: read[m] for m in read if read[m]}, bandwidth, device.bandwidth_efficiency,
                            device.decode_latency)
    roofline = eo.decode_time_s({m: read[m] for m in read if read[m]}, bandwidth)
    worst = max((m.verdict for m in memories if m.verdict is not None), key=VERDICTS.index)
    return Offload(-1 if s.n_gpu_layers is None else s.n_gpu_layers, placement.layers_on_gpu, layers,
                   placement.output_on_gpu, s.n_cpu_moe or 0, s.override_tensor, s.stream_experts or 0, hit,
                   not discrete, tuple(parts), tuple(memories), step, 1.0 / step, 1.0 / roofline, worst,
                   ram_verdict, ram_headroom_bytes, ram_total_bytes)



def compute_by_memory(b, buffers, placement) -> dict:
    """llama.cpp's compute buffer per memory (``gpu`` / ``ram``) [bytes], from its CPU-only figure
    (:func:`kvplan.engine.offload.compute_split_bytes`)."""
    s = b.scenario
    model, cache = s.model, b.cache
    host_expert_layers = len({t.name.split(".")[1] for t in placement.tensors
                              if t.role == "experts" and t.memory == eo.HOST and t.name.startswith("blk.")})
    cells = cache.llamacpp_ctx(s.ctx, s.sequences) if hasattr(cache, "llamacpp_ctx") else s.ctx
    cells = -(-int(cells) // 256) * 256
    split = eo.compute_split_bytes(buffers.resident_compute_bytes, model.hidden_size or 0, model.vocab_size or 0,
                                   min(buffers.ubatch, max(int(s.ctx), 1)), cells, placement.layers_on_gpu,
                                   model.layers, placement.output_on_gpu, s.sequences, host_expert_layers,
                                   getattr(model, "experts_per_token", None) or 0,
                                   getattr(model, "expert_intermediate_size", None) or 0)
    return {_memory(mem): size for mem, (size, _) in split.items()}
