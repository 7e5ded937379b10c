"""``hf:ORG/NAME[@REVISION][:QUANT_OR_FILENAME]``: a model on the Hugging Face Hub, as ``--model`` takes it.

- ``hf:meta-llama/Llama-3.1-8B-Instruct`` — the repository's ``config.json`` at ``main``;
- ``hf:org/name@abc123`` — at a branch, tag or commit (``@refs/pr/1`` works too);
- ``hf:bartowski/Llama-3.2-3B-Instruct-GGUF:Q4_K_M`` — the GGUF file whose name holds that quant
  (case-insensitive), header only;
- ``hf:org/name:model-q4_0.gguf`` — that exact GGUF file (a path inside the repository).

Nothing here imports ``huggingface_hub``: parsing stays free for the CLI's start-up.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kvplan.errors import UsageError

PREFIX = "hf:"
# huggingface_hub's validate_repo_id: letters, digits, '-', '_', '.'; no '--' or '..'; at most 96 characters.
_PART = r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9_])?"
_REPO_RE = re.compile(rf"^{_PART}/{_PART}$")
_REVISION_RE = re.compile(r"^[A-Za-z0-9._/-]+$")  # branch, tag, commit, refs/pr/N; no ':' (the selector separator)
_QUANT_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")
_FORM = "hf:ORG/NAME[@REVISION][:QUANT_OR_FILENAME]"


@dataclass(frozen=True)
class HubSpec:
    """A parsed ``hf:`` reference. ``revision`` None means the default branch (``main``)."""

    repo_id: str
    revision: str | None = None
    selector: str | None = None  # a quant name (Q4_K_M) or a GGUF file name (model-q4_0.gguf)

    @property
    def filename(self) -> str | None:
        """The exact GGUF file named, or None."""
        return self.selector if self.selector and self.selector.lower().endswith(".gguf") else None

    @property
    def quant(self) -> str | None:
        """The quant name to look for in GGUF file names, or None."""
        return self.selector if self.selector and not self.filename else None

    @property
    def is_gguf(self) -> bool:
        return self.selector is not None

    @property
    def revision_or_default(self) -> str:
        return self.revision or "main"

    def __str__(self) -> str:
        text = PREFIX + self.repo_id
        if self.revision:
            text += "@" + self.revision
        if self.selector:
            text += ":" + self.selector
        return text


def is_hub_spec(text: str) -> bool:
    """True when ``text`` is meant as a Hub reference (starts with ``hf:``)."""
    return isinstance(text, str) and text.strip().startswith(PREFIX)


def parse_hub_spec(text: str) -> HubSpec:
    """Parse ``hf:ORG/NAME[@REVISION][:QUANT_OR_FILENAME]``; a malformed one raises a one-line UsageError."""
    raw = str(text).strip()
    if not raw.startswith(PREFIX):
        raise UsageError(f"{raw!r} is not a Hugging Face Hub reference: expected {_FORM}")
    rest = raw[len(PREFIX):]
    selector = None
    if ":" in rest:
        rest, selector = rest.split(":", 1)
        if not selector:
            raise UsageError(f"{raw!r}: nothing after ':' (expected a quant such as Q4_K_M or a .gguf file name)")
    revision = None
    if "@" in rest:
        rest, revision = rest.split("@", 1)
        if not revision:
            raise UsageError(f"{raw!r}: nothing after '@' (expected a branch, tag or commit)")
    repo_id = rest
    if not repo_id:
        raise UsageError(f"{raw!r}: no repository (expected {_FORM}, e.g. hf:meta-llama/Llama-3.1-8B-Instruct)")
    if repo_id.count("/") != 1:
        raise UsageError(f"{raw!r}: the repository must be ORG/NAME, got {repo_id!r} (expected {_FORM})")
    if not _REPO_RE.match(repo_id) or "--" in repo_id or ".." in repo_id or len(repo_id) > 96:
        raise UsageError(f"{raw!r}: {repo_id!r} is not a valid repository id (letters, digits, '-', '_', '.'; "
                         "no '--' or '..'; at most 96 characters)")
    if revision is not None and (not _REVISION_RE.match(revision) or ".." in revision or len(revision) > 256):
        raise UsageError(f"{raw!r}: {revision!r} is not a valid revision (a branch, tag or commit hash)")
    if selector is not None:
        if selector.lower().endswith(".gguf"):
            parts = selector.split("/")
            if any(p in ("", ".", "..") for p in parts) or "\\" in selector:
                raise UsageError(f"{raw!r}: {selector!r} is not a valid file path inside the repository")
        elif not _QUANT_RE.match(selector):
            raise UsageError(f"{raw!r}: {selector!r} is neither a quant name (e.g. Q4_K_M) nor a .gguf file name")
    return HubSpec(repo_id=repo_id, revision=revision, selector=selector)
