"""The layer contracts of .importlinter hold: no import circles across layers, no upward imports, and render,
plots and report compute nothing. A new upward import fails here (and so in CI)."""

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_are_kept():
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")
    assert exe, "import-linter is part of the test extra"
    done = subprocess.run([exe, "--config", str(ROOT / ".importlinter")], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout


def test_no_stray_files_at_the_root():
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    if not tracked:  # not a git checkout (an sdist): nothing to check
        return
    roots = {p for p in tracked if "/" not in p}
    allowed = {"README.md", "CONTRIBUTING.md", "pyproject.toml", ".gitignore", ".importlinter", ".pre-commit-hooks.yaml"}
    assert roots <= allowed, sorted(roots - allowed)


# --- the core speaks facts; the CLI names flags, render words figures ---------------------------------------

CORE = ("engine", "caches", "plan", "profiles", "importers", "sweep.py", "advice.py", "curves.py", "labels.py")
FLAG = r"(?<![\w-])--[a-z][a-z0-9]*(?:-[a-z0-9]+)*"
# Documentation, not a message: a profile field's description in the published JSON schema
# (docs/schema/model.schema.json) tells a file's author how the CLI uses the field.
FLAG_ALLOWED = {("kvplan/profiles/fields.py", "--runtime")}


def _string_literals(path: Path):
    """``(line, text)`` of every string literal in a module except docstrings (which may cite a runtime's flags)."""
    import ast

    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body:
            first = body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docs.add(id(first.value))
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):  # an attribute's docstring
            docs.add(id(node.value))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            yield node.lineno, node.value


def test_the_core_names_fields_never_flags():
    """Only the CLI speaks of flags: the core raises FieldError / writes FieldText with ``{field}``, which the CLI
    words as its flags (kvplan.cli.fieldnames) and a gate file as its keys."""
    import re

    flag = re.compile(FLAG)
    found = []
    for part in CORE:
        root = ROOT / "kvplan" / part
        for path in sorted(root.rglob("*.py")) if root.is_dir() else [root]:
            rel = path.relative_to(ROOT).as_posix()
            for line, text in _string_literals(path):
                found += [f"{rel}:{line}: {m}" for m in flag.findall(text) if (rel, m) not in FLAG_ALLOWED]
    assert not found, found


def test_the_flag_pattern_finds_flags():
    import re

    flag = re.compile(FLAG)
    assert flag.findall("give --params; --kv-unified: one stream") == ["--params", "--kv-unified"]
    assert not flag.findall("a range 1--2, a rule ---, pad(x -- y), -ub 512")


def test_cache_models_give_rules_as_facts_that_render_words():
    """A runtime's rules are facts (kind + values) from the cache model; the sentences are render's. Every kind a
    cache model can give has its words, and no cache model module builds labels (kvplan/labels.py does)."""
    import ast

    from kvplan.caches.facts import Rule
    from kvplan.render.runtime_rules import KINDS

    given = set()
    for path in (ROOT / "kvplan" / "caches").glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "rule" and node.args:
                assert isinstance(node.args[0], ast.Constant), f"{path.name}:{node.lineno}: a rule kind is a literal"
                given.add(node.args[0].value)
    assert given and given <= KINDS, sorted(given - KINDS)
    for part in ("engine", "caches", "plan", "profiles", "importers"):
        for path in (ROOT / "kvplan" / part).rglob("*.py"):
            labels = [node.name for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                      if isinstance(node, ast.FunctionDef) and node.name.endswith("_label")]
            assert not labels, f"{path.relative_to(ROOT)}: {labels} word a row: kvplan/labels.py or render"
    assert not (ROOT / "kvplan" / "caches" / "labels.py").exists()

    from kvplan.caches.llamacpp import llamacpp_cache
    from kvplan.caches.transformers import transformers_cache
    from kvplan.profiles.catalog import load_profile
    from kvplan.profiles.runtime import LlamaCppSpec, TransformersSpec

    model = load_profile("model", ROOT / "model_profiles" / "gemma-3-1b.yaml")
    for cache in (llamacpp_cache(LlamaCppSpec(), model), transformers_cache(TransformersSpec(), model)):
        rules = cache.describe(8192, 2)["rules"]
        assert rules and all(isinstance(r, Rule) and r.kind in KINDS for r in rules)
