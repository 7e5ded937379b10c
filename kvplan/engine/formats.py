"""Element formats of a KV cache row: how many bytes ``n`` cached values take.

A row is one token's keys (or values) in one layer: ``kv_heads × head_dim`` values.
Every format here is "``bits`` per value, plus ``scale_bytes`` + ``zero_bytes`` per
group of ``group_size`` values", which covers plain floats (no groups), ideal
group-quantized integers and the block layouts of llama.cpp (ggml-common.h:
block_q8_0 = fp16 scale + 32 int8 = 34 bytes per 32 values, block_q4_0 = 18, …).
"""

from __future__ import annotations

from dataclasses import dataclass

from kvplan.engine.names import did_you_mean
from kvplan.errors import UsageError


@dataclass(frozen=True)
class ElementFormat:
    """Storage of cached values: ``bits`` each, plus per-group scale and zero-point bytes."""

    name: str
    bits: int
    group_size: int = 0  # 0: no groups, no scales
    scale_bytes: int = 0
    zero_bytes: int = 0

    def row_bytes(self, values: int) -> int:
        """Exact bytes of a row of ``values`` elements: packed data rounded up to a byte, whole groups.

        Parameters
        ----------
        values : int [values]
            Elements in the row.

        Returns
        -------
        int [bytes]
            ``ceil(values · bits / 8) + ceil(values / group_size) · (scale_bytes + zero_bytes)``
            (no group term for an ungrouped format).
        """
        data = -(-values * self.bits // 8)
        groups = -(-values // self.group_size) if self.group_size else 0
        return data + groups * (self.scale_bytes + self.zero_bytes)

    @property
    def bytes_per_value(self) -> float:
        """Average bytes per value in a full group (for display; sizes use :meth:`row_bytes`)."""
        overhead = (self.scale_bytes + self.zero_bytes) / self.group_size if self.group_size else 0.0
        return self.bits / 8 + overhead


# The runtimes' own type names (ggml.c type_traits: blck_size and type_size).
NAMED_FORMATS: dict[str, ElementFormat] = {
    "f32": ElementFormat("f32", 32),
    "f16": ElementFormat("f16", 16),
    "bf16": ElementFormat("bf16", 16),
    "fp8": ElementFormat("fp8", 8),
    "int8": ElementFormat("int8", 8),
    "int4": ElementFormat("int4", 4),
    "q8_0": ElementFormat("q8_0", 8, 32, 2),
    "q4_0": ElementFormat("q4_0", 4, 32, 2),
    "q4_1": ElementFormat("q4_1", 4, 32, 2, 2),
    "q5_0": ElementFormat("q5_0", 5, 32, 2),
    "q5_1": ElementFormat("q5_1", 5, 32, 2, 2),
    "iq4_nl": ElementFormat("iq4_nl", 4, 32, 2),
}
_SYNONYMS = {"fp32": "f32", "fp16": "f16", "float16": "f16", "float32": "f32", "bfloat16": "bf16"}

# Blocked types whose rows must be a whole number of blocks (llama.cpp asserts this).
BLOCKED_TYPES = frozenset(name for name, fmt in NAMED_FORMATS.items() if fmt.group_size)


def format_from_bits(bits: int, group_size: int = 0, scale_bytes: int = 2, zero_bytes: int = 0) -> ElementFormat:
    """An ideal format of ``bits`` per value, optionally group-quantized with fp16 scales.

    Parameters
    ----------
    bits : int [bits/value]
        Width of one value (1–32).
    group_size : int [values]
        Values sharing one scale (0: no groups).
    scale_bytes : int [bytes]
        Bytes of each group's scale.
    zero_bytes : int [bytes]
        Bytes of each group's zero point (0: symmetric).

    Returns
    -------
    ElementFormat
        ``f32``/``f16``/``intN``, or ``intN/gG`` with groups.
    """
    if not 1 <= bits <= 32:
        raise UsageError(f"bits must be between 1 and 32, got {bits}")
    if group_size < 0:
        raise UsageError(f"group size must be positive, got {group_size}")
    name = {32: "f32", 16: "f16"}.get(bits, f"int{bits}") if not group_size else f"int{bits}/g{group_size}"
    if not group_size:
        return ElementFormat(name, bits)
    return ElementFormat(name, bits, group_size, scale_bytes, zero_bytes)


def format_from_name(name: str) -> ElementFormat:
    """Look up a runtime type name (``f16``, ``q8_0`` …) or a bit width (``8``).

    Parameters
    ----------
    name : str
        A type name of :data:`NAMED_FORMATS` (or a synonym), or a bit width as text.

    Returns
    -------
    ElementFormat
        The format; an unknown name raises :class:`~kvplan.errors.UsageError` with the near misses.
    """
    key = str(name).strip().lower()
    key = _SYNONYMS.get(key, key)
    if key in NAMED_FORMATS:
        return NAMED_FORMATS[key]
    if key.isdigit():
        return format_from_bits(int(key))
    known = ", ".join(NAMED_FORMATS)
    hint = did_you_mean(key, {**{n: n for n in NAMED_FORMATS}, **_SYNONYMS})
    if hint:  # a near miss: the guesses first, the whole list after them
        raise UsageError(f"unknown cache type {name!r}{hint} (known: {known}, or a bit width 1-32)")
    raise UsageError(f"unknown cache type {name!r}; known: {known}, or a bit width 1-32")
