"""The vision encoder as resident parts: ``--images N`` loads the model's encoder beside the language model.

Three parts (:class:`~kvplan.plan.parts.ResidentPart`), present only when ``images`` > 0:

``encoder_weights``
    the projector file's tensors in their GGUF types (:func:`kvplan.engine.encoder.encoder_weight_bytes`,
    or the exact bytes of a projector GGUF's tensor table when the profile carries them);
``encoder_compute``
    the compute buffer llama.cpp's multimodal library reserves for one image (its warmup graph), or the
    graph of the image size given when that is larger (Qwen2.5-VL's graph grows with the image)
    (:func:`kvplan.engine.encoder.encoder_compute_bytes`);
``image_kv``
    the KV cache of the image tokens: the context the cache holds is ``ctx`` plus ``images × tokens per
    image`` (:func:`kvplan.engine.encoder.image_tokens`: the model's processor; under llama.cpp / Ollama,
    Qwen2.5-VL's tokens follow llama.cpp's own bounds of 8 … 4,096 tokens per image), priced by the
    configuration's own cache model as ``kv(ctx + image tokens) − kv(ctx)``; a decode step reads it as it
    reads the rest of the cache.

Images are encoded one at a time (each tile of an Idefics3 image too), so the compute buffer does not grow
with the number of images; the weights are loaded once.
"""

from __future__ import annotations

from kvplan.engine import encoder as enc
from kvplan.plan.parts import ResidentPart


def _shape(e) -> dict:
    return dict(n_embd=e.hidden_size, n_ff=e.intermediate_size, n_layer=e.layers, patch_size=e.patch_size,
                projection_dim=e.projection_dim)


def encoder_flash_attn(runtime) -> bool:
    """Whether llama.cpp's multimodal library runs the encoder with flash attention: ``-fa off`` under the
    llama.cpp runtime (or Ollama's ``flash_attention: false``, through its llama.cpp spec) turns it off; ``auto``
    enables it where the backend supports it (CPU does), and every other runtime is priced as llama.cpp's auto."""
    from kvplan.profiles.runtime import llamacpp_spec_of

    spec = llamacpp_spec_of(runtime)
    return spec is None or spec.flash_attn != "off"


def encoder_figures(e, width: int | None = None, height: int | None = None, flash_attn: bool = True,
                    llamacpp_tokens: bool = False) -> dict:
    """The encoder's figures for images of ``width × height`` pixels (None: its native size).

    Parameters
    ----------
    e : EncoderSpec or EncoderRecord
        The model profile's ``encoder`` section.
    width, height : int, optional [pixels]
        The image as given.

    Returns
    -------
    dict
        ``weights_bytes``, ``compute_bytes``, ``tokens_per_image``, ``encode_width`` / ``encode_height``
        (the image the graph is built for) and ``warmup_side`` [pixels].
    """
    shape = _shape(e)
    kind = e.kind
    w = width or e.image_size
    h = height or e.image_size
    weights = e.weights if e.weights is not None else enc.encoder_weight_bytes(
        kind, image_size=e.image_size, scale_factor=e.scale_factor or 1, weight_type=e.weight_type, **shape)
    side = enc.warmup_image_side(kind, image_size=e.image_size, patch_size=e.patch_size, merge=e.merge or 2)
    graph = dict(n_head=e.heads, scale_factor=e.scale_factor or 1, merge=e.merge or 2,
                 n_wa_pattern=e.window_pattern or 0, flash_attn=flash_attn, **shape)
    compute = enc.encoder_compute_bytes(kind, image_width=side, image_height=side, **graph)
    ew, eh = side, side
    if kind == "qwen2.5vl":
        # llama.cpp resizes with the same smart_resize but its own bounds: set_limit_image_tokens(8, 4096)
        # (clip.cpp load_hparams) → 8 … 4,096 tokens of (patch · merge)² pixels; the graph it reserves is that image's
        area = (e.patch_size * (e.merge or 2)) ** 2
        rh, rw = enc.qwen_resize(h, w, e.patch_size * (e.merge or 2), 8 * area, 4096 * area)
        if rw * rh > side * side:  # the image's own graph is larger than the warmup's: the buffer grows to it
            compute = max(compute, enc.encoder_compute_bytes(kind, image_width=rw, image_height=rh, **graph))
            ew, eh = rw, rh
    bounds = (e.min_pixels or 56 * 56, e.max_pixels or 14 * 14 * 4 * 1280)
    if llamacpp_tokens and kind == "qwen2.5vl":  # what llama.cpp's mtmd inserts: its own 8 … 4,096 tokens
        bounds = (8 * (e.patch_size * (e.merge or 2)) ** 2, 4096 * (e.patch_size * (e.merge or 2)) ** 2)
    tokens = enc.image_tokens(kind, width=w, height=h, patch_size=e.patch_size, image_size=e.image_size,
                              tokens_per_image=e.tokens_per_image or 256, merge=e.merge or 2,
                              scale_factor=e.scale_factor or 1, min_pixels=bounds[0], max_pixels=bounds[1],
                              longest_edge=e.longest_edge or 0)
    return {"weights_bytes": int(weights), "compute_bytes": int(compute), "tokens_per_image": int(tokens),
            "encode_width": ew, "encode_height": eh, "warmup_side": side}


def encoder_parts(s, pricer) -> tuple[ResidentPart, ...]:
    """The encoder's parts for scenario ``s`` (none without ``images``)."""
    if not s.images:
        return ()
    e = s.model.encoder
    w, h = s.image_pixels or (e.image_size, e.image_size)
    from kvplan.profiles.runtime import llamacpp_spec_of

    fa = encoder_flash_attn(s.runtime)
    under_llamacpp = llamacpp_spec_of(s.runtime) is not None
    f = encoder_figures(e, w, h, flash_attn=fa, llamacpp_tokens=under_llamacpp)
    tokens = f["tokens_per_image"] * s.images
    cache = pricer.cache(s)

    def image_kv(ctx, sequences):
        return cache.kv_bytes(ctx + tokens, sequences) - cache.kv_bytes(ctx, sequences)

    common = (("encoder", e.kind), ("images", s.images), ("image_size", f"{w}x{h}"))
    return (
        ResidentPart("encoder_weights", f["weights_bytes"], values=common + (("weight_type", e.weight_type),)),
        ResidentPart("encoder_compute", f["compute_bytes"],
                     values=common + (("encoded_size", f"{f['encode_width']}x{f['encode_height']}"),
                                      ("flash_attn", fa))),
        ResidentPart("image_kv", image_kv, read_bytes_of=image_kv,
                     values=common + (("tokens_per_image", f["tokens_per_image"]), ("image_tokens", tokens),
                                      ("token_rule", "llama.cpp" if under_llamacpp else "processor"))),
    )
