"""KV bytes against context for one model's shape as MHA, GQA, MQA, with a window and with a quantized cache."""

from __future__ import annotations

from kvplan.plots.axes import byte_unit, bytes_axis, ctx_axis, ctx_label, new_figure, size_label
from kvplan.curves import AttentionCurves, AttentionVariant

_STYLE = {  # kind → (colour or colour list, line style)
    "own": ("#222222", "-"), "mha": ("#c44e52", "-"), "gqa": (["#4c72b0", "#6a9bd1", "#9cc3e6", "#c6dcf0"], "-"),
    "mqa": ("#55a868", "-"), "window": ("#8172b3", "--"), "quant": (["#dd8452", "#e8b05a"], "-."),
}


def variant_label(v: AttentionVariant, c: AttentionCurves) -> str:
    heads = c.attention_heads
    if v.kind == "mha":
        text = f"MHA: {heads} KV heads"
    elif v.kind == "gqa":
        text = f"GQA: {v.kv_heads} KV heads ({heads // v.kv_heads} queries each)"
    elif v.kind == "mqa":
        text = "MQA: 1 KV head"
    elif v.kind == "window":
        text = f"sliding window {ctx_label(v.window_tokens)}, all layers"
    elif v.kind == "quant":
        text = f"{v.k_format} cache" if v.k_format == v.v_format else f"K {v.k_format} / V {v.v_format} cache"
    else:
        text = "this model (MLA)" if c.mla else "this model"
    if v.kind not in ("quant",) and v.k_format != "f16":
        text += f", {v.k_format}"
    return text


def draw_attention(ax, c: AttentionCurves, units: str = "si", max_ticks: int = 8) -> None:
    import numpy as np

    x = c.ctx_tokens
    i_ref = int(np.searchsorted(x, c.ref_ctx))
    counters: dict[str, int] = {}
    unit = byte_unit(max(float(v.kv_bytes[i_ref]) for v in c.variants), units)
    for v in sorted(c.variants, key=lambda v: -float(v.kv_bytes[i_ref])):
        color, style = _STYLE[v.kind]
        if isinstance(color, list):
            color = color[min(counters.get(v.kind, 0), len(color) - 1)]
            counters[v.kind] = counters.get(v.kind, 0) + 1
        label = f"{variant_label(v, c)} — {size_label(v.kv_bytes[i_ref], units, unit)}"
        label += f", {v.bytes_per_token:,} B/tok"
        if v.is_own and v.kind != "own":
            label += "  ◀ this model"
        ax.plot([c.ref_ctx], [v.kv_bytes[i_ref]], "o", color=color, markersize=4.5, zorder=4,
                gid=f"ref:{v.kind}:{v.kv_heads or ''}")
        ax.plot(x, v.kv_bytes, color=color, linestyle=style, linewidth=3.2 if v.is_own else 1.7,
                label=label, gid=f"kv:{v.kind}:{v.kv_heads or ''}:{v.window_tokens or ''}:{v.k_format}"
                + (":own" if v.is_own else ""), zorder=3 if v.is_own else 2)
    ax.axvline(c.ref_ctx, color="#555555", linestyle=":", linewidth=1.1, gid="ref_ctx")
    ax.annotate(f"sizes at {ctx_label(c.ref_ctx)} tokens", (c.ref_ctx, 0.98), xycoords=ax.get_xaxis_transform(),
                xytext=(-4, 0), textcoords="offset points", ha="right", va="top", fontsize=9, color="#555555")
    top = max(float(np.max(v.kv_bytes)) for v in c.variants) * 1.08
    ax.set_xlim(0, x[-1])
    ax.set_ylim(0, top)
    ctx_axis(ax.xaxis, max_ticks=max_ticks)
    bytes_axis(ax.yaxis, top, units, label="KV cache")
    ax.grid(True, alpha=0.3, linewidth=0.6)
    ax.set_axisbelow(True)


def attention_figure(c: AttentionCurves, units: str = "si"):
    fig = new_figure(12, 5.4)
    ax = fig.subplots()
    draw_attention(ax, c, units)
    seq = f", {c.sequences} sequences" if c.sequences > 1 else ""
    kinds = {v.kind for v in c.variants}  # a runtime or policy may leave some shapes out: name only those drawn
    names = [name for kind, name in (("mha", "MHA"), ("gqa", "GQA"), ("mqa", "MQA"), ("window", "windowed"),
                                     ("quant", "quantized")) if kind in kinds]
    shown = ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else "".join(names)
    fig.suptitle(f"KV cache against context — {c.model} as {shown}{seq}", fontsize=12)
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=9, frameon=False,
              title=f"cache shape — size at {ctx_label(c.ref_ctx)}", title_fontsize=9)
    return fig
