"""Changes that would make an over-budget configuration fit, each evaluated exactly, then judged.

Every change is a :class:`~kvplan.plan.Scenario` edit; its evaluation comes from the
same engine as the original, so applying it with ``kvplan check`` reproduces it.

Judging: a change that keeps the model is what the user asked about; another model is a
different product decision, so it is never ranked against them (:func:`judge` puts it in its
own list). A change that leans on something the model was not trained for carries a caveat
(:data:`CAVEATS`) and ranks after the changes without one.
"""

from __future__ import annotations

from collections.abc import Iterable

from kvplan.errors import KvplanError
from kvplan.engine.formats import format_from_bits
from kvplan.engine.memory import Verdict
from kvplan.plan import Evaluation, evaluate
from kvplan.plan.results import Advice, Change  # noqa: F401  (advice's results, read by render)

KV_BITS_STEPS = (8, 4)
WEIGHT_BITS_STEPS = (8, 4, 3)
WINDOW_STEPS = (8192, 4096, 2048, 1024)
# The smaller GGUF types suggested for a model already in a GGUF type: llama.cpp's common k-quant and i-quant
# presets (the legacy q4_0/q4_1/q5_0/q5_1 and iq4_nl are left out: a smaller k-quant beats each of them).
GGUF_STEPS = ("q8_0", "q6_k", "q5_k_m", "q5_k_s", "q4_k_m", "q4_k_s", "iq4_xs", "q3_k_l", "q3_k_m", "q3_k_s", "q2_k")
_OTHER_GGUF = ("f32", "f16", "bf16", "q5_1", "q5_0", "q4_1", "q4_0", "iq4_nl")

# Caveat codes (JSON ``caveats``; the render layer words them).
CTX_BEYOND_TRAINED = "ctx_beyond_trained"  # the context one sequence attends is past the model's max_context
WINDOW_NOT_TRAINED = "window_not_trained"  # a window on layers the model was trained with full attention
CAVEATS = (CTX_BEYOND_TRAINED, WINDOW_NOT_TRAINED)


# A runtime's own options that shrink what it allocates, tried from the least to the most given up: (runtime name,
# spec field, how a value is tried, values). llama.cpp's compute buffer scales with the micro-batch (Ollama's
# num_batch is both -b and -ub); MLX-LM's --max-kv-size puts a rotating cache on every layer; Ollama's KV cache type
# and ExecuTorch's export dtype and int8 cache are their own options; ONNX Runtime GenAI's shared buffer removes the
# step that holds past and present. "smaller": below the value in force; "narrower": (value, bits) below the cache's
# bits in force; "window": below the context; "switch": a value other than the one in force.
RUNTIME_STEPS = (
    ("llama.cpp", "ubatch", "smaller", (256, 128)),
    ("ollama", "num_batch", "smaller", (256, 128)),
    ("ollama", "kv_cache_type", "narrower", (("q8_0", 8), ("q4_0", 4))),
    ("mlx-lm", "max_kv_size", "window", WINDOW_STEPS),
    ("onnxruntime-genai", "past_present_share_buffer", "switch", (True,)),
    ("executorch", "dtype_override", "narrower", (("fp16", 16),)),
    ("executorch", "quantize_kv_cache", "switch", (True,)),
)
_SHRINKS_THE_WINDOW = {"max_kv_size"}  # drops the oldest tokens: the model's attention changes


def window_trained(model, window: int) -> bool:
    """True when ``model`` was trained with every layer behind a window of at most ``window`` tokens.

    A model without a window (Llama-2), or with global layers beside its windowed ones (Gemma's 5:1),
    never saw a window on those layers: putting one there is an untested change to its attention."""
    layers = [layer for _, layer in model.schedule.groups()]
    windows = [getattr(layer, "window_tokens", None) for layer in layers]
    return bool(layers) and None not in windows and window >= max(windows)


def caveats_of(kind: str, value: object, ev: Evaluation) -> tuple[str, ...]:
    """The caveats of a change of ``kind`` to ``value`` whose evaluation is ``ev``."""
    found = []
    if ev.ctx_beyond_trained:
        found.append(CTX_BEYOND_TRAINED)
    if kind == "sliding_window" and not window_trained(ev.scenario.model, int(value)):
        found.append(WINDOW_NOT_TRAINED)
    if kind.startswith("runtime.") and kind.removeprefix("runtime.") in _SHRINKS_THE_WINDOW \
            and not window_trained(ev.scenario.model, int(value)):
        found.append(WINDOW_NOT_TRAINED)
    return tuple(found)


def _change(kind: str, value: object, ev: Evaluation) -> Change:
    if kind == "sliding_window":  # the window's warning is the change's caveat here (WINDOW_NOT_TRAINED): say it once
        from kvplan.plan.warnings import window_override

        said = window_override(ev)
        ev = ev.with_changes(warnings=tuple(w for w in ev.warnings if w != said))
    return Change(kind, value, ev, caveats_of(kind, value, ev))


def candidate_changes(ev: Evaluation, smaller_models: Iterable = ()) -> list[Change]:
    """Every single-knob change worth showing for ``ev``, unranked."""
    s = ev.scenario
    changes: list[Change] = []
    if ev.max_ctx is not None and 0 < ev.max_ctx < s.ctx:
        cut = _change("ctx", ev.max_ctx, evaluate(s.with_changes(ctx=ev.max_ctx)))
        changes.append(cut)
        # The largest context that fits needs a context extension; the trained one does not (less the pinned
        # prefix, which every sequence attends in front of its own tokens)
        trained = (ev.max_ctx_trained or 0) - s.pinned_prefix_tokens
        if CTX_BEYOND_TRAINED in cut.caveats and 0 < trained < ev.max_ctx:
            changes.append(_change("ctx", trained, evaluate(s.with_changes(ctx=trained))))
    current_bits = max(ev.cache.k_format.bits, ev.cache.v_format.bits)
    own_kv_option = getattr(s.runtime, "name", None) == "ollama"  # its cache type is OLLAMA_KV_CACHE_TYPE
    for bits in KV_BITS_STEPS:
        if bits < current_bits and not own_kv_option:
            fmt = format_from_bits(bits)
            try:
                changes.append(_change("kv_bits", bits, evaluate(s.with_changes(k_format=fmt, v_format=fmt))))
            except KvplanError:  # a runtime (kvplan.caches.runtimes) without this cache type, or refusing it
                continue
    for n in range(s.sequences - 1, 0, -1):  # the most sequences that fit, each count evaluated once
        trial = evaluate(s.with_changes(sequences=n))
        if trial.fits:
            changes.append(_change("sequences", n, trial))
            break
    for n in range(s.images - 1, -1, -1):  # the most images that fit (0: the encoder unloaded, text only)
        trial = evaluate(s.with_changes(images=n))
        if trial.fits:
            changes.append(_change("images", n, trial))
            break
    for n in range(s.audio - 1, -1, -1):  # the most audio clips that fit (0: the audio encoder unloaded)
        trial = evaluate(s.with_changes(audio=n))
        if trial.fits:
            changes.append(_change("audio", n, trial))
            break
    format_steps = smaller_weight_types(ev)
    if format_steps is not None:  # a real format: the real smaller ones of its family, not uniform widths no file has
        changes.extend(_change("weight_type", name, evaluate(s.with_changes(weight_type=name)))
                       for name in format_steps)
    else:
        for bits in WEIGHT_BITS_STEPS:
            if bits < ev.weight_bits:
                changes.append(_change("weight_bits", bits, evaluate(s.with_changes(weight_bits=bits))))
    own = min(s.model.schedule.windows(), default=0)
    # a window over every layer also replaces a model's own smaller ones (Gemma's 512-token local layers): never
    # suggest one that widens them, which would cost more cache on those layers than the model's design
    windows = [w for w in WINDOW_STEPS if w < s.ctx and ev.cache.global_layers > 0 and not (own and w > own)]
    for window in windows:
        try:
            trial = evaluate(s.with_changes(sliding_window=window))
        except KvplanError:  # a runtime (kvplan.caches.runtimes) with no way to add a window
            break
        if trial.fits:
            changes.append(_change("sliding_window", window, trial))
            break
    changes.extend(runtime_option_changes(ev, current_bits))
    if getattr(s, "draft", None) is not None:  # speculative decoding is a speed option: dropping it frees its parts
        changes.append(_change("draft", None, evaluate(s.with_changes(draft=None, acceptance_rate=None,
                                                                      draft_kv_type=None))))
    changes.extend(offload_changes(ev))
    changes.extend(gpu_layers_change(ev))
    if s.app_limit_field_in_force == "app_memory_limit" and getattr(s.device, "app_memory_limit_increased", None):
        # iOS: the app ships the increased-memory-limit entitlement (the larger per-app limit of the device)
        changes.append(_change("app_limit", "increased", evaluate(s.with_changes(app_limit="increased"))))
    for model in smaller_models:
        if s.images and getattr(model, "encoder", None) is None and s.mmproj is None:
            continue  # a model that cannot read the images is no answer to a configuration with images
        if s.audio and getattr(model, "audio_encoder", None) is None and s.mmproj is None:
            continue  # nor one that cannot hear the clips
        try:
            changes.append(_change("model", model.name, evaluate(_with_model(s, model))))
        except KvplanError:  # --mmproj: the projector of another width than this model's
            continue
    return changes


def gpu_layers_change(ev: Evaluation) -> list[Change]:
    """When the GPU's memory is what is over (an offloaded configuration): the most layers on the GPU that fit
    (llama.cpp's ``-ngl``, found by bisection: the GPU's total only falls as layers leave it, RAM's only grows)."""
    s, o = ev.scenario, ev.offload
    if ev.fits or o is None or not any(m.memory == "gpu" and m.verdict is Verdict.OVER for m in o.memories):
        return []
    now = s.model.layers + 1 if s.n_gpu_layers is None else min(s.n_gpu_layers, s.model.layers + 1)
    lo, hi, best = 0, now - 1, None
    try:
        while lo <= hi:
            mid = (lo + hi) // 2
            trial = evaluate(s.with_changes(n_gpu_layers=mid))
            if trial.fits:
                best, lo = (mid, trial), mid + 1
            else:
                hi = mid - 1
    except KvplanError:  # a model whose tensors cannot be placed by name
        return []
    return [] if best is None else [_change("n_gpu_layers", *best)]


def offload_changes(ev: Evaluation) -> list[Change]:
    """For a mixture of experts that does not fit: its expert stacks offloaded. When the GPU's memory is what is
    over (an offloaded configuration), the fewest first layers whose experts in host RAM make it fit (llama.cpp's
    n_cpu_moe, found by bisection: the GPU's total only falls as it grows); when RAM is over, every expert stack
    streamed from flash."""
    s = ev.scenario
    layers = s.model.layers
    if ev.fits or not getattr(s.model, "experts", None):
        return []
    out: list[Change] = []
    o = ev.offload
    gpu_over = o is not None and any(m.memory == "gpu" and m.verdict is Verdict.OVER for m in o.memories)
    try:
        if gpu_over and (s.n_cpu_moe or 0) < layers:
            lo, hi = (s.n_cpu_moe or 0) + 1, layers
            best = None
            while lo <= hi:
                mid = (lo + hi) // 2
                trial = evaluate(s.with_changes(n_cpu_moe=mid))
                if trial.fits:
                    best, hi = (mid, trial), mid - 1
                else:
                    lo = mid + 1
            if best is not None:
                out.append(_change("n_cpu_moe", *best))
        if (s.stream_experts or 0) < layers:
            trial = evaluate(s.with_changes(stream_experts=layers))
            if trial.fits:
                out.append(_change("stream_experts", layers, trial))
    except KvplanError:  # a model whose tensors cannot be placed by name
        return out
    return out


def _with_model(s, model):
    """``s`` with another ``model``: a draft stays only while it is smaller than that model and llama.cpp would
    accept it beside it (its vocabulary), else it goes (a draft as large as the model speculates for nothing)."""
    draft = getattr(s, "draft", None)
    if draft is not None and draft.params < model.params:
        try:
            return s.with_changes(model=model)
        except KvplanError:  # the draft's vocabulary does not match the other model's
            pass
    if draft is not None:
        return s.with_changes(model=model, draft=None, acceptance_rate=None, draft_kv_type=None)
    return s.with_changes(model=model)


def runtime_option_changes(ev: Evaluation, current_kv_bits: int) -> list[Change]:
    """The runtime's own options of :data:`RUNTIME_STEPS` that make ``ev`` fit: per option the first value that
    fits (the least given up), each a change of kind ``runtime.<field>``; a value the runtime refuses is skipped."""
    from dataclasses import replace

    s, out = ev.scenario, []
    name = getattr(s.runtime, "name", None)
    for runtime, field, how, values in RUNTIME_STEPS:
        if runtime != name:
            continue
        current = getattr(s.runtime, field)
        for step in values:
            value = step[0] if how == "narrower" else step
            if how == "narrower" and step[1] >= current_kv_bits or how == "switch" and value == current:
                continue
            if how == "smaller" and current is not None and value >= current:
                continue
            if how == "window" and value >= s.ctx:
                continue
            try:
                trial = evaluate(s.with_changes(runtime=replace(s.runtime, **{field: value})))
            except KvplanError:  # the runtime refuses it (a model whose own caches ignore --max-kv-size …)
                break
            if trial.fits:
                out.append(_change(f"runtime.{field}", value, trial))
                break
    return out


def smaller_weight_types(ev: Evaluation) -> list[str] | None:
    """The real weight formats of the family ``ev``'s weights are in that price its model smaller, largest (least
    lossy) first; None when the weights are a uniform width (then uniform widths are the steps).

    A GGUF type's steps are :data:`GGUF_STEPS`; a group format's (MLX, GPTQ, AWQ, ExecuTorch 8da4w) the other
    formats of its family at their own group size (mlx-8bit → mlx-4bit; none below mlx-4bit): a uniform width
    below every format a runtime reads is no change anyone can make."""
    current = getattr(ev.weights_pricing, "format", None)
    if current is None and ev.scenario.weight_bits is None:  # an imported GGUF: its file's bytes, its type named
        current = getattr(ev.scenario.model, "weight_type", None)
    if current is None:
        return None
    if current in GGUF_STEPS or current in _OTHER_GGUF:
        candidates = GGUF_STEPS
    else:
        from kvplan.engine.group_quant import GROUP_FORMATS

        if current not in GROUP_FORMATS:
            return None
        family = GROUP_FORMATS[current][0]
        candidates = tuple(name for name, (kind, _, _) in GROUP_FORMATS.items() if kind == family and name != current)
    from kvplan.plan.weights import priced_weights  # tensor tables: only for a model in a named format

    priced = [(priced_weights(ev.scenario.model, name, 0).total_bytes, name) for name in candidates]
    return [name for total, name in sorted(priced, reverse=True) if total < ev.weights_bytes]


def _rank(change: Change) -> tuple:
    """Fewest caveats first, then most headroom, then fastest decode (then :func:`_least_loss_first` within a kind)."""
    return len(change.caveats), -change.evaluation.headroom_bytes, -change.evaluation.decode_tokens_per_s


def _least_loss_first(ranked: list[Change]) -> list[Change]:
    """Within one kind of change with the same caveats, the one that gives up least comes first (8-bit KV before
    4-bit, the larger window or context first), in the places that kind holds in ``ranked``: more headroom is
    no reason to quantize harder when both fit."""
    groups: dict[tuple, list[int]] = {}
    for i, change in enumerate(ranked):
        groups.setdefault((change.kind, len(change.caveats)), []).append(i)
    out = list(ranked)
    for positions in groups.values():
        members = sorted((ranked[i] for i in positions), key=lambda c: -c.value if isinstance(c.value, (int, float))
                         else -c.evaluation.weights_bytes if c.kind == "weight_type" else 0)
        for i, change in zip(positions, members):
            out[i] = change
    return out


def judge(ev: Evaluation, smaller_models: Iterable = ()) -> Advice:
    """The changes that make ``ev`` fit: those keeping the model ranked by :func:`_rank`; the smaller
    models that fit apart, fewest caveats first and otherwise in the order given (largest first)."""
    fitting = [c for c in candidate_changes(ev, smaller_models) if c.fits]
    keep = _least_loss_first(sorted((c for c in fitting if c.keeps_model), key=_rank))
    others = sorted((c for c in fitting if not c.keeps_model), key=lambda c: len(c.caveats))
    return Advice(tuple(keep), tuple(others))


def changes_to_fit(ev: Evaluation) -> list[Change]:
    """The changes that keep the model and make ``ev`` fit, ranked (see :func:`judge`)."""
    return list(judge(ev).keep_model)


def smaller_models(model, candidates: Iterable) -> list:
    """Models of ``model``'s ``family`` with fewer parameters, largest first (none without a family).

    ``candidates`` are :class:`~kvplan.profiles.spec.Model` profiles (e.g. every built-in one);
    the model itself and duplicates by name are skipped.
    """
    if not model.family:
        return []
    seen: dict[str, object] = {}
    for other in candidates:
        if other.family == model.family and other.params < model.params and other.name != model.name:
            seen.setdefault(other.name, other)
    return sorted(seen.values(), key=lambda m: -m.params)
