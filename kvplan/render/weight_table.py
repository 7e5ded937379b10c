"""What ``kvplan profiles show MODEL --weights`` prints: a :class:`~kvplan.plan.weight_breakdown.WeightBreakdown`
as a table (one row per tensor pattern, shape and type) and as JSON (every tensor)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvplan.render import fmt
from kvplan.render.tables import Table

if TYPE_CHECKING:
    from kvplan.plan.weight_results import WeightBreakdown


def _ranges(layers: tuple[int, ...]) -> str:
    """``(0, 1, 2, 3, 7)`` → ``0-3,7``."""
    out, start, prev = [], None, None
    for n in sorted(set(layers)):
        if start is None:
            start = prev = n
        elif n == prev + 1:
            prev = n
        else:
            out.append(f"{start}-{prev}" if prev > start else str(start))
            start = prev = n
    if start is not None:
        out.append(f"{start}-{prev}" if prev > start else str(start))
    return ",".join(out)


def _name(pattern: str, layers: tuple[int, ...], all_layers: set[int]) -> str:
    """``blk.*.attn_v.weight`` when the row covers every layer, else ``blk.{0-3,28-31}.attn_v.weight``."""
    if not layers or set(layers) == all_layers:
        return pattern
    return pattern.replace("blk.*.", f"blk.{{{_ranges(layers)}}}.", 1)


def _shape(shape: tuple[int, ...]) -> str:
    return "×".join(str(n) for n in shape)


def _share(part: int, total: int) -> str:
    return f"{100 * part / total:.1f} %" if total else "—"


def weights_tables(b: WeightBreakdown, units: str = "si") -> list[Table]:
    """The breakdown table, or for a uniform width the one figure it gives."""
    if b.weight_type is None:
        t = Table(f"weights of {b.model}: uniform {b.bits_per_weight:g} bits per weight", ["figure", "value", "human"])
        t.add(f"weights = params × {b.bits_per_weight:g} / 8" if b.explicit_bytes is None else "weights (explicit)",
              f"{b.total_bytes:,} B", fmt.bytes_(b.total_bytes, units))
        t.add("weights read per decode step", f"{b.read_bytes:,} B", fmt.bytes_(b.read_bytes, units))
        t.notes.append("no weight format named: every weight costs the same weight_bits, no tensor is told apart; "
                       "--weight-type q4_k_m (or q8_0, mlx-4bit, …) gives the tensor-by-tensor breakdown")
        return [t]
    all_layers = {n for g in b.groups for n in g.layers}
    group = f", group {b.group_size}" if b.group_size else ""
    t = Table(f"weights of {b.model} in {b.weight_type}{group}: {b.bits_per_weight:.3f} bits per weight",
              ["tensor", "count", "shape", "type", "bytes", "share"])
    t.align = ["left", "right", "right", "left", "right", "right"]
    for g in b.groups:
        t.add(_name(g.pattern, g.layers, all_layers), str(g.count), _shape(g.shape), g.dtype, f"{g.bytes:,}",
              _share(g.bytes, b.total_bytes))
    t.add("total", str(sum(g.count for g in b.groups)), "", "", f"{b.total_bytes:,}", _share(b.total_bytes,
                                                                                            b.total_bytes))
    t.notes.append(f"{fmt.bytes_(b.total_bytes, units)}: {b.bits_per_weight:.3f} bits per weight = 8 × "
                   f"{b.total_bytes:,} B / {b.n_params:,} weights; shapes in ggml order (row length first)")
    t.notes.append(f"read per decode step: {b.read_bytes:,} B ({fmt.bytes_(b.read_bytes, units)}; an untied input "
                   "embedding is read one row per token, and of an expert stack only the experts the router picks)")
    if b.source == "profile":
        t.notes.append(f"{b.weight_type} is the profile's weight_type; --weight-type prices another format")
    if b.explicit_bytes is not None:
        t.notes.append(f"the profile's explicit weights, {b.explicit_bytes:,} B, are what a check uses unless "
                       "--weight-type or --weight-bits is given")
    return [t]


def weights_json(b: WeightBreakdown, warnings: list[str], schema_version: int) -> dict:
    """Every tensor with its type and bytes, the rows of the table, and the totals by kind and by type."""
    by_kind: dict[str, int] = {}
    by_type: dict[str, int] = {}
    for t in b.tensors:
        by_kind[t.kind] = by_kind.get(t.kind, 0) + t.bytes
        by_type[t.dtype] = by_type.get(t.dtype, 0) + t.bytes
    named = b.weight_type is not None
    return {
        "schema_version": schema_version,
        "warnings": list(warnings),
        "kind": "model",
        "model": b.model,
        "weights": {
            "type": b.weight_type,
            "group_size": b.group_size,
            "type_from": b.source,
            "bits_per_weight": b.bits_per_weight,
            "weights_bytes": b.total_bytes,
            "weights_read_bytes": b.read_bytes,
            "explicit_weights_bytes": b.explicit_bytes,
            "params": b.n_params,
            "bytes_by_kind": dict(sorted(by_kind.items())) if named else None,
            "bytes_by_type": dict(sorted(by_type.items())) if named else None,
            "groups": [{"pattern": g.pattern, "layers": list(g.layers), "count": g.count, "shape": list(g.shape),
                        "type": g.dtype, "kind": g.kind, "bytes": g.bytes} for g in b.groups],
            "tensors": [{"name": t.name, "kind": t.kind, "type": t.dtype, "shape": list(t.shape), "bytes": t.bytes}
                        for t in b.tensors],
        },
    }
