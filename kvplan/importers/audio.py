"""A model's audio encoder (the profile's ``audio_encoder`` mapping) from a ``config.json`` or a projector GGUF.

* :func:`audio_encoder_from_hf_config`: the ``audio_config`` of a speech-in ``config.json`` (Ultravox,
  Qwen2-Audio, Voxtral, Qwen2.5-Omni's thinker).
* :func:`audio_encoder_from_mmproj`: the audio half of a projector GGUF's header (``clip.has_audio_encoder``:
  its ``clip.audio.*`` keys, the type of its audio matrices and the exact bytes of its audio tensors) — offline,
  header only.

Both return the fields of :class:`kvplan.profiles.spec.AudioEncoderSpec` (a dict).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from kvplan.errors import ProfileError

# config model_type → llama.cpp projector type (conversion/ultravox.py, conversion/qwen.py)
AUDIO_KINDS = {"ultravox": "ultravox", "qwen2_audio": "qwen2a", "voxtral": "voxtral", "qwen2_5_omni": "qwen2a",
               "qwen2_5_omni_thinker": "qwen2a"}
# GGUF clip.projector_type / clip.audio.projector_type → kvplan's kind (qwen2.5o: Qwen2.5-Omni's mixed file,
# whose audio context clip.cpp load_hparams reads as qwen2a)
_GGUF_AUDIO_KINDS = {"ultravox": "ultravox", "qwen2a": "qwen2a", "voxtral": "voxtral", "qwen2.5o": "qwen2a"}


def _need(d: dict, keys: tuple[str, ...], where: str) -> int:
    for key in keys:
        value = d.get(key)
        if value is not None:
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ProfileError([f"{where}: {key} must be a positive whole number, got {value!r}"])
            return value
    raise ProfileError([f"{where}: {' or '.join(keys)} is missing"])


def has_audio_config(config: dict) -> bool:
    """Whether a ``config.json`` carries an audio tower kvplan prices (its ``model_type`` and an ``audio_config``).

    Parameters
    ----------
    config : dict
        The parsed ``config.json``.

    Returns
    -------
    bool
        True for a known speech-in ``model_type`` with an ``audio_config`` mapping.
    """
    return config.get("model_type") in AUDIO_KINDS and isinstance(_audio_config(config), dict)


def _audio_config(config: dict):
    thinker = config.get("thinker_config") if isinstance(config.get("thinker_config"), dict) else {}
    return config.get("audio_config", thinker.get("audio_config"))


def audio_encoder_from_hf_config(config: dict, *, where: str = "config.json") -> dict:
    """The ``audio_encoder`` fields of a speech-in ``config.json``.

    Parameters
    ----------
    config : dict
        The parsed ``config.json`` (its ``audio_config``; Qwen2.5-Omni: ``thinker_config.audio_config``).
    where : str
        Where the config came from, for errors.

    Returns
    -------
    dict
        Fields of :class:`~kvplan.profiles.spec.AudioEncoderSpec` (``weight_type`` f16: the converter's default).
        ``projection_dim`` is the language model's ``hidden_size`` (``text_config``, else the top level).
    """
    model_type = config.get("model_type")
    kind = AUDIO_KINDS.get(model_type)
    a = _audio_config(config)
    if kind is None or not isinstance(a, dict):
        raise ProfileError([f"{where}: no audio encoder kvplan prices (model_type {model_type!r}; known: "
                            f"{', '.join(sorted(AUDIO_KINDS))}, with an audio_config)"])
    w = f"{where} audio_config"
    thinker = config.get("thinker_config") if isinstance(config.get("thinker_config"), dict) else {}
    text = config.get("text_config", thinker.get("text_config"))
    text = text if isinstance(text, dict) else config
    fields = {"kind": kind, "hidden_size": _need(a, ("d_model", "hidden_size"), w),
              "intermediate_size": _need(a, ("encoder_ffn_dim", "intermediate_size"), w),
              "layers": _need(a, ("encoder_layers", "num_hidden_layers"), w),
              "heads": _need(a, ("encoder_attention_heads", "num_attention_heads"), w),
              "mel_bins": _need(a, ("num_mel_bins",), w),
              "projection_dim": _need(text, ("hidden_size",), f"{where} text_config"),
              "positions": a.get("max_source_positions", 1500)}
    if kind == "ultravox":
        # UltravoxConfig defaults: stack_factor 8, hidden_size 4096 (the projector's width)
        fields["stack_factor"] = config.get("stack_factor", 8)
        fields["projector_hidden"] = config.get("hidden_size", 4096)
    elif kind == "voxtral":
        # conversion/ultravox.py VoxtralWhisperEncoderModel: stack factor 4 == intermediate_size // hidden_size
        fields["stack_factor"] = 4
    return fields


def audio_encoder_from_header(header, *, where: str) -> dict:
    """The ``audio_encoder`` fields of a projector GGUF's parsed header (:func:`audio_encoder_from_mmproj`).

    Parameters
    ----------
    header : GgufHeader
        A parsed header (``metadata`` and ``tensors``).
    where : str
        The file, for errors.

    Returns
    -------
    dict
        Fields of :class:`~kvplan.profiles.spec.AudioEncoderSpec`.
    """
    meta, tensors = dict(header.metadata), header.tensors
    if not meta.get("clip.has_audio_encoder"):
        raise ProfileError([f"{where}: no audio encoder in this projector (clip.has_audio_encoder is not set)"])
    # clip.cpp load_hparams: the default key, else the modality's own (a file with both encoders)
    proj = meta.get("clip.projector_type") or meta.get("clip.audio.projector_type")
    kind = _GGUF_AUDIO_KINDS.get(proj)
    if proj == "gemma3na" or meta.get("clip.vision.projector_type") == "gemma3nv":
        raise ProfileError([f"{where}: Gemma 3n's audio tower is not loaded by llama.cpp build 11434 (clip_init skips "
                            "the audio half of a gemma3nv projector), so kvplan does not price it"])
    if kind is None:
        raise ProfileError([f"{where}: audio projector type {proj!r} is not one kvplan prices "
                            f"(known: {', '.join(sorted(_GGUF_AUDIO_KINDS))})"])

    def key(name, default=None):
        value = meta.get(f"clip.audio.{name}", default)
        if value is None:
            raise ProfileError([f"{where}: clip.audio.{name} is missing"])
        return int(value)

    mine = [t for t in tensors if t.name.startswith(("a.", "mm.a."))]
    pos = next((t for t in mine if t.name == "a.position_embd.weight"), None)
    fields = {"kind": kind, "hidden_size": key("embedding_length"), "intermediate_size": key("feed_forward_length"),
              "layers": key("block_count"), "heads": key("attention.head_count"), "mel_bins": key("num_mel_bins"),
              "projection_dim": key("projection_dim"), "positions": int(pos.dims[1]) if pos is not None else 1500}
    if kind != "qwen2a":
        fields["stack_factor"] = key("projector.stack_factor")
    if kind == "ultravox":
        mlp1 = next((t for t in mine if t.name == "mm.a.mlp.1.weight"), None)
        fields["projector_hidden"] = int(mlp1.dims[1]) if mlp1 is not None else 4096
    matrices = Counter(t.type_name.lower() for t in mine if len(t.dims) == 2 and t.name.startswith(("a.blk.", "mm.a.")))
    weight_type = matrices.most_common(1)[0][0] if matrices else "f16"
    fields["weight_type"] = weight_type if weight_type in ("f16", "f32", "bf16", "q8_0") else "f16"
    fields["weights"] = sum(t.nbytes for t in mine)
    return fields


def audio_encoder_from_mmproj(path: str | Path) -> dict:
    """The ``audio_encoder`` fields of a projector GGUF, from its header alone.

    Parameters
    ----------
    path : str or Path
        A ``mmproj`` GGUF with ``clip.has_audio_encoder``.

    Returns
    -------
    dict
        Fields of :class:`~kvplan.profiles.spec.AudioEncoderSpec`; ``weights`` is the exact sum of the audio
        tensors' bytes (``a.*`` and ``mm.a.*``: what ``clip_model_loader::load_tensors`` counts as ``model size``
        for the audio context), ``weight_type`` the type most of its matrices have.
    """
    from kvplan.importers.gguf_header import read_local_header

    return audio_encoder_from_header(read_local_header(path), where=str(path))
