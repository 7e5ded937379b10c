"""The token slots of MLX-LM's cache objects after ``generate_step`` has processed a prompt: pure integer math.

MLX-LM (mlx-lm 0.32.2, ``mlx_lm/models/cache.py`` and ``mlx_lm/generate.py``) holds one cache object per layer:

- ``KVCache`` (and ``QuantizedKVCache``, the same growth): ``update_and_fetch`` of ``S`` tokens at offset
  ``o`` with capacity ``C``: when ``o + S > C`` it first trims the arrays to ``o`` if ``o % step != 0``, then
  concatenates ``ceil(S / step) · step`` zero slots (``step`` = 256).
- ``RotatingKVCache(max_size)``: a multi-token update (``_update_concat``) puts the old tokens in temporal order,
  drops all but the last ``max_size − 1`` of them (the ``keep`` tokens stay) and appends the ``S`` new ones, so
  after a prefill chunk it holds ``min(size, max_size − 1) + S`` tokens ("the largest size is max_size + S − 1
  to ensure every token gets at least max_size context"); a one-token update (``_update_in_place``) grows the
  arrays by ``min(step, max_size − offset)`` slots when full and below ``max_size``, and trims them to
  ``max_size`` when larger.
- ``ChunkedKVCache(chunk_size)`` (``cache.py`` lines 727–801; Llama 4's chunked layers, ``llama4.py``
  ``Model.make_cache`` lines 318–326): ``LlamaModel.__call__`` (``llama4.py`` lines 228–231) first calls
  ``maybe_trim_front`` on it, which, when the ``offset − start_position`` tokens it holds exceed ``chunk_size``,
  slices its arrays to their last ``chunk_size`` tokens (capacity ``chunk_size``); then ``update_and_fetch``
  grows it exactly as a ``KVCache`` on those held tokens (trim to them when off a step boundary, then
  ``ceil(S / step) · step`` zero slots). So after a call it holds at most ``chunk_size + S`` tokens, trimmed
  again only at the next call.
- ``generate_step``: the first ``N − 1`` prompt tokens in chunks of ``prefill_step_size`` (default 2048), then
  the last one through ``_step`` (one token), then one token per generated token; after every model call
  ``maybe_quantize_kv_cache`` turns each ``KVCache`` whose offset is ``≥ quantized_kv_start`` into a
  ``QuantizedKVCache`` of the same capacity (``to_quantized`` quantizes the whole arrays).

Every function here returns the figures at each such observation point, so a caller can price the state after
the prompt and the largest one on the way.
"""

from __future__ import annotations

MLX_STEP_TOKENS = 256  # KVCache.step, QuantizedKVCache.step, RotatingKVCache.step
DEFAULT_PREFILL_STEP_TOKENS = 2048  # generate.py DEFAULT_PREFILL_STEP_SIZE
DEFAULT_QUANTIZED_KV_START_TOKENS = 5000  # generate.py DEFAULT_QUANTIZED_KV_START


def update_sizes(prompt_tokens: int, prefill_step_tokens: int, decode_tokens: int = 0) -> tuple[int, ...]:
    """The sizes of ``generate_step``'s model calls for a prompt: chunks of the first ``N − 1`` tokens, then 1s.

    Parameters
    ----------
    prompt_tokens : int [tokens]
        The prompt ``N`` (at least 1).
    prefill_step_tokens : int [tokens]
        ``prefill_step_size``.
    decode_tokens : int [tokens]
        Generated tokens fed back after the prompt.

    Returns
    -------
    tuple of int [tokens]
        ``min(prefill_step, remaining)`` while more than one prompt token remains, then ``1 + decode_tokens``
        ones.
    """
    sizes = []
    remaining = prompt_tokens
    while remaining > 1:
        n = min(prefill_step_tokens, remaining - 1)
        sizes.append(n)
        remaining -= n
    return tuple(sizes) + (1,) * (remaining + decode_tokens)


def kv_cache_capacities(prompt_tokens: int, prefill_step_tokens: int, decode_tokens: int = 0,
                        step_tokens: int = MLX_STEP_TOKENS) -> tuple[tuple[int, int], ...]:
    """``(offset, capacity)`` of a ``KVCache`` / ``QuantizedKVCache`` after each model call.

    Parameters
    ----------
    prompt_tokens, prefill_step_tokens, decode_tokens : int [tokens]
        As in :func:`update_sizes`.
    step_tokens : int [tokens]
        The cache's ``step`` (256).

    Returns
    -------
    tuple of (int, int) [tokens]
        The offset and the slots of the K (and V) array after each update.

    Notes
    -----
    With a ``prefill_step_size`` that is a multiple of 256 the capacity is always ``ceil(offset / 256) · 256``;
    otherwise a chunk ending off a step boundary leaves a trim-then-grow pattern the loop follows exactly.
    """
    offset = capacity = 0
    out = []
    for s in update_sizes(prompt_tokens, prefill_step_tokens, decode_tokens):
        if capacity == 0 or offset + s > capacity:
            if capacity and offset % step_tokens:
                capacity = offset
            capacity += -(-s // step_tokens) * step_tokens
        offset += s
        out.append((offset, capacity))
    return tuple(out)


def rotating_cache_sizes(prompt_tokens: int, prefill_step_tokens: int, max_size_tokens: int, decode_tokens: int = 0,
                         step_tokens: int = MLX_STEP_TOKENS) -> tuple[tuple[int, int], ...]:
    """``(offset, slots)`` of a ``RotatingKVCache(max_size)`` after each model call.

    Parameters
    ----------
    prompt_tokens, prefill_step_tokens, decode_tokens : int [tokens]
        As in :func:`update_sizes`.
    max_size_tokens : int [tokens]
        ``max_size`` (the sliding window, or ``--max-kv-size``).
    step_tokens : int [tokens]
        The cache's ``step`` (256).

    Returns
    -------
    tuple of (int, int) [tokens]
        The offset and the slots of the K (and V) array after each update: ``min(slots, max_size − 1) + S``
        after a chunk (the transient ``max_size + S − 1`` at most), at most ``max_size`` after a one-token step.
    """
    offset = slots = 0
    out = []
    for s in update_sizes(prompt_tokens, prefill_step_tokens, decode_tokens):
        if s > 1:  # _update_concat
            slots = s if slots == 0 else min(slots, max_size_tokens - 1) + s
        else:  # _update_in_place
            if slots == 0 or (offset >= slots and slots < max_size_tokens):
                slots += min(step_tokens, max_size_tokens - offset)
            slots = min(slots, max_size_tokens)
        offset += s
        out.append((offset, slots))
    return tuple(out)


def kv_cache_grow(offset_tokens: int, capacity_tokens: int, update_tokens: int,
                  step_tokens: int = MLX_STEP_TOKENS) -> tuple[int, int]:
    """``KVCache.update_and_fetch`` of ``update_tokens`` on a cache at ``offset_tokens`` holding
    ``capacity_tokens`` slots: the new (offset, capacity) [tokens] (trim to the offset when it is off a step
    boundary, then ``ceil(S / step) · step`` more slots, whenever the update does not fit).

    Parameters
    ----------
    offset_tokens : int [tokens]
        Tokens the cache holds before the update.
    capacity_tokens : int [tokens]
        Slots its arrays have (0: not allocated yet).
    update_tokens : int [tokens]
        Tokens of the update (``S``).
    step_tokens : int [tokens]
        The cache's ``step`` (256).

    Returns
    -------
    tuple of (int, int) [tokens]
        The offset and the capacity after the update.
    """
    if capacity_tokens == 0 or offset_tokens + update_tokens > capacity_tokens:
        if capacity_tokens and offset_tokens % step_tokens:
            capacity_tokens = offset_tokens
        capacity_tokens += -(-update_tokens // step_tokens) * step_tokens
    return offset_tokens + update_tokens, capacity_tokens


def kv_capacity_after_chunks(chunks: int, prefill_step_tokens: int,
                             step_tokens: int = MLX_STEP_TOKENS) -> tuple[int, int]:
    """(offset, capacity) [tokens] of a ``KVCache`` after ``chunks`` prefill chunks of ``prefill_step_tokens``.

    The growth of a chunk depends only on the slack (capacity − offset) and ``offset mod step``, so the sequence
    of those pairs repeats; one period is followed and the rest skipped whole (O(step) work at any context).

    Parameters
    ----------
    chunks : int [count]
        Prefill chunks processed.
    prefill_step_tokens : int [tokens]
        Tokens per chunk (``--prefill-step-size``).
    step_tokens : int [tokens]
        The cache's ``step`` (256).

    Returns
    -------
    tuple of (int, int) [tokens]
        The offset and the capacity after the last chunk.
    """
    offset = capacity = 0
    seen: dict[tuple[int, int], tuple[int, int, int]] = {}
    done = 0
    while done < chunks:
        if done:
            key = (capacity - offset, offset % step_tokens)
            if key in seen:
                then, offset_then, capacity_then = seen[key]
                period = done - then
                cycles = (chunks - done) // period
                offset += cycles * (offset - offset_then)
                capacity += cycles * (capacity - capacity_then)
                done += cycles * period
                seen.clear()
                while done < chunks:
                    offset, capacity = kv_cache_grow(offset, capacity, prefill_step_tokens, step_tokens)
                    done += 1
                break
            seen[key] = (done, offset, capacity)
        offset, capacity = kv_cache_grow(offset, capacity, prefill_step_tokens, step_tokens)
        done += 1
    return offset, capacity


def rotating_after_chunks(chunks: int, prefill_step_tokens: int, max_size_tokens: int) -> int:
    """Slots [tokens] of a ``RotatingKVCache(max_size)`` after ``chunks`` (≥ 1) full prefill chunks:
    ``min(chunks · P, max_size − 1 + P)`` (each chunk keeps ``min(size, max_size − 1)`` and appends ``P``).

    Parameters
    ----------
    chunks : int [count]
        Full prefill chunks processed (at least 1).
    prefill_step_tokens : int [tokens]
        Tokens per chunk (``P``).
    max_size_tokens : int [tokens]
        The cache's ``max_size``.

    Returns
    -------
    int [tokens]
        The slots of its K (and V) array.
    """
    return min(chunks * prefill_step_tokens, max_size_tokens - 1 + prefill_step_tokens)


def rotating_in_place(offset_tokens: int, slots_tokens: int, max_size_tokens: int,
                      step_tokens: int = MLX_STEP_TOKENS) -> int:
    """Slots [tokens] after ``RotatingKVCache._update_in_place`` of one token at ``offset_tokens``: grown by
    ``min(step, max_size − offset)`` when full and below ``max_size``, then trimmed to ``max_size``.

    Parameters
    ----------
    offset_tokens : int [tokens]
        Tokens seen before the update.
    slots_tokens : int [tokens]
        Slots of the arrays before it (0: not allocated).
    max_size_tokens : int [tokens]
        The cache's ``max_size``.
    step_tokens : int [tokens]
        The cache's ``step`` (256).

    Returns
    -------
    int [tokens]
        The slots after the update.
    """
    if slots_tokens == 0 or (offset_tokens >= slots_tokens and slots_tokens < max_size_tokens):
        slots_tokens += min(step_tokens, max_size_tokens - offset_tokens)
    return min(slots_tokens, max_size_tokens)


def chunked_kv_grow(held_tokens: int, capacity_tokens: int, update_tokens: int, chunk_tokens: int,
                    step_tokens: int = MLX_STEP_TOKENS) -> tuple[int, int]:
    """One model call on a ``ChunkedKVCache``: ``maybe_trim_front`` then ``update_and_fetch``.

    ``mlx_lm/models/cache.py`` (mlx-lm 0.32.2) ``ChunkedKVCache.maybe_trim_front`` (lines 737–746): with ``valid =
    offset − start_position > chunk_size`` it keeps ``keys[..., valid − chunk_size:valid, :]``, so ``chunk_size``
    held tokens in ``chunk_size`` slots; ``update_and_fetch`` (lines 748–771) is :func:`kv_cache_grow` on the held
    tokens (``prev = offset − start_position``).

    Parameters
    ----------
    held_tokens : int [tokens]
        ``offset − start_position`` before the call.
    capacity_tokens : int [tokens]
        Slots of its arrays before the call (0: not allocated).
    update_tokens : int [tokens]
        Tokens of the call (``S``).
    chunk_tokens : int [tokens]
        ``chunk_size`` (the config's ``attention_chunk_size``).
    step_tokens : int [tokens]
        The cache's ``step`` (256).

    Returns
    -------
    tuple of (int, int) [tokens]
        The held tokens and the capacity after the call.
    """
    if held_tokens > chunk_tokens:
        held_tokens = capacity_tokens = chunk_tokens
    return kv_cache_grow(held_tokens, capacity_tokens, update_tokens, step_tokens)


def chunked_cache_sizes(prompt_tokens: int, prefill_step_tokens: int, chunk_tokens: int, decode_tokens: int = 0,
                        step_tokens: int = MLX_STEP_TOKENS) -> tuple[tuple[int, int, int], ...]:
    """``(offset, start_position, capacity)`` of a ``ChunkedKVCache(chunk_size)`` after each model call of
    ``generate_step`` (:func:`update_sizes`), by :func:`chunked_kv_grow`.

    Parameters
    ----------
    prompt_tokens, prefill_step_tokens, decode_tokens : int [tokens]
        As in :func:`update_sizes`.
    chunk_tokens : int [tokens]
        ``chunk_size``.
    step_tokens : int [tokens]
        The cache's ``step`` (256).

    Returns
    -------
    tuple of (int, int, int) [tokens]
        The offset (every token seen), ``start_position`` (tokens trimmed off the front) and the slots of the K
        (and V) array after each call.

    Notes
    -----
    Once it held more than ``chunk_size`` tokens before a call, every later call of ``S`` tokens leaves
    ``kv_cache_grow(chunk_size, chunk_size, S)``: with a step-aligned chunk, ``chunk_size + ceil(S / 256) · 256``
    slots (8,448 for Llama 4's 8,192 after a decode step).
    """
    offset = held = capacity = 0
    out = []
    for s in update_sizes(prompt_tokens, prefill_step_tokens, decode_tokens):
        held, capacity = chunked_kv_grow(held, capacity, s, chunk_tokens, step_tokens)
        offset += s
        out.append((offset, offset - held, capacity))
    return tuple(out)


def chunked_after_chunks(chunks: int, prefill_step_tokens: int, chunk_tokens: int,
                         step_tokens: int = MLX_STEP_TOKENS) -> tuple[int, int]:
    """(held tokens, capacity) [tokens] of a ``ChunkedKVCache`` after ``chunks`` full prefill chunks.

    Until a call starts with more than ``chunk_size`` held tokens (chunk ``j`` with ``(j − 1) · P > chunk_size``)
    nothing is trimmed and it grows as a ``KVCache`` (:func:`kv_capacity_after_chunks`); from then on every chunk
    starts from ``chunk_size`` tokens in ``chunk_size`` slots (:func:`chunked_kv_grow`).

    Parameters
    ----------
    chunks : int [count]
        Full prefill chunks processed.
    prefill_step_tokens : int [tokens]
        Tokens per chunk (``P``).
    chunk_tokens : int [tokens]
        ``chunk_size``.
    step_tokens : int [tokens]
        The cache's ``step`` (256).

    Returns
    -------
    tuple of (int, int) [tokens]
        The held tokens (``offset − start_position``) and the capacity after the last chunk.
    """
    if chunks >= 2 and (chunks - 1) * prefill_step_tokens > chunk_tokens:
        return kv_cache_grow(chunk_tokens, chunk_tokens, prefill_step_tokens, step_tokens)
    return kv_capacity_after_chunks(chunks, prefill_step_tokens, step_tokens)


def prompt_cache_bytes(stored_caches: int, cache_bytes: int) -> int:
    """Bytes ``mlx_lm.server``'s prompt cache holds beside the live cache when it is full of earlier prompts'
    caches as large as the live one.

    ``LRUPromptCache.insert_cache`` (mlx-lm 0.32.2, ``mlx_lm/models/cache.py``) stores each finished request's
    cache objects themselves and pops the least recently used entry once it holds more than ``max_size``
    (``--prompt-cache-size``); a request works on a ``copy.deepcopy`` of the entry it starts from
    (``fetch_nearest_cache``), so while it runs the server holds ``max_size`` stored caches plus the live one.

    Parameters
    ----------
    stored_caches : int [count]
        ``--prompt-cache-size`` (``max_size``).
    cache_bytes : int [bytes]
        One stored cache: the ``nbytes`` of one sequence's cache objects.

    Returns
    -------
    int [bytes]
        ``stored_caches · cache_bytes``.
    """
    return stored_caches * cache_bytes
