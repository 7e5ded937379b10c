"""What ``kvplan check`` shows about a KV cache compression policy (JSON object and a table)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvplan.render import fmt
from kvplan.render.tables import Table

if TYPE_CHECKING:
    from kvplan.plan.results import Evaluation


def _policy_cache(ev: Evaluation):
    return ev.cache if getattr(ev.cache, "policy", None) is not None else None


def _name(fmt_) -> str | None:
    return None if fmt_ is None else fmt_.name


def tiers_json(cache, ctx: int) -> list[dict]:
    """One entry per tier (a layer group, split by the model's window pattern), at ``ctx`` for one sequence."""
    return cache.tier_figures(ctx)


def policy_json(ev: Evaluation) -> dict | None:
    """The ``kv_policy`` object of ``check --format json`` (None without a policy)."""
    cache = _policy_cache(ev)
    if cache is None:
        return None
    ctx = ev.scenario.ctx
    per_sequence = ev.kv_bytes_per_sequence
    fp16 = int(cache.fp16_kv_bytes(ctx))
    return {
        "name": cache.policy.name,
        "description": cache.policy.description,
        "latent": cache.latent,
        "effective_bytes_per_token": per_sequence / ctx if ctx else None,
        "compression_ratio_vs_fp16": fp16 / per_sequence if per_sequence else None,
        "fp16_kv_bytes_per_sequence": fp16,
        "kv_bytes_per_sequence": per_sequence,
        "kv_peak_bytes_per_sequence": int(cache.kv_peak_bytes(ctx)),
        "tiers": tiers_json(cache, ctx),
    }


def policy_table(ev: Evaluation, units: str = "si") -> Table | None:
    """The policy at ``ctx``: effective bytes/token, ratio vs fp16, and the tokens and bytes of each tier."""
    doc = policy_json(ev)
    if doc is None:
        return None
    ctx = ev.scenario.ctx
    t = Table(f"KV policy {doc['name']} at {fmt.n_tokens(ctx)} (one sequence)", ["tier", "tokens", "bytes", "size"])
    for tier in doc["tiers"]:
        layers = f"layers {tier['first_layer']}-{tier['last_layer']}"
        if tier["model_window_tokens"] is not None or tier["layers"] != tier["last_layer"] - tier["first_layer"] + 1:
            window = tier["model_window_tokens"]
            layers += f" ({tier['layers']} {'windowed ' + format(window, ',') if window else 'global'})"
        fmts = _pair(tier["k_format"], tier["v_format"])
        if tier["history_ratio"] is None:
            t.add(f"{layers}: all at {fmts}", fmt.tokens(tier["recent_tokens"]), fmt.exact_bytes(tier["kv_bytes"]),
                  fmt.bytes_(tier["kv_bytes"], units))
            continue
        recent_bytes = tier["recent_tokens"] * tier["recent_bytes_per_token"]
        history_bytes = tier["history_tokens"] * tier["history_bytes_per_token"]
        t.add(f"{layers}: recent window at {fmts}", fmt.tokens(tier["recent_tokens"]),
              fmt.exact_bytes(recent_bytes), fmt.bytes_(recent_bytes, units))
        t.add(f"{layers}: history {fmt.percent(tier['history_ratio'])} kept at "
              f"{_pair(tier['history_k_format'], tier['history_v_format'])}", fmt.tokens(tier["history_tokens"]),
              fmt.exact_bytes(history_bytes), fmt.bytes_(history_bytes, units))
    kv = doc["kv_bytes_per_sequence"]
    t.add("KV cache at ctx (after an eviction pass)", fmt.tokens(ctx), fmt.exact_bytes(kv), fmt.bytes_(kv, units),
          style="bold")
    peak = doc["kv_peak_bytes_per_sequence"]
    if peak != kv:
        t.add("peak between eviction passes", "", fmt.exact_bytes(peak), fmt.bytes_(peak, units))
    effective = doc["effective_bytes_per_token"]
    t.add("effective bytes per token (kv / ctx)", "", f"{effective:,.1f} B" if effective is not None else "—", "")
    ratio = doc["compression_ratio_vs_fp16"]
    t.add(f"compression vs fp16 ({fmt.bytes_(doc['fp16_kv_bytes_per_sequence'], units)})", "",
          f"{ratio:.2f}×" if ratio is not None else "—", "")
    return t


def _pair(k: str | None, v: str | None) -> str:
    return f"{k}" if k == v else f"K {k} / V {v}"
