"""The model's own multi-token-prediction (MTP) head as the speculative draft (``--draft mtp``), as resident
parts (:mod:`kvplan.plan.parts`).

llama.cpp build 11434 with ``--spec-type draft-mtp`` (``-hf`` repos with an MTP sidecar pick it by themselves,
``common/arg.cpp`` 546-551):

- ``common_model_params_to_llama`` (``common/common.cpp`` 1683) sets ``load_mtp`` whenever the speculative types
  hold ``draft-mtp``: the MTP blocks' tensors are created (``src/models/qwen35.cpp`` ``load_arch_tensors``:
  ``mtp_flags`` is ``TENSOR_SKIP`` otherwise, and ``llama_model_loader::create_tensor`` then drops them from the
  model buffer: "model has unused tensor … -- ignoring"). Measured: the model buffer is the trunk's bytes without
  ``draft-mtp`` and the trunk's plus the MTP block's with it (tests/data/llamacpp/mtp/mtp_contexts.json). The
  block's bytes are ``mtp_weights``; they are read at every draft step, with the trunk's output head.
- ``common_context_params_to_llama`` (``common/common.cpp`` 1693): the TARGET context's ``n_rs_seq =
  need_n_rs_seq() = n_max`` (``common/common.h`` ``common_params_speculative::need_n_rs_seq``): its recurrent
  memory keeps ``1 + n_max`` rows per cell (``src/llama-memory-recurrent.cpp`` 101: ``mem_size · (1 + n_rs_seq)``),
  the rollback snapshots of a rejected draft: ``mtp_state_snapshots`` = ``n_max`` × the state of every sequence.
- ``common_speculative_init_result`` (``common/speculative.cpp`` 2594-2650) creates the draft context on the
  target MODEL (no file of its own): ``ctx_type = LLAMA_CONTEXT_TYPE_MTP``, ``n_ctx = llama_n_ctx(ctx_tgt)``,
  ``n_rs_seq = 0``, ``ctx_other = ctx_tgt``, from ``common_base_params_to_speculative`` (2527-2582: ``-ctkd/-ctvd``
  types, default F16; ``n_outputs_max = -np``). Its memory (``src/llama-model.cpp`` ``create_memory``,
  ``mtp_on_hybrid_qwen``) is a plain ``llama_kv_cache`` whose filter keeps only the blocks ``il ≥ n_layer()``: the
  MTP blocks' K and V over the target's cells, ``mtp_kv``; no recurrent memory. Its compute and output buffers are
  ``mtp_buffers``.
- ``common_speculative_impl_draft_mtp`` (``common/speculative.cpp`` 1490-1491) turns on the target's
  ``embeddings_nextn`` unmasked: at the next ``llama_context::output_reserve`` (``src/llama-context.cpp``
  2145-2151) the target's output buffer holds ``n_embd · n_batch`` more floats (the hidden row of every token of
  a batch) beside the logits of the verified rows (``server_output_limits``, tools/server/server-context.cpp
  42-54): ``mtp_verify_outputs``. Measured after one verification batch.
- A draft step is ``graph_mtp`` over one token per sequence: the block's matrices (a MoE's routed experts by the
  share a token uses), the output head (``model.output``, or ``token_embd`` when tied) and the MTP KV cache.

Elsewhere (the ideal formula, transformers, …) the head is priced as its weights and one attention layer's cache
at the target's context in the target's cache format.
"""

from __future__ import annotations

from kvplan.errors import FieldError
from kvplan.plan.mtp_head import is_mtp
from kvplan.plan.parts import ResidentPart
from kvplan.plan.scenario import Scenario

# the llama.cpp draft cache type when -ctkd / -ctvd are not given (common/common.h lines 346-347)
LLAMACPP_DRAFT_CACHE_TYPE = "f16"
LOGIT_BYTES = 4  # float32 logits and hidden rows of the output buffer


def _weights(s: Scenario, pricer) -> tuple[int, int, int, tuple]:
    """(the MTP blocks' bytes, the bytes a draft step reads of them, of the output head, how they were priced:
    ``("per_tensor", weight type)``, ``("file", None)`` or ``("bits", bits per weight)``)."""
    m = s.model
    from kvplan.engine.mtp import mtp_block_params, mtp_ffn_params

    h, layers = m.hidden_size, m.mtp_layers
    dense = m.intermediate_size if isinstance(m.intermediate_size, int) else 0
    experts, used = getattr(m, "experts", None) or 0, getattr(m, "experts_per_token", None) or 0
    e_ff, shared = getattr(m, "expert_intermediate_size", None) or 0, getattr(m, "shared_experts", 0) or 0
    _, _, bits, pricing = pricer.weights(s)
    if pricing is not None and getattr(pricing, "format", "").lower().removeprefix("gguf-") in _gguf_types():
        from kvplan.plan.weights import mtp_block_tensors

        tensors = mtp_block_tensors(m, pricing.format)
        stored = sum(t.bytes for t in tensors)
        read = sum(-(-t.bytes * used // experts) if t.kind == "experts" and experts and used else t.bytes
                   for t in tensors)
        head = next((t.bytes for t in pricing.tensors if t.name == "output.weight"), None)
        if head is None:
            head = next(t.bytes for t in pricing.tensors if t.name == "token_embd.weight")
        return stored, read, head, ("per_tensor", pricing.format)
    if getattr(m, "mtp_weights", None) is not None:  # an imported GGUF's exact bytes of its MTP block
        stored = int(m.mtp_weights)
        share = 1.0 if not experts else (
            mtp_block_params(h, m.attention_heads, m.kv_heads, m.head_dim, dense, experts, e_ff, shared)
            - mtp_ffn_params(h, dense, experts, e_ff, shared) + mtp_ffn_params(h, dense, experts, e_ff, shared, used)
        ) / mtp_block_params(h, m.attention_heads, m.kv_heads, m.head_dim, dense, experts, e_ff, shared)
        return stored, round(stored * share), round(m.vocab_size * h * bits / 8), ("file", None)
    per_block = mtp_block_params(h, m.attention_heads, m.kv_heads, m.head_dim, dense, experts, e_ff, shared)
    active = per_block - mtp_ffn_params(h, dense, experts, e_ff, shared) + mtp_ffn_params(h, dense, experts, e_ff,
                                                                                          shared, used or None)
    return (round(layers * per_block * bits / 8), round(layers * active * bits / 8), round(m.vocab_size * h * bits / 8),
            ("bits", bits))


def _gguf_types():
    from kvplan.engine.quantize import FILE_TYPES

    return FILE_TYPES


def _check(s: Scenario) -> None:
    m = s.model
    missing = [f for f in ("hidden_size", "vocab_size") if not getattr(m, f, None)]
    if missing:
        raise FieldError("draft", f"the MTP head of {m.name} needs {', '.join(missing)} in its profile")


def mtp_parts(s: Scenario, pricer) -> tuple[ResidentPart, ...]:
    """``mtp_weights``, ``mtp_kv`` and, under llama.cpp, ``mtp_state_snapshots`` (a hybrid target),
    ``mtp_buffers`` and ``mtp_verify_outputs`` of scenario ``s`` (module docstring); () unless its draft is the
    model's MTP head. Plain decode reads none of them; a draft step reads the block, the output head and the
    MTP cache (``draft_step_read_bytes_of``), which :func:`kvplan.plan.core.speculative_at` prices."""
    if not is_mtp(getattr(s, "draft", None)):
        return ()
    _check(s)
    m = s.model
    target = pricer.cache(s)
    llamacpp = getattr(target, "family", None) == "llama.cpp"
    stored, read, head, (how, detail) = _weights(s, pricer)
    if how == "per_tensor":
        words = f"{detail}, as llama-quantize types the file's MTP block"
    elif how == "file":
        words = "the file's MTP tensor bytes"
    else:
        words = f"{detail:g} bits/weight, as the model's weights"
    facts = (("model", m.name), ("mtp_layers", m.mtp_layers))
    from kvplan.engine.formats import format_from_name
    from kvplan.engine.ggml_types import row_bytes

    kv_type = s.draft_kv_type or (LLAMACPP_DRAFT_CACHE_TYPE if llamacpp else None)
    k_fmt = format_from_name(kv_type) if kv_type else target.k_format
    v_fmt = format_from_name(kv_type) if kv_type else (target.v_format or target.k_format)
    kv_heads = m.kv_heads if isinstance(m.kv_heads, int) else max(m.kv_heads)
    d_v = getattr(m, "v_head_dim", None) or m.head_dim
    if llamacpp:  # ggml rows: whole blocks of the type (llama_kv_cache: ggml_row_size per cell)
        per_cell = m.mtp_layers * (row_bytes(k_fmt.name, kv_heads * m.head_dim) + row_bytes(v_fmt.name, kv_heads * d_v))
    else:
        per_cell = m.mtp_layers * (k_fmt.row_bytes(kv_heads * m.head_dim) + v_fmt.row_bytes(kv_heads * d_v))

    def cells(ctx, sequences):
        """The MTP context's cells: the target's n_ctx after padding, split over the same streams."""
        if not ctx:
            return 0
        if not llamacpp:
            return int(ctx) * int(sequences)
        c = target.cells(target.llamacpp_ctx(int(ctx), int(sequences)), int(sequences))
        return c.streams * c.n_ctx_seq

    def kv_bytes(ctx, sequences):
        return per_cell * cells(ctx, sequences)

    k, v = k_fmt.name, v_fmt.name
    found = [
        ResidentPart("mtp_weights", int(stored), 0,
                     values=facts + (("weights", words), ("weights_read_bytes", int(read)),
                                     ("output_head_bytes", int(head))),
                     draft_step_read_bytes_of=int(read + head)),
        ResidentPart("mtp_kv", kv_bytes, 0,
                     values=facts + (("kv_format", k if k == v else f"K {k} / V {v}"),
                                     ("kv_bytes_per_token", per_cell)),
                     draft_step_read_bytes_of=kv_bytes),
    ]
    if not llamacpp:
        return tuple(found)
    n_max, batch = s.draft_max_tokens, target.spec.batch
    state_cell = getattr(target, "state_bytes_per_cell", 0)
    if state_cell:
        def snapshots(ctx, sequences):
            """n_rs_seq = n_max more rows of every state layer's r and s per cell (max(1, -np) cells)."""
            return n_max * state_cell * max(1, int(sequences)) if ctx else 0

        found.append(ResidentPart("mtp_state_snapshots", snapshots, 0,
                                  values=facts + (("snapshots", n_max), ("state_bytes_per_sequence", state_cell))))
    vocab, h = m.vocab_size, m.hidden_size
    from kvplan.caches.buffers import mtp_compute_bytes

    memo: dict = {}

    def buffers(ctx, sequences):
        """The MTP context's compute buffer and its output buffer: -np logit rows and, once the MTP hook runs,
        as many masked hidden rows (output_reserve: embd_nextn n_embd · n_outputs_max)."""
        if not ctx:
            return 0
        key = (int(ctx), int(sequences))
        if key not in memo:
            n_ctx = target.cells(target.llamacpp_ctx(key[0], key[1]), key[1]).n_ctx
            memo[key] = (mtp_compute_bytes(target.spec, m, n_ctx, key[1], k, v) or 0) \
                + key[1] * (vocab + h) * LOGIT_BYTES
        return memo[key]

    def verify_outputs(ctx, sequences):
        """The target's output buffer once MTP runs: the logits of every verified row, min(n_batch, -np · (1 +
        n_max)), and the unmasked hidden rows n_embd · n_batch, beyond the -np rows of logits it has at load."""
        rows = min(batch, int(sequences) * (1 + n_max))
        return (rows - int(sequences)) * vocab * LOGIT_BYTES + h * batch * LOGIT_BYTES

    if mtp_compute_bytes(target.spec, m, 256, 1, k, v) is not None:
        found.append(ResidentPart("mtp_buffers", buffers, 0, values=facts))
    found.append(ResidentPart("mtp_verify_outputs", verify_outputs, 0,
                              values=(("model", m.name), ("rows", 1 + n_max), ("hidden_rows", batch))))
    return tuple(found)
