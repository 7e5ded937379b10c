"""A model as a schedule of layers: what each layer keeps per token (or per sequence), in layer order.

Every cache model prices a model through its :class:`Schedule`, never through the profile fields that
describe it (``sliding_window``, ``sliding_window_pattern``, per-layer ``kv_heads``, ``mla``): the model
profile derives the schedule from them once (:mod:`kvplan.profiles.methods`).

A schedule is stored as runs of identical consecutive layers, ``((count, layer), …)``: a uniform model is
one run, Gemma 3's 5 local : 1 global pattern two runs a period. :meth:`Schedule.groups` merges identical
layers wherever they sit (what order-free pricing needs: a handful of groups whatever the depth);
:meth:`Schedule.layer_kinds` walks the layers by index for a runtime whose allocation follows the order.

Layer kinds:

* :class:`Attention` caches ``c(ctx)`` tokens, ``ctx`` (global) or ``min(ctx, window)``, each one K row of
  ``kv_heads × k_head_dim`` values and one V row of ``kv_heads × v_head_dim``. A *chunked* attention layer
  (Llama 4's ``chunked_attention``) has ``chunked`` set and its chunk in ``window_tokens``: the token at position
  ``p`` attends positions ``⌊p / C⌋·C … p`` only, so at most ``C − 1`` earlier tokens; the peak over a run to
  ``ctx`` tokens (the chunk's last token attends all ``C``) is ``min(ctx, C)``, what a window of ``C`` holds. The
  cache models that price it (ideal, llama.cpp, transformers) say so; the others refuse it by name
  (:func:`attention_runs`). Multi-head latent attention
  (DeepSeek-V2/V3) is one head whose K row is the latent plus the shared RoPE key and which has no V row
  (``v_head_dim`` 0); ``latent_rank`` says how much of the K row is the latent.
* :class:`SharedKV` reads another layer's cache and holds none of its own.
* :class:`State` keeps a fixed-size state per sequence (constant in the context): hybrid models (LFM2,
  Qwen3.5, Granite 4.0-H, Nemotron-H) mix them with attention layers (:func:`split_runs`).
* :class:`Parallel` runs an attention mixer and a state mixer side by side in one layer (Falcon-H1's parallel
  hybrid): it caches what its :class:`Attention` caches *and* keeps what its :class:`State` keeps. Every cache
  model prices it as both (:func:`split_runs`, :func:`attention_only`), so a runtime's KV cache and recurrent
  state each count the layer once.
* :class:`Feedforward` keeps nothing (an MLP-only block).

Gemma 3n's last ``num_kv_shared_layers`` layers are :class:`SharedKV` layers: :func:`split_runs` and
:func:`attention_only` leave them out (they add no byte to any cache); :func:`attention_runs` still refuses them
by name for the cache models that have not been taught a runtime's rule for them.

Plain frozen records (hashable, compared by their fields, cheap to build, no pydantic; not dataclasses, whose
methods Python 3.11 compiles at import: :mod:`kvplan.records`), all counts in base units.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import ClassVar, Union

from kvplan.errors import FieldError
from kvplan.records import ComparedFigures


class Attention(ComparedFigures):
    """A layer that caches K and V rows for the tokens it attends."""

    __slots__ = _fields = ("kv_heads", "k_head_dim", "v_head_dim", "window_tokens", "latent_rank", "chunked")
    _defaults = {"window_tokens": None, "latent_rank": None, "chunked": False}

    kind: ClassVar[str] = "attention"
    kv_heads: int
    k_head_dim: int  # values per K head [count]
    v_head_dim: int  # values per V head [count]; 0: no V row (the MLA latent lives in the K row)
    window_tokens: int | None  # None: global (attends the whole context); chunked: the chunk [tokens]
    latent_rank: int | None  # MLA: the compressed latent's part of the K row; the rest is the RoPE key
    # chunked attention (Llama 4): a token attends only the earlier tokens of its own chunk of window_tokens
    # (positions ⌊p / C⌋·C … p) instead of the last window_tokens; the peak a cache holds is the same min(ctx, C)
    chunked: bool

    @property
    def k_values(self) -> int:
        """Values of one token's K row in this layer [count]."""
        return self.kv_heads * self.k_head_dim

    @property
    def v_values(self) -> int:
        """Values of one token's V row in this layer [count] (0 for an MLA latent)."""
        return self.kv_heads * self.v_head_dim


class SharedKV(ComparedFigures):
    """A layer that attends through another layer's cache and holds none (Gemma 3n's shared KV)."""

    __slots__ = _fields = ("source_layer", "window_tokens")
    _defaults = {"window_tokens": None}

    kind: ClassVar[str] = "shared_kv"
    source_layer: int  # 0-based index of the layer whose cache it reads
    window_tokens: int | None  # the source's window: what it attends, not what it stores


class State(ComparedFigures):
    """A layer whose memory is a fixed-size state per sequence: a conv state (``conv_channels`` × the kernel's
    columns) and a recurrent state (``recurrent_values``) — Mamba2, Gated DeltaNet, LFM2's short convolution.

    The columns of the conv state the runtime keeps (``conv_kernel_tokens − 1`` in llama.cpp, all of them in
    transformers) and the element formats are the runtime's to decide (:mod:`kvplan.engine.state`)."""

    __slots__ = _fields = ("mixer", "conv_channels", "conv_kernel_tokens", "recurrent_values")

    kind: ClassVar[str] = "state"
    mixer: str  # short_conv | mamba2 | gated_deltanet (what computes the state)
    conv_channels: int  # values of one conv column [count]
    conv_kernel_tokens: int  # taps of the causal conv [tokens]
    recurrent_values: int  # values of the recurrent (SSM / delta-rule) state of one sequence [count]; 0: none

    @property
    def state_values(self) -> int:
        """Values one sequence keeps in this layer with the whole kernel kept (transformers) [count]."""
        return self.conv_channels * self.conv_kernel_tokens + self.recurrent_values


class Parallel(ComparedFigures):
    """A layer whose attention and state mixers run side by side on the same input (Falcon-H1): its KV rows are
    its ``attention``'s, its per-sequence state its ``state``'s.

    References
    ----------
    llama.cpp build 11434 ``src/llama-model.cpp`` :: ``llama_model::create_memory`` (``LLM_ARCH_FALCON_H1``:
    ``filter_attn`` and ``filter_recr`` both true on every layer); transformers ``models/falcon_h1/modeling_falcon_h1.py``
    ``FalconH1DecoderLayer`` (``self.mamba`` and ``self.self_attn`` on every layer, their outputs summed)."""

    __slots__ = _fields = ("attention", "state")

    kind: ClassVar[str] = "parallel"
    attention: Attention
    state: State


class Feedforward(ComparedFigures):
    """A layer with no token mixer (Nemotron-H's MLP-only blocks): it keeps nothing per token or sequence."""

    __slots__ = _fields = ()

    kind: ClassVar[str] = "feedforward"


Layer = Union[Attention, SharedKV, State, Parallel, Feedforward]


def attention_part(layer: Layer) -> Attention | None:
    """The attention a layer caches through: itself, a parallel layer's attention mixer, or None.

    Parameters
    ----------
    layer : Layer

    Returns
    -------
    Attention or None
    """
    if isinstance(layer, Attention):
        return layer
    return layer.attention if isinstance(layer, Parallel) else None


class Schedule(ComparedFigures):
    """The layers of a model in order, as runs of identical consecutive layers."""

    __slots__ = _fields = ("runs",)

    runs: tuple[tuple[int, Layer], ...]

    @property
    def layers(self) -> int:
        """How many layers [count]."""
        return sum(count for count, _ in self.runs)

    def spans(self) -> Iterator[tuple[int, int, Layer]]:
        """``(first layer, last layer, layer)`` of each run, 0-based and inclusive.

        Returns
        -------
        iterator of (int [layer index], int [layer index], Layer)
        """
        first = 0
        for count, layer in self.runs:
            yield first, first + count - 1, layer
            first += count

    def layer_kinds(self, start: int = 0, stop: int | None = None) -> Iterator[Layer]:
        """The layers ``start`` … ``stop − 1`` one by one, in order.

        Parameters
        ----------
        start : int [layer index]
            The first layer, 0-based.
        stop : int or None [layer index]
            One past the last layer; None: to the last.

        Returns
        -------
        iterator of Layer
        """
        stop = self.layers if stop is None else stop
        for first, last, layer in self.spans():
            lo, hi = max(first, start), min(last + 1, stop)
            for _ in range(max(hi - lo, 0)):
                yield layer

    def layer(self, index: int) -> Layer:
        """The layer at 0-based ``index``.

        Parameters
        ----------
        index : int [layer index]
            0-based.

        Returns
        -------
        Layer
        """
        for first, last, layer in self.spans():
            if first <= index <= last:
                return layer
        raise IndexError(f"layer {index} out of range (the schedule has {self.layers} layers)")

    def groups(self, start: int = 0, stop: int | None = None) -> tuple[tuple[int, Layer], ...]:
        """``(count, layer)`` of each distinct layer among ``start`` … ``stop − 1``, in order of first use: what
        order-free pricing needs (a handful of groups whatever the depth).

        Parameters
        ----------
        start : int [layer index]
            The first layer, 0-based.
        stop : int or None [layer index]
            One past the last layer; None: to the last.

        Returns
        -------
        tuple of (int [layers], Layer)
        """
        stop = self.layers if stop is None else stop
        counts: dict[Layer, int] = {}
        for first, last, layer in self.spans():
            n = min(last + 1, stop) - max(first, start)
            if n > 0:
                counts[layer] = counts.get(layer, 0) + n
        return tuple((n, layer) for layer, n in counts.items())

    def with_window(self, window_tokens: int) -> Schedule:
        """The same layers with every attention layer behind one window (the ``sliding_window`` override).

        Parameters
        ----------
        window_tokens : int [tokens]
            The window every attention layer attends.

        Returns
        -------
        Schedule
        """
        def windowed(layer: Layer) -> Layer:
            if isinstance(layer, Attention):
                return layer.with_changes(window_tokens=window_tokens, chunked=False)
            if isinstance(layer, Parallel):
                return Parallel(layer.attention.with_changes(window_tokens=window_tokens, chunked=False), layer.state)
            return layer

        return _merged((count, windowed(layer)) for count, layer in self.runs)

    def windows(self) -> tuple[int, ...]:
        """The distinct windows of the attention layers, smallest first.

        Returns
        -------
        tuple of int [tokens]
        """
        attended = (attention_part(layer) for _, layer in self.runs)
        return tuple(sorted({a.window_tokens for a in attended if a is not None and a.window_tokens is not None}))

    @property
    def chunked_layers(self) -> int:
        """How many attention layers attend in chunks (:class:`Attention` ``chunked``) [count]."""
        return sum(count for count, layer in self.runs
                   if (a := attention_part(layer)) is not None and a.chunked)

    @property
    def parallel_layers(self) -> int:
        """How many layers run attention and a state mixer side by side (:class:`Parallel`) [count]."""
        return sum(count for count, layer in self.runs if isinstance(layer, Parallel))

    @property
    def attending_layers(self) -> int:
        """How many layers compute attention [count]: the attention layers, the parallel layers (attention beside
        their state) and the layers that read another's cache; a state or feed-forward layer does not attend."""
        return sum(count for count, layer in self.runs if layer.kind in ("attention", "parallel", "shared_kv"))

    @property
    def latent(self) -> bool:
        """Whether any attention layer caches an MLA latent."""
        return any(a is not None and a.latent_rank is not None for a in (attention_part(ly) for _, ly in self.runs))


def compress(layers: Iterable[Layer]) -> Schedule:
    """The schedule of ``layers`` given one by one in order: consecutive equal layers merged into runs.

    Parameters
    ----------
    layers : iterable of Layer
        In layer order.

    Returns
    -------
    Schedule
    """
    return _merged((1, layer) for layer in layers)


def _merged(runs: Iterable[tuple[int, Layer]]) -> Schedule:
    out: list[list] = []
    for count, layer in runs:
        if out and out[-1][1] == layer:
            out[-1][0] += count
        else:
            out.append([count, layer])
    return Schedule(tuple((count, layer) for count, layer in out))


def attention_runs(schedule: Schedule, cache: str, chunked: bool = False) -> tuple[tuple[int, Attention], ...]:
    """The schedule's runs, all attention layers; a layer of another kind, or a chunked attention layer, is refused
    by name for ``cache`` (these cache models price plain and sliding-window attention caches only).

    Parameters
    ----------
    schedule : Schedule
    cache : str
        The cache model asking (``ideal``, ``llama.cpp`` …), named in the error.
    chunked : bool
        True: chunked attention layers pass (a cache model with its own rule for them, mlx-lm's).

    Returns
    -------
    tuple of (int [layers], Attention)
    """
    for first, last, layer in schedule.spans():
        if not isinstance(layer, Attention):
            one = first == last
            what = {"shared_kv": f"{'reads' if one else 'read'} layer {getattr(layer, 'source_layer', '?')}'s KV cache",
                    "state": "keeps a fixed-size state per sequence",
                    "parallel": "attends and keeps a fixed-size state per sequence side by side"
                    }.get(layer.kind, "is not an attention layer")
            span = f"layer {first}" if one else f"layers {first}–{last}"
            raise FieldError("model", f"{span} {what} ({layer.kind}); the {cache} cache model prices only "
                             "attention layers, so this model cannot be priced yet")
        if layer.chunked and not chunked:
            span = f"layer {first}" if first == last else f"layers {first}–{last}"
            raise FieldError("model", f"{span} attend in chunks of {layer.window_tokens:,} tokens (chunked attention, "
                             f"Llama 4); the {cache} cache model has no rule for chunked attention, so this model "
                             "cannot be priced with it (the ideal, llama.cpp, transformers and mlx-lm cache models "
                             "price it)")
    return schedule.runs  # type: ignore[return-value]


def split_runs(schedule: Schedule, cache: str) -> tuple[tuple[tuple[int, Attention], ...], tuple[tuple[int, State], ...]]:
    """The schedule's distinct attention layers and distinct state layers, each as ``(count, layer)`` groups
    (:meth:`Schedule.groups`); a parallel layer counts in both, its attention among the attention layers and its
    state among the state layers; feed-forward layers keep nothing and shared-KV layers hold no cache of their own
    (they read their source layer's), so both are left out; any other kind is refused by name for ``cache``, as
    :func:`attention_runs` does.

    Parameters
    ----------
    schedule : Schedule
    cache : str
        The cache model asking, named in the error.

    Returns
    -------
    (tuple of (int [layers], Attention), tuple of (int [layers], State))
    """
    attention: list[tuple[int, Attention]] = []
    states: list[tuple[int, State]] = []
    for count, layer in schedule.groups():
        if isinstance(layer, Attention):
            attention.append((count, layer))
        elif isinstance(layer, State):
            states.append((count, layer))
        elif isinstance(layer, Parallel):
            attention.append((count, layer.attention))
            states.append((count, layer.state))
        elif not isinstance(layer, (Feedforward, SharedKV)):
            attention_runs(schedule, cache)  # raises, naming the layers
    return tuple(attention), tuple(states)


def attention_only(schedule: Schedule) -> Schedule:
    """The schedule without its state, feed-forward and shared-KV layers, a parallel layer as its attention: what a KV
    cache holds (an attention layer count that keeps the model's own layer indices is not needed by any cache rule,
    which are order-free).

    Parameters
    ----------
    schedule : Schedule

    Returns
    -------
    Schedule
    """
    return _merged((count, attention_part(layer)) for count, layer in schedule.runs
                   if attention_part(layer) is not None)



def shared_kv_layers(schedule: Schedule) -> tuple[tuple[int, int, SharedKV], ...]:
    """The spans of shared-KV layers, ``(first, last, layer)`` 0-based and inclusive, in order.

    Parameters
    ----------
    schedule : Schedule

    Returns
    -------
    tuple of (int [layer index], int [layer index], SharedKV)
    """
    return tuple(span for span in schedule.spans() if isinstance(span[2], SharedKV))
