"""`kvplan check` prices a mixture of experts by its active parameters (and, with --weight-type, by tensor); a bad
params_active is refused."""

from __future__ import annotations

import gzip
import json

from tests.conftest import DATA


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


def test_check_prices_a_mixtral_config_by_tensor(run_json):
    quant = json.loads(gzip.decompress((DATA / "llamacpp" / "quant" / "mixtral-8x7b.json.gz").read_bytes()))
    code, data = run_json("check", "-d", "pixel8", "-m", str(DATA / "hf_configs_other" / "mixtral-8x7b.json"),
                          "-c", "4k", "--weight-type", "q4_k_m")
    assert code == 1  # over: 28 GB of weights on an 8 GB phone
    # the resident weights are llama-quantize's own Q4_K_M total (build 11434 --dry-run), tensor for tensor
    assert data["memory"]["weights_bytes"] == quant["types"]["q4_k_m"]["total_bytes"] == 28_447_727_616
