"""Models on the Hugging Face Hub: ``hf:ORG/NAME[@REVISION][:QUANT_OR_FILENAME]``.

``spec`` parses the reference (no dependencies), ``fetch`` talks to the Hub through
``huggingface_hub`` (imported lazily), ``gguf_remote`` reads a GGUF header by HTTP range, and
``resolve`` turns a reference into a cached model profile. Importing this package imports nothing
else: the CLI's start-up stays fast.
"""

from __future__ import annotations

__all__ = ["HubSpec", "is_hub_spec", "parse_hub_spec", "resolve_hub_model", "resolve_hub_profile"]


def __getattr__(name: str):
    if name in ("HubSpec", "is_hub_spec", "parse_hub_spec"):
        from kvplan.hub import spec

        return getattr(spec, name)
    if name in ("resolve_hub_model", "resolve_hub_profile"):
        from kvplan.hub import resolve

        return getattr(resolve, name)
    raise AttributeError(f"module 'kvplan.hub' has no attribute {name!r}")
