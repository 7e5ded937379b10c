"""kvplan report: Markdown with a _files/ folder of plots, self-contained HTML, and the report's sections."""

from __future__ import annotations

import base64
import re
from pathlib import Path

from tests.conftest import DATA

GATE = DATA / "gate"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_markdown_with_plots(run, tmp_path):
    out = tmp_path / "review.md"
    result = run("report", GATE / "fail" / "one-of-three.yaml", "-o", out)
    assert result.exit_code == 0, result.stderr  # a report records missed thresholds; it does not fail on them
    text = out.read_text()
    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
    assert links == ["review_files/ref-2k.png", "review_files/ref-4k.png", "review_files/ref-4k-small-model.png"]
    for link in links:
        assert (tmp_path / link).read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    for heading in ("## Summary", "## Assumptions", "## Sources", "## Configuration: ref-2k",
                    "## Configuration: ref-4k-small-model", "### Devices", "### Models"):
        assert heading in text
    # reused check tables: the memory table of ref-4k (1.75e9 + 4,096 · 524,288 = 3,897,483,648 B)
    assert "| total | 3,897,483,648 B | 3.90 GB | 65.0 % |" in text
    # thresholds with their result: weights 1.75e9 against 1.7e9 → 50 MB over
    assert "| max_weights | ≤ 1.70 GB | 1.75 GB | 50.00 MB over | FAIL |" in text
    assert "Thresholds: 2 of 3 pass; 1 fail." in text


def test_html_is_self_contained(run, tmp_path):
    out = tmp_path / "review.html"
    result = run("report", GATE / "pass" / "ref-4k.yaml", "-o", out)
    assert result.exit_code == 0, result.stderr
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    sources = re.findall(r'src="([^"]+)"', page)
    assert len(sources) == 1 and sources[0].startswith("data:image/png;base64,")
    assert base64.b64decode(sources[0].split(",", 1)[1]).startswith(b"\x89PNG")
    assert "<link" not in page and "<script" not in page
    assert not (tmp_path / "review_files").exists()
    assert "<h2>Assumptions</h2>" in page and "<td class=\"r\">3,897,483,648 B</td>" in page


def test_sources_of_builtin_profiles_are_listed(run, tmp_path):
    out = tmp_path / "r.md"
    result = run("report", EXAMPLES / "release.yaml", "-o", out, "--no-plots")
    assert result.exit_code == 0, result.stderr
    text = out.read_text()
    assert "#### pixel8 (builtin: device_profiles/pixel8.yaml)" in text
    assert "- `memory_bandwidth`: " in text and "https://" in text
    assert "![" not in text and not (tmp_path / "r_files").exists()


def test_no_thresholds_no_threshold_tables(run, tmp_path):
    out = tmp_path / "r.md"
    result = run("report", GATE / "pass" / "ref-tight.yaml", "-o", out, "--no-plots")
    assert result.exit_code == 0
    text = out.read_text()
    assert "#### thresholds" not in text and "| result |" not in text
    assert "tight: headroom under the 10.0 % margin" in text  # the check table's note
    assert "no sources given in the profile" in text  # the reference fixtures carry no sources


def test_markdown_to_stdout_without_output(run):
    result = run("report", GATE / "fail" / "ref-8k-over.yaml")
    assert result.exit_code == 0
    assert result.stdout.startswith("# Design review: ref-8k-over.yaml")
    assert "#### what would make it fit" in result.stdout


def test_bad_file_writes_nothing(run, tmp_path):
    out = tmp_path / "r.md"
    result = run("report", GATE / "bad" / "bad-ctx.yaml", "-o", out)
    assert result.exit_code == 2 and "bad-ctx.yaml:6: configurations.0.ctx:" in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_unknown_extension_is_refused_before_work(run, tmp_path):
    result = run("report", GATE / "bad" / "bad-ctx.yaml", "-o", tmp_path / "r.pdf")
    assert result.exit_code == 2 and "unknown report extension .pdf" in result.stderr
