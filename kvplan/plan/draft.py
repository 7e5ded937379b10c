"""A draft model for speculative decoding, as resident parts (:mod:`kvplan.plan.parts`): its weights, its KV cache
and, under llama.cpp, its context's compute and output buffers.

llama.cpp build 11434 (``llama-server -md DRAFT.gguf``) loads the draft beside the target and creates a second
context for it from a copy of the target's parameters:

- ``common/speculative.cpp`` ``common_base_params_to_speculative`` (lines 2527-2582): the copy takes the draft's
  model, devices (``-devd``) and layers (``-ngld``), and the draft's own cache types ``-ctkd`` / ``-ctvd``
  (``result.cache_type_k = params_spec.cache_type_k``, lines 2559-2560), whose default is F16 whatever the target's
  ``-ctk`` (``common/common.h`` ``common_params_speculative_draft``, lines 346-347); ``-np``, ``-b``, ``-ub``,
  ``--kv-unified`` and flash attention are the target's; ``n_outputs_max = n_parallel``, one per sequence
  (lines 2561-2562);
- ``common_speculative_init_result`` (lines 2594-2650): ``cparams.n_ctx = llama_n_ctx(ctx_tgt)`` (line 2611), "the
  draft context holds as many tokens per sequence as the target context": the target's ``-c`` after llama.cpp
  padded it;
- ``--spec-draft-n-max`` (``common/arg.cpp`` lines 4141-4150; ``n_max = 3`` in ``common/common.h`` line 329) is the
  longest draft per step; the older ``--draft-max`` is removed in this build (``common/arg.cpp`` lines 4412-4418);
  there is no ``--ctx-size-draft`` in this build.

Under the other runtimes and the ideal formula the draft's cache holds the same context and sequences as the
target's, in ``draft_kv_type`` or else the cache format the target's was asked for (or the draft profile's).
The draft's weights are its profile's own (its ``weight_type`` / ``weight_bits``: a GGUF's own type).
"""

from __future__ import annotations

from kvplan.plan.mtp_head import is_mtp
from kvplan.plan.parts import ResidentPart
from kvplan.plan.scenario import Scenario

# the llama.cpp draft cache type when -ctkd / -ctvd are not given (common/common.h lines 346-347)
LLAMACPP_DRAFT_CACHE_TYPE = "f16"


def draft_scenario(s: Scenario) -> Scenario:
    """The draft model's own configuration: its profile at the target's context, sequences and runtime, with the
    cache type llama.cpp gives it (``-ctkd``/``-ctvd``, default f16) or, elsewhere, the target's asked-for format."""
    llamacpp = _llamacpp(s)
    kv = s.draft_kv_type or (LLAMACPP_DRAFT_CACHE_TYPE if llamacpp else None)
    k_format, v_format = (kv, kv) if kv is not None else (s.k_format, s.v_format)
    return Scenario(s.device, s.draft, s.ctx, sequences=s.sequences, k_format=k_format, v_format=v_format,
                    margin_fraction=s.margin_fraction, runtime=s.runtime)


def _llamacpp(s: Scenario) -> bool:
    if s.runtime is None:
        return False
    from kvplan.profiles.runtime import llamacpp_spec_of

    return llamacpp_spec_of(s.runtime) is not None


def draft_parts(s: Scenario, pricer) -> tuple[ResidentPart, ...]:
    """``draft_weights``, ``draft_kv`` and (under llama.cpp, when the draft profile has the shape) ``draft_buffers``
    of scenario ``s``; () without a draft. Plain decode reads none of them (their ``read_bytes_of`` is 0: a decode
    step of the target alone); one step of the draft reads its weights and its whole cache
    (``draft_step_read_bytes_of``), which :func:`kvplan.plan.core.speculative_at` prices."""
    if s.draft is None or is_mtp(s.draft):  # the model's own MTP head: kvplan.plan.mtp
        return ()
    ds = draft_scenario(s)
    weights, weights_read, bits, pricing = pricer.weights(ds)
    target_cache, cache = pricer.cache(s), pricer.cache(ds)
    name = getattr(s.draft, "weight_type", None) if pricing is not None else None
    if name:
        weights_words = f"{name}, {bits:.2f} bits/weight"
    elif getattr(s.draft, "weights", None) is not None:  # an imported GGUF's exact tensor bytes
        weights_words = "as stated in the profile"
    else:
        weights_words = f"{bits:g}-bit"
    llamacpp = getattr(cache, "family", None) == "llama.cpp"

    def draft_ctx(ctx, sequences):
        """The draft context's -c: llama_n_ctx(ctx_tgt), the target's after padding, under llama.cpp."""
        if not llamacpp or not ctx:
            return ctx
        return target_cache.cells(target_cache.llamacpp_ctx(int(ctx), int(sequences)), int(sequences)).n_ctx

    def kv_bytes(ctx, sequences):
        return cache.kv_peak_bytes(draft_ctx(ctx, sequences), sequences)

    def kv_read_bytes(ctx, sequences):
        return cache.kv_bytes(draft_ctx(ctx, sequences), sequences)

    k, v = cache.k_format.name, cache.v_format.name
    facts = (("model", s.draft.name),)
    found = [
        ResidentPart("draft_weights", int(weights), 0, values=facts + (("weights", weights_words),
                                                                       ("weight_bits", bits),
                                                                       ("weights_read_bytes", int(weights_read))),
                     draft_step_read_bytes_of=int(weights_read)),
        ResidentPart("draft_kv", kv_bytes, 0, values=facts + (("kv_format", k if k == v else f"K {k} / V {v}"),
                                                              ("ctx_tokens", int(draft_ctx(s.ctx, s.sequences))),
                                                              ("kv_bytes_per_token", cache.bytes_per_token)),
                     draft_step_read_bytes_of=kv_read_bytes),
    ]
    if llamacpp:
        from kvplan.caches.buffers import llamacpp_buffers

        v_name = (cache.v_format or cache.k_format).name
        memo: dict = {}  # an allocator replay per point: the max-context search asks for the same ones again

        def buffers(ctx, sequences):
            key = (int(ctx), int(sequences))
            if key not in memo:
                priced = llamacpp_buffers(cache.spec, s.draft, draft_ctx(*key), key[1], cache.k_format.name, v_name)
                memo[key] = priced.total_bytes if priced is not None else 0
            return memo[key]

        if llamacpp_buffers(cache.spec, s.draft, 1, 1) is not None:
            found.append(ResidentPart("draft_buffers", buffers, 0, values=facts))
        vocab = getattr(s.model, "vocab_size", None)
        if vocab:
            k, batch = s.draft_max_tokens, cache.spec.batch

            def verify_outputs(ctx, sequences):
                """The target's output buffer grown to hold the logits of every verified position: llama-server
                sets n_outputs_max = min(n_batch, -np · (1 + n_max)) (server_output_limits,
                tools/server/server-context.cpp 42-54) and llama_context::output_reserve grows the buffer to a
                batch's outputs (src/llama-context.cpp 2122-2145): (rows − -np) · n_vocab · 4 B more than at load."""
                return (min(batch, sequences * (1 + k)) - sequences) * vocab * 4

            found.append(ResidentPart("draft_verify_outputs", verify_outputs, 0,
                                      values=(("model", s.model.name), ("rows", 1 + k))))
    return tuple(found)
