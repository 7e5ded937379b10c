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
