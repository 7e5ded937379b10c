"""ggml tensor types: how many bytes a row of ``n`` values takes in each storage type.

Notes
-----
A ggml type stores values in blocks of ``block_values`` values that take
``block_bytes`` bytes each; a row must be a whole number of blocks::

    row_bytes(type, n) = (n / block_values) · block_bytes        (n % block_values == 0)
    tensor_bytes       = row_bytes(type, ne0) · ne1 · ne2 · …

Sources: llama.cpp as vendored by llama-cpp-python 0.3.36 —
``ggml/src/ggml.c`` (``type_traits[]``: ``blck_size``, ``type_size``) and
``ggml/src/ggml-common.h`` (the ``block_*`` structs and their ``static_assert`` sizes,
``QK_K = 256``, ``K_SCALE_SIZE = 12``). Each entry below spells out the block layout
(fp16 = 2 bytes) so the byte count can be checked by hand.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GgmlType:
    """A ggml storage type: ``block_bytes`` bytes hold ``block_values`` values."""

    name: str  # ggml_type_name(), e.g. "q4_K"
    block_values: int  # [values/block] blck_size
    block_bytes: int  # [bytes/block] type_size

    @property
    def bits_per_value(self) -> float:
        """Average storage per value [bits]: ``8 · block_bytes / block_values``."""
        return 8 * self.block_bytes / self.block_values

    @property
    def is_quantized(self) -> bool:
        """True for block-quantized types (ggml_is_quantized: everything but plain floats/ints)."""
        return self.name not in _PLAIN


_QK_K = 256  # super-block size of the K-quants and i-quants (ggml-common.h QK_K)

_TYPES = (
    # plain floats: one value per "block"
    GgmlType("f32", 1, 4),
    GgmlType("f16", 1, 2),
    GgmlType("bf16", 1, 2),
    # 32-value legacy blocks
    GgmlType("q4_0", 32, 18),  # fp16 d + 16 bytes of nibbles
    GgmlType("q4_1", 32, 20),  # fp16 d, fp16 m + 16
    GgmlType("q5_0", 32, 22),  # fp16 d + 4 bytes of 5th bits + 16
    GgmlType("q5_1", 32, 24),  # fp16 d, fp16 m + 4 + 16
    GgmlType("q8_0", 32, 34),  # fp16 d + 32 int8
    GgmlType("iq4_nl", 32, 18),  # fp16 d + 16 bytes of 4-bit indices
    GgmlType("mxfp4", 32, 17),  # e8m0 scale + 16
    # 256-value K-quant super-blocks
    GgmlType("q2_K", _QK_K, 84),  # 2 fp16 + 16 scale bytes + 64 bytes of 2-bit values
    GgmlType("q3_K", _QK_K, 110),  # fp16 + 32 hmask + 64 qs + 12 scales
    GgmlType("q4_K", _QK_K, 144),  # 2 fp16 + 12 scales + 128 qs
    GgmlType("q5_K", _QK_K, 176),  # 2 fp16 + 12 scales + 32 qh + 128 qs
    GgmlType("q6_K", _QK_K, 210),  # 128 ql + 64 qh + 16 int8 scales + fp16 d
    GgmlType("q8_K", _QK_K, 292),  # f32 d + 256 int8 + 16 int16 bsums
    # 256-value i-quant super-blocks
    GgmlType("iq2_xxs", _QK_K, 66),  # fp16 + 32 uint16
    GgmlType("iq2_xs", _QK_K, 74),  # fp16 + 32 uint16 + 8 scales
    GgmlType("iq2_s", _QK_K, 82),  # fp16 + 64 qs + 16 (qh, scales)
    GgmlType("iq3_xxs", _QK_K, 98),  # fp16 + 96
    GgmlType("iq3_s", _QK_K, 110),  # fp16 + 13·8 + 4 scales
    GgmlType("iq1_s", _QK_K, 50),  # fp16 + 32 qs + 16 qh
    GgmlType("iq1_m", _QK_K, 56),  # 32 qs + 16 qh + 8 scales
    GgmlType("iq4_xs", _QK_K, 136),  # fp16 d + uint16 scales_h + 4 scales_l + 128 qs
    GgmlType("tq1_0", _QK_K, 54),  # fp16 + 4 + 48
    GgmlType("tq2_0", _QK_K, 66),  # fp16 + 64
)

_PLAIN = frozenset({"f32", "f16", "bf16"})

GGML_TYPES: dict[str, GgmlType] = {t.name.lower(): t for t in _TYPES}


def ggml_type(name: str) -> GgmlType:
    """Look up a ggml type by name, case-insensitively (``"Q4_K"``, ``"q4_k"``, ``"F16"``).

    Parameters
    ----------
    name : str
        The type's name.

    Returns
    -------
    GgmlType
        Its block layout; an unknown name raises ``ValueError`` listing the known ones.
    """
    key = str(name).strip().lower()
    if key not in GGML_TYPES:
        raise ValueError(f"unknown ggml type {name!r}; known: {', '.join(t.name for t in _TYPES)}")
    return GGML_TYPES[key]


def row_bytes(type_name: str, n_values: int) -> int:
    """Bytes of one row of ``n_values`` values (ggml_row_size).

    Parameters
    ----------
    type_name : str, a ggml type name
    n_values : int [values] the row length (the tensor's first dimension, ne0)

    Returns
    -------
    int [bytes] ``n_values / block_values · block_bytes``

    Raises
    ------
    ValueError when the row is not a whole number of blocks (ggml asserts this).
    """
    t = ggml_type(type_name)
    if n_values % t.block_values:
        raise ValueError(f"a row of {n_values} values is not a whole number of {t.name} blocks of {t.block_values}")
    return n_values // t.block_values * t.block_bytes


def tensor_bytes(type_name: str, shape: tuple[int, ...]) -> int:
    """Bytes of a tensor of ``shape`` in ggml order (ne0 = row length first).

    Parameters
    ----------
    type_name : str
        The ggml type (:func:`ggml_type`).
    shape : tuple of int [values]
        Extent of each dimension, the row length first.

    Returns
    -------
    int [bytes]
        ``row_bytes(type_name, shape[0]) · Π shape[1:]``.
    """
    rows = 1
    for dim in shape[1:]:
        rows *= dim
    return row_bytes(type_name, shape[0]) * rows
