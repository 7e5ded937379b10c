"""Every public engine function documents its parameters and result numpydoc-style, each with its unit in
brackets (pvlib's ``ctx : int or ndarray [tokens]``; ``[1]`` for a pure number or fraction), so a figure can be
re-derived by hand from the docstring alone."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ENGINE = Path(__file__).resolve().parents[2] / "kvplan" / "engine"
UNIT = re.compile(r"\[[^\]]+\]")
NUMERIC = re.compile(r"^(numeric|int|float|ndarray|array|number)\b")


def _public_functions():
    for path in sorted(ENGINE.glob("*.py")):
        if path.name.startswith("_"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
                yield f"{path.stem}.{node.name}", node
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                for item in node.body:
                    is_property = any(getattr(d, "id", None) == "property" for d in item.decorator_list) \
                        if isinstance(item, ast.FunctionDef) else True
                    if isinstance(item, ast.FunctionDef) and not item.name.startswith("_") and not is_property:
                        yield f"{path.stem}.{node.name}.{item.name}", item


FUNCTIONS = dict(_public_functions())


def _section(doc: str, title: str) -> list[str] | None:
    """The lines of a numpydoc section (up to the next underlined title), or None when it is missing."""
    lines = doc.splitlines()
    for i in range(len(lines) - 1):
        if lines[i].strip() == title and set(lines[i + 1].strip()) == {"-"}:
            out = []
            for j in range(i + 2, len(lines)):
                if j + 1 < len(lines) and lines[j].strip() and set(lines[j + 1].strip()) == {"-"}:
                    break
                out.append(lines[j])
            return out
    return None


def _entries(section: list[str]) -> dict[str, tuple[str, str]]:
    """``name → (type, description)`` of each entry (``a, b : numeric [bytes]`` and the lines indented under it)."""
    body = [line for line in section if line.strip()]
    if not body:
        return {}
    indent = min(len(line) - len(line.lstrip()) for line in body)
    out, current = {}, []
    for line in body:
        if len(line) - len(line.lstrip()) == indent:
            names, _, kind = line.strip().partition(" : ")
            current = [kind, ""]
            for name in names.split(","):
                out[name.strip().lstrip("*")] = current
        elif current:
            current[1] += " " + line.strip()
    return {name: tuple(entry) for name, entry in out.items()}


def test_the_engine_has_public_functions():
    assert len(FUNCTIONS) > 60  # the walk found them (a broken walk would pass every check vacuously)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_parameters_and_result_are_documented_with_units(name):
    node = FUNCTIONS[name]
    doc = ast.get_docstring(node) or ""
    args = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
    params = [a.arg for a in args if a.arg not in ("self", "cls")]
    params += [a.arg for a in (node.args.vararg, node.args.kwarg) if a is not None]
    if params:
        section = _section(doc, "Parameters")
        assert section is not None, f"{name}: no Parameters section"
        documented = _entries(section)
        missing = [p for p in params if p not in documented]
        assert not missing, f"{name}: parameters not documented: {missing}"
        # a number carries its unit; a name, a flag or an object (str, bool, ElementFormat, ModelShape) has none
        unitless = [p for p in params if NUMERIC.match(documented[p][0]) and not UNIT.search(" ".join(documented[p]))]
        assert not unitless, f"{name}: no [unit] for {unitless} (use [1] for a pure number)"
    returns = _section(doc, "Returns")
    assert returns is not None, f"{name}: no Returns section"
    first = next((line.strip() for line in returns if line.strip()), "")
    assert first, f"{name}: an empty Returns section"
    if NUMERIC.match(first):
        assert UNIT.search(first), f"{name}: the result {first!r} has no [unit]"


def test_the_checker_sees_a_missing_unit():
    doc = "Bytes.\n\nParameters\n----------\nctx : int\n    Tokens.\n\nReturns\n-------\nint [bytes]\n"
    assert _entries(_section(doc, "Parameters")) == {"ctx": ("int", " Tokens.")}
    assert NUMERIC.match("int") and not UNIT.search(" ".join(_entries(_section(doc, "Parameters"))["ctx"]))
    assert _section(doc, "Returns") == ["int [bytes]"]
