"""The ideal cache (the contract's closed form) and the CacheModel interface every cache implements."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kvplan import engine
from kvplan.engine.formats import ElementFormat
from kvplan.engine.schedule import Attention, State, attention_only, split_runs
from kvplan.profiles.memo import PerModel

if TYPE_CHECKING:  # pydantic stays off the fast path: cached profiles are plain records
    from kvplan.profiles.spec import Model


class CacheModel:
    """What :func:`evaluate` needs to know about a cache; :class:`CacheLayout` is the ideal one.

    An interface by convention (duck typing), not a ``typing.Protocol``: building a Protocol
    class costs a few milliseconds at every start, and nothing checks it at run time.

    Alternative cache models (runtime-exact allocations, compression policies) implement
    the same methods and are chosen by :func:`cache_model_for`.

    Two optional methods, for a cache whose ``ctx`` is not the tokens of each sequence
    (llama.cpp's ``-c`` is the total shared by the sequences), read through
    :func:`kv_bytes_per_sequence_of` and :func:`tokens_per_sequence_of`:
    ``kv_bytes_per_sequence(ctx, sequences)`` (the bytes one sequence holds; None when the
    sequences share one pool) and ``tokens_per_sequence(ctx, sequences)`` (the tokens one
    sequence can attend). Without them: ``kv_bytes(ctx, 1)`` and ``ctx``.
    """

    k_format: ElementFormat
    v_format: ElementFormat

    @property
    def bytes_per_token(self) -> int: ...

    def kv_bytes(self, ctx, sequences=1): ...

    def kv_peak_bytes(self, ctx, sequences=1): ...

    def kv_bytes_read_over_generation(self, n_tokens, sequences=1): ...

    def max_ctx(self, allowance_bytes, sequences=1, ctx_limit=math.inf): ...


@dataclass(frozen=True)
class CacheLayout:
    """The ideal cache (the contract's closed form): bytes/token of global layers and of each window."""

    k_format: ElementFormat
    v_format: ElementFormat
    global_bytes_per_token: int
    windows: tuple[tuple[int, int], ...]  # (window tokens, bytes/token of the layers using it)
    global_layers: int
    windowed_layers: int
    # the state layers' fixed-size state of one sequence (0: no state layers) [bytes] and how many layers keep one
    state_bytes_per_sequence: int = 0
    state_layers: int = 0

    @property
    def bytes_per_token(self) -> int:
        """K+V bytes one token adds to every layer (the growth rate below the smallest window)."""
        return self.global_bytes_per_token + sum(b for _, b in self.windows)

    def state_bytes(self, ctx, sequences=1):
        """The state layers' state of ``sequences`` sequences [bytes]: constant in ``ctx`` (0 at ``ctx`` 0, as the
        cache)."""
        if not self.state_bytes_per_sequence:
            return 0
        from kvplan.engine._ops import where

        return where(ctx > 0, self.state_bytes_per_sequence * sequences, 0)

    def kv_bytes(self, ctx, sequences=1):
        """Resident cache of ``sequences`` sequences of ``ctx`` tokens each, the state layers' state included
        [bytes]."""
        kv = engine.kv_bytes(ctx, self.global_bytes_per_token, self.windows) * sequences
        return kv + self.state_bytes(ctx, sequences) if self.state_bytes_per_sequence else kv

    def kv_peak_bytes(self, ctx, sequences=1):
        return self.kv_bytes(ctx, sequences)

    def kv_bytes_read_over_generation(self, n_tokens, sequences=1):
        """Σ over a generation of the cache bytes each step reads; every step reads the whole state."""
        read = engine.kv_bytes_sum_over_generation(n_tokens, self.global_bytes_per_token, self.windows) * sequences
        return read + n_tokens * self.state_bytes_per_sequence * sequences if self.state_bytes_per_sequence else read

    def max_ctx(self, allowance_bytes, sequences=1, ctx_limit=math.inf):
        per_sequence = engine.kv_allowance_bytes(allowance_bytes, sequences)
        if self.state_bytes_per_sequence:
            per_sequence = per_sequence - self.state_bytes_per_sequence  # negative: no context fits
        return engine.max_context_tokens(per_sequence, self.global_bytes_per_token, self.windows, ctx_limit)

    @property
    def unbounded(self) -> bool:
        """True when every layer is windowed, so the cache stops growing."""
        return self.global_bytes_per_token == 0 and bool(self.windows)


#: the element width the ideal cache keeps a state in: the checkpoints' bf16 [bytes]
IDEAL_STATE_BYTES_PER_VALUE = 2


def ideal_state_bytes(layer: State) -> int:
    """One sequence's state in one state layer as the computation needs it: the conv state's last
    ``conv_kernel_tokens − 1`` columns and the recurrent state, at 2 bytes a value (bf16, the checkpoints'
    dtype) [bytes] (:func:`kvplan.engine.state.state_bytes`)."""
    from kvplan.engine.state import state_bytes

    return int(state_bytes(layer.conv_channels, layer.conv_kernel_tokens - 1, layer.recurrent_values,
                           IDEAL_STATE_BYTES_PER_VALUE, IDEAL_STATE_BYTES_PER_VALUE))


def layer_bytes_per_token(layer: Attention, k_format: ElementFormat, v_format: ElementFormat) -> int:
    """Bytes one token takes in one attention layer: its K row plus its V row (an MLA latent: the K row only)."""
    v_row = v_format.row_bytes(layer.v_values) if layer.v_values else 0
    return k_format.row_bytes(layer.k_values) + v_row


_LAYOUTS = PerModel()


def cache_layout(model: Model, k_format: ElementFormat | None = None, v_format: ElementFormat | None = None,
                 sliding_window: int | None = None) -> CacheLayout:
    """Group the model's layers (its :attr:`~kvplan.profiles.methods.ModelMethods.schedule`) by window;
    ``sliding_window`` (tokens) puts every layer behind one.

    Memoized per model object (:mod:`kvplan.profiles.memo`).
    """
    return _LAYOUTS.get(model, (k_format, v_format, sliding_window),
                        lambda: _cache_layout(model, k_format, v_format, sliding_window))


def _cache_layout(model: Model, k_format: ElementFormat | None, v_format: ElementFormat | None,
                  sliding_window: int | None) -> CacheLayout:
    k_format = k_format or model.k_format()
    v_format = v_format or model.v_format()
    schedule = model.schedule if sliding_window is None else model.schedule.with_window(sliding_window)
    _, states = split_runs(schedule, "ideal")
    state_bytes = sum(count * ideal_state_bytes(layer) for count, layer in states)
    schedule = attention_only(schedule)
    global_bpt = 0
    windowed: dict[int, int] = {}
    global_layers = 0
    for count, layer in schedule.groups():  # each distinct layer priced once
        b = count * layer_bytes_per_token(layer, k_format, v_format)
        if layer.window_tokens is not None:
            windowed[layer.window_tokens] = windowed.get(layer.window_tokens, 0) + b
        else:
            global_bpt += b
            global_layers += count
    return CacheLayout(k_format, v_format, global_bpt, tuple(sorted(windowed.items())),
                       global_layers, schedule.layers - global_layers, state_bytes,
                       sum(count for count, _ in states))


def kv_bytes_per_sequence_of(cache: CacheModel, ctx: int, sequences: int = 1) -> int | None:
    """The bytes one of ``sequences`` sequences holds at ``ctx`` (None: they share one pool)."""
    own = getattr(cache, "kv_bytes_per_sequence", None)
    return own(ctx, sequences) if own is not None else int(cache.kv_bytes(ctx, 1))


def tokens_per_sequence_of(cache: CacheModel, ctx: int, sequences: int = 1) -> int:
    """The tokens one sequence can attend at ``ctx`` (``ctx`` unless the runtime splits it)."""
    own = getattr(cache, "tokens_per_sequence", None)
    return own(ctx, sequences) if own is not None else int(ctx)
