"""The core names fields; the CLI words them as its flags (kvplan.cli.fieldnames). The same notes and errors,
seen by a library caller and by a user at the terminal."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvplan.errors import FieldText, NotFoundError, ProfileError

DATA = Path(__file__).resolve().parents[1] / "data"
DEEPSEEK = DATA / "hf_configs" / "deepseek-v2-lite.json"  # a mixture of experts


def test_import_notes_name_the_field_for_a_library_caller_and_the_flag_at_the_terminal(run):
    from kvplan.importers.hf import profile_from_hf_file

    imported = profile_from_hf_file(DEEPSEEK, params=15_000_000_000)
    notes = [n for n in imported.notes if isinstance(n, FieldText)]
    assert "profile named 'deepseek-v2-lite' after the file name 'deepseek-v2-lite.json'; name sets another" in notes
    assert any("params_active is derived only when params is (no params);" in n for n in notes)
    assert 'params: "given by the caller"' in imported.yaml_text  # sources.params: the caller did not type a flag

    result = run("import", "hf", DEEPSEEK, "--params", "15B")
    assert result.exit_code == 0
    assert "kvplan: note: profile named 'deepseek-v2-lite' after the file name 'deepseek-v2-lite.json'; " \
           "--name sets another" in result.stderr
    assert "params_active is derived only when params is (no --params);" in result.stderr
    assert 'params: "given on the command line (--params)"' in result.stdout


def test_an_unknown_profile_points_at_the_listing_by_field_or_by_flag(run):
    from kvplan.profiles.catalog import Catalog

    with pytest.raises(NotFoundError) as caught:
        Catalog().device("nowhere-phone-9")
    assert "(see 'kvplan profiles list kind=device', or pass a YAML path)" in str(caught.value)
    result = run("check", "--device", "nowhere-phone-9", "--model", "7b", "--ctx", "4k")
    assert result.exit_code == 2
    assert "(see 'kvplan profiles list --kind device', or pass a YAML path)" in result.stderr


def test_a_document_of_neither_kind(run, tmp_path):
    from kvplan.profiles.check import validate_file

    path = tmp_path / "x.yaml"
    path.write_text("foo: 1\n")
    problem = f"{path}:1: (document): cannot tell a device from a model by its keys; give kind=device or kind=model"
    assert validate_file(path).problems == [problem]
    result = run("profiles", "validate", path)
    assert result.exit_code == 2
    assert f"{path}:1: (document): cannot tell a device from a model by its keys; give --kind device or " \
           "--kind model" in result.stdout


def _tensorless_gguf(path: Path) -> Path:
    gguf = pytest.importorskip("gguf")
    w = gguf.GGUFWriter(str(path), "llama")
    for add, value in ((w.add_block_count, 2), (w.add_head_count, 4), (w.add_head_count_kv, 2),
                       (w.add_key_length, 64), (w.add_embedding_length, 256), (w.add_context_length, 4096)):
        add(value)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def test_a_gguf_without_tensors_asks_for_the_count(run, tmp_path):
    path = _tensorless_gguf(tmp_path / "empty.gguf")
    from kvplan.importers.gguf import profile_from_gguf_file

    with pytest.raises(ProfileError) as caught:
        profile_from_gguf_file(path)
    assert str(caught.value) == f"{path}: the file lists no tensors, so kvplan cannot count its parameters: import it with a parameter count (params) and use that profile"
    result = run("import", "gguf", path)
    assert result.exit_code == 2
    assert result.stderr == f"kvplan: error: {path}: the file lists no tensors, so kvplan cannot count its parameters: import it with a parameter count (--params) and use that profile\n"


def test_a_gate_words_a_profile_problem_with_the_flag_too(run, tmp_path):
    path = _tensorless_gguf(tmp_path / "empty.gguf")
    gate = tmp_path / "g.yaml"
    gate.write_text(f"configurations:\n  - name: a\n    device: pixel8\n    model: {path}\n    ctx: 4k\n")
    result = run("gate", gate)
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        f"kvplan: error: {gate}:4: configurations.0.model: invalid model profile '{path}':",
        f"kvplan: error:   {path}: the file lists no tensors, so kvplan cannot count its parameters: import it with a parameter count (--params) and use that profile"]
