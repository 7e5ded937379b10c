"""What one configuration fixes before its context and sequence count vary: the cache model it asks for, the
weights it holds and reads per step, and the device figures decode and prefill use.

Everything the evaluation core (:mod:`kvplan.plan.core`) computes over one number or an array of contexts and
sequence counts starts from one :class:`Basis`; building it is the expensive part (a tensor-by-tensor weight
pricing, a runtime's cache rules), so a point, a sweep group and a plot curve each build it once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvplan import engine
from kvplan.errors import FieldError, ProfileError
from kvplan.records import Figures
from kvplan.caches.ideal import CacheModel, cache_layout
from kvplan.plan.scenario import Scenario

if TYPE_CHECKING:  # pydantic stays off the fast path: cached profiles are plain records
    from kvplan.profiles.spec import Model


class Basis(Figures):
    """The constants of one configuration [bytes, bits/param, bytes/s, s]."""

    __slots__ = _fields = ("scenario", "cache", "weights_bytes", "weights_read_bytes", "weight_bits",
                           "weights_pricing", "overhead_bytes", "budget_bytes", "pinned_prefix_bytes", "n_ubatch",
                           "process", "buffers_memo", "crossings", "parts", "placement_memo")
    scenario: Scenario
    cache: CacheModel  # the cache model in force (CacheLayout for the ideal formula)
    weights_bytes: int
    weights_read_bytes: int  # what a decode step streams of the weights
    weight_bits: float
    weights_pricing: object | None  # the WeightPricing of a named weight_type, else None
    overhead_bytes: int  # the device's runtime_overhead
    budget_bytes: int  # ram − os_reserve in force
    pinned_prefix_bytes: int  # the pinned prefix's cache, held once
    n_ubatch: int  # tokens per prefill micro-batch
    # the llama.cpp process beyond its buffers (kvplan.engine.llamacpp_process.ProcessParts), None elsewhere
    process: object | None
    # (ctx, sequences) → llama.cpp's priced buffers: an allocator replay is the costliest figure, asked for by the
    # total, the max-context search and its contiguous scan
    buffers_memo: dict
    # sequences → (first crossing, largest fitting -c) of llama.cpp's max-context search (core.max_ctx_at)
    crossings: dict
    # what the configuration holds beside the model's weights and cache (kvplan.plan.parts): a draft model …
    parts: tuple
    # the offloaded configuration's placement (kvplan.plan.placement.layout_of), built once when asked for
    placement_memo: dict
    _defaults = {"process": None, "parts": ()}
    _factories = {"buffers_memo": dict, "crossings": dict, "placement_memo": dict}  # each Basis its own memos
    _hidden = ("buffers_memo", "crossings", "placement_memo")

    @property
    def process_bytes(self) -> int:
        """What the process holds beyond weights, cache and buffers: its baseline and a repacked copy [bytes]."""
        return self.process.extra_bytes if self.process is not None else 0

    @property
    def reclaimable_bytes(self) -> int:
        """What the kernel can drop and read again: weights mapped from their file, less the working set a
        thrashing process keeps [bytes]."""
        return self.process.reclaimable_bytes if self.process is not None else 0

    @property
    def judged_discount_bytes(self) -> int:
        """What the verdict leaves out of the total: the reclaimable part when it judges the non-reclaimable
        memory (``runtime.judge``), else nothing [bytes]."""
        judge = getattr(self.scenario.runtime, "judge", "resident")
        return self.reclaimable_bytes if judge == "non_reclaimable" else 0

    @property
    def constant_parts_bytes(self) -> int:
        """The resident parts in RAM whose bytes do not depend on the context or the sequences [bytes]."""
        return sum(p.bytes_of for p in self.parts if p.constant and p.memory == "ram")

    @property
    def varying_parts(self) -> tuple:
        """The resident parts in RAM whose bytes depend on the context or the sequences (a draft's KV cache)."""
        return tuple(p for p in self.parts if not p.constant and p.memory == "ram")

    @property
    def cache_allowance_bytes(self) -> int:
        """What the budget leaves for the cache (and runtime buffers, and the resident parts that grow with the
        context) beside weights, overhead, prefix, the process and the constant resident parts, of what the
        verdict judges [bytes]."""
        return (self.budget_bytes - self.weights_bytes - self.overhead_bytes - self.pinned_prefix_bytes
                - self.process_bytes + self.judged_discount_bytes - self.constant_parts_bytes)


def basis_of(s: Scenario) -> Basis:
    """The :class:`Basis` of a scenario (its own ``ctx`` and ``sequences`` are not used, except by a runtime whose
    cache rules depend on the sequence count: llama.cpp's ``-np``)."""
    cache = cache_model_for(s)
    weights, weights_read, bits, pricing = weights_in_force(s)
    return Basis(s, cache, weights, weights_read, bits, pricing, s.device.runtime_overhead, s.budget_bytes,
                 int(cache.kv_bytes(s.pinned_prefix_tokens, 1)), prefill_n_ubatch(s),
                 process_of(s, weights, pricing), parts=resident_parts_of(s))


def resident_parts_of(s: Scenario) -> tuple:
    """The resident parts of a scenario (:func:`kvplan.plan.parts.parts_of`), priced with this module's rules."""
    from kvplan.plan import parts

    if not parts.PART_SOURCES:
        return ()
    return parts.parts_of(s, parts.Pricer(weights_in_force, cache_model_for))



def process_of(s: Scenario, weights_bytes: int, pricing):
    """The llama.cpp process's parts (None under any other runtime): which weights the device's CPU repacks needs
    their tensor types, so weights given as bits per weight repack nothing here (a warning says so)."""
    if s.runtime is None:
        return None
    from kvplan.profiles.runtime import llamacpp_spec_of

    spec = llamacpp_spec_of(s.runtime)
    if spec is None:
        return None
    from kvplan.engine import llamacpp_process as lp

    sizes = lp.repacked_tensor_bytes(pricing.tensors, cpu_features_of(s.device)) if pricing is not None else []
    return lp.process_parts(weights_bytes, sum(sizes), mmap=spec.mmap, repack=spec.repack, build=spec.build,
                            largest_repacked=max(sizes, default=0), n_vocab=s.model.vocab_size or 0)


def cpu_features_of(device) -> str:
    """The device's CPU feature set for llama.cpp's repacking: its profile's ``cpu_features``, else what its
    platform runs: Android phones NEON with int8 matmul; macOS and iOS ``none``, because llama.cpp runs on Metal
    there by default and its Metal buffers hold the weights as the file has them; PCs and boards AVX2."""
    named = getattr(device, "cpu_features", None)
    if named:
        return named
    platform = getattr(device, "platform", None)
    return {"android": "neon-i8mm", "ios": "none", "macos": "none"}.get(platform, "avx2")


def weights_of(model: Model, weight_bits: float | None) -> tuple[int, int, float]:
    """(weights, weights read per decode step, bits used) [bytes, bytes, bits/param]."""
    bits = model.weight_bits if weight_bits is None else weight_bits
    if model.weights is not None and weight_bits is None:
        weights = model.weights
    else:
        weights = engine.weights_bytes(model.params, bits)
    # A decode step streams the weights one token uses. Every expert of a mixture of experts stays resident
    # (`weights` counts all params), but a step reads only the shared layers and the experts the router picks:
    # `params_active`, counted like `params` (embedding table included), at the same bytes per parameter —
    # ceil(params_active · bits / 8), or an explicit `weights` size scaled by params_active / params. From
    # that, as for a dense model, the untied input-embedding table is left out (a step reads one row of it).
    active = getattr(model, "params_active", None)
    if active is None:
        read = weights
    elif model.weights is not None and weight_bits is None:
        read = -(-weights * active // model.params)
    else:
        read = engine.weights_bytes(active, bits)
    if model.vocab_size and model.hidden_size and not model.tie_embeddings:
        read = max(read - engine.embedding_bytes(model.vocab_size, model.hidden_size, bits), 0)
    per_layer_vocab = getattr(model, "vocab_size_per_layer_input", None)
    per_layer_width = getattr(model, "hidden_size_per_layer_input", None)
    if per_layer_vocab and per_layer_width:
        # per-layer embeddings (Gemma 3n's PLE): a step reads one row of the table, as of the input embedding
        read = max(read - engine.embedding_bytes(per_layer_vocab, model.layers * per_layer_width, bits), 0)
    return int(weights), int(read), bits


def weights_in_force(s: Scenario):
    """(weights, weights read per step, bits/param, WeightPricing or None) of a scenario [bytes, bytes, bits].

    A named ``weight_type`` (the scenario's, else the profile's when neither ``weight_bits`` nor an explicit
    ``weights`` size is in force) is priced tensor by tensor; otherwise ``params · bits / 8``."""
    model = s.model
    weight_type = s.weight_type
    if weight_type is None and s.weight_bits is None and model.weights is None:
        weight_type = getattr(model, "weight_type", None)
    if weight_type is None:
        return (*weights_of(model, s.weight_bits), None)
    from kvplan.plan.weights import bytes_read_per_token, priced_weights

    try:
        pricing = priced_weights(model, weight_type, s.weight_group_size or 0)
    except FieldError as exc:
        if s.weight_type is not None:  # the flag's (or gate key's) value: the error is about it
            raise
        # the profile's own weight_type: a fault of the profile file, not of an option nobody gave
        raise ProfileError([f"model {model.name}: weight_type {weight_type}: {exc.worded(lead=False)}"]) from None
    return pricing.total_bytes, bytes_read_per_token(pricing, model), pricing.bits_per_weight, pricing


def cache_model_for(s: Scenario) -> CacheModel:
    """The cache model a scenario asks for: the ideal layout unless a policy or runtime is set."""
    if s.runtime is not None:  # runtime-exact allocation (kvplan.caches.runtimes); the runtime ignores profile policies
        from kvplan.caches.runtimes import runtime_cache_for

        cache = runtime_cache_for(s)
        limit = getattr(cache, "ctx_limit", None)  # the prefix is held in a cache of its own, of the same kind
        if limit and s.pinned_prefix_tokens > limit[0]:
            raise FieldError("pinned_prefix_tokens", f"{{pinned_prefix_tokens}} {s.pinned_prefix_tokens:,} exceeds "
                             f"{{runtime.{limit[1]}}} {limit[0]:,}: the cache cannot hold it", lead=None,
                             mentions=(f"runtime.{limit[1]}",))
        return cache
    policy = s.kv_policy if s.kv_policy is not None else getattr(s.model, "kv_policy", None)
    if policy is not None and not policy.is_plain:  # a compression policy (kvplan.profiles.policy)
        from kvplan.caches.policy import policy_cache

        _refuse_formats_the_policy_sets(s, policy)
        return policy_cache(s.model, policy, s.k_format, s.v_format, s.sliding_window)
    return cache_layout(s.model, s.k_format, s.v_format, s.sliding_window)


def _refuse_formats_the_policy_sets(s: Scenario, policy) -> None:
    """A cache type or bit width given beside a policy whose every tier sets that side's formats (recent and
    history) would be priced nowhere, yet reported as the cache's format: refuse it rather than ignore it."""
    from kvplan.caches.runtimes import asked_as

    tiers = [spec for _, _, spec in policy.layer_ranges(s.model.layers)]
    for side in ("k", "v"):
        if (s.k_format if side == "k" else s.v_format) is None:
            continue
        fixed = all(getattr(spec, side) is not None and (spec.history is None or getattr(spec.history, side) is not None)
                    for spec in tiers)
        if fixed:
            field, value = asked_as(s, side)
            raise FieldError((field, "kv_policy"), f"{value}: the KV policy sets the {side.upper()} format of every "
                             "tier itself, so this would change nothing; drop it, or leave the format out of the "
                             "policy", lead=" with ")


def prefill_n_ubatch(s: Scenario) -> int:
    """Tokens per prefill micro-batch: llama.cpp's ``-ub`` (capped at ``-b``, as llama_context does) under
    ``--runtime llama.cpp``, else llama.cpp's default 512 (other runtimes batch differently; 512 is a stand-in)."""
    if s.runtime is None:
        return engine.DEFAULT_N_UBATCH
    from kvplan.profiles.runtime import llamacpp_spec_of

    spec = llamacpp_spec_of(s.runtime)
    if spec is not None:
        return min(spec.ubatch, spec.batch)
    return engine.DEFAULT_N_UBATCH
