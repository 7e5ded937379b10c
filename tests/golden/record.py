"""Record (or compare) the output of the commands in commands.txt.

    python tests/golden/record.py            # write expected/*.json from the current code
    python tests/golden/record.py --check    # compare; exit 1 and list the differences

The recording pins behaviour across refactors: stdout, stderr and the exit code of each command must stay
byte-identical unless a change is meant to alter them (then re-record and review the diff in git).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
EXPECTED = HERE / "expected"


def commands() -> list[str]:
    lines = (HERE / "commands.txt").read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def case_name(command: str) -> str:
    """A file name that says which command it records: its words joined by dashes, with a short hash of the
    whole command (two commands may share the same leading words once cut to length)."""
    words = re.sub(r"[^A-Za-z0-9.]+", "-", command).strip("-")[:80].rstrip("-.")
    return f"{words}--{hashlib.sha1(command.encode()).hexdigest()[:6]}"


def run(command: str, cache_dir: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KVPLAN_", "FORCE_COLOR"))}
    env.update(COLUMNS="120", NO_COLOR="1", TERM="dumb", KVPLAN_CACHE_DIR=cache_dir, PYTHONHASHSEED="0")
    exe = [sys.executable, "-m", "kvplan", *shlex.split(command)]
    done = subprocess.run(exe, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    # the checkout's own path appears in some outputs (profiles show/list); it differs between clones
    def portable(text: str) -> str:
        return text.replace(str(ROOT), "<root>")

    return {"command": command, "exit_code": done.returncode, "stdout": portable(done.stdout),
            "stderr": portable(done.stderr)}


def main(argv: list[str]) -> int:
    check = "--check" in argv
    EXPECTED.mkdir(exist_ok=True)
    failures = []
    with tempfile.TemporaryDirectory() as cache_dir:
        for command in commands():
            got = run(command, cache_dir)
            path = EXPECTED / f"{case_name(command)}.json"
            if check:
                want = json.loads(path.read_text(encoding="utf-8"))
                if want != got:
                    failures.append(command)
            else:
                path.write_text(json.dumps(got, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    for command in failures:
        print(f"differs: kvplan {command}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
