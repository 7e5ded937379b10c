"""``hf:ORG/NAME[@REVISION][:QUANT_OR_FILENAME]`` parsing: what it accepts, and one-line errors for the rest."""

from __future__ import annotations

import subprocess
import sys

import pytest

from kvplan.errors import UsageError
from kvplan.hub.spec import HubSpec, is_hub_spec, parse_hub_spec


@pytest.mark.parametrize("text, expected", [
    ("hf:meta-llama/Llama-3.1-8B-Instruct", HubSpec("meta-llama/Llama-3.1-8B-Instruct")),
    ("hf:bartowski/Llama-3.2-3B-Instruct-GGUF:Q4_K_M",
     HubSpec("bartowski/Llama-3.2-3B-Instruct-GGUF", None, "Q4_K_M")),
    ("hf:org/name@abc123", HubSpec("org/name", "abc123")),
    ("hf:org/name:model-q4_0.gguf", HubSpec("org/name", None, "model-q4_0.gguf")),
    ("hf:org/name@v1.0:q8_0", HubSpec("org/name", "v1.0", "q8_0")),
    ("hf:org/name@refs/pr/1", HubSpec("org/name", "refs/pr/1")),
    ("hf:org/name:sub/dir/Model-Q4_K_M-00001-of-00002.gguf",
     HubSpec("org/name", None, "sub/dir/Model-Q4_K_M-00001-of-00002.gguf")),
    ("  hf:Qwen/Qwen3-0.6B  ", HubSpec("Qwen/Qwen3-0.6B")),
])
def test_valid_specs(text, expected):
    spec = parse_hub_spec(text)
    assert spec == expected
    assert str(parse_hub_spec(str(spec))) == str(spec)  # round trip


def test_quant_and_filename_are_told_apart():
    assert parse_hub_spec("hf:o/n:Q4_K_M").quant == "Q4_K_M" and parse_hub_spec("hf:o/n:Q4_K_M").filename is None
    spec = parse_hub_spec("hf:o/n:Model.Q4_K_M.GGUF")
    assert spec.filename == "Model.Q4_K_M.GGUF" and spec.quant is None and spec.is_gguf
    assert not parse_hub_spec("hf:o/n").is_gguf and parse_hub_spec("hf:o/n").revision_or_default == "main"


@pytest.mark.parametrize("text, words", [
    ("meta-llama/Llama-3.1-8B", "not a Hugging Face Hub reference"),
    ("hf:", "no repository"),
    ("hf:llama", "must be ORG/NAME"),
    ("hf:a/b/c", "must be ORG/NAME"),
    ("hf:org/na me", "not a valid repository id"),
    ("hf:org/na--me", "not a valid repository id"),
    ("hf:org/name@", "nothing after '@'"),
    ("hf:org/name:", "nothing after ':'"),
    ("hf:org/name@bad rev", "not a valid revision"),
    ("hf:org/name@../x", "not a valid revision"),
    ("hf:org/name:Q4 K", "neither a quant name"),
    ("hf:org/name:../x.gguf", "not a valid file path"),
])
def test_bad_specs_are_one_line_usage_errors(text, words):
    with pytest.raises(UsageError) as info:
        parse_hub_spec(text)
    assert words in str(info.value) and "\n" not in str(info.value)


def test_is_hub_spec():
    assert is_hub_spec("hf:org/name") and is_hub_spec(" hf:org/name")
    assert not is_hub_spec("7b") and not is_hub_spec("models/hf.yaml") and not is_hub_spec(None)


def test_importing_the_hub_package_imports_no_http_library():
    code = ("import sys, kvplan.hub, kvplan.hub.spec, kvplan.hub.resolve, kvplan.hub.fetch, kvplan.hub.gguf_remote; "
            "bad = [m for m in ('huggingface_hub', 'httpx', 'httpx2', 'requests', 'yaml', 'pydantic') "
            "if m in sys.modules]; print(','.join(bad))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == ""
