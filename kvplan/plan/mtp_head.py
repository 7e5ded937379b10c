"""``--draft mtp``: the model's own multi-token-prediction head as the speculative draft.

A marker the scenario holds in its ``draft`` field in place of a draft model profile: llama.cpp build 11434's
``--spec-type draft-mtp`` (``common/common.h`` ``COMMON_SPECULATIVE_TYPE_DRAFT_MTP``) creates a second context on
the target model itself (``common/speculative.cpp`` ``common_speculative_init_result``), so there is no other
model: the head's layers are the model's ``mtp_layers`` (:mod:`kvplan.plan.mtp` prices them).
"""

from __future__ import annotations

#: the value of the draft field (and --draft) that names the model's own MTP head
MTP_DRAFT_NAME = "mtp"


class MtpHead:
    """The draft of ``--draft mtp``: the model's own MTP head. ``name`` is what the draft rows and JSON show;
    ``params`` 0: it is no model of its own (another model keeps it as long as that model has MTP layers)."""

    __slots__ = ()
    name = MTP_DRAFT_NAME
    params = 0

    def __eq__(self, other) -> bool:
        return isinstance(other, MtpHead)

    def __hash__(self) -> int:
        return hash(MTP_DRAFT_NAME)

    def __repr__(self) -> str:
        return "MtpHead()"


MTP_HEAD = MtpHead()


def is_mtp(draft) -> bool:
    """True when ``draft`` is the model's own MTP head (the marker, or its name)."""
    return isinstance(draft, MtpHead) or draft == MTP_DRAFT_NAME
