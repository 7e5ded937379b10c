"""What the importers make of a wrong value: a config.json key or a GGUF metadata value that is not the count or flag
it should be is one error naming the file and the key (never a traceback, never a truncated or coerced figure); a
layer count past the schema's bound is refused before any per-layer work; both GGUF readers read a file alike.

GGUF files are written here byte by byte (header, one F32 tensor), so no optional package is needed."""

from __future__ import annotations

import itertools
import json
import struct
import time
from pathlib import Path

import pytest

from kvplan.errors import ProfileError
from kvplan.importers.common import window_pattern
from kvplan.importers.gguf import profile_from_gguf_file
from kvplan.importers.hf import profile_from_hf_config, profile_from_hf_file
from kvplan.profiles.spec import MAX_LAYERS, Model

DATA = Path(__file__).resolve().parents[1] / "data"
LLAMA = json.loads((DATA / "hf_configs" / "llama-2-7b.json").read_text())
MISTRAL = {"model_type": "mistral", "hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32,
           "num_hidden_layers": 32, "num_key_value_heads": 8, "vocab_size": 32000,
           "max_position_embeddings": 32768, "sliding_window": 4096}


def _problems(call) -> list[str]:
    with pytest.raises(ProfileError) as caught:
        call()
    return caught.value.problems


# --- config.json: one rule for counts, one for flags ------------------------------------------------------------

@pytest.mark.parametrize("change, problem", [
    # crashed with exit 3 (TypeError comparing the window with a string context)
    ({"max_position_embeddings": "32768"}, "max_position_embeddings: expected a whole number, got a string '32768'"),
    ({"sliding_window": "4096"}, "sliding_window: expected a whole number, got a string '4096'"),
    # read silently as 4096, 64, 1 and MHA
    ({"sliding_window": 4096.7}, "sliding_window: expected a whole number, got 4096.7"),
    ({"head_dim": 64.9}, "head_dim: expected a whole number, got 64.9"),
    ({"head_dim": True}, "head_dim: expected a whole number, got a boolean (true)"),
    ({"num_key_value_heads": 0}, "num_key_value_heads: expected a positive whole number, got 0"),
    # bool("false") is True: the output layer was counted as tied (−131 M parameters)
    ({"tie_word_embeddings": "false"}, "tie_word_embeddings: expected true or false, got a string 'false'"),
    # named the generated YAML's line 9 ("(imported profile):9: kv_heads: must be greater than 0"), twice
    ({"num_key_value_heads": -8}, "num_key_value_heads: expected a positive whole number, got -8"),
    ({"max_position_embeddings": -1}, "max_position_embeddings: expected a positive whole number, got -1"),
    # was "cannot derive the parameter count from this config (unsupported operand type(s) for +: 'int' and 'str')"
    ({"num_key_value_heads": "8"}, "num_key_value_heads: expected a whole number, got a string '8'"),
    ({"first_k_dense_replace": -1}, "first_k_dense_replace: expected a whole number, 0 or more, got -1"),
])
def test_a_wrong_config_value_names_the_file_and_key(change, problem):
    assert _problems(lambda: profile_from_hf_config({**MISTRAL, **change}, name="x", where="cfg.json")) == [
        f"cfg.json: {problem}"]


def test_a_check_of_the_generated_profile_is_worded_in_config_keys():
    # 6 KV heads do not divide 32 query heads: was "(imported profile):9: kv_heads: 6 does not divide attention_heads"
    assert _problems(lambda: profile_from_hf_config({**MISTRAL, "num_key_value_heads": 6}, name="x",
                                                    where="cfg.json")) == [
        "cfg.json: num_key_value_heads: 6 does not divide num_attention_heads (32)"]


def test_a_hub_config_is_named_by_the_reference_and_its_file():
    problems = _problems(lambda: profile_from_hf_config(
        {**MISTRAL, "sliding_window": "4096"}, name="x", label="hf:myorg/sw",
        where="https://huggingface.co/myorg/sw/blob/0123/config.json"))
    assert problems == ["hf:myorg/sw: config.json: sliding_window: expected a whole number, got a string '4096'"]


def test_a_nested_text_config_key_is_named_with_its_path():
    config = {"model_type": "gemma3", "text_config": {"model_type": "gemma3_text", "head_dim": 256.5}}
    assert _problems(lambda: profile_from_hf_config(config, name="x", where="c.json")) == [
        "c.json: text_config.head_dim: expected a whole number, got 256.5"]


def test_a_whole_float_is_the_integer():
    # JSON writers emit 4096.0 for 4096: the same profile as the integer (it was refused, unlike head_dim 64.9)
    floats = {**LLAMA, "hidden_size": 4096.0, "num_hidden_layers": 32.0, "max_position_embeddings": 4096.0}
    assert profile_from_hf_config(floats, name="x").yaml_text == profile_from_hf_config(LLAMA, name="x").yaml_text


def test_several_wrong_values_are_all_named():
    assert _problems(lambda: profile_from_hf_config({**MISTRAL, "head_dim": 64.5, "mlp_bias": "no"}, name="x",
                                                    where="c.json")) == [
        "c.json: head_dim: expected a whole number, got 64.5",
        "c.json: mlp_bias: expected true or false, got a string 'no'"]


def test_the_cli_gives_one_line_and_exit_2(run, tmp_path):
    path = tmp_path / "cfg.json"
    path.write_text(json.dumps({**MISTRAL, "max_position_embeddings": "32768"}))
    result = run("import", "hf", path)
    assert result.exit_code == 2
    assert result.stderr == (f"kvplan: error: {path}: max_position_embeddings: expected a whole number, got a "
                             "string '32768'\n")


# --- a layer count past the bound: refused before any per-layer work --------------------------------------------

def test_the_schema_bounds_layers():
    base = {"name": "x", "params": "1B", "attention_heads": 4, "kv_heads": 4, "head_dim": 8}
    assert Model.model_validate({**base, "layers": MAX_LAYERS}).layers == 10_000
    with pytest.raises(ValueError, match=r"100,000,000 layers is more than kvplan plans for \(at most 10,000"):
        Model.model_validate({**base, "layers": 100_000_000})


def test_a_deep_config_is_refused_at_once():
    # 20,000 qwen2 layers with a window took 14.7 s (window patterns were O(layers²)); 10⁸ ran out of memory
    deep = {**MISTRAL, "model_type": "qwen2", "use_sliding_window": True, "max_window_layers": 1}
    for layers in (20_000, 100_000_000):
        start = time.perf_counter()
        assert _problems(lambda: profile_from_hf_config({**deep, "num_hidden_layers": layers}, name="x",
                                                        where="d.json")) == [
            f"d.json: num_hidden_layers: {layers:,} layers is more than kvplan plans for (at most 10,000; the "
            "deepest published models have about 100–130)"]
        assert time.perf_counter() - start < 1


def test_the_deepest_allowed_config_imports_quickly():
    deep = {**MISTRAL, "model_type": "qwen2", "use_sliding_window": True, "max_window_layers": 1,
            "num_hidden_layers": MAX_LAYERS}
    start = time.perf_counter()
    model = profile_from_hf_config(deep, name="x").model
    assert model.sliding_window_pattern == list(range(1, MAX_LAYERS))  # layer 0 global, every other local
    assert time.perf_counter() - start < 5  # the quadratic search took minutes here


def _reference_pattern(local, layers):
    """The former quadratic search, the definition the linear one must agree with."""
    local = sorted(set(local))
    if not local:
        return None
    if local == list(range(layers)):
        return "all"
    if local == list(range(0, layers, 2)):
        return "alternating"
    for n in range(1, layers):
        if local == [i for i in range(layers) if i % (n + 1) < n]:
            return f"{n}:1"
    return local


def test_window_pattern_agrees_with_the_definition_on_every_small_set():
    for layers in range(1, 9):
        for size in range(layers + 1):
            for local in itertools.combinations(range(layers), size):
                assert window_pattern(list(local), layers) == _reference_pattern(local, layers), (local, layers)


# --- GGUF: the same rules, written byte by byte ------------------------------------------------------------------

_CODES = {"u32": (4, "<I"), "i32": (5, "<i"), "u64": (10, "<Q"), "f32": (6, "<f"), "bool": (7, "<?")}


def _s(text: str) -> bytes:
    raw = text.encode()
    return struct.pack("<Q", len(raw)) + raw


def write_gguf(path: Path, data: bool = True, **overrides) -> Path:
    """A llama GGUF (2 layers, 4 heads, 2 KV heads, width 256) with one 256×512 F32 tensor (131,072 values: the
    2 × 256 × 256 of output projections a parameter count of this shape must reach); ``overrides`` are
    ``key=(type, value)`` with type u32, i32, u64, f32, bool, str or an ``("arr", element type, [values])``."""
    kv = {"general.architecture": ("str", "llama"), "llama.block_count": ("u32", 2),
          "llama.context_length": ("u32", 4096), "llama.embedding_length": ("u32", 256),
          "llama.feed_forward_length": ("u32", 512), "llama.attention.head_count": ("u32", 4),
          "llama.attention.head_count_kv": ("u32", 2), "llama.vocab_size": ("u32", 256)}
    kv.update({k.replace("__", "."): v for k, v in overrides.items()})
    out = bytearray(b"GGUF" + struct.pack("<IQQ", 3, 1, len(kv)))
    for key, spec in kv.items():
        out += _s(key)
        if spec[0] == "str":
            out += struct.pack("<I", 8) + _s(spec[1])
        elif spec[0] == "arr":
            code, fmt = _CODES[spec[1]]
            out += struct.pack("<IIQ", 9, code, len(spec[2])) + b"".join(struct.pack(fmt, v) for v in spec[2])
        else:
            code, fmt = _CODES[spec[0]]
            out += struct.pack("<I", code) + struct.pack(fmt, spec[1])
    out += _s("token_embd.weight") + struct.pack("<IQQIQ", 2, 256, 512, 0, 0)
    out += b"\0" * (-len(out) % 32)
    path.write_bytes(bytes(out) + (b"\0" * 256 * 512 * 4 if data else b""))
    return path


def _both_readers(path: Path) -> list[list[str]]:
    """The problems of ``import gguf`` and of ``--model x.gguf`` (each must fail)."""
    from kvplan.hub.catalog import local_gguf_model

    return [_problems(lambda: profile_from_gguf_file(path)), _problems(lambda: local_gguf_model(str(path)))]


@pytest.mark.parametrize("override, problem", [
    # exit 3 before: ZeroDivisionError, int('two'), int('x')
    ({"llama__attention__head_count": ("u32", 0)}, "llama.attention.head_count: expected a positive whole number, got 0"),
    ({"llama__block_count": ("str", "two")}, "llama.block_count: expected a whole number, got a string 'two'"),
    ({"llama__attention__sliding_window": ("u32", 128), "llama__attention__sliding_window_pattern": ("str", "x")},
     "llama.attention.sliding_window_pattern: expected a whole number, got a string 'x'"),
    # read silently: 2.7 layers as 2, a period of −3 as "no local layer" (the window dropped)
    ({"llama__block_count": ("f32", 2.7)}, "llama.block_count: expected a whole number, got 2.7"),
    ({"llama__attention__sliding_window": ("u32", 128), "llama__attention__sliding_window_pattern": ("i32", -3)},
     "llama.attention.sliding_window_pattern: expected a whole number, 0 or more, got -3"),
    # an array where llama.cpp reads one value: was a TypeError (embedding_length // head_count)
    ({"llama__embedding_length": ("arr", "u32", [256, 256])},
     "llama.embedding_length: expected a whole number, got an array of 2"),
    ({"llama__attention__head_count_kv": ("bool", True)},
     "llama.attention.head_count_kv: expected a whole number, got a boolean (true)"),
    # 200,000 layers took 14.5 s and 830 MB (every layer's tensors priced for a note)
    ({"llama__block_count": ("u64", 200_000)},
     "llama.block_count: 200,000 layers is more than kvplan plans for (at most 10,000; the deepest published "
     "models have about 100–130)"),
    ({"llama__attention__sliding_window": ("u32", 128),
      "llama__attention__sliding_window_pattern": ("arr", "bool", [True, False, True])},
     "llama.attention.sliding_window_pattern: 3 entries for 2 layers (one per layer)"),
])
def test_a_wrong_gguf_value_names_the_file_and_key_in_both_readers(tmp_path, override, problem):
    path = write_gguf(tmp_path / "m.gguf", **override)
    assert _both_readers(path) == [[f"{path}: {problem}"]] * 2


def test_a_whole_float_block_count_is_the_integer(tmp_path):
    model = profile_from_gguf_file(write_gguf(tmp_path / "m.gguf", llama__block_count=("f32", 2.0))).model
    assert model.layers == 2


def test_period_zero_makes_every_layer_local(tmp_path):
    # llama.cpp's set_swa_pattern(0): every layer uses the window
    path = write_gguf(tmp_path / "m.gguf", llama__attention__sliding_window=("u32", 128),
                      llama__attention__sliding_window_pattern=("u32", 0))
    model = profile_from_gguf_file(path).model
    assert (model.sliding_window, model.sliding_window_pattern) == (128, "all")


def test_import_and_model_read_a_header_only_file_alike(tmp_path):
    # the header is whole, the tensor data absent (an interrupted download): --model read it, import gguf refused
    # it as "damaged or truncated"; now both read the header with one parser and write the same profile
    from kvplan.hub.catalog import local_gguf_model

    path = write_gguf(tmp_path / "m.gguf", data=False)
    imported = profile_from_gguf_file(path, name="m")
    assert imported.model.model_dump() == local_gguf_model(str(path), fast=False).profile.model_dump()
    assert imported.model.weights == 256 * 512 * 4  # from the tensor table: 131,072 F32 values
    assert any("incomplete download?" in note for note in imported.notes)
    assert not any("incomplete" in n for n in profile_from_gguf_file(write_gguf(tmp_path / "f.gguf")).notes)


def test_the_parser_reads_what_the_gguf_package_reads(tmp_path):
    # the former reader (the gguf package) and kvplan's parser agree on every key and tensor they both keep
    gguf = pytest.importorskip("gguf")
    from kvplan.importers.gguf import read_metadata

    path = write_gguf(tmp_path / "m.gguf", llama__attention__sliding_window=("u32", 128),
                      llama__attention__sliding_window_pattern=("arr", "bool", [True, False]))
    reader = gguf.GGUFReader(path)
    meta, tensors = read_metadata(path)
    theirs = {k: f.contents() for k, f in reader.fields.items() if not k.startswith("GGUF.")}
    assert meta == theirs
    assert tensors == [(t.name, int(t.n_elements), int(t.n_bytes), tuple(int(n) for n in reversed(t.shape)))
                       for t in reader.tensors]


def test_import_reads_every_shard_of_a_split_model_as_model_does(tmp_path):
    # import gguf read the named shard's tensors only; --model reads every shard's header: now both do
    pytest.importorskip("gguf")
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "hub"))
    from hubfake import write_tiny_llama_gguf

    from kvplan.hub.catalog import local_gguf_model

    write_tiny_llama_gguf(tmp_path / "Split.gguf", vocab=300, hidden=64, split_max_tensors=20)
    shards = sorted(tmp_path.glob("Split-*-of-*.gguf"))
    assert len(shards) == 2
    for shard in shards:  # any shard names the whole model
        whole = local_gguf_model(str(shard), fast=False).profile.model_dump()
        imported = profile_from_gguf_file(shard, name=whole["name"])
        assert imported.model.model_dump() == whole
        assert imported.model.params == whole["params"] > 0
        assert "split GGUF: the headers of all 2 shards were read" in imported.notes
    shards[1].unlink()
    assert _problems(lambda: profile_from_gguf_file(shards[0])) == [
        f"{shards[0]}: split GGUF, shard(s) {shards[1].name} not beside it"]
