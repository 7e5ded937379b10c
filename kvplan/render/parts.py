"""How check words a resident part (:mod:`kvplan.plan.parts`): one row label per part key, and its JSON.

Keyed by the part's stable key, never by a runtime: a key without words is shown by its key (a test fails for a
key a built-in source makes without words here).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kvplan.plan.results import Evaluation, Part

# key → the row's label, with the part's values in {name} placeholders
PART_WORDS = {
    "draft_weights": "draft model {model}: weights ({weights})",
    "draft_kv": "draft model {model}: KV cache ({kv_format}, {ctx_tokens:,} tokens)",
    "draft_buffers": "draft model {model}: llama.cpp compute and output buffers of its context",
    "draft_verify_outputs": "{model}: llama.cpp output buffer grown to {rows} rows of logits per sequence (verification)",
    "mtp_weights": "MTP head of {model}: weights of its {mtp_layers} MTP layer(s) ({weights})",
    "mtp_kv": "MTP head of {model}: KV cache of its MTP layer(s) ({kv_format})",
    "mtp_state_snapshots": "MTP head of {model}: {snapshots} rollback snapshots of the state per sequence",
    "mtp_buffers": "MTP head of {model}: llama.cpp compute and output buffers of its MTP context",
    "mtp_verify_outputs": "{model}: llama.cpp output buffer grown to {rows} rows of logits per sequence and "
                          "{hidden_rows:,} hidden rows (MTP verification)",
    "encoder_weights": "vision encoder ({encoder}): weights ({weight_type})",
    "encoder_compute": "vision encoder ({encoder}): compute buffer (one {encoded_size} image, {attention})",
    "image_kv": "KV of the image tokens ({images} × {tokens_per_image:,} = {image_tokens:,} added to the context)",
    "audio_encoder_weights": "audio encoder ({audio_encoder}): weights ({weight_type})",
    "audio_encoder_compute": "audio encoder ({audio_encoder}): compute buffer (one {encoded_frames:,}-frame mel "
                             "chunk, {attention})",
    "audio_kv": "KV of the audio tokens ({audio} × {tokens_per_clip:,} = {audio_tokens:,} added to the context)",
}


class _Missing(dict):
    def __missing__(self, name: str) -> str:
        return "?"


# words derived from a part's values for its label (the core gives facts, render words them)
_DERIVED_WORDS = {
    "attention": lambda facts: "flash attention" if facts.get("flash_attn", True) else "no flash attention",
}


def part_label(part: Part) -> str:
    """The memory table's row label of ``part``."""
    words = PART_WORDS.get(part.key)
    if words is None:
        return part.key.replace("_", " ")
    facts = part.facts
    facts = {**{name: word(facts) for name, word in _DERIVED_WORDS.items()}, **facts}
    try:
        return words.format_map(_Missing(facts))
    except (ValueError, TypeError):  # a value of another type than its placeholder formats: the plain words
        return part.key.replace("_", " ")


def parts_json(ev: Evaluation) -> dict:
    """``memory.parts`` (key → ``bytes``, ``read_bytes_per_step``, ``memory`` and the part's own values) and
    ``memory.parts_bytes``; no keys at all when the configuration has no resident part."""
    if not ev.parts:
        return {}
    return {"parts": {p.key: {"bytes": p.bytes, "read_bytes_per_step": p.read_bytes, "memory": p.memory,
                              **p.facts} for p in ev.parts},
            "parts_bytes": ev.parts_bytes}
