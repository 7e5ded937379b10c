"""A model's weights tensor by tensor, grouped for reading: what ``kvplan profiles show MODEL --weights`` prints.

The pricing is :func:`kvplan.plan.weights.priced_weights` (llama.cpp's quantizer rules for GGUF types, the
group formats' own rules); here the tensors of the layers are folded into one row per name pattern, shape
and storage type (``blk.*.attn_v.weight`` in q6_K on 11 layers, in q4_K on the other 21), with each row's
share of the total. Without a named format the weights are ``params × weight_bits / 8``
(:func:`kvplan.plan.weights_of`), and the breakdown says only that.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kvplan.engine.quantize import PricedTensor, WeightPricing
    from kvplan.profiles.spec import Model

from kvplan.plan.weight_results import TensorGroup, WeightBreakdown

_LAYER_RE = re.compile(r"^blk\.(\d+)\.")


def group_tensors(tensors: tuple[PricedTensor, ...]) -> tuple[TensorGroup, ...]:
    """Fold ``blk.N.`` tensors of one name, shape and type into a row, in the order each name first appears."""
    rows: dict[tuple, list] = {}
    for t in tensors:
        match = _LAYER_RE.match(t.name)
        pattern = _LAYER_RE.sub("blk.*.", t.name) if match else t.name
        key = (pattern, t.shape, t.dtype)
        row = rows.setdefault(key, [t.kind, [], 0, 0])
        if match:
            row[1].append(int(match.group(1)))
        row[2] += 1
        row[3] += t.bytes
    first = {pattern: i for i, (pattern, _, _) in reversed(list(enumerate(rows)))}
    ordered = sorted(rows.items(), key=lambda item: first[item[0][0]])  # a pattern's types side by side
    return tuple(TensorGroup(pattern, tuple(layers), count, shape, dtype, kind, size)
                 for (pattern, shape, dtype), (kind, layers, count, size) in ordered)


def weight_breakdown(model: Model, weight_type: str | None = None, group_size: int | None = None) -> WeightBreakdown:
    """``model``'s weights in ``weight_type`` (else the profile's ``weight_type``), tensor by tensor; with
    neither, what a uniform ``weight_bits`` gives. Raises FieldError for a model without a tensor layout."""
    from kvplan.engine.quantize import FILE_TYPES
    from kvplan.errors import FieldError
    from kvplan.plan.basis import weights_of
    from kvplan.plan.weights import bytes_read_per_token, priced_weights

    source = "option" if weight_type is not None else "profile"
    weight_type = weight_type if weight_type is not None else getattr(model, "weight_type", None)
    explicit = getattr(model, "weights", None)
    if weight_type is None:
        weights, read, bits = weights_of(model, None)
        return WeightBreakdown(model.name, None, None, weights, model.params, bits, read, explicit_bytes=explicit,
                               source="uniform")
    weight_type = _format_key(weight_type)
    if group_size and weight_type in FILE_TYPES:  # a GGUF type's blocks are fixed by the type itself
        raise FieldError("weight_group_size", f"sets the group of a group-quantized format (mlx-4bit, gptq-4bit, …); "
                         f"{weight_type}'s block size is part of the type")
    pricing: WeightPricing = priced_weights(model, weight_type, group_size or 0)
    return WeightBreakdown(model.name, pricing.format, group_size, pricing.total_bytes, pricing.n_params,
                           pricing.bits_per_weight, bytes_read_per_token(pricing, model),
                           group_tensors(pricing.tensors), pricing.tensors, explicit, source)


def _format_key(name: str) -> str:
    from kvplan.engine.weight_formats import weight_format_key
    from kvplan.errors import FieldError

    try:
        return weight_format_key(name)
    except ValueError as exc:
        raise FieldError("weight_type", str(exc)) from None
