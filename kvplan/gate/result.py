"""What the gate found: per threshold, per configuration, for the whole file (numbers only, no display text)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from kvplan.plan import Evaluation

Unit = Literal["bytes", "tokens_per_s", "s", "tokens"]


@dataclass(frozen=True)
class ThresholdResult:
    """One threshold checked against one configuration.

    ``kind`` says which side passes: ``min`` needs ``actual ≥ limit``, ``max`` needs
    ``actual ≤ limit``. ``must_fit`` is ``headroom_bytes ≥ 0`` (fit or tight). ``actual`` is
    ``None`` only for ``min_max_ctx`` when the cache stops growing (every layer windowed).
    """

    name: str
    kind: Literal["min", "max"]
    unit: Unit
    limit: int | float
    actual: int | float | None
    passed: bool
    limit_fraction: float | None = None  # min_headroom given as a fraction of the budget

    @property
    def miss(self) -> int | float | None:
        """By how much it missed, in ``unit`` (positive); ``None`` when it passed."""
        if self.passed or self.actual is None:
            return None
        return self.limit - self.actual if self.kind == "min" else self.actual - self.limit


@dataclass(frozen=True)
class ConfigResult:
    name: str
    line: int | None  # where the configuration starts in the file
    evaluation: Evaluation
    thresholds: tuple[ThresholdResult, ...]
    elapsed_s: float = 0.0

    @property
    def passed(self) -> bool:
        return all(t.passed for t in self.thresholds)

    @property
    def failures(self) -> tuple[ThresholdResult, ...]:
        return tuple(t for t in self.thresholds if not t.passed)


@dataclass(frozen=True)
class GateResult:
    path: str
    title: str | None
    configurations: tuple[ConfigResult, ...]

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.configurations)

    @property
    def failed(self) -> tuple[ConfigResult, ...]:
        return tuple(c for c in self.configurations if not c.passed)
