"""The ideal cache (the contract's closed form) and the CacheModel interface every cache implements."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kvplan import engine
from kvplan.caches.memo import PerModel
from kvplan.engine.formats import ElementFormat

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

    @property
    def bytes_per_token(self) -> int:
        """K+V bytes one token adds to every layer (the growth rate below the smallest window)."""
        return self.global_bytes_per_token + sum(b for _, b in self.windows)

    def kv_bytes(self, ctx, sequences=1):
        """Resident cache of ``sequences`` sequences of ``ctx`` tokens each [bytes]."""
        return engine.kv_bytes(ctx, self.global_bytes_per_token, self.windows) * sequences

    def kv_peak_bytes(self, ctx, sequences=1):
        return self.kv_bytes(ctx, sequences)

    def kv_bytes_read_over_generation(self, n_tokens, sequences=1):
        return engine.kv_bytes_sum_over_generation(n_tokens, self.global_bytes_per_token, self.windows) * sequences

    def max_ctx(self, allowance_bytes, sequences=1, ctx_limit=math.inf):
        per_sequence = engine.kv_allowance_bytes(allowance_bytes, sequences)
        return engine.max_context_tokens(per_sequence, self.global_bytes_per_token, self.windows, ctx_limit)

    @property
    def unbounded(self) -> bool:
        """True when every layer is windowed, so the cache stops growing."""
        return self.global_bytes_per_token == 0 and bool(self.windows)


def layer_bytes_per_token(model: Model, layer: int, k_format: ElementFormat, v_format: ElementFormat) -> int:
    """Bytes one token takes in one layer: its K row plus its V row (or one latent row for MLA)."""
    if model.mla is not None:
        return k_format.row_bytes(model.mla.kv_lora_rank + model.mla.qk_rope_head_dim)
    n_kv = model.kv_heads_of(layer)
    return k_format.row_bytes(n_kv * model.head_dim) + v_format.row_bytes(n_kv * model.v_dim)


_LAYOUTS = PerModel()


def cache_layout(model: Model, k_format: ElementFormat | None = None, v_format: ElementFormat | None = None,
                 sliding_window: int | None = None) -> CacheLayout:
    """Group the model's layers by window; ``sliding_window`` (tokens) puts every layer behind one.

    Memoized per model object (:mod:`kvplan.caches.memo`).
    """
    return _LAYOUTS.get(model, (k_format, v_format, sliding_window),
                        lambda: _cache_layout(model, k_format, v_format, sliding_window))


def _cache_layout(model: Model, k_format: ElementFormat | None, v_format: ElementFormat | None,
                  sliding_window: int | None) -> CacheLayout:
    k_format = k_format or model.k_format()
    v_format = v_format or model.v_format()
    if sliding_window is not None:
        model = model.model_copy(update={"sliding_window": sliding_window, "sliding_window_pattern": "all"})
    global_bpt = 0
    windowed: dict[int, int] = {}
    global_layers = 0
    # Layers differ only by their KV head count, so each distinct count is priced once.
    priced: dict[int, int] = {}
    for layer in range(model.layers):
        n_kv = model.kv_heads_of(layer)
        b = priced.get(n_kv)
        if b is None:
            b = priced[n_kv] = layer_bytes_per_token(model, layer, k_format, v_format)
        if model.is_local(layer):
            windowed[model.sliding_window] = windowed.get(model.sliding_window, 0) + b
        else:
            global_bpt += b
            global_layers += 1
    return CacheLayout(k_format, v_format, global_bpt, tuple(sorted(windowed.items())),
                       global_layers, model.layers - global_layers)


def kv_bytes_per_sequence_of(cache: CacheModel, ctx: int, sequences: int = 1) -> int | None:
    """The bytes one of ``sequences`` sequences holds at ``ctx`` (None: they share one pool)."""
    own = getattr(cache, "kv_bytes_per_sequence", None)
    return own(ctx, sequences) if own is not None else int(cache.kv_bytes(ctx, 1))


def tokens_per_sequence_of(cache: CacheModel, ctx: int, sequences: int = 1) -> int:
    """The tokens one sequence can attend at ``ctx`` (``ctx`` unless the runtime splits it)."""
    own = getattr(cache, "tokens_per_sequence", None)
    return own(ctx, sequences) if own is not None else int(ctx)
