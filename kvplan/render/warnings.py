"""The words for what a user should know before trusting figures (:class:`kvplan.plan.facts.WarningFact`): the
``warning:`` notes under a table, the ``kvplan: warning:`` lines on stderr and every JSON document's
``warnings``. One entry per kind; each takes the warning's facts. The thresholds the sentences quote are
:mod:`kvplan.plan.warnings`' own."""

from __future__ import annotations

from collections.abc import Iterable

from kvplan.render.reasons import reason_text


def _size(n: int) -> str:
    return f"{n / 1e9:.2f} GB" if n >= 10**9 else f"{n / 1e6:.2f} MB"


def _os_reserve(v) -> str:
    return (f"device {v['device']}: os_reserve {v['os_reserve_bytes']:,} B is under 100 MB on {_size(v['ram_bytes'])} "
            "of RAM, less than any OS keeps for itself — is the unit right?")


def _os_reserve_asked(v) -> str:
    return (f"an OS reserve of {v['os_reserve_bytes']:,} B is under 100 MB on {v['device']}'s {_size(v['ram_bytes'])} "
            "of RAM, less than any OS keeps for itself — is the unit right?")


def _ctx_past_trained(v) -> str:
    trained = v["trained_tokens"]
    return (f"context {v['ctx_tokens']:,} tokens: {v['ctx_per_sequence_tokens'] / trained:,.1f}× {v['model']}'s "
            f"trained {trained:,} per sequence (more than {v['max_over_trained']}×) — is that the context you meant? "
            "Quality there depends on a context extension (RoPE scaling) the model may not support")


def _window_ignored(v) -> str:
    said = f"llama.cpp ignores {v['model']}'s {v['window']:,}-token sliding window ({reason_text(v['reason'])})"
    if v["llama_kv_bytes"] is None:  # a cache type llama.cpp cannot store: no figure of its own
        return said + " and keeps the full context on every layer; the ideal formula's window does not hold there"
    return (said + f": it allocates {_size(v['llama_kv_bytes'])} of KV cache here, not {_size(v['kv_bytes'])}"
            + (", over the budget" if v["over_budget"] else ""))


def _window_override(v) -> str:
    model, parts = v["model"], []
    if v["widens"] is not None:
        parts.append(f"it {'widens' if v['widens'] else 'narrows'} the {v['own_window']:,}-token window {model}'s "
                     "local layers were trained with")
    if v["drops"] == "global":
        parts.append(f"{model}'s global layers were trained with full attention, and the window drops tokens they "
                     "were trained to attend")
    elif v["drops"] == "every":
        parts.append(f"{model} was trained with full attention on every layer, and the window drops tokens it was "
                     "trained to attend")
    return f"sliding_window {v['window']:,} puts every layer behind one window: {'; '.join(parts)} (quality untested)"


def _mlx_wired_limit(v) -> str:
    return (f"MLX-LM will print its warning: the weights ({_size(v['weights_bytes'])}) pass "
            f"{v['fraction']:.0%} of the GPU working set ({_size(v['working_set_bytes'])}): \"Generating with a model "
            f"that requires {v['model_mb']} MB which is close to the maximum recommended size of {v['max_mb']} MB. "
            "This can be slow.\" (mlx_lm wired_limit; MB there are MiB)")


def _metal_working_set(v) -> str:
    said = ("ggml warns \"current allocated size is greater than the recommended max working set size\" as it maps "
            "the weights" if v["ggml_warns"] else
            "llama.cpp prints no warning for it (ggml checks only the mapped weight buffers, which stay under it)")
    parts, unpriced = (("the weights, the KV cache and the compute buffer", "") if v["compute_bytes"] else
                       ("the weights and the KV cache", "; the compute buffer not priced"))
    return (f"llama.cpp on Metal: {parts} ({_size(v['metal_bytes'])}, every layer on the GPU{unpriced}) pass the "
            f"GPU working set ({_size(v['working_set_bytes'])}); "
            f"{said}. Its --fit (on by default) fits unset options to that working set less what is allocated, "
            "which kvplan does not model")


_WORDS = {
    # a device's figures (kvplan.plan.warnings.implausible_device)
    "device_ram": lambda v: f"device {v['device']}: ram {v['ram_bytes']:,} B is under 256 MB — is a unit missing?",
    "device_os_reserve": _os_reserve,
    "os_reserve_asked": _os_reserve_asked,
    "device_memory_bandwidth": lambda v: (f"device {v['device']}: memory_bandwidth "
                                          f"{v['memory_bandwidth_bytes_per_s']:,.0f} B/s is under 1 GB/s — is a unit "
                                          "missing?"),
    "device_flash_read": lambda v: (f"device {v['device']}: flash_read {v['flash_read_bytes_per_s']:,.0f} B/s is "
                                    "under 10 MB/s — is a unit missing?"),
    "device_decode_latency": lambda v: (f"device {v['device']}: decode_latency {v['decode_latency_s']:g} s per decode "
                                        "step is over 100 ms; measured ones are a few ms — is the unit right?"),
    "device_runtime_overhead": lambda v: (f"device {v['device']}: runtime_overhead {_size(v['runtime_overhead_bytes'])}"
                                          f" is over half of its {_size(v['ram_bytes'])} of RAM — is the unit right?"),
    # a configuration's inputs (kvplan.plan.warnings.implausible_inputs)
    "ctx_under_plausible": lambda v: (f"context {v['ctx_tokens']:,} tokens is under {v['min_tokens']} — is a k "
                                      f"missing ({v['ctx_tokens']}k = {v['ctx_tokens'] * 1024:,} tokens)?"),
    "weight_bits_under_plausible": lambda v: (f"weight_bits {v['weight_bits']:g} is under {v['min_bits']:g} bit per "
                                              "weight, fewer than any weight format stores (ternary weights take "
                                              "1.58)"),
    "ctx_past_trained": _ctx_past_trained,
    # where the ideal formula and the runtimes part (kvplan.plan.warnings)
    "window_ignored": _window_ignored,
    "window_override": _window_override,
    "mlx_wired_limit": _mlx_wired_limit,
    "mlx_chunked_batch": lambda v: (f"mlx-lm cannot batch the {v['chunked_layers']} chunked-attention layers' "
                                    "ChunkedKVCache (it has no merge, so BatchGenerator refuses the prompts): the "
                                    f"{v['sequences']} sequences are priced as {v['sequences']} separate "
                                    "one-sequence caches, which mlx-lm would run one after another"),
    "metal_working_set": _metal_working_set,
    "buffers_unpriced": lambda v: ("llama.cpp's compute and output buffers are not counted in the total: "
                                   + reason_text(v["reason"])),
    "speculation_slower": lambda v: (f"speculative decoding with draft {v['draft']} is slower than decoding "
                                     f"without it: {v['tokens_per_s']:.1f} against {v['plain_tokens_per_s']:.1f} "
                                     f"tok/s at acceptance {v['acceptance_rate']:g} with {v['draft_tokens']} draft "
                                     "tokens per step; drop the draft, or draft fewer tokens"),
    "prefill_placement": lambda v: (f"prefill with {v['layers_on_gpu']} of {v['layers']} layers on the GPU"
                                    f"{' (its own memory)' if v['discrete'] else ''}: its memory floor reads each "
                                    "memory's weights at that memory's bandwidth, but its compute bound is the "
                                    "device's one compute figure wherever the layers run (a profile has no compute "
                                    "figure per processor; the weights llama.cpp copies to the GPU for a large "
                                    "batch are not priced)"),
    # a model profile on its own (kvplan.plan.profile_warnings)
    "model_window_ignored": lambda v: (f"model {v['model']}: llama.cpp ignores its {v['window']:,}-token sliding "
                                       f"window ({reason_text(v['reason'])}) and caches the whole context on every "
                                       "layer; the runtime llama.cpp prices that"),
}

KINDS = frozenset(_WORDS)
#: the kinds that say what llama.cpp does differently: ``check`` then points at ``--runtime llama.cpp``
LLAMACPP_KINDS = frozenset({"window_ignored", "buffers_unpriced"})


def word(warning) -> str:
    """The sentence for one :class:`~kvplan.plan.facts.WarningFact`."""
    return _WORDS[warning.kind](warning.facts())


def words(warnings: Iterable) -> list[str]:
    """The sentences for ``warnings``, in order of first appearance, each once."""
    return list(dict.fromkeys(word(w) for w in warnings))
