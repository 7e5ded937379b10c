"""fit and gate word llama.cpp's max -c with the per-sequence tokens the trained context is compared with."""

from __future__ import annotations

from tests.conftest import DATA, REF_PHONE

REF_7B_4K = DATA / "maxctx" / "ref-7b-4k.yaml"


def test_fit_with_parallel_sequences(run):
    result = run("fit", "-d", REF_PHONE, "-m", REF_7B_4K, "-n", "2", "--runtime", "llama.cpp")
    assert result.exit_code == 0, result.stderr
    # (6e9 − 1.75e9) / 524,288 = 8,106.2 cells over 2 streams → 3,840 each (256-padded), -c 7,680
    assert "7,680 tokens of -c (3,840 per sequence; model trained to 4,096)" in result.stdout
    assert "(model trained to 4,096)" not in result.stdout.replace("; model trained to 4,096)", "")


def test_gate_max_ctx_column(run, tmp_path):
    gate = tmp_path / "np2.yaml"
    gate.write_text(f"defaults:\n  device: {REF_PHONE}\n  model: {REF_7B_4K}\n  ctx: 4k\n"
                    "  runtime: {name: llama.cpp, parallel: 2}\nconfigurations:\n  - name: np2\n")
    result = run("gate", gate)
    assert result.exit_code == 0, result.stderr + result.stdout
    assert "7,680 (3,840 per sequence)" in result.stdout and "(trained 4,096)" not in result.stdout
