"""A hostile GGUF header is bad input (exit 2), as llama.cpp's own reader refuses it — never exit 3."""

from __future__ import annotations

import pytest

from tests.hardening import gguf_bytes as g


def test_the_builder_makes_a_header_kvplan_imports(run, tmp_path):
    path = tmp_path / "tiny.gguf"
    path.write_bytes(g.llama())
    result = run("import", "gguf", path)
    assert result.exit_code == 0, result.stderr
    assert "layers: 2" in result.stdout


@pytest.mark.parametrize("name, data, message", [
    ("nested", g.llama([g.nested_array("x.nested", 5000)]), "GGUF arrays nested deeper than 8 levels"),
    ("dup-key", g.llama([g.kv_u32("llama.block_count", 40)]), "GGUF metadata key 'llama.block_count' given twice"),
    ("dup-tensor", g.llama(tensors=[g.tensor("token_embd.weight", (64, 100))] * 2),
     "GGUF tensor 'token_embd.weight' given twice"),
])
def test_hostile_headers_are_refused(run, tmp_path, name, data, message):
    path = tmp_path / f"{name}.gguf"
    path.write_bytes(data)
    for argv in (["import", "gguf", path], ["check", "--device", "pixel8", "--ctx", "4k", "--model", path]):
        result = run(*argv)
        assert result.exit_code == 2, result.stderr
        assert message in result.stderr
