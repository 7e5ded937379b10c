"""Plots: the pictures behind kvplan's tables, drawn with matplotlib (imported only when a plot is asked for).

``data`` computes the arrays with the engine (no matplotlib); ``memory``, ``attention``,
``decode`` and ``fitmap`` each build a :class:`matplotlib.figure.Figure`; ``save`` writes it
whole; ``check`` gives the set that matches ``kvplan check``'s tables; ``sweep`` draws
a whole ``kvplan sweep`` grid (``--plot``).
"""

KINDS = ("memory", "attention", "decode", "fitmap")
