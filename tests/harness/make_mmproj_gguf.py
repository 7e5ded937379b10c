"""Write weight-less projector (mmproj) GGUFs as `convert_hf_to_gguf.py --mmproj` writes them.

For each family the script lists the vision tower's parameters under their Hugging Face names and
shapes (as the transformers modeling code creates them from the config's `vision_config`), renames
them with gguf-py's own tensor map (`gguf.get_tensor_name_map(MODEL_ARCH.MMPROJ, n_blocks)`, the map
the converter uses), applies the converter's per-family changes (Qwen2.5-VL: the fused QKV split in
three, the Conv3D patch embedding split into two Conv2D kernels) and its type rules
(`conversion/base.py`: 1-D → F32, position embeddings F32, Q8_0 rows that are not whole blocks → F16;
`MmprojModel.tensor_force_quant`: patch embeddings F16 under --outtype f16; Gemma 3 / SmolVLM:
`.embeddings.` → F32, Gemma 3 `input_projection` → F16), and writes the `clip.*` metadata the
converter writes. Tensor data is a sparse hole: nothing is stored, every weight reads as zero.

This is independent of kvplan's own tensor list (`kvplan/engine/encoder.py`): the test compares the
two through what llama.cpp's clip loader counts.

Audio projectors (`clip.has_audio_encoder`) are written the same way from the audio tower of the configs in
tests/data/hf_configs_audio/ (Whisper encoders: `conversion/ultravox.py` `WhisperEncoderModel` and its Ultravox /
Voxtral subclasses, Qwen2-Audio), through make_gguf.py's sparse writer (`write_sparse_tensors`).

Usage:  python make_mmproj_gguf.py --out DIR [--outtype f16|q8_0] [FAMILY ...]
Families: gemma-3-4b, qwen2.5-vl-3b, smolvlm-256m (configs in tests/data/hf_configs_vision/);
          ultravox-v0.5-1b, qwen2-audio-7b, voxtral-mini-3b (tests/data/hf_configs_audio/).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import sys

import gguf
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_gguf import write_sparse_tensors  # noqa: E402  (the harness's one sparse GGUF writer)

REPO = Path(__file__).resolve().parents[2]
CONFIGS = REPO / "tests" / "data" / "hf_configs_vision"
AUDIO_CONFIGS = REPO / "tests" / "data" / "hf_configs_audio"
#: audio family -> clip.projector_type (conversion/ultravox.py: QWEN2A, ULTRAVOX, VOXTRAL)
AUDIO_FAMILIES = {"ultravox-v0.5-1b": "ultravox", "qwen2-audio-7b": "qwen2a", "voxtral-mini-3b": "voxtral"}
F32, F16, Q8_0 = (gguf.GGMLQuantizationType.F32, gguf.GGMLQuantizationType.F16, gguf.GGMLQuantizationType.Q8_0)
# SigLIP / CLIP image statistics (only written: the loader needs the keys)
MEAN_STD = {"gemma-3-4b": ([0.5] * 3, [0.5] * 3), "smolvlm-256m": ([0.5] * 3, [0.5] * 3),
            "qwen2.5-vl-3b": ([0.48145466, 0.4578275, 0.40821073], [0.26862954, 0.26130258, 0.27577711])}


def siglip_params(prefix: str, v: dict) -> list[tuple[str, tuple[int, ...]]]:
    """SiglipVisionTransformer parameters (modeling_siglip.py), torch shapes."""
    E, F, L, P, S = v["hidden_size"], v["intermediate_size"], v["num_hidden_layers"], v["patch_size"], v["image_size"]
    p = [(f"{prefix}.embeddings.patch_embedding.weight", (E, 3, P, P)),
         (f"{prefix}.embeddings.patch_embedding.bias", (E,)),
         (f"{prefix}.embeddings.position_embedding.weight", ((S // P) ** 2, E))]
    for i in range(L):
        b = f"{prefix}.encoder.layers.{i}"
        for t in ("q_proj", "k_proj", "v_proj", "out_proj"):
            p += [(f"{b}.self_attn.{t}.weight", (E, E)), (f"{b}.self_attn.{t}.bias", (E,))]
        for t in ("layer_norm1", "layer_norm2"):
            p += [(f"{b}.{t}.weight", (E,)), (f"{b}.{t}.bias", (E,))]
        p += [(f"{b}.mlp.fc1.weight", (F, E)), (f"{b}.mlp.fc1.bias", (F,)),
              (f"{b}.mlp.fc2.weight", (E, F)), (f"{b}.mlp.fc2.bias", (E,))]
    p += [(f"{prefix}.post_layernorm.weight", (E,)), (f"{prefix}.post_layernorm.bias", (E,))]
    return p


def family_params(family: str, cfg: dict) -> list[tuple[str, tuple[int, ...]]]:
    v = cfg["vision_config"]
    if family == "gemma-3-4b":
        D = cfg["text_config"]["hidden_size"]
        p = siglip_params("vision_tower.vision_model", v)
        # Gemma3MultiModalProjector: mm_input_projection_weight (vision hidden, text hidden), mm_soft_emb_norm
        p += [("multi_modal_projector.mm_input_projection_weight", (v["hidden_size"], D)),
              ("multi_modal_projector.mm_soft_emb_norm.weight", (v["hidden_size"],))]
        return p
    if family == "smolvlm-256m":
        D = cfg["text_config"]["hidden_size"]
        s = cfg["scale_factor"]
        p = siglip_params("model.vision_model", v)
        # SmolVLMConnector: modality_projection = SmolVLMSimpleMLP(proj: Linear(E·s², D, bias=False))
        p += [("model.connector.modality_projection.proj.weight", (D, v["hidden_size"] * s * s))]
        return p
    if family == "qwen2.5-vl-3b":
        E, F, L, P = v["hidden_size"], v["intermediate_size"], v["depth"], v["patch_size"]
        D, m = v["out_hidden_size"], v["spatial_merge_size"]
        Tp = v["temporal_patch_size"]
        p = [("visual.patch_embed.proj.weight", (E, 3, Tp, P, P))]
        for i in range(L):
            b = f"visual.blocks.{i}"
            p += [(f"{b}.norm1.weight", (E,)), (f"{b}.norm2.weight", (E,)),
                  (f"{b}.attn.qkv.weight", (3 * E, E)), (f"{b}.attn.qkv.bias", (3 * E,)),
                  (f"{b}.attn.proj.weight", (E, E)), (f"{b}.attn.proj.bias", (E,)),
                  (f"{b}.mlp.gate_proj.weight", (F, E)), (f"{b}.mlp.gate_proj.bias", (F,)),
                  (f"{b}.mlp.up_proj.weight", (F, E)), (f"{b}.mlp.up_proj.bias", (F,)),
                  (f"{b}.mlp.down_proj.weight", (E, F)), (f"{b}.mlp.down_proj.bias", (E,))]
        H = E * m * m
        p += [("visual.merger.ln_q.weight", (E,)),
              ("visual.merger.mlp.0.weight", (H, H)), ("visual.merger.mlp.0.bias", (H,)),
              ("visual.merger.mlp.2.weight", (D, H)), ("visual.merger.mlp.2.bias", (D,))]
        return p
    raise SystemExit(f"unknown family {family}")


def converted(family: str, cfg: dict, outtype: int) -> list[tuple[str, tuple[int, ...], int]]:
    """(gguf name, torch shape, ggml type) after the converter's renames, splits and type rules."""
    n_blocks = cfg["vision_config"].get("num_hidden_layers") or cfg["vision_config"]["depth"]
    tmap = gguf.get_tensor_name_map(gguf.MODEL_ARCH.MMPROJ, n_blocks)
    out = []
    for hf_name, shape in family_params(family, cfg):
        name = hf_name.replace("_weight", ".weight") if family == "gemma-3-4b" else hf_name
        pieces = [(name, shape)]
        if family == "qwen2.5-vl-3b" and ".qkv." in name:
            c = shape[0] // 3
            pieces = [(name.replace("qkv", x), (c,) + shape[1:]) for x in ("q", "k", "v")]
        new = []
        for n, s in pieces:
            if family == "qwen2.5-vl-3b" and "patch_embed.proj.weight" in n:
                E, C, _, P1, P2 = s
                new += [("v.patch_embd.weight", (E, C, P1, P2)), ("v.patch_embd.weight.1", (E, C, P1, P2))]
                continue
            g = tmap.get_name(n, try_suffixes=(".weight", ".bias"))
            if g is None:
                raise SystemExit(f"{family}: no GGUF name for {n}")
            new.append((g, s))
        for g, s in new:
            # tensor_force_quant (family, then MmprojModel)
            t = None
            if family == "gemma-3-4b":
                if "input_projection" in hf_name:
                    t = F16
                elif ".embeddings." in hf_name:
                    t = F32
            elif family == "smolvlm-256m":
                if ".embeddings." in hf_name:
                    t = F32
            elif family == "qwen2.5-vl-3b" and ".position_embd." in g:
                t = F32
            if t is None and (".patch_embd.weight" in g or ".patch_merger.weight" in g):
                t = F16 if outtype == F16 else F32
            if len(s) <= 1 or g.endswith("_norm.weight"):
                t = F32
            if t is None and (".position_embd." in g or g[-7:] not in (".weight", ".lora_a", ".lora_b")):
                t = F32
            if t is None:
                t = outtype
                if t == Q8_0 and s[-1] % 32:
                    t = F16  # gguf.QuantError → "falling back to F16"
            out.append((g, s, t))
    return out


def nbytes(shape, typ):
    bs, ts = gguf.GGML_QUANT_SIZES[typ]
    n = int(np.prod(shape))
    return n // bs * ts


def write(family: str, out_dir: Path, outtype: int) -> dict:
    cfg = json.loads((CONFIGS / f"{family}.json").read_text())
    v = cfg["vision_config"]
    tensors = converted(family, cfg, outtype)
    tag = {F16: "f16", Q8_0: "q8_0", F32: "f32"}[outtype]
    path = out_dir / f"mmproj-{family}-{tag}.gguf"
    w = gguf.GGUFWriter(str(path), "clip")
    w.add_name("kvplan weightless mmproj")
    w.add_file_type({F16: 1, Q8_0: 7, F32: 0}[outtype])
    w.add_bool("clip.has_vision_encoder", True)
    D = cfg["text_config"]["hidden_size"] if "text_config" in cfg and family != "qwen2.5-vl-3b" else v.get("out_hidden_size")
    w.add_uint32("clip.vision.projection_dim", D)
    if family == "qwen2.5-vl-3b":
        E, F, L, H = v["hidden_size"], v["intermediate_size"], v["depth"], v["num_heads"]
        image_size = v.get("image_size", 560)
    else:
        E, F, L, H = v["hidden_size"], v["intermediate_size"], v["num_hidden_layers"], v["num_attention_heads"]
        image_size = v["image_size"]
    w.add_uint32("clip.vision.image_size", image_size)
    w.add_uint32("clip.vision.patch_size", v["patch_size"])
    w.add_uint32("clip.vision.embedding_length", E)
    w.add_uint32("clip.vision.feed_forward_length", F)
    w.add_uint32("clip.vision.block_count", L)
    w.add_uint32("clip.vision.attention.head_count", H)
    mean, std = MEAN_STD[family]
    w.add_array("clip.vision.image_mean", mean)
    w.add_array("clip.vision.image_std", std)
    if family == "gemma-3-4b":
        w.add_string("clip.projector_type", "gemma3")
        w.add_float32("clip.vision.attention.layer_norm_epsilon", 1e-6)
        w.add_bool("clip.use_gelu", True)
    elif family == "smolvlm-256m":
        w.add_string("clip.projector_type", "idefics3")
        w.add_float32("clip.vision.attention.layer_norm_epsilon", 1e-5)
        w.add_uint32("clip.vision.projector.scale_factor", cfg["scale_factor"])
        w.add_bool("clip.use_gelu", True)
        w.add_uint32("clip.vision.preproc_image_size", cfg["preprocessor"]["size"]["longest_edge"])
    else:
        w.add_string("clip.projector_type", "qwen2.5vl_merger")
        w.add_bool("clip.use_silu", True)
        w.add_uint32("clip.vision.n_wa_pattern", v["fullatt_block_indexes"][0] + 1)
        w.add_float32("clip.vision.attention.layer_norm_epsilon", 1e-6)
    total = 0
    for name, shape, typ in tensors:
        nb = nbytes(shape, typ)
        np_dtype = np.float16 if typ == F16 else np.float32
        w.add_tensor_info(name, list(shape), np.dtype(np_dtype), nb, raw_dtype=typ)
        total += gguf.GGUFWriter.ggml_pad(nb, w.data_alignment)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    fout = w.fout[0]
    w.write_padding(fout, fout.tell())
    data_start = fout.tell()
    fout.flush()
    fout.close()
    w.fout = None
    os.truncate(path, data_start + total)
    return {"family": family, "outtype": tag, "path": str(path), "n_tensors": len(tensors),
            "tensor_bytes": sum(nbytes(s, t) for _, s, t in tensors)}


def whisper_params(a: dict) -> list[tuple[str, tuple[int, ...]]]:
    """The Whisper encoder's parameters (transformers `WhisperEncoder` / `Qwen2AudioEncoder` / `VoxtralEncoder`),
    torch shapes, under the `audio_tower.` prefix the converter maps."""
    E = a.get("d_model") or a["hidden_size"]
    F = a.get("encoder_ffn_dim") or a["intermediate_size"]
    L = a.get("encoder_layers") or a["num_hidden_layers"]
    M, P = a["num_mel_bins"], a.get("max_source_positions", 1500)
    p = [("audio_tower.conv1.weight", (E, M, 3)), ("audio_tower.conv1.bias", (E,)),
         ("audio_tower.conv2.weight", (E, E, 3)), ("audio_tower.conv2.bias", (E,)),
         ("audio_tower.embed_positions.weight", (P, E))]
    for i in range(L):
        b = f"audio_tower.layers.{i}"
        p += [(f"{b}.self_attn.k_proj.weight", (E, E)),  # no bias (WhisperAttention: k_proj bias=False)
              (f"{b}.self_attn.v_proj.weight", (E, E)), (f"{b}.self_attn.v_proj.bias", (E,)),
              (f"{b}.self_attn.q_proj.weight", (E, E)), (f"{b}.self_attn.q_proj.bias", (E,)),
              (f"{b}.self_attn.out_proj.weight", (E, E)), (f"{b}.self_attn.out_proj.bias", (E,)),
              (f"{b}.self_attn_layer_norm.weight", (E,)), (f"{b}.self_attn_layer_norm.bias", (E,)),
              (f"{b}.fc1.weight", (F, E)), (f"{b}.fc1.bias", (F,)), (f"{b}.fc2.weight", (E, F)), (f"{b}.fc2.bias", (E,)),
              (f"{b}.final_layer_norm.weight", (E,)), (f"{b}.final_layer_norm.bias", (E,))]
    p += [("audio_tower.layer_norm.weight", (E,)), ("audio_tower.layer_norm.bias", (E,))]
    return p


def audio_params(family: str, cfg: dict) -> list[tuple[str, tuple[int, ...]]]:
    a, D = cfg["audio_config"], cfg["text_config"]["hidden_size"]
    E = a.get("d_model") or a["hidden_size"]
    p = whisper_params(a)
    kind = AUDIO_FAMILIES[family]
    # the projector; WhisperEncoderModel.filter_tensors prefixes "multi_modal_projector" with "audio."
    if kind == "ultravox":  # UltravoxProjector (ultravox_model.py): ln_pre, linear_1, SwiGLU, ln_mid, linear_2
        s, H = cfg["stack_factor"], cfg["hidden_size"]
        p += [("audio.multi_modal_projector.ln_pre.weight", (E * s,)),
              ("audio.multi_modal_projector.linear_1.weight", (H, E * s)),
              ("audio.multi_modal_projector.ln_mid.weight", (H // 2,)),
              ("audio.multi_modal_projector.linear_2.weight", (D, H // 2))]
    elif kind == "qwen2a":  # Qwen2AudioMultiModalProjector: linear(d_model, text hidden) with bias
        p += [("audio.multi_modal_projector.linear.weight", (D, E)), ("audio.multi_modal_projector.linear.bias", (D,))]
    else:  # VoxtralMultiModalProjector: linear_1(intermediate_size, text hidden), GELU, linear_2, no biases
        I = a["intermediate_size"]
        p += [("audio.multi_modal_projector.linear_1.weight", (D, I)),
              ("audio.multi_modal_projector.linear_2.weight", (D, D))]
    return p


def audio_converted(family: str, cfg: dict, outtype: int) -> list[tuple[str, tuple[int, ...], int]]:
    """(gguf name, torch shape, ggml type) after the converter's renames and type rules for a Whisper encoder."""
    a = cfg["audio_config"]
    tmap = gguf.get_tensor_name_map(gguf.MODEL_ARCH.MMPROJ, a.get("encoder_layers") or a["num_hidden_layers"])
    out = []
    for hf_name, shape in audio_params(family, cfg):
        if hf_name.endswith(("conv1.bias", "conv2.bias")):
            shape = shape + (1,)  # WhisperEncoderModel.modify_tensors: unsqueeze(-1)
        g = tmap.get_name(hf_name, try_suffixes=(".weight", ".bias"))
        if g is None:
            raise SystemExit(f"{family}: no GGUF name for {hf_name}")
        t = None
        if ".conv" in hf_name and ".weight" in hf_name:
            t = F16  # WhisperEncoderModel.tensor_force_quant
        if len(shape) <= 1 or g.endswith("_norm.weight"):
            t = F32
        if t is None and (".position_embd." in g or g[-7:] not in (".weight", ".lora_a", ".lora_b")):
            t = F32
        if t is None:
            t = outtype
            if t == Q8_0 and shape[-1] % 32:
                t = F16
        out.append((g, shape, t))
    return out


def write_audio(family: str, out_dir: Path, outtype: int) -> dict:
    cfg = json.loads((AUDIO_CONFIGS / f"{family}.json").read_text())
    a = cfg["audio_config"]
    tensors = audio_converted(family, cfg, outtype)
    tag = {F16: "f16", Q8_0: "q8_0", F32: "f32"}[outtype]
    path = out_dir / f"mmproj-{family}-{tag}.gguf"
    w = gguf.GGUFWriter(str(path), "clip")
    w.add_name("kvplan weightless mmproj")
    w.add_file_type({F16: 1, Q8_0: 7, F32: 0}[outtype])
    # MmprojModel.set_gguf_parameters (has_audio_encoder) and WhisperEncoderModel.set_gguf_parameters
    w.add_bool("clip.has_audio_encoder", True)
    w.add_uint32("clip.audio.projection_dim", cfg["text_config"]["hidden_size"])
    w.add_uint32("clip.audio.embedding_length", a.get("d_model") or a["hidden_size"])
    w.add_uint32("clip.audio.feed_forward_length", a.get("encoder_ffn_dim") or a["intermediate_size"])
    w.add_uint32("clip.audio.block_count", a.get("encoder_layers") or a["num_hidden_layers"])
    w.add_uint32("clip.audio.attention.head_count", a.get("encoder_attention_heads") or a["num_attention_heads"])
    kind = AUDIO_FAMILIES[family]
    w.add_string("clip.projector_type", kind)
    w.add_uint32("clip.audio.num_mel_bins", a["num_mel_bins"])
    w.add_float32("clip.audio.attention.layer_norm_epsilon", 1e-5)
    if kind == "ultravox":
        w.add_uint32("clip.audio.projector.stack_factor", cfg["stack_factor"])
    elif kind == "voxtral":
        w.add_uint32("clip.audio.projector.stack_factor", 4)
    nbytes_total = write_sparse_tensors(w, path, tensors)
    return {"family": family, "outtype": tag, "path": str(path), "n_tensors": len(tensors), "tensor_bytes": nbytes_total}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("families", nargs="*", default=["gemma-3-4b", "qwen2.5-vl-3b", "smolvlm-256m", *AUDIO_FAMILIES])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--outtype", default="f16", choices=["f16", "q8_0", "f32"])
    a = ap.parse_args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    typ = {"f16": F16, "q8_0": Q8_0, "f32": F32}[a.outtype]
    for f in a.families:
        print(json.dumps(write_audio(f, a.out, typ) if f in AUDIO_FAMILIES else write(f, a.out, typ)))


if __name__ == "__main__":
    main()
