"""How many series a plot draws, their colours, and how a figure says that some were left out.

Past :data:`MAX_SERIES` lines (or panels) a plot stops being readable: colours repeat and the legend
outgrows the figure. Every kind that draws one series per configuration (``sweep --plot``, ``plot
decode``, ``plot memory``) draws the first :data:`MAX_SERIES`, says "12 of 30 series" in its title, and
leaves the warning on stderr (which names the options to narrow) to the command.
"""

from __future__ import annotations

from dataclasses import dataclass

MAX_SERIES = 12
# Twelve colours told apart at a glance, none of them the budget's red.
SERIES_COLORS = ("#4c72b0", "#dd8452", "#55a868", "#8172b3", "#937860", "#da8bc3", "#64b5cd", "#ccb974",
                 "#1b3a6b", "#2a9d8f", "#6b4226", "#8c8c8c")


@dataclass(frozen=True)
class SeriesCount:
    """``shown`` of ``total`` series drawn (the first ones, in the command's order)."""

    total: int
    shown: int

    @property
    def left_out(self) -> int:
        return self.total - self.shown


def count_series(total: int, max_series: int = MAX_SERIES) -> SeriesCount:
    return SeriesCount(total, min(total, max_series))


def title_note(count: SeriesCount) -> str:
    """``"first 12 of 30 series shown, 18 left out"`` when some were left out, else empty."""
    return f"first {count.shown} of {count.total} series shown, {count.left_out} left out" if count.left_out else ""
