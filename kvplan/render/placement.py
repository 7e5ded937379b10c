"""How ``check`` shows an offloaded configuration: one row per part with its memory, each memory's verdict, and
the decode rate with each part read from where it lives (:mod:`kvplan.plan.placement`)."""

from __future__ import annotations

from kvplan.render import fmt
from kvplan.render.tables import Table

PART_WORDS = {
    "embedding": "weights: input embedding (always host RAM)",
    "layers": "weights: repeating layers (attention, norms, dense FFN)",
    "experts": "weights: expert stacks",
    "output": "weights: output layer (output norm, lm head)",
    "kv_cache": "KV cache (each layer's where the layer is)",
    "output_buffer": "llama.cpp output buffer (logits)",
    "compute_buffer": "llama.cpp compute buffer",
}
MEMORY_WORDS = {"gpu": "GPU", "ram": "RAM", "flash": "flash (streamed)"}
SOURCE_WORDS = {"gpu_memory": "the device's gpu_memory", "gpu_working_set": "the GPU working set",
                "budget": "no GPU limit known: the RAM budget", "ram": "RAM − OS reserve", "none": "not resident"}


def placement_json(ev) -> dict | None:
    """``placement``: present when the configuration offloads (null otherwise)."""
    o = ev.offload
    if o is None:
        return None
    return {
        "n_gpu_layers": ev.scenario.n_gpu_layers,
        "n_cpu_moe": ev.scenario.n_cpu_moe,
        "override_tensor": ev.scenario.override_tensor,
        "stream_experts": ev.scenario.stream_experts,
        "expert_cache_hit": ev.scenario.expert_cache_hit,
        "layers_on_gpu": o.layers_on_gpu,
        "output_on_gpu": o.output_on_gpu,
        "unified_memory": o.unified,
        "parts": [{"part": p.part, "memory": p.memory, "bytes": p.bytes, "read_bytes_per_step": p.read_bytes}
                  for p in o.parts],
        "memories": [{"memory": m.memory, "budget_bytes": m.budget_bytes, "budget_source": m.budget_source,
                      "total_bytes": m.total_bytes, "headroom_bytes": m.headroom_bytes,
                      "verdict": m.verdict.value if m.verdict is not None else None,
                      "bandwidth_bytes_per_s": m.bandwidth_bytes_per_s, "read_bytes_per_step": m.read_bytes_per_step}
                     for m in o.memories],
        "seconds_per_step": o.seconds_per_step,
        "decode_tokens_per_s": o.decode_tokens_per_s,
        "decode_tokens_per_s_roofline": o.decode_tokens_per_s_roofline,
        "verdict": o.verdict.value,
    }


def placement_table(ev, units: str = "si") -> Table | None:
    """One row per part, its memory and bytes; then each memory's total against its budget; then the decode rate."""
    o = ev.offload
    if o is None:
        return None
    s = ev.scenario
    ngl = "all" if s.n_gpu_layers is None else f"-ngl {s.n_gpu_layers}"
    how = [ngl]
    if o.n_cpu_moe:
        how.append(f"--n-cpu-moe {o.n_cpu_moe}")
    if o.override_tensor:
        how.append(f"-ot {o.override_tensor}")
    if o.stream_experts:
        how.append(f"experts of {min(o.stream_experts, o.layers)} layers streamed, {fmt.percent(o.expert_cache_hit)} "
                   "cache hits")
    t = Table(f"where each part lives ({', '.join(how)}: {o.layers_on_gpu}/{o.layers} layers on the GPU, output "
              f"layer {'GPU' if o.output_on_gpu else 'RAM'}) — {o.verdict.value.upper()}",
              ["part", "memory", "bytes", "size", "read per step"])
    for p in o.parts:
        t.add(PART_WORDS[p.part], MEMORY_WORDS[p.memory], fmt.exact_bytes(p.bytes), fmt.bytes_(p.bytes, units),
              fmt.bytes_(p.read_bytes, units) if p.read_bytes else "")
    for m in o.memories:
        if m.budget_bytes is None:
            t.add(f"{MEMORY_WORDS[m.memory]}: total", "", fmt.exact_bytes(m.total_bytes),
                  fmt.bytes_(m.total_bytes, units), fmt.bytes_(m.read_bytes_per_step, units), style="bold")
            continue
        inside = " (every resident part: unified memory)" if m.memory == "ram" and o.unified else ""
        t.add(f"{MEMORY_WORDS[m.memory]}: total{inside}", "", fmt.exact_bytes(m.total_bytes),
              fmt.bytes_(m.total_bytes, units), fmt.bytes_(m.read_bytes_per_step, units), style="bold")
        style = {"fit": "green", "tight": "yellow", "over": "red"}[m.verdict.value]
        t.add(f"{MEMORY_WORDS[m.memory]}: budget {fmt.bytes_(m.budget_bytes, units)} ({SOURCE_WORDS[m.budget_source]}) "
              "→ headroom "
              f"{m.verdict.value.upper()}", "", fmt.exact_bytes(m.headroom_bytes), fmt.bytes_(m.headroom_bytes, units),
              "", style=f"bold {style}")
    d = s.device
    reads = " + ".join(f"{fmt.bytes_(m.read_bytes_per_step, units)} / {fmt.rate(m.bandwidth_bytes_per_s, units)}"
                       for m in o.memories if m.read_bytes_per_step)
    flash = " (flash at its rate)" if any(m.memory == "flash" and m.read_bytes_per_step for m in o.memories) else ""
    t.notes.append(f"decode, each part read from its memory: {reads} at {fmt.percent(d.bandwidth_efficiency)}"
                   f"{flash}{f' + {d.decode_latency * 1e3:.2f} ms' if d.decode_latency else ''} = "
                   f"{o.seconds_per_step * 1e3:.2f} ms/step → {fmt.per_s(o.decode_tokens_per_s)} tok/s "
                   f"(roofline {fmt.per_s(o.decode_tokens_per_s_roofline)} tok/s)")
    return t
