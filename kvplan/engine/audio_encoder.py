"""Audio encoders (llama.cpp's audio projector files): weights, compute buffer, audio tokens per clip.

A speech-in model hears a clip through an audio encoder (a Whisper encoder here) and a projector that maps its
frames into the language model's embedding space. llama.cpp keeps both in a projector GGUF (``convert_hf_to_gguf.py
--mmproj``, ``clip.has_audio_encoder``) and runs them with its multimodal library (``tools/mtmd``). As for images
(:mod:`kvplan.engine.encoder`) three figures matter:

* the encoder's **weights**, per tensor in its GGUF type (:func:`audio_encoder_tensors`,
  :func:`audio_encoder_weight_bytes`): what ``clip_model_loader::load_tensors`` counts as ``model size``;
* its **compute buffer** (:func:`audio_encoder_compute_bytes`): ``clip_model_loader::warmup`` reserves the graph of
  one mel spectrogram of ``warmup_audio_size`` = 3,000 frames (``clip-model.h``; ``get_dummy_batch``). A Whisper
  encoder only ever sees 3,000-frame chunks (``mtmd_audio_preprocessor_whisper::preprocess`` cuts the mel into
  them), so the buffer does not depend on the clip's length;
* the **context tokens** each clip takes (:func:`audio_tokens`): llama.cpp's count (``clip_n_output_tokens`` per
  30 s chunk, times the chunks ``preprocess`` makes) or the model's own processor's count in transformers.

Families (``kind``, llama.cpp's ``clip.projector_type``), all on ``clip_graph_whisper_enc``
(``tools/mtmd/models/whisper-enc.cpp``):

``ultravox``
    Whisper encoder, frames stacked by ``stack_factor`` (8), RMS norm, a SwiGLU MLP (``mm.a.mlp.1``, the swapped
    halves), a mid RMS norm and a linear projection (``mm.a.mlp.2``): Ultravox v0.5.
``qwen2a``
    Whisper encoder with a 2× average pool before its final LayerNorm, then one linear layer with bias
    (``mm.a.fc``): Qwen2-Audio, and the audio half of Qwen2.5-Omni (``qwen2.5o`` in a mixed projector file).
``voxtral``
    Whisper encoder with the same 2× average pool, frames stacked by 4, then a GELU MLP (``mm.a.mlp.1``,
    ``mm.a.mlp.2``): Voxtral.

Sources: llama.cpp build 11434: ``tools/mtmd/clip.cpp`` (``clip_model_loader::load_hparams`` — the
``PROJECTOR_TYPE_ULTRAVOX`` / ``QWEN2A`` / ``VOXTRAL`` case: ``proj_stack_factor``, ``FFN_GELU_ERF``;
``load_tensors``; ``get_dummy_batch``; ``clip_graph::build_vit`` — ``audio_has_avgpool``; ``build_attn``;
``build_stack``; ``clip_n_output_tokens``), ``tools/mtmd/clip-model.h`` (``warmup_audio_size``,
``audio_has_stack_frames``, ``audio_has_avgpool``), ``tools/mtmd/models/whisper-enc.cpp``,
``tools/mtmd/mtmd-audio.cpp`` (``log_mel_spectrogram``: 30 s of zeros appended; ``preprocess``: whole
3,000-frame chunks only), ``ggml/src/ggml.c`` (``ggml_conv_1d``: an F16 ``im2col`` then a matmul),
``conversion/ultravox.py`` (``WhisperEncoderModel``: conv weights F16, conv biases unsqueezed to 2-D;
``UltravoxWhisperEncoderModel``, ``VoxtralWhisperEncoderModel``: stack factor 4), ``conversion/base.py``
(``MmprojModel.set_gguf_parameters``: ``clip.audio.*``; 1-D tensors and position embeddings F32).

Pure: numbers in, numbers out; no I/O.
"""

from __future__ import annotations

from kvplan.engine.encoder import _attn_ffn, _matrix_type
from kvplan.engine.ggml_alloc import Graph, peak_bytes
from kvplan.engine.ggml_types import tensor_bytes

#: llama.cpp audio projector types kvplan prices (``clip.projector_type`` / ``clip.audio.projector_type``)
AUDIO_ENCODER_KINDS = ("ultravox", "qwen2a", "voxtral")

#: mel frames per chunk: ``warmup_audio_size`` and ``preprocess``'s ``frames_per_chunk`` (``clip-model.h``, ``mtmd-audio.cpp``)
CHUNK_FRAMES = 3000
#: mel frames per second: 16 kHz and a hop of 160 samples (``load_hparams``: ``audio_sample_rate``, ``audio_hop_len``)
FRAMES_PER_SECOND = 100
#: samples per second the audio is resampled to
SAMPLE_RATE = 16000
#: the hop between mel frames [samples]
HOP_SAMPLES = 160

_F32, _F16 = 4, 2


def _check(kind: str) -> None:
    if kind not in AUDIO_ENCODER_KINDS:
        raise ValueError(f"unknown audio encoder kind {kind!r}; known: {', '.join(AUDIO_ENCODER_KINDS)}")


def default_stack_factor(kind: str) -> int:
    """The frames a projector stacks into one token (``clip.audio.projector.stack_factor``; 1: none).

    Parameters
    ----------
    kind : str
        One of :data:`AUDIO_ENCODER_KINDS`.

    Returns
    -------
    int [frames]
        Ultravox 8 (``UltravoxConfig.stack_factor``), Voxtral 4 (``VoxtralWhisperEncoderModel``), Qwen2-Audio 1.
    """
    _check(kind)
    return {"ultravox": 8, "voxtral": 4, "qwen2a": 1}[kind]


def audio_encoder_tensors(kind: str, *, n_embd: int, n_ff: int, n_layer: int, n_mel: int, projection_dim: int,
                          n_positions: int = 1500, stack_factor: int = 0, projector_hidden: int = 0,
                          weight_type: str = "f16") -> tuple[tuple[str, tuple[int, ...], str], ...]:
    """Every tensor of an audio projector GGUF: name, shape in ggml order (ne0 first), ggml type.

    Parameters
    ----------
    kind : str
        One of :data:`AUDIO_ENCODER_KINDS`.
    n_embd : int [values]
        The encoder's width (``clip.audio.embedding_length``; Whisper ``d_model``).
    n_ff : int [values]
        The encoder MLP's width (``clip.audio.feed_forward_length``; ``encoder_ffn_dim``).
    n_layer : int [layers]
        Encoder blocks (``clip.audio.block_count``; ``encoder_layers``).
    n_mel : int [bins]
        Mel bins of the input (``clip.audio.num_mel_bins``).
    projection_dim : int [values]
        The language model's embedding width (``clip.audio.projection_dim``).
    n_positions : int [frames]
        Rows of the learned position embedding (``max_source_positions``, 1500).
    stack_factor : int [frames]
        Frames stacked per token (0: :func:`default_stack_factor`).
    projector_hidden : int [values]
        Ultravox's projector width before the SwiGLU halves it (``UltravoxConfig.hidden_size``, 4096); unused by the
        other kinds.
    weight_type : str
        ``--outtype`` of the conversion for the 2-D weights: "f16" (the default), "f32", "q8_0", "bf16".

    Returns
    -------
    tuple of (str, tuple of int, str)
        ``(name, ne, ggml type)``.

    Notes
    -----
    Types follow ``convert_hf_to_gguf.py``: the conv weights are forced F16 (``WhisperEncoderModel.tensor_force_quant``),
    norms, biases (the conv biases too, though unsqueezed to ``[1, n_embd]``) and the position embedding F32.
    """
    _check(kind)
    E, F, L, D = n_embd, n_ff, n_layer, projection_dim
    s = stack_factor or default_stack_factor(kind)
    out: list[tuple[str, tuple[int, ...], str]] = []

    def mat(name, ne0, ne1):
        out.append((name, (ne0, ne1), _matrix_type(weight_type, ne0)))

    def vec(name, n):
        out.append((name, (n,), "f32"))

    out.append(("a.conv1d.1.weight", (3, n_mel, E), "f16"))
    out.append(("a.conv1d.1.bias", (1, E), "f32"))
    out.append(("a.conv1d.2.weight", (3, E, E), "f16"))
    out.append(("a.conv1d.2.bias", (1, E), "f32"))
    out.append(("a.position_embd.weight", (E, n_positions), "f32"))
    for i in range(L):
        b = f"a.blk.{i}"
        mat(f"{b}.attn_q.weight", E, E)
        vec(f"{b}.attn_q.bias", E)
        mat(f"{b}.attn_k.weight", E, E)  # Whisper's k_proj has no bias
        mat(f"{b}.attn_v.weight", E, E)
        vec(f"{b}.attn_v.bias", E)
        mat(f"{b}.attn_out.weight", E, E)
        vec(f"{b}.attn_out.bias", E)
        for t in ("ln1", "ln2"):
            vec(f"{b}.{t}.weight", E)
            vec(f"{b}.{t}.bias", E)
        mat(f"{b}.ffn_up.weight", E, F)
        vec(f"{b}.ffn_up.bias", F)
        mat(f"{b}.ffn_down.weight", F, E)
        vec(f"{b}.ffn_down.bias", E)
    vec("a.post_ln.weight", E)
    vec("a.post_ln.bias", E)
    if kind == "ultravox":
        H = projector_hidden or 4096
        vec("mm.a.norm_pre.weight", E * s)
        mat("mm.a.mlp.1.weight", E * s, H)
        vec("mm.a.norm_mid.weight", H // 2)
        mat("mm.a.mlp.2.weight", H // 2, D)
    elif kind == "qwen2a":
        mat("mm.a.fc.weight", E, D)
        vec("mm.a.fc.bias", D)
    else:  # voxtral: VoxtralMultiModalProjector, linear_1 and linear_2 without bias
        mat("mm.a.mlp.1.weight", E * s, D)
        mat("mm.a.mlp.2.weight", D, D)
    return tuple(out)


def audio_encoder_weight_bytes(kind: str, **shape) -> int:
    """Bytes of the audio projector's weights: Σ ``ggml_nbytes`` over :func:`audio_encoder_tensors`.

    Parameters
    ----------
    kind : str
        One of :data:`AUDIO_ENCODER_KINDS`.
    **shape
        The keyword arguments of :func:`audio_encoder_tensors`.

    Returns
    -------
    int [bytes]
        What ``clip_model_loader::load_tensors`` adds up as ``model size`` for the audio context.
    """
    return sum(tensor_bytes(t, ne) for _, ne, t in audio_encoder_tensors(kind, **shape))


def _pad(n: int, m: int) -> int:
    return (n + m - 1) // m * m


def audio_encoder_compute_graph(kind: str, *, n_embd: int, n_ff: int, n_layer: int, n_head: int, n_mel: int,
                                projection_dim: int, n_frames: int = CHUNK_FRAMES, stack_factor: int = 0,
                                projector_hidden: int = 0, flash_attn: bool = True) -> Graph:
    """The graph ``clip_graph_whisper_enc::build`` writes for one mel chunk, as ggml's allocator sees it.

    Parameters
    ----------
    kind : str
        One of :data:`AUDIO_ENCODER_KINDS`.
    n_embd, n_ff, n_layer, n_head : int
        The encoder's width [values], MLP width [values], blocks [layers] and heads [heads].
    n_mel : int [bins]
        Mel bins.
    projection_dim : int [values]
        The language model's embedding width.
    n_frames : int [frames]
        Mel frames of the chunk (3,000: the warmup's and every chunk's).
    stack_factor : int [frames]
        Frames stacked per token (0: :func:`default_stack_factor`).
    projector_hidden : int [values]
        Ultravox's projector width (4096).
    flash_attn : bool
        ``CLIP_FLASH_ATTN_TYPE_ENABLED`` (what ``auto`` settles on on CPU) or disabled.

    Returns
    -------
    Graph
        Inputs and nodes in graph order with their bytes; weights live in their own buffer and are left out.
    """
    _check(kind)
    E, F, L, H, D = n_embd, n_ff, n_layer, n_head, projection_dim
    s = stack_factor or default_stack_factor(kind)
    g = Graph()
    raw = g.input(n_frames * n_mel * _F32)  # inp_raw [n_frames, n_mel, 1] f32
    # conv1d block: ggml_conv_1d_ph → IM2COL [3·n_mel, T] f16, MUL_MAT [T, E] f32 (reshapes are views); + bias, GELU_ERF
    T1 = n_frames
    x = g.op(3 * n_mel * T1 * _F16, raw)
    x = g.op(T1 * E * _F32, g.view(x))
    x = g.view(x)
    x = g.op(T1 * E * _F32, x, inplace=True)
    x = g.op(T1 * E * _F32, x, inplace=True)
    T = (T1 + 2 - 3) // 2 + 1  # stride 2, padding 1, kernel 3 → 1500 for 3000
    x = g.op(3 * E * T * _F16, x)
    x = g.op(T * E * _F32, g.view(x))
    x = g.view(x)
    x = g.op(T * E * _F32, x, inplace=True)
    x = g.op(T * E * _F32, x, inplace=True)
    ET = E * T * _F32
    x = g.op(ET, g.view(x))  # transpose, CONT → [E, T]
    x = g.op(ET, x, inplace=True)  # + the first T rows of the position embedding (a view of a weight)
    x = g.view(x)  # reshape_2d
    for _ in range(L):
        g.mark()
        # layernorm1: NORM, MUL, ADD
        cur = g.op(ET, x)
        cur = g.op(ET, cur, inplace=True)
        cur = g.op(ET, cur, inplace=True)
        q = g.view(g.op(ET, g.op(ET, cur), inplace=True))  # Q: matmul + bias, reshape_4d
        k = g.view(g.op(ET, cur))  # K: matmul, no bias
        v = g.view(g.op(ET, g.op(ET, cur), inplace=True))  # V: matmul + bias
        x = _attn_ffn(g, x, (q, k, v), E, F, T, H, None, norm_bias=True, gated=False, fa=flash_attn)
    if kind in ("qwen2a", "voxtral"):  # audio_has_avgpool: transpose, CONT, POOL_1D avg 2, transpose, CONT
        x = g.op(ET, g.view(x))
        T //= 2
        ET = E * T * _F32
        x = g.op(ET, x)
        x = g.op(ET, g.view(x))
    # post_ln: NORM, MUL, ADD; reshape_3d
    x = g.op(ET, x)
    x = g.op(ET, x, inplace=True)
    x = g.view(g.op(ET, x, inplace=True))
    if kind in ("ultravox", "voxtral"):  # build_stack: view_1d, PAD to a whole number of stacks, view_2d
        n = _pad(E * T, E * s)
        if n > E * T:
            x = g.op(n * _F32, g.view(x))
        x = g.view(x)
        T = n // (E * s)
    if kind == "ultravox":
        W = E * s * T * _F32
        x = g.op(W, x, inplace=True)  # RMS_NORM
        x = g.op(W, x, inplace=True)  # × norm_pre
        Hp = projector_hidden or 4096
        x = g.op(Hp * T * _F32, x)  # mm.a.mlp.1
        x = g.op(Hp // 2 * T * _F32, x)  # SWIGLU (swapped): a GLU op, not in place
        x = g.op(Hp // 2 * T * _F32, x, inplace=True)  # RMS_NORM
        x = g.op(Hp // 2 * T * _F32, x, inplace=True)  # × norm_mid
        g.op(D * T * _F32, x, output=True)  # mm.a.mlp.2
    elif kind == "qwen2a":
        x = g.op(D * T * _F32, x)  # mm.a.fc
        g.op(D * T * _F32, x, inplace=True, output=True)  # + bias
    else:
        x = g.op(D * T * _F32, x)  # mm.a.mlp.1
        x = g.op(D * T * _F32, x, inplace=True)  # GELU_ERF
        g.op(D * T * _F32, x, output=True)  # mm.a.mlp.2
    return g


def audio_encoder_compute_bytes(kind: str, **shape) -> int:
    """Compute buffer llama.cpp reserves for the audio encoder: the allocator's peak over the chunk's graph.

    Parameters
    ----------
    kind : str
        One of :data:`AUDIO_ENCODER_KINDS`.
    **shape
        The keyword arguments of :func:`audio_encoder_compute_graph`.

    Returns
    -------
    int [bytes]
        ``ggml_backend_sched_get_buffer_size`` after ``reserve_compute_meta`` on the 3,000-frame warmup (CPU).
    """
    return peak_bytes(audio_encoder_compute_graph(kind, **shape))


def llamacpp_chunks(seconds: float) -> int:
    """30 s chunks llama.cpp's Whisper preprocessor makes of a clip of ``seconds``.

    Parameters
    ----------
    seconds : float [s]
        The clip's length.

    Returns
    -------
    int [chunks]
        ``log_mel_spectrogram`` appends 30 s of zeros (480,000 samples) and pads the 200-sample frame half each
        side, giving ``⌊(n + 480000) / 160⌋ + 1`` frames for ``n`` samples; ``preprocess`` keeps the whole
        3,000-frame chunks only. So a clip just under 30 s takes one chunk and a 30 s clip two (the second all
        padding).
    """
    n = max(int(round(seconds * SAMPLE_RATE)), 201)  # preprocess pads a clip below n_fft/2 + 1 samples
    frames = (n + 480000) // HOP_SAMPLES + 1
    return frames // CHUNK_FRAMES


def llamacpp_chunk_tokens(kind: str, stack_factor: int = 0, n_frames: int = CHUNK_FRAMES) -> int:
    """Tokens ``clip_n_output_tokens`` gives one mel chunk.

    Parameters
    ----------
    kind : str
        One of :data:`AUDIO_ENCODER_KINDS`.
    stack_factor : int [frames]
        Frames stacked per token (0: :func:`default_stack_factor`).
    n_frames : int [frames]
        The chunk's mel frames (3,000).

    Returns
    -------
    int [tokens]
        ``n = n_frames``; stacking kinds: ``n = align(n, s) / s``; then ``n / 2`` (the stride-2 conv); avg-pool kinds
        ``n / 2`` again: Ultravox 3000 → 375 → 187, Qwen2-Audio 3000 → 1500 → 750, Voxtral 3000 → 750 → 375 → 187.
    """
    _check(kind)
    n = n_frames
    if kind in ("ultravox", "voxtral"):
        s = stack_factor or default_stack_factor(kind)
        n = _pad(n, s) // s
    n //= 2
    if kind in ("qwen2a", "voxtral"):
        n //= 2
    return n


def processor_tokens(kind: str, seconds: float, stack_factor: int = 0) -> int:
    """Audio placeholder tokens the model's processor in transformers writes for one clip of ``seconds``.

    Parameters
    ----------
    kind : str
        One of :data:`AUDIO_ENCODER_KINDS`.
    seconds : float [s]
        The clip's length.
    stack_factor : int [frames]
        Ultravox's stack factor (0: 8).

    Returns
    -------
    int [tokens]
        Qwen2-Audio: the feature extractor keeps at most 30 s (3,000 frames, ``truncation``) and marks
        ``L = ⌈n / 160⌉`` frames; ``(⌊(L − 1) / 2⌋ + 1 − 2) // 2 + 1`` tokens (``Qwen2AudioProcessor.__call__``).
        Voxtral: the clip is padded to whole 30 s chunks (``VoxtralProcessor``'s feature-extractor defaults:
        ``pad_to_multiple_of`` 480,000 samples, no truncation) and each chunk's 1,500 encoder frames are stacked by
        4 (``intermediate_size / hidden_size``) into 375 tokens. Ultravox: ``⌈round(n / 320) / stack_factor⌉`` for
        the whole clip (``UltravoxProcessor.__call__``: ``encoder_ds_factor`` 320 = hop 160 × the stride-2 conv).

    References
    ----------
    transformers ``models/qwen2_audio/processing_qwen2_audio.py`` (``num_audio_tokens = (input_lengths - 2) // 2 + 1``),
    ``models/voxtral/processing_voxtral.py`` (``VoxtralProcessorKwargs`` audio defaults);
    github.com/fixie-ai/ultravox ``ultravox/model/ultravox_processing.py`` (``audio_embed_frames``).
    """
    _check(kind)
    n = max(int(round(seconds * SAMPLE_RATE)), 1)
    if kind == "qwen2a":
        L = min(-(-n // HOP_SAMPLES), CHUNK_FRAMES)
        return ((L - 1) // 2 + 1 - 2) // 2 + 1
    chunk = 30 * SAMPLE_RATE
    full, rest = divmod(n, chunk)
    if kind == "voxtral":
        return (full + (1 if rest else 0)) * (CHUNK_FRAMES // 2 // 4)
    s = stack_factor or 8
    return -(-int(round(n / (2 * HOP_SAMPLES) + 1e-4)) // s)
