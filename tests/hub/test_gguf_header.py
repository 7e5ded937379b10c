"""kvplan's own GGUF header parser (against the gguf package's reader) and choosing a GGUF file in a repository."""

from __future__ import annotations

import pytest

from kvplan.errors import NotFoundError, ProfileError
from kvplan.hub.gguf_remote import (
    _GGML_TYPES,
    NeedMoreData,
    ggml_type,
    header_metadata,
    parse_gguf_header,
    pick_gguf,
    profile_mapping_from_gguf,
    read_local_header,
)

gguf = pytest.importorskip("gguf")
from hubfake import write_tiny_llama_gguf


def test_ggml_table_matches_the_gguf_package():
    theirs = {int(t): size for t, size in gguf.GGML_QUANT_SIZES.items()}
    for type_id, (name, block, size) in _GGML_TYPES.items():
        assert ggml_type(type_id)[1:] == theirs[type_id], name  # also what kvplan.engine.ggml_types says
        assert gguf.GGMLQuantizationType(type_id).name == name
    missing = set(theirs) - set(_GGML_TYPES)
    assert not missing, f"ggml types the gguf package knows and kvplan does not: {missing}"


def test_unknown_type_is_a_clear_error():
    with pytest.raises(ProfileError, match="unknown ggml tensor type 99"):
        ggml_type(99)


def test_header_equals_the_gguf_readers(tmp_path):
    path = write_tiny_llama_gguf(tmp_path / "m.gguf")
    header = read_local_header(path, block=4096)  # grows 4 KiB → 8 KiB → … to the end of the header
    from kvplan.importers.gguf import read_metadata

    meta, tensors = header_metadata(header)
    ref_meta, ref_tensors = read_metadata(path)
    assert tensors == ref_tensors  # names, elements, exact bytes, shapes
    assert set(meta) == set(ref_meta)
    for key in meta:
        if key != "test.nested":  # gguf's contents() flattens nested arrays; kvplan keeps their structure
            assert meta[key] == ref_meta[key], key
    assert meta["test.nested"] == [[1, 2], [3, 4]]
    assert meta["test.float64"] == 0.25 and meta["test.int64"] == -5 and meta["tokenizer.ggml.add_bos_token"] is True
    assert len(meta["tokenizer.ggml.tokens"]) == 20000
    assert set(header.skipped) == {"tokenizer.ggml.merges", "tokenizer.ggml.scores", "tokenizer.ggml.token_type"}
    reader = gguf.GGUFReader(path)
    assert header.data_offset == reader.data_offset
    assert [t.offset for t in header.tensors] == [int(t.data_offset) - reader.data_offset for t in reader.tensors]


def test_big_endian_file(tmp_path):
    path = write_tiny_llama_gguf(tmp_path / "be.gguf", vocab=64, big_endian=True)
    header = read_local_header(path)
    assert header.byteorder == ">" and header.metadata["llama.block_count"] == 4
    assert header.tensors[0].dims == (256, 64)


def test_truncated_buffer_asks_for_more(tmp_path):
    data = write_tiny_llama_gguf(tmp_path / "m.gguf", vocab=500).read_bytes()
    with pytest.raises(NeedMoreData) as info:
        parse_gguf_header(data[:1000])
    assert info.value.needed > 1000
    full = parse_gguf_header(data)
    assert full.header_bytes < len(data)


def test_not_a_gguf_file(tmp_path):
    bad = tmp_path / "x.gguf"
    bad.write_bytes(b"PK\x03\x04" + bytes(100))
    with pytest.raises(ProfileError, match="not a GGUF file"):
        read_local_header(bad)
    short = tmp_path / "short.gguf"
    short.write_bytes(write_tiny_llama_gguf(tmp_path / "m.gguf", vocab=500).read_bytes()[:3000])
    with pytest.raises(ProfileError, match="ends inside the GGUF header"):
        read_local_header(short, block=1024)


def test_profile_is_the_local_importers(tmp_path):
    path = write_tiny_llama_gguf(tmp_path / "m.gguf")
    from kvplan.importers.gguf import profile_from_gguf_file

    meta, tensors = header_metadata(read_local_header(path))
    mapping, imported = profile_mapping_from_gguf(meta, tensors, where=str(path))
    assert imported.yaml_text == profile_from_gguf_file(path).yaml_text
    assert mapping["layers"] == 4 and mapping["kv_heads"] == 2 and mapping["head_dim"] == 32
    assert imported.model.weights == sum(t[2] for t in tensors)  # base units, however the YAML spells them


FILES = ["README.md", "Llama-3.2-3B-Instruct-Q4_K_M.gguf", "Llama-3.2-3B-Instruct-Q4_K_S.gguf",
         "Llama-3.2-3B-Instruct-Q4_K.gguf", "Llama-3.2-3B-Instruct-IQ4_XS.gguf", "Llama-3.2-3B-Instruct-f16.gguf",
         "mmproj-model-f16.gguf", "Q8_0/Llama-3.2-3B-Instruct-Q8_0-00002-of-00002.gguf",
         "Q8_0/Llama-3.2-3B-Instruct-Q8_0-00001-of-00002.gguf", "big/M-Q6_K-00001-of-00003.gguf",
         "big/M-Q6_K-00003-of-00003.gguf"]


@pytest.mark.parametrize("quant, expected", [
    ("Q4_K_M", ("Llama-3.2-3B-Instruct-Q4_K_M.gguf",)),
    ("q4_k_m", ("Llama-3.2-3B-Instruct-Q4_K_M.gguf",)),  # case-insensitive
    ("Q4_K", ("Llama-3.2-3B-Instruct-Q4_K.gguf",)),  # not Q4_K_M nor Q4_K_S
    ("IQ4_XS", ("Llama-3.2-3B-Instruct-IQ4_XS.gguf",)),
    ("F16", ("Llama-3.2-3B-Instruct-f16.gguf",)),  # not the mmproj file
    ("Q8_0", ("Q8_0/Llama-3.2-3B-Instruct-Q8_0-00001-of-00002.gguf",
              "Q8_0/Llama-3.2-3B-Instruct-Q8_0-00002-of-00002.gguf")),  # shards in order
])
def test_pick_by_quant(quant, expected):
    assert pick_gguf(FILES, "o/n", quant=quant).files == expected


def test_pick_by_file_name():
    assert pick_gguf(FILES, "o/n", filename="mmproj-model-f16.gguf").files == ("mmproj-model-f16.gguf",)
    shard = pick_gguf(FILES, "o/n", filename="Q8_0/Llama-3.2-3B-Instruct-Q8_0-00002-of-00002.gguf")
    assert shard.first.endswith("00001-of-00002.gguf") and shard.split and shard.stem == "Llama-3.2-3B-Instruct-Q8_0"


def test_pick_errors_list_the_candidates():
    with pytest.raises(NotFoundError, match="ambiguous, it matches 2 models"):
        pick_gguf(FILES + ["Other-Q4_K_M.gguf"], "o/n", quant="Q4_K_M")
    with pytest.raises(NotFoundError, match="no GGUF file matches 'Q2_K'.*Llama-3.2-3B-Instruct-Q4_K_M.gguf"):
        pick_gguf(FILES, "o/n", quant="Q2_K")
    with pytest.raises(NotFoundError, match=r"shard\(s\) 2 of 3 are missing"):
        pick_gguf(FILES, "o/n", quant="Q6_K")
    with pytest.raises(NotFoundError, match="no file 'x.gguf'"):
        pick_gguf(FILES, "o/n", filename="x.gguf")
    with pytest.raises(NotFoundError, match="has no .gguf files"):
        pick_gguf(["config.json"], "o/n", quant="Q4_0")
    with pytest.raises(NotFoundError, match="name one with :QUANT"):
        pick_gguf(FILES, "o/n")
    assert pick_gguf(["a/model-q4_0.gguf", "mmproj-f16.gguf"], "o/n").files == ("a/model-q4_0.gguf",)
