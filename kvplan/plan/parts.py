"""Resident parts: what a configuration holds beside the model's own weights and KV cache.

A draft model for speculative decoding (its weights, its KV cache), a vision encoder (its weights, its compute
buffer), … each is a :class:`ResidentPart` with a stable ``key``. The evaluation core
(:mod:`kvplan.plan.core`) adds every part's bytes to the total (and the max-context search counts them), and the
bytes a decode step reads from it to the bytes a step streams; :class:`~kvplan.plan.results.Evaluation` carries
them (``parts``), check's memory table shows one row per part and its JSON has them under ``memory.parts``.

Where parts come from: each entry of :data:`PART_SOURCES` names a function ``fn(scenario, pricer)`` (imported
only when a check runs: a draft's pricing is not on the fast path of a check without one) returning a tuple of
parts for the scenario, empty when its knob is unset. ``pricer`` (a :class:`Pricer`, built by
:func:`kvplan.plan.basis.basis_of`) prices another model's weights and cache with the same rules as the
target's, so a source never imports the layers above it.

A part's bytes are an integer, or a function of ``(ctx, sequences)`` — Python integers or numpy int64 arrays,
broadcast together, as everything in :mod:`kvplan.plan.core` — returning bytes (a draft's KV grows with the
context). The bytes must never decrease as ``ctx`` grows (the max-context search relies on it).
"""

from __future__ import annotations

import re

from kvplan.errors import FieldError
from kvplan.records import Figures

# The memories a part may live in. "ram": the device's RAM (its budget), the only one priced so far.
MEMORIES = ("ram",)

# module:function of each source of parts, in the order their rows are shown (imported only when asked)
PART_SOURCES: tuple[str, ...] = ("kvplan.plan.draft:draft_parts", "kvplan.plan.mtp:mtp_parts",
                                 "kvplan.plan.encoder_parts:encoder_parts", "kvplan.plan.audio_parts:audio_parts")
# the scenario field without which a source has no parts: its module is not even imported then (a plain check
# starts without the draft, MTP and encoder code)
NEEDS: dict[str, str] = {"kvplan.plan.draft:draft_parts": "draft", "kvplan.plan.mtp:mtp_parts": "draft",
                         "kvplan.plan.encoder_parts:encoder_parts": "images",
                         "kvplan.plan.audio_parts:audio_parts": "audio"}

_KEY = re.compile(r"^[a-z][a-z0-9_]*$")


class ResidentPart(Figures):
    """One resident part beside the model's weights and KV cache [bytes].

    ``bytes_of`` / ``read_bytes_of``: an integer, or a function of ``(ctx, sequences)`` (numbers or numpy arrays)
    giving the bytes it holds / a decode step reads from it (``draft_step_read_bytes_of``: one step of a speculative
    draft, for the draft's own parts). ``values``: ``(name, value)`` facts about it that
    render words its row with and check's JSON echoes (the draft's model name, its cache formats …)."""

    __slots__ = _fields = ("key", "bytes_of", "read_bytes_of", "memory", "values", "draft_step_read_bytes_of")
    _defaults = {"read_bytes_of": 0, "memory": "ram", "values": (), "draft_step_read_bytes_of": 0}

    key: str  # stable: draft_weights, draft_kv, encoder_weights, encoder_compute …
    bytes_of: object  # int, or callable (ctx, sequences) → bytes
    read_bytes_of: object  # int, or callable (ctx, sequences) → bytes a decode step reads from it
    memory: str  # where it lives: one of MEMORIES
    values: tuple  # ((name, value), …)
    # int, or callable (ctx, sequences) → bytes one step of a speculative draft reads from it (the draft's weights
    # and cache; 0 for a part a draft step does not touch): what kvplan.plan.core.speculative_at prices
    draft_step_read_bytes_of: object

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        if not isinstance(self.key, str) or not _KEY.match(self.key):
            raise FieldError("parts", f"a part's key is snake_case, got {self.key!r}")
        if self.memory not in MEMORIES:
            raise FieldError("parts", f"part {self.key}: memory {self.memory!r} is not one of {', '.join(MEMORIES)}")
        for name in ("bytes_of", "read_bytes_of", "draft_step_read_bytes_of"):
            value = getattr(self, name)
            if not callable(value) and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise FieldError("parts", f"part {self.key}: {name} is bytes ≥ 0 or a function of (ctx, sequences), "
                                 f"got {value!r}")

    @property
    def constant(self) -> bool:
        """Its bytes do not depend on the context or the sequences."""
        return not callable(self.bytes_of)

    @property
    def constant_read(self) -> bool:
        """The bytes a decode step reads from it do not depend on the context or the sequences."""
        return not callable(self.read_bytes_of)

    @property
    def facts(self) -> dict:
        """``values`` as a mapping."""
        return dict(self.values)


class Pricer(Figures):
    """How a source prices another model as the target is priced (given by the basis, so the sources stay
    below it): ``weights(scenario)`` → (weights, weights read per step, bits/param, WeightPricing or None);
    ``cache(scenario)`` → its cache model (:func:`kvplan.plan.basis.cache_model_for`)."""

    __slots__ = _fields = ("weights", "cache")

    weights: object
    cache: object


def parts_of(s, pricer: Pricer, sources: tuple[str, ...] | None = None) -> tuple[ResidentPart, ...]:
    """Every part of scenario ``s``: the parts of each source of :data:`PART_SOURCES` in order. Keys are unique."""
    found: list[ResidentPart] = []
    for source in PART_SOURCES if sources is None else sources:
        if source in NEEDS and not getattr(s, NEEDS[source], None):
            continue
        module, _, function = source.partition(":")
        from importlib import import_module

        found.extend(getattr(import_module(module), function)(s, pricer))
    keys = [p.key for p in found]
    if len(set(keys)) != len(keys):
        raise FieldError("parts", f"two parts have the same key: {', '.join(keys)}")
    return tuple(found)
