"""Memory against context: weights, KV cache, runtime buffers and overhead stacked, the budget line, the
max-context crossing."""

from __future__ import annotations

from kvplan.plots.axes import (COLORS, bytes_axis, ctx_axis, ctx_label, draw_ctx_limit, inward, new_figure,
                               size_label)
from kvplan.curves import MemoryCurves
from kvplan.plots.series import SeriesCount, count_series, title_note

VERDICT_COLORS = {"fit": "#2f7d3b", "tight": "#a06a00", "over": "#b0302f"}


def draw_memory(ax, curves: MemoryCurves, units: str = "si", title: str | None = None) -> list:
    """Draw one configuration on ``ax``; returns the legend handles. Artists carry ``gid``s for tests."""
    import numpy as np

    ev, s = curves.evaluation, curves.evaluation.scenario
    x = curves.ctx_tokens
    ones = np.ones_like(x)
    layers = [("weights", f"weights ({size_label(ev.weights_bytes, units)})", ev.weights_bytes * ones)]
    seq = f", {s.sequences} sequences" if s.sequences > 1 else ""
    kv_name = ev.cache.k_format.name if ev.cache.k_format == ev.cache.v_format else \
        f"K {ev.cache.k_format.name} / V {ev.cache.v_format.name}"
    layers.append(("kv", f"KV cache ({kv_name}{seq})", curves.kv_bytes))
    if ev.pinned_prefix_bytes:
        layers.append(("pinned", f"pinned prefix ({size_label(ev.pinned_prefix_bytes, units)})",
                       ev.pinned_prefix_bytes * ones))
    if np.any(curves.buffers_bytes):  # as check's rows: llama.cpp's compute + output buffers, sized by -c
        at_ctx = f", {size_label(ev.buffers_bytes, units)} at {ctx_label(s.ctx)}" if s.ctx else ""
        runtime = getattr(s.runtime, "name", None) or "runtime"
        layers.append(("buffers", f"{runtime} buffers (compute + output{at_ctx})", curves.buffers_bytes * ones))
    if np.any(curves.parts_bytes):  # as check's rows: a draft model, an encoder … (one band for all of them)
        keys = ", ".join(p.key for p in ev.parts)
        layers.append(("parts", f"resident parts ({keys}; {size_label(ev.parts_bytes, units)} at "
                       f"{ctx_label(s.ctx)})", curves.parts_bytes * ones))
    process = ev.process_bytes
    if process:  # as check's rows: llama.cpp's heap and libraries, and a repacked copy under mmap
        layers.append(("process", f"{s.runtime.name} process (heap, libraries, repacked copy; "
                       f"{size_label(process, units)})", process * ones))
    if ev.overhead_bytes:
        layers.append(("overhead", f"runtime overhead ({size_label(ev.overhead_bytes, units)})",
                       ev.overhead_bytes * ones))
    stacks = ax.stackplot(x, *[y for _, _, y in layers], labels=[lab for _, lab, _ in layers],
                          colors=[COLORS[k] for k, _, _ in layers], alpha=0.85, linewidth=0)
    for (key, _, _), poly in zip(layers, stacks):
        poly.set_gid(key)
    total_line, = ax.plot(x, curves.total_bytes, color=COLORS["total"], linewidth=1.2, label="total", gid="total")

    budget = ev.budget_bytes
    ram = curves.ram_total_bytes  # a discrete GPU: the RAM budget judges host RAM's part, not the whole stack
    gpu = curves.gpu_total_bytes
    # two memories: the stack (every part, wherever it lives) is judged against both budgets together; each
    # memory's own line against its own budget says which one ends the context
    both = budget + curves.gpu_budget_bytes if ram is not None and gpu is not None else None
    top = max(float(np.max(curves.total_bytes)), budget, both or 0) * 1.18
    ax.set_xlim(0, x[-1])
    ax.set_ylim(0, top)
    handles = [*stacks, total_line]
    if ev.margin_bytes:
        handles.append(ax.axhspan(budget - ev.margin_bytes, budget, color=COLORS["margin"], alpha=0.25,
                                  linewidth=0, label=f"tight margin ({ev.scenario.margin_fraction * 100:g} %)",
                                  gid="margin"))
    if both is not None:
        handles.append(ax.axhline(both, color=COLORS["total"], linestyle=":", linewidth=1.2,
                                  label=f"RAM + GPU budgets {size_label(both, units)}", gid="both_budgets"))
    handles.append(ax.axhline(budget, color=COLORS["budget"], linestyle="--", linewidth=1.6,
                              label=f"{'RAM ' if ram is not None else ''}budget {size_label(budget, units)}",
                              gid="budget"))
    if ram is not None:
        ram_line, = ax.plot(x, ram, color=COLORS["budget"], linewidth=1.4, linestyle="-.", label="of it in RAM",
                            gid="ram_total")
        handles.append(ram_line)
    if gpu is not None:  # offloaded: the GPU's own memory against its own budget (max context keeps both within)
        gpu_line, = ax.plot(x, gpu, color=COLORS["gpu"], linewidth=2.0, linestyle="-.",
                            label="of it on the GPU", gid="gpu_total")
        handles.append(gpu_line)
        if curves.gpu_budget_bytes != budget:
            handles.append(ax.axhline(curves.gpu_budget_bytes, color=COLORS["gpu"], linestyle="--", linewidth=2.0,
                                      label=f"GPU budget {size_label(curves.gpu_budget_bytes, units)}",
                                      gid="gpu_budget"))

    text_y = ax.get_xaxis_transform()  # x in data, y in axes fraction
    limit = curves.ctx_limit
    at_limit = bool(limit) and ev.max_ctx == limit[0]  # the cache's own limit, not the budget, ends it
    # at its limit the max-context label says "(= max_cache_len)": a second label on the same line printed over it
    draw_ctx_limit(ax, limit, x[-1], labelled=not (at_limit and ev.max_ctx <= x[-1]))
    if ev.max_ctx is not None and ev.max_ctx <= x[-1]:
        at = np.searchsorted(x, ev.max_ctx)
        total_at_max = int(curves.total_bytes[at])
        if gpu is not None and int(gpu[at]) > curves.gpu_budget_bytes * 0.98:  # the GPU's memory ends it
            total_at_max = int(gpu[at])
        elif ram is not None:  # host RAM ends it
            total_at_max = int(ram[at])
        if not at_limit:
            ax.axvline(ev.max_ctx, color=COLORS["max_ctx"], linewidth=1, alpha=0.6, gid="max_ctx_line")
        ax.plot([ev.max_ctx], [total_at_max], "o", color=COLORS["max_ctx"], markersize=7, zorder=5,
                gid="max_ctx")
        ax.annotate(f"max context\n{ev.max_ctx:,} tokens" + (f"\n(= {limit[1]})" if at_limit else ""),
                    (ev.max_ctx, 0.97), xycoords=text_y, **inward(ev.max_ctx, 0, x[-1]), va="top", fontsize=9,
                    color=COLORS["max_ctx"], fontweight="bold", gid="max_ctx_label")
    elif ev.max_ctx is not None:  # past the axis end: say where, at the right edge
        ax.annotate(f"max context {ev.max_ctx:,} →\n(past this axis)", (1, 0.97), xycoords="axes fraction",
                    xytext=(-5, 0), textcoords="offset points", ha="right", va="top", fontsize=9,
                    color=COLORS["max_ctx"], fontweight="bold", gid="max_ctx_label")
    elif ev.max_ctx is None:
        if ev.max_ctx_limited_by == "unbounded":
            why = "the cache stops growing: every layer is windowed"
        elif ev.max_ctx_limited_by == "pinned_prefix":
            why = f"the weights and the {s.pinned_prefix_tokens:,}-token pinned prefix exceed the budget"
        elif limit and ev.max_ctx_limited_by == limit[1]:
            why = f"the cache preallocated for {limit[1]} {limit[0]:,} exceeds the budget"
        elif ev.process is not None:
            why = "the weights and the llama.cpp process exceed the budget"
        else:
            why = "the weights alone exceed the budget"
        # at the foot of the axes, on a white box: the checked point's label sits near the top
        ax.text(0.02, 0.03, why, transform=ax.transAxes, ha="left", va="bottom", fontsize=9,
                color=COLORS["max_ctx"], gid="no_max_ctx", zorder=6,
                bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.85, "pad": 2})
    if curves.show_ctx and s.ctx:
        verdict = ev.verdict.value.upper()
        if ev.offload is not None and ev.verdict.value != "fit":  # which memory: the stack alone cannot say
            named = [m.memory.upper() for m in ev.offload.memories
                     if m.verdict is not None and m.verdict.value == ev.verdict.value]
            if named:
                verdict += " (" + ", ".join(named) + ")"
        ax.axvline(s.ctx, color=COLORS["ctx"], linestyle=":", linewidth=1.2, gid="ctx")
        ax.plot([s.ctx], [ev.total_bytes], "s", color=COLORS["total"], markersize=6, zorder=5, gid="ctx_point")
        right = s.ctx > 0.75 * x[-1]
        # two lines of text above the point would sit on the budget line (and hide it behind their box) when the
        # total is just under the budget: then the label goes below the point, inside the stack
        below = 0 < budget - ev.total_bytes < 0.16 * top
        ax.annotate(f"{ctx_label(s.ctx)}: {size_label(ev.total_bytes, units)}\n{verdict}",
                    (s.ctx, ev.total_bytes), xytext=(-8 if right else 8, -8 if below else 6),
                    textcoords="offset points", ha="right" if right else "left", va="top" if below else "bottom",
                    fontsize=9, fontweight="bold",
                    color=VERDICT_COLORS[ev.verdict.value],
                    bbox={"boxstyle": "round,pad=0.25", "fc": "white", "ec": "none", "alpha": 0.85})

    ctx_axis(ax.xaxis, max_ticks=8)
    bytes_axis(ax.yaxis, top, units)
    ax.grid(True, alpha=0.3, linewidth=0.6)
    ax.set_axisbelow(True)
    ax.set_title(title or f"{s.device.name} × {s.model.name}", fontsize=11)
    return handles


def memory_figure(curves: list[MemoryCurves], units: str = "si", columns: int | None = None,
                  count: SeriesCount | None = None):
    """One panel per configuration (side by side, wrapping after ``columns``), one shared legend.

    ``count``: how many configurations the command had (``curves`` are the first of them); by default all are
    drawn, up to :data:`~kvplan.plots.series.MAX_SERIES`."""
    count = count or count_series(len(curves))
    curves = curves[:count.shown]
    n = len(curves)
    columns = columns or min(n, 3)
    rows = -(-n // columns)
    fig = new_figure(max(7.5, 4.6 * columns), 3.9 * rows + 1.1)
    axes = fig.subplots(rows, columns, squeeze=False, sharey=False)
    by_label = {}
    for ax, c in zip(axes.flat, curves):
        for h in draw_memory(ax, c, units):
            by_label.setdefault(h.get_label(), h)
    for ax in list(axes.flat)[n:]:
        ax.set_visible(False)
    if n > 1:  # the weights label carries a size that differs per model: keep one generic entry
        by_label = _generic_labels(by_label)
    fig.legend(list(by_label.values()), list(by_label.keys()), loc="outside lower center",
               ncols=min(len(by_label), 4), frameon=False, fontsize=9)
    if n == 1:
        axes[0, 0].set_title("")
        s = curves[0].evaluation.scenario
        fig.suptitle(f"Memory against context — {s.device.name} × {s.model.name}", fontsize=12)
    else:
        note = title_note(count)
        fig.suptitle("Memory against context" + (f" ({note})" if note else ""), fontsize=12)
    return fig


def _generic_labels(by_label: dict) -> dict:
    out = {}
    for label, handle in by_label.items():
        key = label.split(" (")[0] if not label.startswith(("budget", "tight")) else label.split(" ")[0]
        out.setdefault(key, handle)
    return out
