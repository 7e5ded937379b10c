"""Report blocks → Markdown (tables through :func:`kvplan.render.tables.to_markdown`)."""

from __future__ import annotations

from kvplan.render.tables import to_markdown
from kvplan.report.document import Bullets, Heading, Paragraph, Plot, Report, Tables


def render_markdown(report: Report, image_links: dict[str, str] | None = None) -> str:
    """Markdown text; ``image_links`` maps a plot's key to its relative path (plots without one are left out)."""
    links = image_links or {}
    out: list[str] = []
    for block in report.blocks:
        if isinstance(block, Heading):
            out.append(f"{'#' * block.level} {block.text}\n")
        elif isinstance(block, Paragraph):
            out.append(block.text + "\n")
        elif isinstance(block, Bullets):
            out.append("\n".join(f"- {item}" for item in block.items) + "\n")
        elif isinstance(block, Tables):
            out.append(to_markdown(list(block.tables), heading_level=block.heading_level))
        elif isinstance(block, Plot) and block.key in links:
            out.append(f"![{block.alt}]({links[block.key]})\n")
    return "\n".join(out).rstrip() + "\n"
