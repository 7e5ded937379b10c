"""Close-name suggestions for a misspelt name ("did you mean …?"), one wording for every kind of name.

Pure string matching (no I/O): the layer that refuses a name words its own error with :func:`did_you_mean`.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping

#: as many guesses as the device and model look-ups offer, and difflib's own similarity threshold
MAX_GUESSES = 3
CUTOFF = 0.6


def close_names(typed: str, names: Iterable[str] | Mapping[str, str], n: int = MAX_GUESSES) -> list[str]:
    """Up to ``n`` of ``names`` close to ``typed``, best first, each once.

    Parameters
    ----------
    typed : str
        What the user typed.
    names : iterable of str, or mapping of str to str
        The known names, or spellings mapped to the name they stand for (``{"fp16": "f16", "f16": "f16"}``):
        a typo of a synonym then suggests its name, and two spellings of one name are one guess, not two.
    n : int [count]
        Most guesses.

    Returns
    -------
    list of str
        The guesses (difflib ratio ≥ :data:`CUTOFF`, case ignored), equally close names in the order given.
    """
    canonical = dict(names) if isinstance(names, Mapping) else {name: name for name in names}
    by_key: dict[str, str] = {}
    for spelling, name in canonical.items():
        by_key.setdefault(str(spelling).lower(), name)
    matcher = difflib.SequenceMatcher()
    matcher.set_seq2(str(typed).strip().lower())
    scored = []
    for key in by_key:
        matcher.set_seq1(key)
        score = matcher.ratio()
        if score >= CUTOFF:
            scored.append((score, key))
    # best first; equally close names in the order given (q4_k_m before q4_k_s), not difflib's reverse-alphabetical
    close = [key for _, key in sorted(scored, key=lambda pair: -pair[0])]
    return list(dict.fromkeys(by_key[key] for key in close))[:n]


def did_you_mean(typed: str, names: Iterable[str] | Mapping[str, str], n: int = MAX_GUESSES) -> str:
    """``"; did you mean a, b?"`` for the names close to ``typed``, or ``""`` when none is.

    Parameters
    ----------
    typed : str
        What the user typed.
    names : iterable of str, or mapping of str to str
        As in :func:`close_names`.
    n : int [count]
        Most guesses.

    Returns
    -------
    str
        The clause to append to an error message.
    """
    guesses = close_names(typed, names, n)
    return f"; did you mean {', '.join(guesses)}?" if guesses else ""
