"""Every relative link in the docs resolves inside the repository: to a file that exists (and, with an anchor, to a
heading of it), never to a folder outside it (a reader of the repository has nothing else)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
DOCS = sorted([*(ROOT / "docs").glob("*.md"), ROOT / "README.md", ROOT / "CONTRIBUTING.md"])

# [text](target "title") and ![alt](target); reference definitions [label]: target
_INLINE = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\".*\")?\s*$")
_EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)  # http:, https:, mailto: …


def _prose(text: str, blank_code: bool = True) -> list[tuple[int, str]]:
    """(line number, line) outside fenced code blocks, with inline code spans blanked unless ``blank_code`` is
    False (a heading's anchor keeps the text of its code)."""
    out, fenced = [], False
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            continue
        if not fenced:
            out.append((number, re.sub(r"`[^`]*`", "``", line) if blank_code else line))
    return out


def links(text: str) -> list[tuple[int, str]]:
    """(line, target) of every link in ``text`` (not in code)."""
    found = []
    for number, line in _prose(text):
        found += [(number, m.group(1)) for m in _INLINE.finditer(line)]
        ref = _REFERENCE.match(line)
        if ref:
            found.append((number, ref.group(1)))
    return found


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, markup and punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip())  # a link in a heading: its text
    text = text.replace("`", "").lower()
    text = "".join(c for c in text if c.isalnum() or c in " -_")
    return text.replace(" ", "-")


def anchors(text: str) -> set[str]:
    """The anchors of a Markdown file's headings (a repeated heading gets -1, -2 … as on GitHub)."""
    seen: dict[str, int] = {}
    out = set()
    for _, line in _prose(text, blank_code=False):
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        base = slug(m.group(1))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def problems(path: Path, root: Path = ROOT) -> list[str]:
    """What is wrong with the links of ``path`` (a file under ``root``): ``line: target: why``."""
    text = path.read_text(encoding="utf-8")
    out = []
    for number, target in links(text):
        if _EXTERNAL.match(target):
            continue
        file_part, _, anchor = target.partition("#")
        resolved = (path.parent / file_part).resolve() if file_part else path
        where = f"{path.name}:{number}: {target}"
        if not resolved.is_relative_to(root.resolve()):
            out.append(f"{where}: outside the repository")
        elif not resolved.exists():
            out.append(f"{where}: no such file")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved.read_text(encoding="utf-8")):
            out.append(f"{where}: no heading #{anchor} in {resolved.name}")
    return out


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_every_relative_link_resolves_in_the_repository(path):
    assert problems(path) == []


def test_the_checks_find_what_they_are_for(tmp_path):
    # links in code are not links; an external link is not checked; the anchor slug is GitHub's
    text = "[a](cli.md#json-and-csv-across-commands) `[b](nope.md)`\n```\n[c](nope.md)\n```\n[d]: https://x.org\n"
    assert links(text) == [(1, "cli.md#json-and-csv-across-commands"), (5, "https://x.org")]
    assert slug("JSON and CSV across commands") == "json-and-csv-across-commands"
    assert slug("`kvplan profiles list`") == "kvplan-profiles-list"
    assert anchors("# A\n## A\n```\n# B\n```\n### `os_reserve`: per-platform defaults\n") == \
        {"a", "a-1", "os_reserve-per-platform-defaults"}
    # a missing file, a missing heading and a folder outside the repository are each reported
    root = tmp_path / "repo"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "cli.md").write_text((ROOT / "docs" / "cli.md").read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "elsewhere.md").write_text("# x\n")
    fake = root / "docs" / "probe.md"
    fake.write_text("[x](nope.md) [y](cli.md#no-such-heading) [z](../../elsewhere.md) [ok](cli.md)\n")
    found = problems(fake, root)
    assert [p.split(": ", 2)[2] for p in found] == ["no such file", "no heading #no-such-heading in cli.md",
                                                   "outside the repository"]
