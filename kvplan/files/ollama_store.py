"""Find a model's GGUF in a local Ollama store, offline (the layout of Ollama v0.32.15).

- The store is ``$OLLAMA_MODELS`` or ``~/.ollama/models`` (``envconfig/config.go`` :: ``Models``, 113-124); the CLI
  reads the variable and passes the directory down.
- A name is ``[HOST/][NAMESPACE/]MODEL[:TAG]`` with defaults ``registry.ollama.ai``, ``library``, ``latest``
  (``types/model/name.go``, 39-41); its manifest is ``manifests/HOST/NAMESPACE/MODEL/TAG``
  (``Name.Filepath``, 292-300; ``manifest/paths.go`` :: ``PathForName``, 27-38).
- The weights are the manifest layer of media type ``application/vnd.ollama.image.model`` (``server/images.go``,
  717), stored as ``blobs/sha256-<hex>`` (``manifest/paths.go`` :: ``BlobsPath``, 41-60: ``sha256:`` → ``sha256-``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from kvplan.errors import FieldError

MODEL_MEDIA_TYPE = "application/vnd.ollama.image.model"
DEFAULT_HOST, DEFAULT_NAMESPACE, DEFAULT_TAG = "registry.ollama.ai", "library", "latest"
_DIGEST = re.compile(r"^sha256[:-]([0-9a-fA-F]{64})$")


def manifest_parts(name: str) -> tuple[str, str, str, str]:
    """(host, namespace, model, tag) of an Ollama model name."""
    head, colon, tail = name.rpartition(":")
    base, tag = (head, tail) if colon and "/" not in tail else (name, "")  # a host's port is not a tag
    parts = base.split("/")
    if not base or not all(parts) or len(parts) > 3 or (colon and not tag and "/" not in tail):
        raise FieldError("model", f"not an Ollama model name: {name!r} (expected [HOST/][NAMESPACE/]MODEL[:TAG])")
    host, namespace = DEFAULT_HOST, DEFAULT_NAMESPACE
    if len(parts) == 3:
        host, namespace, model = parts
    elif len(parts) == 2:
        namespace, model = parts
    else:
        (model,) = parts
    return host, namespace, model, tag or DEFAULT_TAG


def ollama_blob(name: str, models_dir: str | Path) -> Path:
    """The GGUF blob of ``name`` in the store at ``models_dir`` (a one-line FieldError naming the path otherwise)."""
    store = Path(models_dir).expanduser()
    manifest = store.joinpath("manifests", *manifest_parts(name))
    try:
        doc = json.loads(manifest.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FieldError("model", f"no Ollama manifest for {name!r} at {manifest}") from None
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise FieldError("model", f"unreadable Ollama manifest {manifest}: {str(e).splitlines()[0]}") from None
    layers = doc.get("layers") if isinstance(doc, dict) else None
    digests = [layer.get("digest") for layer in layers or () if isinstance(layer, dict)
               and layer.get("mediaType") == MODEL_MEDIA_TYPE]
    if not digests:
        raise FieldError("model", f"Ollama manifest {manifest} has no layer of media type {MODEL_MEDIA_TYPE}")
    match = _DIGEST.match(str(digests[0]))
    if not match:
        raise FieldError("model", f"Ollama manifest {manifest}: bad model digest {digests[0]!r}")
    blob = store / "blobs" / f"sha256-{match.group(1)}"
    if not blob.is_file():
        raise FieldError("model", f"Ollama model {name!r}: blob {blob} is missing")
    return blob
