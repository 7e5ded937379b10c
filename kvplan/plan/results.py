"""The figures of one configuration, as frozen records of numbers (no display strings).

Records, not dataclasses (:class:`kvplan.records.Figures`): a check imports them on its way in, and a
dataclass of Evaluation's 41 fields compiles about 13 million instructions of methods at import.

These are what render, plots and report read; they compute nothing beyond trivial sums, so the layers that
format them may import this module (and only this one) from ``kvplan.plan``: an evaluation, the changes
``fit`` judges (:mod:`kvplan.advice` makes them); a weight breakdown's are in :mod:`kvplan.plan.weight_results`.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

from kvplan.engine.memory import Verdict
from kvplan.records import ComparedFigures, Figures

if TYPE_CHECKING:
    from kvplan.plan.facts import WarningFact


class Flash(Figures):  # read, never compared
    """What the overflow costs when it lives on flash (all zero when the configuration fits)."""

    __slots__ = _fields = ("overflow_bytes", "swap_in_s", "streamed_decode_tokens_per_s", "slowdown",
                           "steady_overflow_bytes", "overflow_swap_in_s")
    _defaults = {"steady_overflow_bytes": 0, "overflow_swap_in_s": 0.0}

    overflow_bytes: int  # total − budget at the peak (what decides the verdict)
    swap_in_s: float  # reading the whole KV cache (and pinned prefix) back from flash
    streamed_decode_tokens_per_s: float  # decode with the steady-state overflow read from flash every step
    slowdown: float  # time per token streamed ÷ time per token from RAM
    steady_overflow_bytes: int  # total − budget once the cache is at its steady size (≤ overflow_bytes)
    overflow_swap_in_s: float  # reading only the overflow back from flash

    @property
    def transient(self) -> bool:
        """Over the budget only at the peak right after prefill; the steady state fits."""
        return self.overflow_bytes > 0 and self.steady_overflow_bytes == 0


class Process(Figures):  # read, never compared
    """What a llama.cpp process holds at its peak beyond the weights, cache and buffers as priced [bytes]:
    its baseline, the repacked copy, and which part of the total the kernel can reclaim."""

    __slots__ = _fields = ("build", "mmap", "repack", "judge", "baseline_anon_bytes", "baseline_file_bytes",
                           "repacked_bytes", "repack_copy_bytes", "staging_bytes", "weights_file_bytes",
                           "compute_reserved_bytes", "resident_bytes", "reclaimable_bytes", "extra_bytes")

    build: str  # the llama.cpp build whose rules apply
    mmap: bool
    repack: bool
    judge: str  # what the verdict holds against the budget: "resident" or "non_reclaimable"
    baseline_anon_bytes: int  # the process's own heap (vocabulary, metadata, server, threads)
    baseline_file_bytes: int  # binary and shared libraries, resident from their files
    repacked_bytes: int  # the weights the CPU backend repacks
    repack_copy_bytes: int  # with mmap, the repacked copy held beside the mapped file pages
    staging_bytes: int  # without mmap, the loader's staging buffer for repacked tensors
    weights_file_bytes: int  # weights as file pages (mmap): reclaimable
    compute_reserved_bytes: int  # the compute buffer as reserved (its touched part is in the total)
    resident_bytes: int  # the resident peak: the total
    reclaimable_bytes: int  # of it, what the kernel can drop and read again (mapped weights)
    extra_bytes: int  # what the total counts beyond weights, cache and buffers (ProcessParts.extra_bytes)

    @property
    def non_reclaimable_bytes(self) -> int:
        """The resident peak less what the kernel can reclaim: what must fit, or the process is killed [bytes]."""
        return self.resident_bytes - self.reclaimable_bytes

    @property
    def judged_bytes(self) -> int:
        """What the verdict held against the budget [bytes]."""
        return self.non_reclaimable_bytes if self.judge == "non_reclaimable" else self.resident_bytes


class Part(Figures):  # read, never compared
    """One resident part at the evaluated point (:mod:`kvplan.plan.parts`) [bytes]."""

    __slots__ = _fields = ("key", "memory", "bytes", "read_bytes", "values")
    _defaults = {"values": ()}

    key: str  # stable: draft_weights, draft_kv, encoder_weights, encoder_compute …
    memory: str  # the memory it lives in ("ram": the device's RAM)
    bytes: int  # what it holds (in total_bytes when it lives in RAM)
    read_bytes: int  # what a decode step reads from it (in bytes_per_step)
    values: tuple  # ((name, value), …): facts about it, worded by render and echoed in JSON

    @property
    def facts(self) -> dict:
        """``values`` as a mapping."""
        return dict(self.values)


class Evaluation(Figures):  # read, never compared; no __slots__: the cached figure below keeps a __dict__
    """Every figure of one configuration, in base units."""

    _fields = ("scenario", "cache", "weight_bits", "kv_bytes_per_token", "kv_bytes_per_sequence", "kv_bytes",
               "kv_peak_bytes", "pinned_prefix_bytes", "weights_bytes", "weights_read_bytes", "overhead_bytes",
               "total_bytes", "budget_bytes", "headroom_bytes", "margin_bytes", "verdict", "bytes_per_step",
               "decode_tokens_per_s", "decode_tokens_per_s_roofline", "mean_decode_tokens_per_s", "max_ctx",
               "max_ctx_limited_by", "max_ctx_at_target", "flash", "notes", "prefill_s", "pinned_prefix_recompute_s",
               "target_reach", "prefill_compute_s", "prefill_memory_s", "prefill_n_ubatch", "max_ctx_trained",
               "ctx_per_sequence_tokens", "mean_decode_tokens", "ctx_beyond_trained", "weights_pricing",
               "compute_buffer_bytes", "output_buffer_bytes", "warnings", "max_ctx_contiguous", "basis", "process",
               "parts", "speculative", "offload")
    _defaults = {"notes": (), "prefill_s": None, "pinned_prefix_recompute_s": None, "target_reach": None,
                 "prefill_compute_s": None, "prefill_memory_s": None, "prefill_n_ubatch": 512,
                 "max_ctx_trained": None, "ctx_per_sequence_tokens": 0, "mean_decode_tokens": 0,
                 "ctx_beyond_trained": False, "weights_pricing": None, "compute_buffer_bytes": 0,
                 "output_buffer_bytes": 0, "warnings": (), "max_ctx_contiguous": None, "basis": None,
                 "process": None, "parts": (), "speculative": None, "offload": None}

    scenario: Scenario
    cache: CacheModel  # the cache model used (CacheLayout for the ideal formula)
    weight_bits: float
    kv_bytes_per_token: int
    kv_bytes_per_sequence: int | None  # one sequence's cache; None: the sequences share one pool (llama.cpp unified)
    kv_bytes: int  # steady-state cache of all sequences
    kv_peak_bytes: int  # the most the cache holds at any moment (equals kv_bytes for the ideal cache)
    pinned_prefix_bytes: int
    weights_bytes: int
    weights_read_bytes: int
    overhead_bytes: int
    total_bytes: int
    budget_bytes: int
    headroom_bytes: int
    margin_bytes: int
    verdict: Verdict
    bytes_per_step: int
    decode_tokens_per_s: float
    decode_tokens_per_s_roofline: float
    mean_decode_tokens_per_s: float
    max_ctx: int | None
    max_ctx_limited_by: str
    max_ctx_at_target: int | None  # None: no target, out of reach, or met at every context (target_reach)
    flash: Flash
    notes: tuple[str, ...]
    prefill_s: float | None  # time to prefill ctx prompt tokens (None: device compute unknown)
    pinned_prefix_recompute_s: float | None  # recomputing the pinned prefix instead of keeping it
    # with a decode target: "unreachable" (even an empty cache decodes slower), "every context" (the cache stops
    # growing while still decoding fast enough) or "context" (max_ctx_at_target holds the answer); None: no target
    target_reach: str | None
    # prefill_s is the larger of: FLOPs / (compute · compute_efficiency), and the weights read once per micro-batch
    prefill_compute_s: float | None
    prefill_memory_s: float | None
    prefill_n_ubatch: int  # tokens per prefill micro-batch (llama.cpp -ub; 512 where no runtime says)
    max_ctx_trained: int | None  # the model's trained context (profile max_context); not a cap on max_ctx
    ctx_per_sequence_tokens: int  # the tokens one sequence can attend (llama.cpp: n_ctx_seq)
    mean_decode_tokens: int  # the generation mean_decode_tokens_per_s averages over, per sequence [tokens]
    ctx_beyond_trained: bool  # attended_tokens > max_ctx_trained: needs a context extension
    weights_pricing: object | None  # the tensor-by-tensor WeightPricing of a named weight_type, else None
    # runtime buffers beside the cache (llama.cpp's compute and output buffers); 0 where the runtime adds none
    compute_buffer_bytes: int
    output_buffer_bytes: int
    # what the user should know before trusting a figure: facts (kvplan.plan.facts), worded by kvplan.render.warnings
    warnings: tuple[WarningFact, ...]
    # the largest ctx such that it and every smaller one fit: max_ctx wherever the total only grows with the
    # context; below it under llama.cpp when a larger -c fits again past one that does not (None with max_ctx)
    max_ctx_contiguous: int | None
    basis: object | None  # the kvplan.plan.basis.Basis it was evaluated from (curves reuse it)
    process: Process | None  # under llama.cpp: the process's parts; None elsewhere
    # what it holds beside the model's weights and cache (a draft model, an encoder …), in total_bytes; () for none
    parts: tuple[Part, ...]
    # speculative decoding with a draft and an acceptance rate (kvplan.plan.core.Speculative: draft_tokens,
    # expected_tokens_per_step, draft_step_s, verify_step_s, tokens_per_s, speedup …); None otherwise
    speculative: object | None
    # with an offload knob or a discrete GPU: each part in its memory (kvplan.plan.placement.Offload); the verdict
    # is then the worst of the memories' verdicts
    offload: object | None

    @cached_property
    def llamacpp_buffers_bytes(self) -> int | None:
        """Under the ideal formula, the compute + output buffers llama.cpp would add at its defaults [bytes]; None
        under a runtime, where llama.cpp would refuse the request, or when the profile lacks the shape. Computed
        when asked (an allocator replay): the gate and sweeps, which never show it, do not pay for it."""
        from kvplan.plan.would_add import llamacpp_buffers_if_ideal

        would_add = llamacpp_buffers_if_ideal(self.scenario)
        return would_add.total_bytes if would_add is not None else None

    @property
    def layout(self) -> CacheModel:
        """The cache model: the earlier name of :attr:`cache`, kept for scripts written against it."""
        return self.cache

    @property
    def attended_tokens(self) -> int:
        """The tokens one sequence attends: its own context and the pinned prefix in front of it [tokens]."""
        return self.ctx_per_sequence_tokens + self.scenario.pinned_prefix_tokens

    @property
    def process_bytes(self) -> int:
        """Under llama.cpp, the process's bytes beyond weights, cache and buffers, in the total; 0 elsewhere."""
        return self.process.extra_bytes if self.process is not None else 0

    @property
    def parts_bytes(self) -> int:
        """The resident parts in RAM, counted in the total [bytes]; 0 without parts."""
        return sum(p.bytes for p in self.parts if p.memory == "ram")

    @property
    def parts_read_bytes(self) -> int:
        """What a decode step reads of the resident parts in RAM, counted in bytes_per_step [bytes]."""
        return sum(p.read_bytes for p in self.parts if p.memory == "ram")

    def part(self, key: str) -> Part | None:
        """The resident part of ``key``, or None."""
        return next((p for p in self.parts if p.key == key), None)

    @property
    def buffers_bytes(self) -> int:
        """Runtime buffers counted in the total (compute + output) [bytes]."""
        return self.compute_buffer_bytes + self.output_buffer_bytes

    @property
    def aggregate_decode_tokens_per_s(self) -> float:
        """Tokens per second over all sequences: a step reads the weights once and emits one token per sequence."""
        return self.decode_tokens_per_s * self.scenario.sequences

    @property
    def prefill_bound(self) -> str | None:
        """Which floor sets the prefill time: ``compute`` (FLOPs) or ``memory`` (weights once per micro-batch)."""
        if self.prefill_compute_s is None:
            return None
        return "memory" if self.prefill_memory_s > self.prefill_compute_s else "compute"

    @property
    def fits(self) -> bool:
        return self.verdict is not Verdict.OVER

    def tokens_per_sequence(self, ctx: int) -> int:
        """The tokens one sequence attends at ``ctx`` under this cache (llama.cpp splits ``-c`` over ``-np``)."""
        from kvplan.caches.ideal import tokens_per_sequence_of

        return tokens_per_sequence_of(self.cache, ctx, self.scenario.sequences)


# --- what would make it fit (kvplan.advice) ---------------------------------------------------


class Change(ComparedFigures):
    """One edit to a configuration: ``kind`` names the knob, ``value`` its new setting."""

    __slots__ = _fields = ("kind", "value", "evaluation", "caveats")
    _defaults = {"caveats": ()}

    kind: str  # ctx | kv_bits | weight_bits | weight_type | sequences | sliding_window | model | draft | runtime.<field>
    value: object
    evaluation: Evaluation
    caveats: tuple[str, ...]  # codes of CAVEATS, in that order

    @property
    def fits(self) -> bool:
        return self.evaluation.fits

    @property
    def keeps_model(self) -> bool:
        return self.kind != "model"


class Advice(ComparedFigures):
    """The judged changes: those that keep the model (ranked), and other models that fit (apart)."""

    __slots__ = _fields = ("keep_model", "other_models")

    keep_model: tuple[Change, ...]
    other_models: tuple[Change, ...]
