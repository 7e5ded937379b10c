"""`kvplan check` prices a mixture of experts by its active parameters; a bad params_active is refused."""

from __future__ import annotations


def test_check_reads_the_active_weights_of_deepseek_v2_lite(run_json):
    code, data = run_json("check", "-d", "pixel8", "-m", "deepseek-v2-lite", "-c", "4k")
    assert code == 1  # over: 15.7e9 · 4 / 8 = 7.85 GB of resident weights exceed the 6 GB budget
    memory = data["memory"]
    # resident 7,850,000,000; read 2.66e9 · 4 / 8 − 102,400 · 2,048 · 4 / 8 = 1,330,000,000 − 104,857,600
    assert (memory["weights_bytes"], memory["weights_read_bytes"]) == (7_850_000_000, 1_225_142_400)
    # + the 4k MLA cache 27 · 576 · 2 · 4,096 = 127,401,984
    assert data["bytes_per_step"] == 1_352_544_384


def test_params_active_above_params_is_refused(run, tmp_path):
    path = tmp_path / "moe.yaml"
    path.write_text("name: moe\nparams: 2B\nparams_active: 3B\nlayers: 2\nattention_heads: 4\nkv_heads: 2\n"
                    "head_dim: 8\n")
    result = run("profiles", "validate", str(path))
    assert result.exit_code == 2
    assert "params_active: must be at most params" in result.stdout + result.stderr
