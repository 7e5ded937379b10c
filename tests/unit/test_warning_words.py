"""Every warning kind the core gives (kvplan.plan.facts.WarningFact) and every reason kind (kvplan.caches.facts.Reason)
has its words in render, and those words are the sentences kvplan has always printed (written out here by hand
from the figures: 2,000,000 B of reserve on 8,000,000,000 B of RAM is "8.00 GB", 536,870,912 B is "536.87 MB")."""

from __future__ import annotations

import pytest

from kvplan.caches.facts import reason
from kvplan.plan.facts import WarningFact, warning
from kvplan.render import reasons, warnings

MISTRAL = reason("converted_as_llama")

REASONS = {
    MISTRAL: "Mistral is converted to GGUF as architecture llama, which has no window",
    reason("llama_has_no_window"): "architecture llama has no window",
    reason("window_disabled_upstream"): "llama.cpp disables Phi-3's window on purpose, ggml-org/llama.cpp#13676",
    reason("no_window_for_architecture", architecture="exaone"): "llama.cpp sets no window for this architecture",
    reason("missing_shape_fields", fields=("hidden_size", "vocab_size")):
        "the model profile lacks hidden_size, vocab_size, which llama.cpp's compute buffer depends on",
    reason("experts_graph_unmodelled", architecture=None):
        "llama.cpp's graph for a mixture of experts of architecture unknown is not modelled (only DeepSeek-V2/V3's is)",
    reason("state_graph_unmodelled", architecture="lfm2"):
        "llama.cpp's graph for the state layers of architecture lfm2 is not modelled (only attention graphs are "
        "replayed)",
    reason("gemma3n_graph_unmodelled", architecture="gemma3n"):
        "llama.cpp's graph of architecture gemma3n (AltUp streams, per-layer embeddings, shared-KV layers) is not "
        "modelled",
    reason("gemma4_graph_unmodelled", architecture="gemma4"):
        "llama.cpp's graph of architecture gemma4 with experts or without per-layer embeddings is not modelled (only "
        "the dense E models' graph is replayed)",
}

WARNINGS = [
    (warning("device_ram", device="tiny", ram_bytes=100_000_000),
     "device tiny: ram 100,000,000 B is under 256 MB — is a unit missing?"),
    (warning("device_os_reserve", device="pixel8", os_reserve_bytes=0, ram_bytes=8_000_000_000),
     "device pixel8: os_reserve 0 B is under 100 MB on 8.00 GB of RAM, less than any OS keeps for itself — is the "
     "unit right?"),
    (warning("os_reserve_asked", device="pixel8", os_reserve_bytes=2_000_000, ram_bytes=8_000_000_000),
     "an OS reserve of 2,000,000 B is under 100 MB on pixel8's 8.00 GB of RAM, less than any OS keeps for itself — "
     "is the unit right?"),
    (warning("device_memory_bandwidth", device="tiny", memory_bandwidth_bytes_per_s=500e6),
     "device tiny: memory_bandwidth 500,000,000 B/s is under 1 GB/s — is a unit missing?"),
    (warning("device_flash_read", device="tiny", flash_read_bytes_per_s=5e6),
     "device tiny: flash_read 5,000,000 B/s is under 10 MB/s — is a unit missing?"),
    (warning("device_decode_latency", device="tiny", decode_latency_s=2.5),
     "device tiny: decode_latency 2.5 s per decode step is over 100 ms; measured ones are a few ms — is the unit "
     "right?"),
    # 5,000,000,000 B over half of 8,000,000,000 B
    (warning("device_runtime_overhead", device="tiny", runtime_overhead_bytes=5_000_000_000, ram_bytes=8_000_000_000),
     "device tiny: runtime_overhead 5.00 GB is over half of its 8.00 GB of RAM — is the unit right?"),
    # 8k = 8 × 1,024 = 8,192 tokens
    (warning("ctx_under_plausible", ctx_tokens=8, min_tokens=64),
     "context 8 tokens is under 64 — is a k missing (8k = 8,192 tokens)?"),
    (warning("weight_bits_under_plausible", weight_bits=0.5, min_bits=1.0),
     "weight_bits 0.5 is under 1 bit per weight, fewer than any weight format stores (ternary weights take 1.58)"),
    # 40,000 / 4,096 = 9.765… → 9.8×
    (warning("ctx_past_trained", ctx_tokens=40_000, ctx_per_sequence_tokens=40_000, model="llama-2-7b",
             trained_tokens=4096, max_over_trained=8),
     "context 40,000 tokens: 9.8× llama-2-7b's trained 4,096 per sequence (more than 8×) — is that the context you "
     "meant? Quality there depends on a context extension (RoPE scaling) the model may not support"),
    (warning("window_ignored", model="mistral-7b-v0.1", window=4096, reason=MISTRAL, llama_kv_bytes=4_294_967_296,
             kv_bytes=536_870_912, over_budget=True),
     "llama.cpp ignores mistral-7b-v0.1's 4,096-token sliding window (Mistral is converted to GGUF as architecture "
     "llama, which has no window): it allocates 4.29 GB of KV cache here, not 536.87 MB, over the budget"),
    (warning("window_ignored", model="mistral-7b-v0.1", window=4096, reason=MISTRAL, llama_kv_bytes=None,
             kv_bytes=536_870_912, over_budget=None),
     "llama.cpp ignores mistral-7b-v0.1's 4,096-token sliding window (Mistral is converted to GGUF as architecture "
     "llama, which has no window) and keeps the full context on every layer; the ideal formula's window does not "
     "hold there"),
    (warning("window_override", window=100_000, model="gemma-3-1b", own_window=512, widens=True, drops="global"),
     "sliding_window 100,000 puts every layer behind one window: it widens the 512-token window gemma-3-1b's local "
     "layers were trained with; gemma-3-1b's global layers were trained with full attention, and the window drops "
     "tokens they were trained to attend (quality untested)"),
    (warning("window_override", window=1024, model="llama-2-7b", own_window=None, widens=None, drops="every"),
     "sliding_window 1,024 puts every layer behind one window: llama-2-7b was trained with full attention on every "
     "layer, and the window drops tokens it was trained to attend (quality untested)"),
    (warning("buffers_unpriced", reason=reason("missing_shape_fields", fields=("vocab_size",))),
     "llama.cpp's compute and output buffers are not counted in the total: the model profile lacks vocab_size, "
     "which llama.cpp's compute buffer depends on"),
    # 6,000,000,000 B // 2^20 = 5,722 MiB; 5,726,630,052 B // 2^20 = 5,461 MiB (the 8 GB M2's working set)
    (warning("mlx_wired_limit", weights_bytes=6_000_000_000, working_set_bytes=5_726_630_052, model_mb=5722,
             max_mb=5461, fraction=0.9),
     "MLX-LM will print its warning: the weights (6.00 GB) pass 90% of the GPU working set (5.73 GB): \"Generating "
     "with a model that requires 5722 MB which is close to the maximum recommended size of 5461 MB. This can be "
     "slow.\" (mlx_lm wired_limit; MB there are MiB)"),
    (warning("mlx_chunked_batch", sequences=2, chunked_layers=36),
     "mlx-lm cannot batch the 36 chunked-attention layers' ChunkedKVCache (it has no merge, so BatchGenerator "
     "refuses the prompts): the 2 sequences are priced as 2 separate one-sequence caches, which mlx-lm would run "
     "one after another"),
    (warning("metal_working_set", metal_bytes=7_000_000_000, weights_bytes=3_000_000_000, kv_bytes=3_800_000_000,
             compute_bytes=200_000_000, working_set_bytes=5_726_630_052, ggml_warns=False),
     "llama.cpp on Metal: the weights, the KV cache and the compute buffer (7.00 GB, every layer on the GPU) pass "
     "the GPU working set (5.73 GB); llama.cpp prints no warning for it (ggml checks only the mapped weight buffers, "
     "which stay under it). Its --fit (on by default) fits unset options to that working set less what is "
     "allocated, which kvplan does not model"),
    (warning("metal_working_set", metal_bytes=7_000_000_000, weights_bytes=6_000_000_000, kv_bytes=1_000_000_000,
             compute_bytes=0, working_set_bytes=5_726_630_052, ggml_warns=True),
     "llama.cpp on Metal: the weights and the KV cache (7.00 GB, every layer on the GPU; the compute buffer not "
     "priced) pass the GPU working set (5.73 GB); ggml warns \"current allocated size is greater than the "
     "recommended max working set size\" as it maps the weights. Its --fit (on by default) fits unset options to "
     "that working set less what is allocated, which kvplan does not model"),
    (warning("speculation_slower", draft="llama-3.2-3b", tokens_per_s=9.04, plain_tokens_per_s=12.1,
             acceptance_rate=0.3, draft_tokens=3),
     "speculative decoding with draft llama-3.2-3b is slower than decoding without it: 9.0 against 12.1 tok/s at "
     "acceptance 0.3 with 3 draft tokens per step; drop the draft, or draft fewer tokens"),
    (warning("prefill_placement", layers_on_gpu=15, layers=32, discrete=True),
     "prefill with 15 of 32 layers on the GPU (its own memory): its memory floor reads each memory's weights at that "
     "memory's bandwidth, but its compute bound is the device's one compute figure wherever the layers run (a "
     "profile has no compute figure per processor; the weights llama.cpp copies to the GPU for a large batch are "
     "not priced)"),
    (warning("model_window_ignored", model="mistral-7b-v0.1", window=4096, reason=MISTRAL),
     "model mistral-7b-v0.1: llama.cpp ignores its 4,096-token sliding window (Mistral is converted to GGUF as "
     "architecture llama, which has no window) and caches the whole context on every layer; the runtime llama.cpp "
     "prices that"),
]


def test_every_warning_kind_has_an_example():
    assert {w.kind for w, _ in WARNINGS} == warnings.KINDS


@pytest.mark.parametrize("fact, sentence", WARNINGS, ids=[w.kind for w, _ in WARNINGS])
def test_each_warning_kind_is_worded(fact, sentence):
    assert isinstance(fact, WarningFact) and warnings.word(fact) == sentence


def test_every_reason_kind_is_worded():
    assert {r.kind for r in REASONS} == reasons.KINDS
    for fact, clause in REASONS.items():
        assert reasons.reason_text(fact) == clause


def test_words_keep_the_first_of_each_sentence():
    a, b = (warning("ctx_under_plausible", ctx_tokens=n, min_tokens=64) for n in (8, 16))
    assert warnings.words([a, b, a]) == [warnings.word(a), warnings.word(b)]
