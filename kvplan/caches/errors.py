"""The error a cache model raises for a cache type its runtime cannot hold."""

from __future__ import annotations

from kvplan.errors import UsageError


class CacheTypeError(UsageError):
    """A cache type a runtime cannot hold. ``template`` has a ``{given}`` slot for the type as it was asked
    for, and the message leads with the option that asked (``--kv-bits: … 3 bits (int3) is not one of them``):
    :func:`runtime_cache_for` fills both from the scenario (``--kv-bits``, ``--k-type``, or the model profile's
    own type); a direct caller gets ``--k-type`` / ``--v-type`` and the type's name."""

    def __init__(self, template: str, side: str, fmt) -> None:
        self.template, self.side, self.fmt = template, side, fmt
        super().__init__(f"--{side}-type: " + template.format(given=repr(fmt.name)))

    def given_as(self, option: str | None, given: str) -> UsageError:
        return UsageError((f"{option}: " if option else "") + self.template.format(given=given))
