"""The audio encoder as resident parts: ``--audio N`` loads the model's audio encoder beside the language model.

Three parts (:class:`~kvplan.plan.parts.ResidentPart`), present only when ``audio`` > 0, named as the vision
encoder's (:mod:`kvplan.plan.encoder_parts`) with an ``audio_`` prefix, so a model with both encoders (llama.cpp
loads a vision and an audio context from one projector file) shows both sets side by side:

``audio_encoder_weights``
    the audio tower's and projector's tensors in their GGUF types
    (:func:`kvplan.engine.audio_encoder.audio_encoder_weight_bytes`, or the exact bytes of the projector GGUF's
    audio tensors when the profile carries them);
``audio_encoder_compute``
    the compute buffer llama.cpp's multimodal library reserves for the audio context: the graph of one
    3,000-frame mel chunk, whatever the clip's length (every clip is encoded in such chunks, one at a time)
    (:func:`kvplan.engine.audio_encoder.audio_encoder_compute_bytes`);
``audio_kv``
    the KV cache of the audio tokens: ``audio × tokens per clip`` added to the context, priced by the
    configuration's own cache model as ``kv(ctx + audio tokens) − kv(ctx)``. Under llama.cpp / Ollama the tokens
    are mtmd's (whole 30 s chunks × ``clip_n_output_tokens``); under the other runtimes the model's processor's
    (:func:`kvplan.engine.audio_encoder.processor_tokens`).
"""

from __future__ import annotations

from kvplan.engine import audio_encoder as aud
from kvplan.plan.parts import ResidentPart

#: a clip's length when none is given [s]: one Whisper window
DEFAULT_AUDIO_SECONDS = 30.0


def _shape(a) -> dict:
    return dict(n_embd=a.hidden_size, n_ff=a.intermediate_size, n_layer=a.layers, n_mel=a.mel_bins,
                projection_dim=a.projection_dim, stack_factor=a.stack_factor or 0,
                projector_hidden=a.projector_hidden or 0)


def audio_figures(a, seconds: float = DEFAULT_AUDIO_SECONDS, flash_attn: bool = True,
                  llamacpp_tokens: bool = True) -> dict:
    """The audio encoder's figures for clips of ``seconds``.

    Parameters
    ----------
    a : AudioEncoderSpec or AudioEncoderRecord
        The model profile's ``audio_encoder`` section.
    seconds : float [s]
        Each clip's length.
    flash_attn : bool
        Whether the encoder runs with flash attention.
    llamacpp_tokens : bool
        Count tokens as llama.cpp's mtmd does (else as the model's processor).

    Returns
    -------
    dict
        ``weights_bytes``, ``compute_bytes``, ``tokens_per_clip`` and ``chunks`` (llama.cpp's 30 s chunks).
    """
    shape = _shape(a)
    weights = a.weights if a.weights is not None else aud.audio_encoder_weight_bytes(
        a.kind, n_positions=a.positions, weight_type=a.weight_type, **shape)
    compute = aud.audio_encoder_compute_bytes(a.kind, n_head=a.heads, flash_attn=flash_attn,
                                              **{k: v for k, v in shape.items()})
    chunks = aud.llamacpp_chunks(seconds)
    if llamacpp_tokens:
        tokens = chunks * aud.llamacpp_chunk_tokens(a.kind, a.stack_factor or 0)
    else:
        tokens = aud.processor_tokens(a.kind, seconds, a.stack_factor or 0)
    return {"weights_bytes": int(weights), "compute_bytes": int(compute), "tokens_per_clip": int(tokens),
            "chunks": chunks}


def audio_parts(s, pricer) -> tuple[ResidentPart, ...]:
    """The audio encoder's parts for scenario ``s`` (none without ``audio``)."""
    if not s.audio:
        return ()
    from kvplan.plan.encoder_parts import encoder_flash_attn
    from kvplan.profiles.runtime import llamacpp_spec_of

    a = s.model.audio_encoder
    seconds = s.audio_seconds or DEFAULT_AUDIO_SECONDS
    fa = encoder_flash_attn(s.runtime)
    under_llamacpp = llamacpp_spec_of(s.runtime) is not None
    f = audio_figures(a, seconds, flash_attn=fa, llamacpp_tokens=under_llamacpp)
    tokens = f["tokens_per_clip"] * s.audio
    cache = pricer.cache(s)

    def audio_kv(ctx, sequences):
        return cache.kv_bytes(ctx + tokens, sequences) - cache.kv_bytes(ctx, sequences)

    common = (("audio_encoder", a.kind), ("audio", s.audio), ("audio_seconds", seconds))
    return (
        ResidentPart("audio_encoder_weights", f["weights_bytes"],
                     values=common + (("weight_type", a.weight_type),)),
        ResidentPart("audio_encoder_compute", f["compute_bytes"],
                     values=common + (("encoded_frames", aud.CHUNK_FRAMES), ("flash_attn", fa))),
        ResidentPart("audio_kv", audio_kv, read_bytes_of=audio_kv,
                     values=common + (("tokens_per_clip", f["tokens_per_clip"]), ("audio_tokens", tokens),
                                      ("chunks_per_clip", f["chunks"]),
                                      ("token_rule", "llama.cpp" if under_llamacpp else "processor"))),
    )
