"""The KV cache llama.cpp allocates, to the byte (llama.cpp at commit 0c1e57098).

Rules, each from llama.cpp's own source (file :: function):

- Context cells (``src/llama-context.cpp`` :: ``llama_context::llama_context``): a
  requested ``n_ctx`` of 0 means the model's training context; ``n_ctx`` is padded up to
  a multiple of 256; unified (``--kv-unified``): one stream of ``n_ctx`` cells; otherwise
  ``n_ctx_seq = pad(n_ctx / n_seq_max, 256)`` cells in each of ``n_seq_max`` streams.
  ``n_batch = min(n_ctx_requested, n_batch)`` and ``n_ubatch = min(n_batch, n_ubatch)``
  are taken before the padding.
- Tensors (``src/llama-kv-cache.cpp`` :: ``llama_kv_cache::llama_kv_cache``): per layer
  one K tensor ``[n_embd_k_gqa, kv_size, n_stream]`` of ``type_k`` and one V tensor
  ``[n_embd_v_gqa, kv_size, n_stream]`` of ``type_v`` (``ggml_row_size``: whole blocks of
  32 for quantized types); MLA models (``is_mla``) have no V tensor and a K row of
  ``kv_lora_rank + qk_rope_head_dim``. Without flash attention V is stored transposed and
  every layer's V row is the widest one (``n_embd_v_gqa_max``, [TAG_V_CACHE_VARIABLE]).
- Chunked attention (Llama 4: ``src/models/llama4.cpp`` :: ``load_arch_hparams`` sets ``LLAMA_SWA_TYPE_CHUNKED``,
  ``n_swa`` 8192 and ``load_swa_pattern(ml, 4)``: 3 chunked layers, then a full one): the chunked layers are the
  iSWA cache's windowed layers and get the cells below, as a window of 8192 would; only the mask differs
  (``src/llama-hparams.h`` :: ``llama_hparams::is_masked_swa``: a cell is masked when ``p0 < (p1 / n_swa) · n_swa``,
  before the chunk of the token that attends). The chunk is the loader's, whatever the profile's
  ``attention_chunk_size``.
- Sliding windows (``src/llama-kv-cache-iswa.cpp`` :: ``llama_kv_cache_iswa::llama_kv_cache_iswa``):
  the windowed layers get ``pad(min(kv_size, n_swa · (unified ? n_seq_max : 1) + n_ubatch), 256)``
  cells, or ``kv_size`` with ``--swa-full``. Only architectures whose loader sets a window
  have windowed layers (``src/llama-model.cpp`` :: ``llama_model::load_hparams``: gemma2
  ``set_swa_pattern(2)``, gemma3 ``set_swa_pattern(6)``, gpt-oss ``LLM_ARCH_OPENAI_MOE``: ``n_swa`` from the
  GGUF's ``sliding_window``, ``LLAMA_SWA_TYPE_STANDARD``, ``set_swa_pattern(2)``, so the even layers, as its
  config's ``layer_types``; ggml-org/llama.cpp 00342301d); Mistral v0.1 is converted as
  ``llama`` (no window) and Phi-3's window is disabled on purpose (ggml-org/llama.cpp#13676).
- Shared KV (Gemma 3n; build 11434, ``src/llama-model.cpp`` :: ``llama_model::create_memory``): for
  ``LLM_ARCH_GEMMA3N`` the cache's ``reuse`` callback maps every layer ``il ≥ n_layer_kv_from_start`` to layer
  ``n_layer_kv_from_start − (is_swa(il) ? 2 : 1)``, and ``llama_kv_cache::llama_kv_cache`` allocates no tensor for
  a reused layer (``src/llama-hparams.cpp`` :: ``llama_hparams::has_kv``: ``il < n_layer_kv_from_start``).
  ``n_layer_kv_from_start`` is 20 for gemma3n whatever the GGUF's ``shared_kv_layers`` says
  (``src/models/gemma3n.cpp`` :: ``load_arch_hparams``), which is ``num_hidden_layers − num_kv_shared_layers`` for
  both E2B (30 − 10) and E4B (35 − 15).
- A quantized V cache needs flash attention (``llama_init_from_model`` refuses it otherwise).
- An MLA model (``llama_hparams::is_mla``) takes one cache type: ``src/llama-context.cpp`` ::
  ``llama_init_from_model`` refuses ``type_k != type_v`` ("model does not support different K
  (%s) and V (%s) cache types").
- State layers (hybrid models: LFM2, Qwen3.5 / Qwen3-Next, Granite 4.0-H, Nemotron-H; build 11434,
  ``src/llama-model.cpp`` :: ``llama_model::create_memory``): a ``llama_memory_hybrid`` of a KV cache for the
  attention layers (the rules above, ``filter_attn``) and a ``llama_memory_recurrent`` for the state layers
  (``filter_recr``) whose ``recurrent_type_r`` / ``recurrent_type_s`` are ``GGML_TYPE_F32`` whatever
  ``--cache-type-k/v`` say, with ``recurrent_rs_size = max(1, n_seq_max)`` cells, unified KV or not.
  ``src/llama-memory-recurrent.cpp`` :: ``llama_memory_recurrent::llama_memory_recurrent``: per state layer one
  ``r_l [n_embd_r, mem_size · (1 + n_rs_seq)]`` and one ``s_l [n_embd_s, …]`` tensor; ``n_embd_r`` keeps
  ``conv_kernel − 1`` conv columns (``src/llama-hparams.cpp`` :: ``llama_hparams::n_embd_r``). ``n_rs_seq`` (rollback
  snapshots) is 0 here: the speculative types that set it (``common/common.cpp``, ``need_n_rs_seq``: draft-mtp) add
  them as a part of their own (:mod:`kvplan.plan.mtp`, ``mtp_state_snapshots``).
- Output buffer (``src/llama-context.cpp`` :: ``llama_context::output_reserve``): ``n_vocab``
  float32 logits per output row, ``n_seq_max`` rows reserved — real memory, not KV.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from kvplan import engine
from kvplan.errors import FieldError
from kvplan.engine.formats import ElementFormat
from kvplan.engine.schedule import State, attention_only, shared_kv_layers, split_runs
from kvplan.profiles.runtime import LLAMA_MAX_SEQ, LlamaCppSpec
from kvplan.caches.errors import FORMAT_FIELDS, CacheTypeError
from kvplan.caches.facts import Reason, Rule, reason, rule
from kvplan.profiles.memo import PerModel

PAD_CELLS = 256  # GGML_PAD(…, 256) in llama_context and llama_kv_cache_iswa
_CELLS = ("ctx", "sequences", "runtime")  # what sets the cells per sequence (-c over -np)
LLAMACPP_TYPES = ("f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "iq4_nl")
# Architectures (HF model_type, or the GGUF's general.architecture where it differs) whose llama.cpp loader marks
# sliding-window layers.
SWA_ARCHITECTURES = frozenset({"gemma2", "gemma3", "gemma3_text", "gemma3n", "gemma3n_text", "gemma4", "gemma4_text",
                               "gpt_oss", "gpt-oss", "llama4", "llama4_text"})
# Architectures whose windowed layers attend in chunks (LLAMA_SWA_TYPE_CHUNKED) and the chunk their loader fixes
# whatever the GGUF says (src/models/llama4.cpp :: load_arch_hparams: n_swa = 8192, load_swa_pattern(ml, 4)).
CHUNK_OF_ARCH = {"llama4": 8192, "llama4_text": 8192}
# Architectures whose llama.cpp memory reuses an earlier layer's cache for the layers from n_layer_kv_from_start on
# (src/llama-model.cpp :: llama_model::create_memory, the ``reuse`` callback for LLM_ARCH_GEMMA3N / GEMMA4), with the
# n_layer_kv_from_start their loader sets (src/models/gemma3n.cpp :: load_arch_hparams: 20, whatever the GGUF says;
# None: src/models/gemma4.cpp :: load_arch_hparams sets n_layer − shared_kv_layers from the GGUF, the model's own
# first shared layer).
KV_REUSE_FROM = {"gemma3n": 20, "gemma3n_text": 20, "gemma4": None, "gemma4_text": None}
MLA_ARCHITECTURES = frozenset({"deepseek_v2", "deepseek_v3"})
LOGIT_BYTES = 4  # float32


def pad(n: int, multiple: int = PAD_CELLS) -> int:
    """``GGML_PAD(n, multiple)``: ``n`` rounded up to a multiple [cells]."""
    return -(-n // multiple) * multiple


@dataclass(frozen=True)
class Cells:
    """How many cells llama.cpp allocates for one ``-c`` / ``-np`` request."""

    n_ctx_requested: int
    n_ctx: int  # after padding (and, when split, n_ctx_seq × streams)
    n_ctx_seq: int  # cells of each stream of the full-attention layers
    streams: int
    swa_cells: int | None  # cells of each stream of the windowed layers (None: no windowed layers)
    n_ubatch: int


@dataclass(frozen=True)
class LlamaCppCache:
    """llama.cpp's allocation for one model and cache types: bytes per cell of each layer group."""

    spec: LlamaCppSpec
    k_format: ElementFormat
    v_format: ElementFormat
    global_bytes_per_cell: int  # K+V bytes of one cell, summed over the full-attention layers
    swa_bytes_per_cell: int  # same, over the windowed layers
    window_tokens: int | None  # n_swa (None: no windowed layers)
    global_layers: int
    windowed_layers: int
    k_global_bytes_per_cell: int  # K only (the log line's K figure), full-attention layers
    k_swa_bytes_per_cell: int  # K only, windowed layers
    n_ctx_train: int | None
    vocab_size: int | None
    rules: tuple[Rule, ...]  # what applied for every request (kvplan.caches.facts; render words them)
    # the recurrent memory of the state layers: bytes of one cell (r + s rows, f32) summed over them, and how many
    state_bytes_per_cell: int = 0
    state_layers: int = 0
    state_r_bytes_per_cell: int = 0  # r (conv) part of state_bytes_per_cell
    state_s_bytes_per_cell: int = 0  # s (recurrent) part

    name = "llama.cpp"
    family = "llama.cpp"  # what allocates it: llama.cpp itself, or a runtime that runs it (Ollama)

    def llamacpp_ctx(self, ctx, sequences=1):
        """llama.cpp's ``-c`` for the request ``ctx``: the request itself (a runtime running llama.cpp
        translates its own) [tokens]."""
        return ctx

    # --- the CacheModel protocol ---

    @property
    def windows(self) -> tuple[tuple[int, int], ...]:
        return ((self.window_tokens, self.swa_bytes_per_cell),) if self.window_tokens else ()

    @property
    def bytes_per_token(self) -> int:
        """K+V bytes of one cell across every layer."""
        return self.global_bytes_per_cell + self.swa_bytes_per_cell

    @property
    def unbounded(self) -> bool:
        """True when every layer is windowed (and not swa_full): the cache stops growing."""
        return self.global_bytes_per_cell == 0 and bool(self.windows) and not self.spec.swa_full

    def cells(self, ctx: int, sequences: int = 1) -> Cells:
        """The cells of ``-c ctx -np sequences`` (``ctx`` 0: the training context)."""
        requested = int(ctx) if ctx else (self.n_ctx_train or 0)
        if requested < 1:
            raise FieldError("ctx", "0 means the model's training context, but the profile has no max_context")
        n = int(sequences)
        n_ubatch = min(self.spec.ubatch, self.spec.batch, requested)
        n_ctx = pad(requested)
        if self.spec.kv_unified:
            streams, per_stream = 1, n_ctx
        else:
            streams, per_stream = n, pad(n_ctx // n)
            if per_stream == 0:
                raise FieldError(_CELLS, f"llama.cpp: n_ctx_seq == 0 ({n_ctx} cells for {n} sequences)", lead=None)
            n_ctx = per_stream * n
        swa = None
        if self.window_tokens:
            swa = per_stream if self.spec.swa_full else pad(
                min(per_stream, self.window_tokens * (n if self.spec.kv_unified else 1) + n_ubatch))
        return Cells(requested, n_ctx, per_stream, streams, swa, n_ubatch)

    def _bytes_of(self, cells: Cells) -> int:
        return cells.streams * (self.global_bytes_per_cell * cells.n_ctx_seq
                                + self.swa_bytes_per_cell * (cells.swa_cells or 0))

    def kv_bytes(self, ctx, sequences=1):
        """Bytes of every K and V tensor llama.cpp allocates for ``-c ctx -np sequences``."""
        if _is_array(ctx) or _is_array(sequences):
            return self._kv_bytes_arrays(ctx, sequences)
        if not ctx:  # the protocol: no tokens, no cache (llama.cpp's -c 0 is resolved by cells())
            return 0
        return self._bytes_of(self.cells(ctx, sequences)) + self.state_bytes(ctx, sequences)

    def state_cells(self, sequences=1):
        """Cells of the recurrent memory: ``max(1, n_seq_max)``, one per sequence (``create_memory``'s
        ``recurrent_rs_size``), unified KV or not [cells]."""
        from kvplan.engine._ops import maximum

        return maximum(sequences, 1)

    def state_bytes(self, ctx, sequences=1):
        """Bytes of the recurrent memory's r and s tensors (F32) for ``-np sequences``: constant in ``ctx``
        (0 at ``ctx`` 0, as the cache) [bytes]."""
        if not self.state_bytes_per_cell:
            return 0
        from kvplan.engine._ops import where

        return where(ctx > 0, self.state_bytes_per_cell * self.state_cells(sequences), 0)

    def _kv_bytes_arrays(self, ctx, sequences):
        """:meth:`kv_bytes` element by element over int arrays, as numpy integer ops (same rules as
        :meth:`cells`: pad to 256, split over streams, windowed layers' cells)."""
        import numpy as np

        ctx, n = np.broadcast_arrays(np.asarray(ctx, dtype=np.int64), np.asarray(sequences, dtype=np.int64))
        if n.size and (n.min() < 1 or n.max() > LLAMA_MAX_SEQ):
            raise FieldError("sequences", f"llama.cpp allows 1 to {LLAMA_MAX_SEQ} sequences, got "
                             f"{int(n.min() if n.min() < 1 else n.max())}")
        requested = np.maximum(ctx, 1)  # ctx 0 is no cache (masked below), as in the scalar protocol
        n_ubatch = np.minimum(min(self.spec.ubatch, self.spec.batch), requested)
        n_ctx = pad(requested)
        if self.spec.kv_unified:
            streams, per_stream = np.ones_like(n), n_ctx
        else:
            streams, per_stream = n, pad(n_ctx // n)
            if per_stream.size and per_stream.min() == 0:
                i = int(np.argmin(per_stream))
                raise FieldError(_CELLS, f"llama.cpp: n_ctx_seq == 0 ({int(n_ctx[i])} cells for {int(n[i])} "
                                 "sequences)", lead=None)
        swa = 0
        if self.window_tokens:
            swa = per_stream if self.spec.swa_full else pad(
                np.minimum(per_stream, self.window_tokens * (n if self.spec.kv_unified else 1) + n_ubatch))
        out = streams * (self.global_bytes_per_cell * per_stream + self.swa_bytes_per_cell * swa)
        out = out + self.state_bytes_per_cell * n  # the recurrent memory: one cell per sequence
        return np.where(ctx > 0, out, 0)  # the protocol: no tokens, no cache

    def kv_bytes_per_sequence(self, ctx: int, sequences: int = 1) -> int | None:
        """What one of the ``-np`` sequences holds at ``-c ctx``: one stream's K and V tensors [bytes].

        ``-c`` is the total shared by the sequences, so this is ``kv_bytes(ctx, sequences) / streams``
        (exact: every stream has the same cells), not ``kv_bytes(ctx, 1)``. None with
        ``--kv-unified`` and more than one sequence: they share one stream and none has its own.
        """
        if not ctx:
            return 0
        c = self.cells(ctx, sequences)
        if c.streams != int(sequences):  # unified: one stream shared by every sequence
            return None
        return self._bytes_of(c) // c.streams + self.state_bytes_per_cell

    def tokens_per_sequence(self, ctx: int, sequences: int = 1) -> int:
        """The cells one sequence can use, ``n_ctx_seq`` (what llama.cpp checks against ``n_ctx_train``)."""
        if not ctx:
            return 0
        return self.cells(ctx, sequences).n_ctx_seq

    def kv_peak_bytes(self, ctx, sequences=1):
        """The cache is allocated whole when the context is created: the peak is the allocation."""
        return self.kv_bytes(ctx, sequences)

    def kv_bytes_read_over_generation(self, n_tokens, sequences=1):
        """Σ over a generation of the cache bytes attended (approximate: the tokens in use,
        capped by each stream's cells and the windowed layers' cells; not the padded views)."""
        if _is_array(n_tokens):
            return _vectorize(lambda t: self.kv_bytes_read_over_generation(int(t), sequences), n_tokens)
        c = self.cells(max(int(n_tokens), 1), sequences)
        per_stream = min(int(n_tokens), c.n_ctx_seq)
        windows = ((c.swa_cells, self.swa_bytes_per_cell),) if c.swa_cells else ()
        state = int(n_tokens) * self.state_bytes_per_cell * int(sequences)  # every step reads each sequence's state
        return c.streams * engine.kv_bytes_sum_over_generation(per_stream, self.global_bytes_per_cell, windows) + state

    def max_ctx(self, allowance_bytes, sequences=1, ctx_limit=math.inf):
        """Largest ``-c`` whose allocation fits ``allowance_bytes``, exact to the token.

        The allocation is a non-decreasing step function of ``-c`` (padding to 256, the
        split over streams, ``n_ubatch = min(…, -c)``), so bisection over the integers
        finds the exact largest value. ``-1`` when not even ``-c 1`` fits; ``ctx_limit``
        (or ``inf``) when the cache stops growing below the allowance.
        """
        if _is_array(allowance_bytes):
            return _vectorize(lambda a: self.max_ctx(a, sequences, ctx_limit), allowance_bytes, float)
        if self.kv_bytes(1, sequences) > allowance_bytes:
            return engine.NO_CONTEXT_FITS
        cap = ctx_limit if ctx_limit != math.inf else 2**40
        cap = int(cap)
        hi = 1
        while hi < cap and self.kv_bytes(hi, sequences) <= allowance_bytes:
            hi = min(hi * 2, cap)
        if self.kv_bytes(hi, sequences) <= allowance_bytes:  # fits all the way to the cap
            return int(ctx_limit) if ctx_limit != math.inf else math.inf
        lo = hi // 2 if hi > 1 else 1  # kv_bytes(lo) fits, kv_bytes(hi) does not
        return engine.largest_fitting(lambda c: self.kv_bytes(c, sequences) <= allowance_bytes, lo, hi)

    # --- beyond the protocol ---

    def sub_caches(self, ctx, sequences=1) -> list[dict]:
        """One entry per ``llama_kv_cache`` llama.cpp builds (full-attention, then windowed):
        cells, layers and K / V bytes, as its ``llama_kv_cache: size = …`` log line prints them."""
        c = self.cells(ctx, sequences)
        parts = [(c.n_ctx_seq, self.global_layers, self.global_bytes_per_cell, self.k_global_bytes_per_cell)]
        if c.swa_cells is not None:
            parts.append((c.swa_cells, self.windowed_layers, self.swa_bytes_per_cell, self.k_swa_bytes_per_cell))
        out = []
        for cells, layers, kv_bpc, k_bpc in parts:
            k = c.streams * cells * k_bpc
            out.append({"cells": cells, "layers": layers, "streams": c.streams, "k_bytes": k,
                        "v_bytes": c.streams * cells * kv_bpc - k})
        return out

    def recurrent_memory(self, sequences=1) -> dict | None:
        """The ``llama_memory_recurrent`` of the state layers as its ``size = …`` log line prints it: cells,
        layers, and the r and s bytes (F32); None without state layers."""
        if not self.state_layers:
            return None
        cells = int(self.state_cells(int(sequences)))
        return {"cells": cells, "layers": self.state_layers, "type": "f32",
                "r_bytes": cells * self.state_r_bytes_per_cell, "s_bytes": cells * self.state_s_bytes_per_cell}

    def logits_bytes(self, sequences=1) -> int | None:
        """The output buffer: ``n_vocab`` float32 logits for each of ``n_seq_max`` rows [bytes]."""
        return self.vocab_size * LOGIT_BYTES * int(sequences) if self.vocab_size else None

    def describe(self, ctx: int, sequences: int = 1) -> dict:
        """What applied for this request: rules (:class:`~kvplan.caches.facts.Rule` facts), cells and the extra
        (non-KV) buffers."""
        c = self.cells(ctx, sequences)
        rules = list(self.rules)
        rules.append(rule("padded_ctx", requested=c.n_ctx_requested, padded=pad(c.n_ctx_requested)))
        if self.spec.kv_unified:
            rules.append(rule("kv_unified", cells=c.n_ctx_seq, sequences=sequences))
        elif sequences > 1:
            rules.append(rule("streams", sequences=sequences, padded=pad(c.n_ctx_requested), cells=c.n_ctx_seq,
                              streams=c.streams, total=c.n_ctx))
        if c.swa_cells is not None:
            if self.spec.swa_full:
                rules.append(rule("swa_full", cells=c.n_ctx_seq))
            else:
                rules.append(rule("swa_cells", n_ctx_seq=c.n_ctx_seq, window=self.window_tokens,
                                  streams_per_window=sequences if self.spec.kv_unified else 1,
                                  n_ubatch=c.n_ubatch, cells=c.swa_cells))
        if self.state_layers:
            rules.append(rule("recurrent_state", layers=self.state_layers, cells=int(self.state_cells(sequences)),
                              bytes_per_cell=self.state_bytes_per_cell))
        if self.n_ctx_train and c.n_ctx_seq > self.n_ctx_train:
            rules.append(rule("beyond_training", n_ctx_seq=c.n_ctx_seq, n_ctx_train=self.n_ctx_train))
        return {
            "name": self.name,
            "rules": rules,
            "options": {"parallel": sequences, "kv_unified": self.spec.kv_unified, "ubatch": self.spec.ubatch,
                        "batch": self.spec.batch, "swa_full": self.spec.swa_full,
                        "flash_attn": self.spec.flash_attn},
            "cells": {"n_ctx_requested": c.n_ctx_requested, "n_ctx": c.n_ctx, "n_ctx_seq": c.n_ctx_seq,
                      "streams": c.streams, "swa_cells": c.swa_cells, "n_ubatch": c.n_ubatch},
            "k_type": self.k_format.name,
            "v_type": self.v_format.name if self.v_format is not None else None,
            "bytes_per_cell": {"global": self.global_bytes_per_cell, "windowed": self.swa_bytes_per_cell},
            "caches": self.sub_caches(ctx, sequences),
            **({"recurrent": self.recurrent_memory(sequences)} if self.state_layers else {}),
            "logits_bytes": self.logits_bytes(sequences),
            "compute_buffer_bytes": None,
        }


def _is_array(x) -> bool:
    return not isinstance(x, (int, float))


def _vectorize(fn, x, otype=None):
    import numpy as np

    return np.vectorize(fn, otypes=[otype or np.int64])(x)


# Plain bit widths (kv_bits, in knobs or a profile) → llama.cpp's type of that width.
BITS_TO_TYPE = {32: "f32", 16: "f16", 8: "q8_0", 5: "q5_0", 4: "q4_0"}


def as_llamacpp_type(fmt: ElementFormat) -> ElementFormat:
    """A plain ``intN`` format (``--kv-bits N``) as llama.cpp's type of that width; others unchanged."""
    if fmt.name != f"int{fmt.bits}" or fmt.bits not in BITS_TO_TYPE:  # only format_from_bits' plain ints
        return fmt
    from kvplan.engine.formats import format_from_name

    return format_from_name(BITS_TO_TYPE[fmt.bits])


def _check_type(fmt: ElementFormat, side: str) -> None:
    if fmt.name not in LLAMACPP_TYPES:
        raise CacheTypeError("llama.cpp has no cache type for {given}; its types: " + ", ".join(LLAMACPP_TYPES),
                             side, fmt)


def _row_bytes(fmt: ElementFormat, values: int, side: str) -> int:
    """``ggml_row_size``: values / block_elems · block_bytes; a partial block is an error."""
    if fmt.group_size and values % fmt.group_size:
        raise FieldError(FORMAT_FIELDS[side.lower()] + ("runtime",), f"llama.cpp cannot store a {side} row of "
                         f"{values} values as {fmt.name} (rows must be whole blocks of {fmt.group_size})", lead=None)
    return fmt.row_bytes(values)


def window_ignored_because(architecture: str | None) -> Reason | None:
    """Why llama.cpp keeps the whole context on every layer of a model whose profile gives a sliding window
    (worded by :mod:`kvplan.render.reasons`); None where it honours the window (the interleaved-window
    architectures)."""
    arch = (architecture or "").lower()
    if arch in SWA_ARCHITECTURES:
        return None
    if arch == "mistral":
        return reason("converted_as_llama")
    if arch == "llama":
        return reason("llama_has_no_window")
    if arch == "phi3":
        return reason("window_disabled_upstream")
    return reason("no_window_for_architecture", architecture=arch or None)


_CACHES = PerModel()


def llamacpp_cache(spec: LlamaCppSpec, model, k_format: ElementFormat | None = None,
                   v_format: ElementFormat | None = None) -> LlamaCppCache:
    """Decide llama.cpp's rules for ``model`` (from its ``architecture``) and size one cell.

    Memoized per model object (:mod:`kvplan.profiles.memo`); the result is immutable.
    """
    return _CACHES.get(model, (spec, k_format, v_format), lambda: _llamacpp_cache(spec, model, k_format, v_format))


def _llamacpp_cache(spec: LlamaCppSpec, model, k_format: ElementFormat | None,
                    v_format: ElementFormat | None) -> LlamaCppCache:
    asked = (k_format or model.k_format(), v_format or model.v_format())
    k_format, v_format = (as_llamacpp_type(f) for f in asked)
    _check_type(k_format, "k")
    _check_type(v_format, "v")
    full_schedule = model.schedule
    _, states = split_runs(full_schedule, "llama.cpp")
    schedule = attention_only(full_schedule)
    mla = schedule.latent
    if mla and k_format != v_format:
        raise FieldError(("k_type", "v_type"), f"llama.cpp refuses different K ({k_format.name}) and V "
                         f"({v_format.name}) cache types for an MLA model (llama_init_from_model: model does not "
                         "support different K and V cache types); give one {kv_type}",
                         about=("k_bits", "v_bits", "kv_type", "kv_bits", "runtime"))
    if v_format.group_size and spec.flash_attn == "off":
        raise FieldError(FORMAT_FIELDS["v"] + ("runtime",), f"llama.cpp refuses a quantized V cache ({v_format.name}) "
                         "without flash attention (llama_init_from_model: V cache quantization requires flash_attn); "
                         "use {runtime.flash_attn=on} or an f16/bf16/f32 V cache", lead=None,
                         mentions=("runtime.flash_attn",))
    arch = (model.architecture or "").lower()
    rules = [rule("architecture", architecture=arch or None)]
    shared = shared_kv_layers(full_schedule)
    if shared:
        rules.append(_shared_kv_rule(arch, full_schedule.layers, shared))
    for side, a, b in (("k", asked[0], k_format), ("v", asked[1], v_format)):
        if a != b:
            rules.append(rule("type_as_runtime", side=side, asked=a.name, runtime_type=b.name))
    windows = schedule.windows()
    if len(windows) > 1:
        raise FieldError("model", f"layers with {len(windows)} different windows ({', '.join(f'{w:,}' for w in windows)}"
                         " tokens): llama.cpp's cache has one window (n_swa)")
    window = windows[0] if windows else None
    swa = window is not None and arch in SWA_ARCHITECTURES
    if schedule.chunked_layers:
        chunk = CHUNK_OF_ARCH.get(arch)
        if chunk is None:
            raise FieldError("model", f"{schedule.chunked_layers} layers attend in chunks (chunked attention); "
                             f"llama.cpp attends in chunks only for Llama 4 (LLAMA_SWA_TYPE_CHUNKED), not for "
                             f"architecture {arch or 'unknown'!r}")
        rules.append(rule("chunked_cells", layers=schedule.chunked_layers, chunk=chunk, profile_chunk=window))
        window = chunk  # the loader's n_swa: the cache is sized as a window of it (llama_kv_cache_iswa)
    if window is not None and not swa:
        rules.append(rule("window_ignored", window=window, reason=window_ignored_because(arch)))
    if mla:
        latent = next(ly for _, ly in schedule.runs if ly.latent_rank is not None)
        rules.append(rule("mla_k_row", kv_lora_rank=latent.latent_rank,
                          qk_rope_head_dim=latent.k_values - latent.latent_rank))
    fa_off = spec.flash_attn == "off"
    v_width_max = max(layer.v_values for _, layer in schedule.runs)
    if fa_off and not mla and any(layer.v_values != v_width_max for _, layer in schedule.runs):
        rules.append(rule("v_rows_padded", values=v_width_max))
    if spec.flash_attn == "auto" and v_format.group_size:
        rules.append(rule("flash_attn_auto_on"))
    global_bpc = swa_bpc = k_global = k_swa = 0
    global_layers = 0
    for count, layer in schedule.groups():  # one K (and V) tensor per layer; equal layers priced once
        k_row = _row_bytes(k_format, layer.k_values, "K")
        v_row = 0 if layer.latent_rank is not None else _row_bytes(
            v_format, v_width_max if fa_off else layer.v_values, "V")
        if swa and layer.window_tokens is not None:
            swa_bpc += count * (k_row + v_row)
            k_swa += count * k_row
        else:
            global_bpc += count * (k_row + v_row)
            k_global += count * k_row
            global_layers += count
    layers = schedule.layers
    if swa:
        rules.append(rule("windowed_layers", windowed=layers - global_layers, layers=layers, window=window))
    if full_schedule.parallel_layers:  # create_memory: filter_attn and filter_recr both true on these layers
        rules.append(rule("parallel_layers", layers=full_schedule.parallel_layers, kv="llama_kv_cache",
                          state="llama_memory_recurrent"))
    r_bpc = sum(count * state_r_bytes(layer) for count, layer in states)
    s_bpc = sum(count * state_s_bytes(layer) for count, layer in states)
    return LlamaCppCache(spec, k_format, v_format, global_bpc, swa_bpc, window if swa else None,
                         global_layers, layers - global_layers, k_global, k_swa, model.max_context,
                         getattr(model, "gguf_vocab_size", None) or model.vocab_size,  # the GGUF's n_vocab
                         tuple(rules), r_bpc + s_bpc, sum(count for count, _ in states), r_bpc, s_bpc)


def _shared_kv_rule(arch: str, layers: int, shared) -> Rule:
    """The rule for a model's shared-KV layers under llama.cpp: they hold no tensor when llama.cpp's loader reuses
    the cache from the same layer on (:data:`KV_REUSE_FROM`); any other layout it would not build as kvplan prices it,
    so it is refused by name."""
    first = shared[0][0]
    count = sum(last - first_ + 1 for first_, last, _ in shared)
    if arch not in KV_REUSE_FROM:
        raise FieldError("model", f"layers {first}–{layers - 1} read an earlier layer's KV cache (shared_kv); llama.cpp "
                         f"reuses a layer's cache only for gemma3n and gemma4 (architecture {arch or 'unknown'} gets a "
                         "cache on every layer), so the llama.cpp cache model cannot price this model")
    from_start = KV_REUSE_FROM[arch]
    if from_start is None:
        from_start = first
    if first != from_start or count != layers - from_start:
        raise FieldError("model", f"the shared-KV layers start at layer {first}, but llama.cpp's gemma3n loader "
                         f"reuses the cache from layer {from_start} on (n_layer_kv_from_start), whatever the model "
                         "says; the llama.cpp cache model prices only that layout")
    return rule("shared_kv", layers=count, first=first, from_start=from_start)


STATE_BYTES_PER_VALUE = 4  # GGML_TYPE_F32: create_memory's recurrent_type_r / recurrent_type_s


def state_r_bytes(layer: State) -> int:
    """One cell's ``r_l`` row: ``n_embd_r = conv_channels · (conv_kernel − 1)`` F32 values [bytes]."""
    from kvplan.engine.state import state_bytes

    return int(state_bytes(layer.conv_channels, layer.conv_kernel_tokens - 1, 0, STATE_BYTES_PER_VALUE, 0))


def state_s_bytes(layer: State) -> int:
    """One cell's ``s_l`` row: ``n_embd_s`` (the recurrent state) F32 values [bytes]."""
    from kvplan.engine.state import state_bytes

    return int(state_bytes(0, 0, layer.recurrent_values, 0, STATE_BYTES_PER_VALUE))
