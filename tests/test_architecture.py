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

CORE = ("engine", "caches", "plan", "profiles", "importers", "sweep.py", "advice.py", "curves.py")
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
    cache model can give has its words, and no cache model module builds labels (kvplan/render/labels.py does)."""
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
            assert not labels, f"{path.relative_to(ROOT)}: {labels} word a row: kvplan/render/labels.py"
    assert not (ROOT / "kvplan" / "caches" / "labels.py").exists()
    assert not (ROOT / "kvplan" / "labels.py").exists()  # labels live in render

    from kvplan.caches.llamacpp import llamacpp_cache
    from kvplan.caches.transformers import transformers_cache
    from kvplan.profiles.catalog import load_profile
    from kvplan.profiles.runtime import LlamaCppSpec, TransformersSpec

    model = load_profile("model", ROOT / "model_profiles" / "gemma-3-1b.yaml")
    for cache in (llamacpp_cache(LlamaCppSpec(), model), transformers_cache(TransformersSpec(), model)):
        rules = cache.describe(8192, 2)["rules"]
        assert rules and all(isinstance(r, Rule) and r.kind in KINDS for r in rules)


def _fact_kinds(part: str, factory: str) -> set[str]:
    """The literal kinds of every ``factory("kind", …)`` call under ``kvplan/<part>``."""
    import ast

    given = set()
    for path in (ROOT / "kvplan" / part).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == factory and node.args:
                first = node.args[0]
                if isinstance(first, ast.IfExp):  # warning("a" if … else "b", …)
                    kinds = [first.body, first.orelse]
                else:
                    kinds = [first]
                for kind in kinds:
                    assert isinstance(kind, ast.Constant), f"{path.name}:{node.lineno}: a {factory} kind is a literal"
                    given.add(kind.value)
    return given


def test_warnings_are_facts_that_render_words():
    """Warnings and the reasons inside them are facts (kind + values) from the core; the sentences are
    kvplan/render/warnings.py's and kvplan/render/reasons.py's: every kind the core gives has its words, and no
    words are left for a kind the core no longer gives."""
    from kvplan.render import reasons, warnings

    assert _fact_kinds("plan", "warning") == warnings.KINDS
    assert _fact_kinds("caches", "reason") == reasons.KINDS

    from kvplan.caches.facts import Reason
    from kvplan.plan import Knobs, build_scenario, evaluate
    from kvplan.plan.facts import WarningFact
    from kvplan.plan.profile_warnings import profile_warnings
    from kvplan.plan.warnings import implausible_device
    from kvplan.profiles.catalog import Catalog

    catalog = Catalog()
    phone, mistral = catalog.device("pixel8").profile, catalog.model("mistral-7b-v0.1").profile
    tiny = phone.model_copy(update={"ram": 100 * 10**6, "memory_bandwidth": 50.0})
    # 40k on mistral: past its 4,096-token window (llama.cpp ignores it); a 2 MB reserve asked for on 8 GB of RAM
    ev = evaluate(build_scenario(phone, mistral, 40_000, Knobs(os_reserve_bytes=2_000_000)))
    found = [*ev.warnings, *implausible_device(tiny), *profile_warnings("model", mistral)]
    assert {w.kind for w in found} >= {"window_ignored", "os_reserve_asked", "device_ram", "device_memory_bandwidth",
                                       "model_window_ignored"}
    assert all(isinstance(w, WarningFact) for w in found)
    assert all(isinstance(w["reason"], Reason) for w in found if "reason" in w.facts())


# Functions of the core that may return text: an error about a field (FieldError / ProfileError text, which the core
# may raise), or the text an import writes into the profile it makes (its `sources`: the file's own data) or the
# published JSON schema. Anything else the core says is a fact that render words.
ERROR_WORDING = {
    ("kvplan/engine/names.py", "did_you_mean"), ("kvplan/caches/runtimes.py", "asked_as"),
    ("kvplan/profiles/catalog.py", "_not_found_message"), ("kvplan/profiles/check.py", "validate_file"),
    ("kvplan/profiles/loading.py", "_message"), ("kvplan/profiles/loading.py", "_string_words"),
    ("kvplan/profiles/plausible.py", "params_problem"), ("kvplan/profiles/runtime.py", "in_runtime"),
    ("kvplan/profiles/spec.py", "layer_count_problem"), ("kvplan/importers/common.py", "_kind"),
    ("kvplan/importers/gguf.py", "_damage"),
}
PROFILE_TEXT = {
    ("kvplan/profiles/jsonschema.py", "profile_json_schema"), ("kvplan/importers/gguf.py", "_split_tensors"),
    ("kvplan/importers/gguf.py", "_file_type"), ("kvplan/importers/hf.py", "profile_name"),
    ("kvplan/importers/hf.py", "local_layers"), ("kvplan/importers/hf.py", "_moe_fields"),
    ("kvplan/importers/hf_arch.py", "_layout_keys"), ("kvplan/importers/gguf_state.py", "gguf_state"),
    ("kvplan/importers/hf_llama4.py", "chunked_layers"),  # sources.sliding_window, as local_layers
}


def test_the_core_returns_no_sentences():
    """No function in engine, caches, plan, profiles or importers returns an f-string sentence (literal text with
    spaces) for display: it returns facts, and render words them (exceptions: ERROR_WORDING, PROFILE_TEXT)."""
    import ast

    def returns(fn):  # the function's own return statements, not those of a function defined inside it
        todo = list(fn.body)
        while todo:
            node = todo.pop()
            if isinstance(node, ast.Return) and node.value is not None:
                yield node
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                todo.extend(ast.iter_child_nodes(node))

    found = []
    for part in ("engine", "caches", "plan", "profiles", "importers"):
        for path in sorted((ROOT / "kvplan" / part).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            for fn in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not isinstance(fn, ast.FunctionDef) or (rel, fn.name) in ERROR_WORDING | PROFILE_TEXT:
                    continue
                for node in returns(fn):
                    text = [part.value for joined in ast.walk(node.value) if isinstance(joined, ast.JoinedStr)
                            for part in joined.values if isinstance(part, ast.Constant)]
                    if any(" " in t for t in text):
                        found.append(f"{rel}:{node.lineno}: {fn.name}")
    assert not found, found


def test_a_sweep_carries_facts_that_render_labels():
    """A sweep's ``runtime`` and ``kv_policy`` columns hold the runtime spec and the policy's name (None for the
    ideal formula and for no policy), not text; kvplan/render/labels.py words them for every writer and plot."""
    import ast

    from kvplan import sweep
    from kvplan.plan import Knobs, build_scenario
    from kvplan.profiles.catalog import Catalog
    from kvplan.profiles.runtime import LlamaCppSpec
    from kvplan.render.labels import column_labels

    for path in (ROOT / "kvplan").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "kvplan.labels":
                raise AssertionError(f"{path.relative_to(ROOT)}: labels live in kvplan.render.labels")
    catalog = Catalog()
    base = build_scenario(catalog.device("pixel8").profile, catalog.model("7b").profile, 1,
                          Knobs(runtime={"name": "llama.cpp", "kv_unified": True}))
    cols = sweep.evaluate_group(base, *sweep.grid([1024, 4096], [1, 2]))
    assert all(isinstance(v, LlamaCppSpec) and v.kv_unified for v in cols.runtime)
    assert all(v is None for v in cols.kv_policy)
    assert column_labels("runtime", cols.runtime).tolist() == ["llama.cpp unified"] * 4
    assert column_labels("kv_policy", cols.kv_policy).tolist() == ["none"] * 4
