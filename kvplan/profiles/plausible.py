"""Plausibility of a model's parameter count against its own shape (the ``did you mean 7B?`` of a count).

A count may be bare (``params: 6738415616``), so ``params: 7`` parses: it is 7 parameters, and would price the
weights of a 7B model at 4 bytes. Sizes refuse a bare number with the unit it probably meant
(:mod:`kvplan.units`); a count cannot, since a bare count is valid. What it can be checked against is the
profile itself: every attention layer holds at least its output projection, ``attention_heads × v_head_dim``
by ``hidden_size`` (``attention_heads × head_dim`` when the profile gives no ``hidden_size``), so a count below
``layers`` of those is no model of that shape, and the suffix that would make it one is suggested.
"""

from __future__ import annotations

# The SI suffixes a count takes (kvplan.units._COUNT), smallest first: the first that lifts a count above the
# floor is the one suggested.
_SUFFIXES = (("k", 10**3), ("M", 10**6), ("B", 10**9), ("T", 10**12))


def params_problem(count: int | None, *, layers: int, attention_heads: int, head_dim: int,
                   v_head_dim: int | None = None, hidden_size: int | None = None) -> str | None:
    """Why ``count`` parameters cannot fill this shape (None when they can), with the suffix it probably lacks."""
    if count is None:
        return None
    width = attention_heads * (v_head_dim or head_dim)  # the output projection's input: every head's values
    hidden = hidden_size or attention_heads * head_dim
    floor = layers * width * hidden
    if count >= floor:
        return None
    guess = next(((suffix, scale) for suffix, scale in _SUFFIXES if count * scale >= floor), None) if count < 1000 \
        else None  # 7 → 7B; a four-digit count takes no suffix
    hint = f": did you mean {count}{guess[0]} ({count * guess[1]:,})?" if guess else ""
    return (f"{count:,} is fewer parameters than the attention output projections of this shape alone "
            f"({layers} layers × {width:,} × {hidden:,} = {floor:,}){hint}")


def model_params_problem(model, count: int | None) -> str | None:
    """:func:`params_problem` for a model profile's own shape."""
    return params_problem(count, layers=model.layers, attention_heads=model.attention_heads,
                          head_dim=model.head_dim, v_head_dim=model.v_head_dim, hidden_size=model.hidden_size)
