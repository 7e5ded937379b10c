"""--model ollama:NAME: the local Ollama store's layout (kvplan/files/ollama_store.py, Ollama v0.32.15)."""

from __future__ import annotations

import json

import pytest

from kvplan.errors import FieldError
from kvplan.files.ollama_store import manifest_parts, ollama_blob
from kvplan.importers.gguf import profile_from_gguf_file
from tests.unit.test_import_gguf import write_gguf

HEX = "ab" * 32


def store(tmp_path, parts, layers):
    manifest = tmp_path.joinpath("manifests", *parts)
    manifest.parent.mkdir(parents=True)
    manifest.write_text(json.dumps({"schemaVersion": 2, "layers": layers}))
    (tmp_path / "blobs").mkdir(exist_ok=True)
    return tmp_path


@pytest.mark.parametrize("name, parts", [
    ("qwen3", ("registry.ollama.ai", "library", "qwen3", "latest")),  # defaults (types/model/name.go 39-41)
    ("qwen3:4b", ("registry.ollama.ai", "library", "qwen3", "4b")),
    ("me/tiny:q8", ("registry.ollama.ai", "me", "tiny", "q8")),
    ("hf.co/org/tiny:Q4_K_M", ("hf.co", "org", "tiny", "Q4_K_M")),
])
def test_manifest_parts(name, parts):
    assert manifest_parts(name) == parts


@pytest.mark.parametrize("bad", ["", "a/b/c/d", "a//b", "qwen3:"])
def test_bad_names(bad):
    with pytest.raises(FieldError):
        manifest_parts(bad)


def test_blob_is_read_by_the_gguf_importer(tmp_path):
    root = store(tmp_path, ("registry.ollama.ai", "library", "tiny", "latest"),
                 [{"mediaType": "application/vnd.ollama.image.template", "digest": "sha256:" + "cd" * 32},
                  {"mediaType": "application/vnd.ollama.image.model", "digest": "sha256:" + HEX}])
    write_gguf(root / "blobs" / f"sha256-{HEX}", "llama", layers=4, kv_heads=2)
    blob = ollama_blob("tiny", root)
    assert blob == root / "blobs" / f"sha256-{HEX}"
    model = profile_from_gguf_file(blob).model
    assert (model.layers, model.kv_heads) == (4, 2)  # what write_gguf wrote


def test_missing_manifest_names_the_path(tmp_path):
    with pytest.raises(FieldError, match=r"manifests/registry.ollama.ai/library/nope/latest"):
        ollama_blob("nope", tmp_path)


@pytest.mark.parametrize("layers, words", [
    ([], "no layer of media type"),
    ([{"mediaType": "application/vnd.ollama.image.model", "digest": "md5:00"}], "bad model digest"),
    ([{"mediaType": "application/vnd.ollama.image.model", "digest": "sha256:" + HEX}], "is missing"),
])
def test_malformed_manifest(tmp_path, layers, words):
    root = store(tmp_path, ("registry.ollama.ai", "library", "tiny", "latest"), layers)
    with pytest.raises(FieldError, match=words):
        ollama_blob("tiny", root)


def test_manifest_not_json(tmp_path):
    root = store(tmp_path, ("registry.ollama.ai", "library", "tiny", "latest"), [])
    (root / "manifests/registry.ollama.ai/library/tiny/latest").write_text("{")
    with pytest.raises(FieldError, match="unreadable Ollama manifest"):
        ollama_blob("tiny", root)
