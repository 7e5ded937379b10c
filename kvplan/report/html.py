"""Report blocks → one self-contained HTML page (inline CSS, plots as base64 data URIs, no external links loaded)."""

from __future__ import annotations

import base64
import html
import re

from kvplan.render.tables import Table
from kvplan.report.document import Bullets, Heading, Paragraph, Plot, Report, Tables

_CSS = """
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; max-width: 70rem; margin: 2rem auto;
       padding: 0 1rem; color: #222; }
table { border-collapse: collapse; margin: 0.5rem 0 1rem; }
th, td { border: 1px solid #ccc; padding: 0.2rem 0.6rem; }
th { background: #f3f3f3; }
td.r, th.r { text-align: right; } td.l, th.l { text-align: left; }
caption { text-align: left; font-weight: 600; padding: 0.3rem 0; }
code { background: #f3f3f3; padding: 0 0.2rem; }
img { max-width: 100%; }
ul.notes { margin-top: 0; font-size: 0.9em; color: #555; }
"""

_URL = re.compile(r"https?://[^\s<>\"')\]]+")
_CODE = re.compile(r"`([^`]+)`")
_BOLD = re.compile(r"\*\*([^*]+)\*\*")


def inline(text: str) -> str:
    """Escape text, then turn `code`, **bold** and bare URLs into HTML."""
    out = html.escape(text, quote=False)
    out = _CODE.sub(r"<code>\1</code>", out)
    out = _BOLD.sub(r"<strong>\1</strong>", out)
    return _URL.sub(lambda m: f'<a href="{html.escape(m.group(0))}">{m.group(0)}</a>', out)


def table_html(t: Table) -> str:
    align = ["r" if a == "right" else "l" for a in t.alignment()]
    parts = ["<table>"]
    if t.title:
        parts.append(f"<caption>{inline(t.title)}</caption>")
    parts.append("<thead><tr>" + "".join(f'<th class="{a}">{inline(c)}</th>' for c, a in zip(t.columns, align))
                 + "</tr></thead><tbody>")
    for row in t.rows:
        parts.append("<tr>" + "".join(f'<td class="{a}">{inline(c)}</td>' for c, a in zip(row, align)) + "</tr>")
    parts.append("</tbody></table>")
    if t.notes:
        parts.append('<ul class="notes">' + "".join(f"<li>{inline(n)}</li>" for n in t.notes) + "</ul>")
    return "\n".join(parts)


def render_html(report: Report, images_png: dict[str, bytes] | None = None) -> str:
    """The page; ``images_png`` maps a plot's key to PNG bytes embedded as a data URI."""
    images = images_png or {}
    body: list[str] = []
    for block in report.blocks:
        if isinstance(block, Heading):
            body.append(f"<h{block.level}>{inline(block.text)}</h{block.level}>")
        elif isinstance(block, Paragraph):
            body.append(f"<p>{inline(block.text)}</p>")
        elif isinstance(block, Bullets):
            body.append("<ul>" + "".join(f"<li>{inline(i)}</li>" for i in block.items) + "</ul>")
        elif isinstance(block, Tables):
            body.extend(table_html(t) for t in block.tables)
        elif isinstance(block, Plot) and block.key in images:
            data = base64.b64encode(images[block.key]).decode("ascii")
            body.append(f'<p><img alt="{html.escape(block.alt)}" src="data:image/png;base64,{data}"></p>')
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>{html.escape(report.title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n"
            + "\n".join(body) + "\n</body>\n</html>\n")
