"""The error a cache model raises for a cache type its runtime cannot hold."""

from __future__ import annotations

from kvplan.errors import FieldError, UsageError


# The fields that set the K (or V) cache type, best first, and where else a file may report an error about it.
FORMAT_FIELDS = {"k": ("k_type", "k_bits", "kv_type", "kv_bits"), "v": ("v_type", "v_bits", "kv_type", "kv_bits"),
                 "kv": ("kv_type", "kv_bits", "k_type", "k_bits", "v_type", "v_bits")}


class CacheTypeError(FieldError):
    """A cache type a runtime cannot hold. ``template`` has a ``{given}`` slot for the type as it was asked
    for, and the message leads with the field that asked (``kv_bits: … 3 bits (int3) is not one of them``):
    :func:`runtime_cache_for` fills both from the scenario (``kv_bits``, ``k_type``, or the model profile's
    own type); a direct caller gets ``k_type`` / ``v_type`` and the type's name."""

    def __init__(self, template: str, side: str, fmt) -> None:
        self.template, self.side, self.fmt = template, side, fmt
        super().__init__(f"{side}_type", template.format(given=repr(fmt.name)),
                         about=FORMAT_FIELDS[side][1:] + ("runtime",))

    def given_as(self, field: str | None, given: str) -> UsageError:
        message = self.template.format(given=given)
        if not field:
            return UsageError(message)
        side = field.split("_")[0]  # a type stands in for the other fields of its side (a file may set those)
        about = tuple(f for f in FORMAT_FIELDS[side] if f != field) + ("runtime",) if field.endswith("_type") else ()
        return FieldError(field, message, about=about)
