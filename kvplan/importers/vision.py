"""A model's vision encoder (the profile's ``encoder`` mapping) from a ``config.json`` or a projector GGUF.

* :func:`encoder_from_hf_config`: the ``vision_config`` of a multimodal ``config.json`` (Gemma 3, SmolVLM /
  Idefics3, Qwen2.5-VL), with the processor's figures kvplan needs (``preprocessor`` in the config given, else
  the transformers defaults of that processor).
* :func:`encoder_from_mmproj`: the header of a projector GGUF (``convert_hf_to_gguf.py --mmproj``): its
  ``clip.*`` keys, the type of its matrices and the exact bytes of its tensor table — offline, header only.

Both return the fields of :class:`kvplan.profiles.spec.EncoderSpec` (a dict), so ``Model(encoder=…)``
validates them.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from kvplan.errors import ProfileError

# config model_type → llama.cpp projector type
KINDS = _KINDS = {"gemma3": "gemma3", "idefics3": "idefics3", "smolvlm": "idefics3", "qwen2_5_vl": "qwen2.5vl"}
# GGUF clip.projector_type → kvplan's kind
_GGUF_KINDS = {"gemma3": "gemma3", "idefics3": "idefics3", "qwen2.5vl_merger": "qwen2.5vl",
               "qwen2.5o": "qwen2.5vl"}  # Qwen2.5-Omni's file: clip.cpp load_hparams reads its vision half as qwen2.5vl


def _need(d: dict, key: str, where: str):
    value = d.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ProfileError([f"{where}: {key} must be a positive whole number, got {value!r}"])
    return value


def encoder_from_hf_config(config: dict, *, where: str = "config.json") -> dict:
    """The ``encoder`` fields of a multimodal ``config.json``.

    Parameters
    ----------
    config : dict
        The parsed ``config.json`` (its ``vision_config``; an optional ``preprocessor`` mapping holds the
        processor's ``preprocessor_config.json`` figures).
    where : str
        Where the config came from, for errors.

    Returns
    -------
    dict
        Fields of :class:`~kvplan.profiles.spec.EncoderSpec` (``weight_type`` f16: the converter's default).
    """
    model_type = config.get("model_type")
    kind = _KINDS.get(model_type)
    v = config.get("vision_config")
    if kind is None or not isinstance(v, dict):
        raise ProfileError([f"{where}: no vision encoder kvplan prices (model_type {model_type!r}; known: "
                            f"{', '.join(sorted(_KINDS))}, with a vision_config)"])
    w = f"{where} vision_config"
    pre = config.get("preprocessor") if isinstance(config.get("preprocessor"), dict) else {}
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else {}
    if kind == "qwen2.5vl":
        full = v.get("fullatt_block_indexes") or []
        fields = {"kind": kind, "hidden_size": _need(v, "hidden_size", w),
                  "intermediate_size": _need(v, "intermediate_size", w), "layers": _need(v, "depth", w),
                  "heads": _need(v, "num_heads", w), "patch_size": _need(v, "patch_size", w),
                  # convert_hf_to_gguf.py writes image_size 560 when the config has none (Qwen2VLVisionModel)
                  "image_size": v.get("image_size", 560) if v.get("image_size", 560) % v["patch_size"] == 0 else 560,
                  "projection_dim": _need(v, "out_hidden_size", w), "merge": v.get("spatial_merge_size", 2),
                  "window_pattern": (full[0] + 1) if full else None,
                  # Qwen2VLImageProcessor defaults (preprocessor_config.json of Qwen2.5-VL: 3136, 12845056)
                  "min_pixels": pre.get("min_pixels", 56 * 56), "max_pixels": pre.get("max_pixels", 28 * 28 * 1280)}
        if fields["window_pattern"] is None:
            raise ProfileError([f"{w}: fullatt_block_indexes is required for qwen2_5_vl"])
        return fields
    defaults = {"hidden_size": 1152, "num_attention_heads": 16, "intermediate_size": 3072} if kind == "idefics3" else {}
    vv = {**defaults, **v}
    fields = {"kind": kind, "hidden_size": _need(vv, "hidden_size", w),
              "intermediate_size": _need(vv, "intermediate_size", w), "layers": _need(vv, "num_hidden_layers", w),
              "heads": _need(vv, "num_attention_heads", w), "patch_size": _need(vv, "patch_size", w),
              "image_size": _need(vv, "image_size", w), "projection_dim": _need(text, "hidden_size", f"{where} text_config")}
    if kind == "gemma3":
        fields["tokens_per_image"] = config.get("mm_tokens_per_image", 256)
    else:
        fields["scale_factor"] = config.get("scale_factor", 2)
        size = pre.get("size") if isinstance(pre.get("size"), dict) else {}
        fields["longest_edge"] = size.get("longest_edge", 4 * fields["image_size"])
    return fields


def encoder_from_mmproj(path: str | Path) -> dict:
    """The ``encoder`` fields of a projector GGUF, from its header alone.

    Parameters
    ----------
    path : str or Path
        A ``mmproj`` GGUF (``general.architecture`` ``clip``).

    Returns
    -------
    dict
        Fields of :class:`~kvplan.profiles.spec.EncoderSpec`; ``weights`` is the exact sum of the tensor table's
        bytes (what llama.cpp's ``clip_model_loader`` counts as ``model size``), ``weight_type`` the type most of
        its matrices have.
    """
    from kvplan.importers.gguf_header import read_local_header

    return encoder_from_header(read_local_header(path), where=str(path))


def encoder_from_header(header, *, where: str) -> dict:
    """The ``encoder`` fields of a projector GGUF's parsed header (:func:`encoder_from_mmproj`).

    Parameters
    ----------
    header : GgufHeader
        A parsed header (``metadata`` and ``tensors``).
    where : str
        The file, for errors.

    Returns
    -------
    dict
        Fields of :class:`~kvplan.profiles.spec.EncoderSpec`.
    """
    meta, tensors = dict(header.metadata), header.tensors
    proj = meta.get("clip.projector_type") or meta.get("clip.vision.projector_type")
    kind = _GGUF_KINDS.get(proj)
    if kind is None:
        raise ProfileError([f"{where}: projector type {proj!r} is not one kvplan prices "
                            f"(known: {', '.join(sorted(_GGUF_KINDS))})"])

    def key(name, default=None):
        value = meta.get(f"clip.vision.{name}", default)
        if value is None:
            raise ProfileError([f"{where}: clip.vision.{name} is missing"])
        return int(value)

    fields = {"kind": kind, "hidden_size": key("embedding_length"), "intermediate_size": key("feed_forward_length"),
              "layers": key("block_count"), "heads": key("attention.head_count"), "patch_size": key("patch_size"),
              "image_size": key("image_size"), "projection_dim": key("projection_dim")}
    matrices = Counter(t.type_name.lower() for t in tensors if len(t.dims) == 2 and t.name.startswith(("v.blk.", "mm.")))
    weight_type = matrices.most_common(1)[0][0] if matrices else "f16"
    fields["weight_type"] = weight_type if weight_type in ("f16", "f32", "bf16", "q8_0") else "f16"
    # a file with both encoders: the audio tensors (a.*, mm.a.*) load into the audio context, not this one
    fields["weights"] = sum(t.nbytes for t in tensors if not t.name.startswith(("a.", "mm.a.")))
    if kind == "gemma3":
        n_merge = key("projector.scale_factor", 4)
        fields["tokens_per_image"] = (fields["image_size"] // fields["patch_size"] // n_merge) ** 2
    elif kind == "idefics3":
        fields["scale_factor"] = key("projector.scale_factor", 2)
        fields["longest_edge"] = key("preproc_image_size", 4 * fields["image_size"])
    else:
        fields["merge"] = key("spatial_merge_size", 2)
        fields["window_pattern"] = key("n_wa_pattern")
        fields["min_pixels"], fields["max_pixels"] = 56 * 56, 28 * 28 * 1280
    return fields
