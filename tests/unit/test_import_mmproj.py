"""A projector GGUF's header as the model's encoder (`--mmproj`): a tiny Gemma 3 projector written with gguf's writer."""

from __future__ import annotations

import pytest

from kvplan.engine.encoder import encoder_tensors
from kvplan.importers.vision import encoder_from_mmproj

gguf = pytest.importorskip("gguf")
np = pytest.importorskip("numpy")

E, F, L, P, S, D = 32, 64, 2, 14, 56, 2560  # a tiny SigLIP: 4×4 patches, pooled 4×4 → 1 token; Gemma 3 4B's width


def write_mmproj(path, weight_type="f16"):
    w = gguf.GGUFWriter(str(path), "clip")
    w.add_string("clip.projector_type", "gemma3")
    w.add_bool("clip.has_vision_encoder", True)
    for key, value in (("image_size", S), ("patch_size", P), ("embedding_length", E), ("feed_forward_length", F),
                       ("block_count", L), ("attention.head_count", 4), ("projection_dim", D)):
        w.add_uint32(f"clip.vision.{key}", value)
    dtypes = {"f16": np.float16, "f32": np.float32}
    for name, ne, typ in encoder_tensors("gemma3", n_embd=E, n_ff=F, n_layer=L, patch_size=P, image_size=S,
                                         projection_dim=D, weight_type=weight_type):
        w.add_tensor(name, np.zeros(tuple(reversed(ne)), dtype=dtypes[typ]))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def test_header_gives_the_encoder_and_its_exact_bytes(tmp_path):
    fields = encoder_from_mmproj(write_mmproj(tmp_path / "mmproj.gguf"))
    assert fields["kind"] == "gemma3" and fields["weight_type"] == "f16"
    assert (fields["hidden_size"], fields["intermediate_size"], fields["layers"], fields["heads"]) == (E, F, L, 4)
    assert (fields["patch_size"], fields["image_size"], fields["projection_dim"]) == (P, S, D)
    assert fields["tokens_per_image"] == 1  # (56 / 14 / 4)²
    # by hand: patch embd 14·14·3·32 f32 = 75,264 B, bias 128; position 32·16·4 = 2,048;
    # per layer: q,k,v,o 4·32·32·2 = 8,192 + 4 biases 512 + 4 norms 512 + up 32·64·2 = 4,096 + bias 256
    # + down 4,096 + bias 128 = 17,792 · 2 = 35,584; post_ln 256; input_projection 2560·32·2 = 163,840; norm 128
    assert fields["weights"] == 75_264 + 128 + 2_048 + 35_584 + 256 + 163_840 + 128 == 277_248


def test_check_with_mmproj(tmp_path, run_json):
    path = write_mmproj(tmp_path / "mmproj.gguf")
    code, doc = run_json("check", "-d", "pixel8", "-m", "gemma-3-4b", "-c", "4k", "--images", "3", "--mmproj", str(path))
    assert code == 0
    assert doc["memory"]["parts"]["encoder_weights"]["bytes"] == 277_248
    assert doc["memory"]["parts"]["image_kv"]["image_tokens"] == 3  # 3 images × 1 token


def test_mmproj_of_another_width_is_refused(tmp_path, run):
    path = write_mmproj(tmp_path / "mmproj.gguf")
    r = run("check", "-d", "pixel8", "-m", "7b", "-c", "4k", "--images", "1", "--mmproj", str(path))
    assert r.exit_code == 2
    assert "--mmproj" in r.stderr and "not this model's projector" in r.stderr
