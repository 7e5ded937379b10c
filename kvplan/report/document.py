"""The neutral pieces a report is made of; renderers turn them into Markdown or HTML."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dataclasses import dataclass, field

from kvplan.render.tables import Table

if TYPE_CHECKING:
    from kvplan.plan.results import Evaluation


@dataclass(frozen=True)
class Heading:
    level: int
    text: str


@dataclass(frozen=True)
class Paragraph:
    text: str


@dataclass(frozen=True)
class Bullets:
    items: tuple[str, ...]


@dataclass(frozen=True)
class Tables:
    tables: tuple[Table, ...]
    heading_level: int = 4


@dataclass(frozen=True)
class Plot:
    """The summary plot (memory and decode against context) of one configuration."""

    key: str  # a file-name-safe identifier, unique in the report
    alt: str
    evaluation: Evaluation


Block = Heading | Paragraph | Bullets | Tables | Plot


@dataclass
class Report:
    title: str
    blocks: list[Block] = field(default_factory=list)

    @property
    def plots(self) -> list[Plot]:
        return [b for b in self.blocks if isinstance(b, Plot)]
