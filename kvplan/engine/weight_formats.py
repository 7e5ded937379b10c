"""Weight formats by name: which names kvplan prices tensor by tensor, and their canonical spelling."""

from __future__ import annotations

from kvplan.engine.names import did_you_mean
from kvplan.engine.group_quant import GROUP_FORMATS, price_group_format
from kvplan.engine.quantize import FILE_TYPES, WeightPricing, price_gguf
from kvplan.engine.tensors import ModelShape

WEIGHT_FORMATS = tuple(FILE_TYPES) + tuple(GROUP_FORMATS)


def weight_format_key(name: str) -> str:
    """The canonical name of a weight format (``Q4_K_M`` → ``q4_k_m``, ``gguf-q4_0`` → ``q4_0``).

    Parameters
    ----------
    name : str
        The format as written.

    Returns
    -------
    str
        A key of :data:`WEIGHT_FORMATS`; an unknown name raises ``ValueError`` naming the known formats
        (pydantic reports it at the field's line).
    """
    key = str(name).strip().lower().removeprefix("gguf-")
    if key not in WEIGHT_FORMATS:
        known = ", ".join(WEIGHT_FORMATS)
        hint = did_you_mean(key, WEIGHT_FORMATS)
        if hint:  # a near miss: the guesses first, the whole list after them
            raise ValueError(f"unknown weight format {name!r}{hint} (known: {known})")
        raise ValueError(f"unknown weight format {name!r}; known: {known}")
    return key


def price_weights(shape: ModelShape, fmt: str, **options) -> WeightPricing:
    """Price the weights in any supported format: a GGUF file type or a group-quantized format.

    Parameters
    ----------
    shape : ModelShape
        The model's tensor shapes.
    fmt : str
        A key of FILE_TYPES (optionally prefixed ``gguf-``) or one of ``group_quant.GROUP_FORMATS``
        (``mlx-4bit``, ``gptq-4bit``, ``executorch-8da4w`` …).
    **options
        Passed to the pricing function of that family (:func:`~kvplan.engine.quantize.price_gguf`,
        :func:`~kvplan.engine.group_quant.price_group_format`).

    Returns
    -------
    WeightPricing
        Every tensor's type and bytes, and ``total_bytes`` [bytes].
    """
    key = fmt.lower().removeprefix("gguf-")
    if key in FILE_TYPES:
        return price_gguf(shape, key, **options)
    return price_group_format(shape, key, **options)
