"""Which library model and device a llama-bench file was measured with, from its own strings and counts.

Models. llama-bench's ``model_type`` reads ``"<arch> <size label> <file type>"`` (``llama 7B Q4_0``,
``qwen2 7B Q8_0``, older builds ``LLaMA 7B mostly F16``) and ``model_n_params`` is the number of values in
the GGUF's tensors. :func:`recognise_model` takes, among the candidates of the same llama.cpp architecture:

1. the one whose GGUF tensor count equals ``model_n_params`` (what llama-bench counts, rope-factor tensors
   included);
2. else the one whose ``params`` field equals it;
3. else the one within :data:`NEAR_FRACTION` of it (a Markdown table prints ``6.74 B``; a fine-tune may add a
   few vocabulary rows, which move neither the KV cache nor the layer shape);

and only when exactly one candidate qualifies at the first step that finds any. The size label is not used:
llama.cpp derives it from the layer count, and several profiles share it.

Devices. :func:`recognise_device` looks for the bench file's ``gpu_info``/``cpu_info`` strings (``Apple M2``)
as whole phrases in the candidates' descriptions; a phrase followed by a tier word (``Pro``, ``Max``, ``Ultra``,
``Plus``) names another chip and does not match. A ``Metal`` backend keeps only Apple platforms. The matches
must form one family — profiles whose names differ only in a trailing RAM size (``macbook-air-m2-8gb``,
``macbook-air-m2-16gb``) — and the one with the smallest RAM is taken: the bench file does not say how much
RAM the machine has, and the smallest never promises memory a user may not have.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

# A count within this fraction of a profile's is the same model with a trimmed or grown vocabulary.
NEAR_FRACTION = 0.01
_TIER_WORDS = ("pro", "max", "ultra", "plus")
_APPLE_PLATFORMS = ("macos", "ios")


@dataclass(frozen=True)
class ModelCandidate:
    """A model profile as recognition sees it.

    ``arch`` is llama.cpp's architecture name (``llama`` for a Mistral); ``gguf_params`` [count] the values of
    its GGUF tensor inventory (None when the architecture has no known layout); ``params`` [count] its
    ``params`` field.
    """

    name: str
    arch: str
    gguf_params: int | None
    params: int | None


@dataclass(frozen=True)
class Recognition:
    """The profile recognised (None: none) and why, in words for a note."""

    name: str | None
    reason: str
    candidates: tuple[str, ...] = ()


@dataclass(frozen=True)
class DeviceCandidate:
    """A device profile as recognition sees it: ``ram_bytes`` [bytes] orders a family, ``ram`` is its text."""

    name: str
    description: str
    platform: str | None
    ram_bytes: int
    ram: str


def model_arch(model_type: str) -> str:
    """llama.cpp's architecture name at the start of a llama-bench ``model_type`` (lower case)."""
    words = model_type.split()
    return words[0].lower() if words else ""


def recognise_model(model_type: str, n_params: int, candidates: Iterable[ModelCandidate]) -> Recognition:
    """The candidate ``model_type`` / ``model_n_params`` describe, by the rules of the module docstring."""
    arch = model_arch(model_type)
    same_arch = [c for c in candidates if c.arch == arch]
    if not same_arch:
        return Recognition(None, f"no library model profile has llama.cpp architecture {arch!r}")
    count = f"model_n_params {n_params:,}"
    steps = (("GGUF tensor count", lambda c: c.gguf_params == n_params),
             ("params field", lambda c: c.params == n_params))
    for what, test in steps:
        hits = [c.name for c in same_arch if test(c)]
        if len(hits) == 1:
            return Recognition(hits[0], f"{count} = {hits[0]}'s {what} (architecture {arch})", tuple(hits))
        if hits:
            return Recognition(None, f"{count} is the {what} of several profiles ({', '.join(hits)})", tuple(hits))
    nearest = sorted(same_arch, key=lambda c: abs(_count(c) - n_params))
    near = [c for c in nearest if abs(_count(c) - n_params) <= NEAR_FRACTION * n_params]
    if len(near) == 1:
        off = (_count(near[0]) - n_params) / n_params
        return Recognition(near[0].name, f"{count} is {off * 100:+.2f} % from {near[0].name}'s {_count(near[0]):,} "
                           f"(architecture {arch}; no profile has the exact count)", (near[0].name,))
    if near:
        names = tuple(c.name for c in near)
        return Recognition(None, f"{count} is within {NEAR_FRACTION:.0%} of several profiles ({', '.join(names)})",
                           names)
    best = nearest[0]
    off = (_count(best) - n_params) / n_params
    return Recognition(None, f"no {arch} profile has {count} (nearest: {best.name} {_count(best):,}, "
                       f"{off * 100:+.1f} %)")


def _count(candidate: ModelCandidate) -> int:
    return candidate.gguf_params or candidate.params or 0


def _normal(text: str) -> str:
    text = re.sub(r"\((r|tm)\)|[®™]", " ", text.lower())
    return " ".join(text.split())


def _names_chip(description: str, hardware: str) -> bool:
    phrase = re.escape(_normal(hardware))
    tier = "|".join(_TIER_WORDS)
    return re.search(rf"(?<![a-z0-9]){phrase}(?![a-z0-9])(?!\s+(?:{tier})\b)", _normal(description)) is not None


def family(name: str) -> str:
    """A device profile's name without its trailing RAM size: ``macbook-air-m2-8gb`` → ``macbook-air-m2``."""
    return re.sub(r"-\d+(?:gb|tb)$", "", name.lower())


def recognise_device(hardware: Iterable[str], backends: Iterable[str],
                     candidates: Iterable[DeviceCandidate]) -> Recognition:
    """The device profile the bench file's hardware strings name, by the rules of the module docstring."""
    strings = sorted({h.strip() for h in hardware if h and len(h.strip()) >= 3})
    if not strings:
        return Recognition(None, "the bench files carry no cpu_info/gpu_info (Markdown tables never do)")
    pool = list(candidates)
    if any("metal" in b.lower() for b in backends if b):
        pool = [c for c in pool if c.platform in _APPLE_PLATFORMS or c.platform is None]
    said = ", ".join(repr(s) for s in strings)
    matched = sorted({c for c in pool if any(_names_chip(c.description, s) for s in strings)},
                     key=lambda c: (c.ram_bytes, c.name))
    if not matched:
        return Recognition(None, f"no library device's description names {said}")
    names = tuple(c.name for c in matched)
    families = sorted({family(c.name) for c in matched})
    if len(families) > 1:
        return Recognition(None, f"{said} names devices of several families ({', '.join(names)})", names)
    chosen = matched[0]
    if len(matched) == 1:
        return Recognition(chosen.name, f"{said} names {chosen.name} alone", names)
    return Recognition(chosen.name, f"{said} names {' and '.join(names)} (one family); {chosen.name} taken, the "
                       f"smallest RAM ({chosen.ram}), as llama-bench does not record the RAM", names)
