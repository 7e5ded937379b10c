"""Derived figures of a model profile, shared by the pydantic :class:`~kvplan.profiles.spec.Model` and the
plain :class:`~kvplan.profiles.records.ModelRecord` the fast path uses (no pydantic import)."""

from __future__ import annotations

from kvplan.engine.formats import ElementFormat, format_from_bits, format_from_name


class ModelMethods:
    """Methods over the model fields (``layers``, ``kv_heads``, ``sliding_window`` …); no state of their own."""

    __slots__ = ()

    @property
    def v_dim(self) -> int:
        return self.v_head_dim or self.head_dim

    def kv_heads_of(self, layer: int) -> int:
        return self.kv_heads[layer] if isinstance(self.kv_heads, list) else self.kv_heads

    def is_local(self, layer: int) -> bool:
        """Whether a layer attends through the sliding window (not the whole context)."""
        if self.sliding_window is None:
            return False
        pattern = self.sliding_window_pattern
        if pattern == "all":
            return True
        if pattern == "alternating":
            return layer % 2 == 0
        if isinstance(pattern, str):
            period = int(pattern.split(":")[0]) + 1
            return layer % period < period - 1
        return layer in pattern

    def k_format(self) -> ElementFormat:
        return element_format(self.k_type or self.kv_type, self.k_bits or self.kv_bits, self.kv_group_size)

    def v_format(self) -> ElementFormat:
        return element_format(self.v_type or self.kv_type, self.v_bits or self.kv_bits, self.kv_group_size)


def element_format(type_name: str | None, bits: int | None, group_size: int | None) -> ElementFormat:
    if type_name is not None:
        return format_from_name(type_name)
    return format_from_bits(bits or 16, group_size or 0)
