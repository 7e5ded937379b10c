"""The top-level JSON keys docs/cli.md lists for compare, fit, sweep and gate are the keys, in the order, printed
(issue #27: the documented place of `warnings` was not where the documents put it)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

CLI_MD = (Path(__file__).resolve().parents[1] / "docs" / "cli.md").read_text(encoding="utf-8")


def _top_level_keys(text: str) -> list[str]:
    """The backticked names of ``text`` outside any (…), […] or {…} nested below the top level."""
    depth, keys, i = 0, [], 0
    while i < len(text):
        c = text[i]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "`":
            end = text.index("`", i + 1)
            if depth == 0:
                keys.append(text[i + 1:end])
            i = end
        i += 1
    return keys


def _documented(start: str, stop: str) -> list[str]:
    begin = CLI_MD.index(start) + len(start)
    return [k for k in _top_level_keys(CLI_MD[begin:CLI_MD.index(stop, begin)]) if re.fullmatch(r"[a-z_]+", k)]


@pytest.mark.parametrize("args, start, stop", [
    (("compare", "-c", "4k", "-d", "pixel8", "-m", "7b"), "JSON: {`schema_version`,", ". A\ncompare row"),
    (("fit", "-d", "pixel8", "-m", "7b", "-c", "8k"), "JSON: `schema_version`,", ". CSV columns: `rank`"),
    (("gate", "examples/release.yaml"), "JSON keys (`--format json`, `--json FILE`): `schema_version`,",
     "\n\n## kvplan report"),
])
def test_documented_top_level_keys_are_the_printed_ones(run, args, start, stop):
    doc = json.loads(run(*args, "--format", "json").stdout)
    assert ["schema_version", *_documented(start, stop)] == list(doc)


def test_the_readme_quotes_the_flash_times_check_prints(run):
    # 1,664,967,296 B over the budget / 2.1e9 B/s = 0.793 s, printed "793 ms"; the README said "0.79 s"
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    out = run("check", "--device", "pixel8", "--model", "7b", "--ctx", "8192").stdout
    overflow = re.search(r"read the overflow back from flash at 2\.10 GB/s +(\S+ \S+)", out)[1]
    whole = re.search(r"read the whole KV cache \(4\.29 GB\) back at 2\.10 GB/s +(\S+ \S+)", out)[1]
    assert (overflow, whole) == ("793 ms", "2.05 s")
    assert f"({overflow} to read the 1.66 GB overflow back, {whole} for the whole cache;" in readme
