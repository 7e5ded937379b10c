"""A model's weights tensor by tensor, as ``kvplan profiles show MODEL --weights`` prints them: result types only
(:mod:`kvplan.plan.weight_breakdown` makes them; render reads them). Apart from :mod:`kvplan.plan.results` so a
check, which never shows them, does not build these classes at start-up."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kvplan.engine.quantize import PricedTensor


@dataclass(frozen=True)
class TensorGroup:
    """Tensors of one name pattern, shape and storage type: ``layers`` are the block indices (empty outside
    blocks), ``bytes`` their sum [bytes]."""

    pattern: str
    layers: tuple[int, ...]
    count: int
    shape: tuple[int, ...]
    dtype: str
    kind: str
    bytes: int


@dataclass(frozen=True)
class WeightBreakdown:
    """A model's weights in one format. ``weight_type`` None: uniform ``bits_per_weight`` (no tensors);
    ``explicit``: the profile's own ``weights`` size is what every check uses."""

    model: str
    weight_type: str | None
    group_size: int | None
    total_bytes: int
    n_params: int
    bits_per_weight: float
    read_bytes: int
    groups: tuple[TensorGroup, ...] = ()
    tensors: tuple[PricedTensor, ...] = ()
    explicit_bytes: int | None = None
    source: str = "option"  # "option": --weight-type; "profile": the profile's weight_type; "uniform"
