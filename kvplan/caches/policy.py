"""A compression policy applied to a model: the :class:`~kvplan.plan.CacheModel` of a policy.

The policy's layer groups are split further by the windows of the model's schedule
(a windowed layer never caches more than its window), each run summed into one
:class:`~kvplan.engine.tiered.Tier`; all sizes come from :mod:`kvplan.engine.tiered`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from kvplan.engine import tiered
from kvplan.engine.formats import ElementFormat, format_from_bits
from kvplan.engine.schedule import Attention, attention_runs
from kvplan.caches.ideal import CacheLayout, cache_layout, layer_bytes_per_token
from kvplan.profiles.policy import PolicySpec, exact_fraction
from kvplan.profiles.spec import Model

FP16 = format_from_bits(16)


@dataclass(frozen=True)
class TierPlan:
    """One tier with the policy settings and formats it came from (for display)."""

    group: int  # index of the policy's layer group
    first_layer: int  # the layer group's range, 0-based, inclusive (the tier may be part of it)
    last_layer: int
    tier: tiered.Tier
    k_format: ElementFormat
    v_format: ElementFormat
    history_k_format: ElementFormat | None
    history_v_format: ElementFormat | None
    history_ratio: float | None


@dataclass(frozen=True)
class PolicyCache:
    """A cache under a compression policy; implements the CacheModel protocol of kvplan.plan."""

    policy: PolicySpec
    k_format: ElementFormat  # the default recent-token formats (the model's, or the scenario's)
    v_format: ElementFormat
    plans: tuple[TierPlan, ...]
    fp16_layout: CacheLayout  # the same model at fp16, for the compression ratio
    latent: bool = False

    @property
    def tiers(self) -> tuple[tiered.Tier, ...]:
        return tuple(p.tier for p in self.plans)

    @property
    def bytes_per_token(self) -> int:
        """Bytes one token adds while every layer still keeps it in the recent format."""
        return sum(t.recent_bytes_per_token for t in self.tiers)

    def kv_bytes(self, ctx, sequences=1):
        """Steady-state cache (right after an eviction pass) of ``sequences`` × ``ctx`` tokens [bytes]."""
        return tiered.kv_bytes(ctx, self.tiers) * sequences

    def kv_peak_bytes(self, ctx, sequences=1):
        """The most the cache holds: ``N − 1`` tokens past the window awaiting eviction [bytes]."""
        return tiered.kv_peak_bytes(ctx, self.tiers) * sequences

    def kv_bytes_read_over_generation(self, n_tokens, sequences=1):
        return tiered.kv_bytes_sum_over_generation(n_tokens, self.tiers) * sequences

    def max_ctx(self, allowance_bytes, sequences=1, ctx_limit=math.inf):
        """Largest ctx whose peak cache fits ``allowance_bytes`` (exact integer search)."""
        from kvplan.engine import kv_allowance_bytes

        per_sequence = kv_allowance_bytes(allowance_bytes, sequences)
        return tiered.max_context_tokens(per_sequence, self.tiers, ctx_limit)

    # --- what evaluate() and the renderers read from a cache model ---

    @property
    def unbounded(self) -> bool:
        """True when no tier grows without bound (windowed layers, or history ratio 0)."""
        return all(t.growth_bytes_per_token == 0 for t in self.tiers)

    @property
    def windows(self) -> tuple[tuple[int, int], ...]:
        """(tokens past which a bounded tier stops growing, its recent bytes/token), merged by tokens."""
        merged: dict[int, int] = {}
        for t in self.tiers:
            if t.saturation_tokens != math.inf:
                w = int(t.saturation_tokens)
                merged[w] = merged.get(w, 0) + t.recent_bytes_per_token
        return tuple(sorted(merged.items()))

    @property
    def global_layers(self) -> int:
        return sum(t.layers for t in self.tiers if t.saturation_tokens == math.inf)

    @property
    def windowed_layers(self) -> int:
        return sum(t.layers for t in self.tiers if t.saturation_tokens != math.inf)

    def fp16_kv_bytes(self, ctx, sequences=1):
        """The plain cache of the same model at fp16 (model windows kept) [bytes]."""
        return self.fp16_layout.kv_bytes(ctx, sequences)

    def compression_ratio_vs_fp16(self, ctx) -> float:
        """fp16 cache / this policy's steady cache at ``ctx`` (``inf`` for an empty policy cache)."""
        kv = self.kv_bytes(ctx)
        return self.fp16_kv_bytes(ctx) / kv if kv else math.inf

    def tier_figures(self, ctx) -> list[dict]:
        """One entry per tier (a layer group, split by the model's window pattern), at ``ctx`` for one sequence:
        its settings, formats, tokens in each state and bytes."""
        def name(fmt_):
            return None if fmt_ is None else fmt_.name

        out = []
        for plan in self.plans:
            t = plan.tier
            recent, history, deferred = tiered.tier_tokens(ctx, t)
            out.append({
                "group": plan.group,
                "first_layer": plan.first_layer,
                "last_layer": plan.last_layer,
                "layers": t.layers,
                "model_window_tokens": t.window_tokens,
                "recent_window_tokens": t.recent_tokens,
                "history_ratio": plan.history_ratio,
                "evict_every_tokens": t.evict_every,
                "k_format": plan.k_format.name,
                "v_format": plan.v_format.name,
                "history_k_format": name(plan.history_k_format),
                "history_v_format": name(plan.history_v_format),
                "recent_bytes_per_token": t.recent_bytes_per_token,
                "history_bytes_per_token": t.history_bytes_per_token,
                "recent_tokens": int(recent),
                "history_tokens": int(history),
                "awaiting_eviction_tokens": int(deferred) if t.recent_tokens is not None and t.evict_every > 1 else 0,
                "kv_bytes": int(tiered.tier_kv_bytes(ctx, t)),
                "kv_peak_bytes": int(tiered.tier_kv_peak_bytes(ctx, t)),
            })
        return out



def policy_cache(model: Model, policy: PolicySpec, k_format: ElementFormat | None = None,
                 v_format: ElementFormat | None = None, sliding_window: int | None = None) -> PolicyCache:
    """Apply ``policy`` to ``model``; ``k_format`` / ``v_format`` override the model's recent-token formats."""
    default_k = k_format or model.k_format()
    default_v = v_format or model.v_format()
    schedule = model.schedule if sliding_window is None else model.schedule.with_window(sliding_window)
    attention_runs(schedule, "compression policy")
    fp16 = cache_layout(model, FP16, FP16, sliding_window)
    plans: list[TierPlan] = []
    for index, (start, end, spec) in enumerate(policy.layer_ranges(model.layers)):
        k = spec.k.element_format() if spec.k else default_k
        v = spec.v.element_format() if spec.v else default_v
        hist = spec.history
        hk = hist.k.element_format() if hist and hist.k else k
        hv = hist.v.element_format() if hist and hist.v else v
        ratio = exact_fraction(hist.ratio) if hist else Fraction(1)
        recent = (spec.recent_window or 0) if hist else None
        runs: dict[int | None, list[tuple[int, Attention]]] = {}
        for count, layer in schedule.groups(start, end):
            runs.setdefault(layer.window_tokens, []).append((count, layer))
        for window, groups in sorted(runs.items(), key=lambda kv: (kv[0] is not None, kv[0] or 0)):
            tier = tiered.Tier(
                window_tokens=window, recent_tokens=recent, ratio_num=ratio.numerator, ratio_den=ratio.denominator,
                evict_every=spec.evict_every,
                recent_bytes_per_token=sum(n * layer_bytes_per_token(ly, k, v) for n, ly in groups),
                history_bytes_per_token=sum(n * layer_bytes_per_token(ly, hk, hv) for n, ly in groups),
                layers=sum(n for n, _ in groups))
            plans.append(TierPlan(index, start, end - 1, tier, k, v, hk if hist else None,
                                  hv if hist else None, hist.ratio if hist else None))
    return PolicyCache(policy, default_k, default_v, tuple(plans), fp16, latent=schedule.latent)
