"""``kvplan check --runtime …``: the cache bytes the runtimes allocate, exactly.

The expected figures come from an independent per-layer loop written here from the rules in
docs/runtimes.md (not from kvplan.caches.runtimes), and from real llama.cpp log lines recorded in
tests/data/runtime_logs/.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from tests.conftest import DATA, REF_PHONE

LOGS = sorted((DATA / "runtime_logs").glob("*.yaml"))
# attention-only models: the formula below knows no state layers (those are checked against llama.cpp's and
# transformers' measured rows in tests/unit/test_llamacpp_state_data.py and test_transformers_state_measured.py)
MODELS = sorted(p.stem for p in (Path(__file__).parents[2] / "model_profiles").glob("*.yaml")
                if "\nstate:" not in p.read_text())
assert LOGS and len(MODELS) >= 20, "fixtures or model profiles are missing: these tests would check nothing"
BLOCK = {"f16": (2, 1), "q8_0": (34, 32), "q4_0": (18, 32)}  # bytes per block, values per block
CTXS = (100, 1000, 4096, 5000, 32768)


def _profile(name):
    return yaml.safe_load((Path(__file__).parents[2] / "model_profiles" / f"{name}.yaml").read_text())


def _pad(n):
    return (n + 255) // 256 * 256


def _kv_heads(p, i):
    return p["kv_heads"][i] if isinstance(p["kv_heads"], list) else p["kv_heads"]


def _llamacpp_windowed(p, i):
    arch = p.get("architecture")
    if arch == "llama4" and p.get("attention_chunk_size"):  # LLAMA_SWA_TYPE_CHUNKED: load_swa_pattern(ml, 4)
        return i % 4 < 3
    if not p.get("sliding_window"):
        return False
    if arch == "gemma2":
        return i % 2 == 0
    if arch in ("gemma3", "gemma3_text"):
        return i % 6 < 5
    if arch == "gpt_oss":  # LLM_ARCH_OPENAI_MOE: set_swa_pattern(2)
        return i % 2 == 0
    if arch in ("gemma3n", "gemma4"):  # the GGUF's per-layer pattern: full attention at every fifth layer
        return i % 5 < 4
    return False  # llama (mistral), phi3, qwen2, …: no window in llama.cpp


def expected_llamacpp(p, ctx, n, kv_type):
    block_bytes, block_values = BLOCK[kv_type]
    n_ctx = _pad(ctx)
    per_stream = _pad(n_ctx // n)
    ubatch = min(512, 2048, ctx)
    n_swa = 8192 if p.get("architecture") == "llama4" else p.get("sliding_window", 0)  # Llama 4: the loader's chunk
    swa = _pad(min(per_stream, n_swa + ubatch))
    total = 0
    # gemma3n: layers from n_layer_kv_from_start (20) on reuse an earlier layer's cache and have no tensor; gemma4:
    # from n_layer − shared_kv_layers on
    own = {"gemma3n": 20, "gemma4": p["layers"] - p.get("shared_kv_layers", 0)}.get(p.get("architecture"), p["layers"])
    for i in range(own):
        cells = swa if _llamacpp_windowed(p, i) else per_stream
        if p.get("mla"):
            rows = [p["mla"]["kv_lora_rank"] + p["mla"]["qk_rope_head_dim"]]
        elif p.get("global_head_dim") and not _llamacpp_windowed(p, i):  # gemma4: key_length on full layers
            rows = [_kv_heads(p, i) * p["global_head_dim"]] * 2
        else:
            rows = [_kv_heads(p, i) * p["head_dim"], _kv_heads(p, i) * p.get("v_head_dim", p["head_dim"])]
        for values in rows:
            total += values // block_values * block_bytes * cells * n
    return total


def _window(p):
    """The window of the windowed layers: sliding_window, or a chunked layer's chunk (a DynamicSlidingWindowLayer of
    attention_chunk_size, transformers' cache_utils.py)."""
    return p.get("sliding_window") or p.get("attention_chunk_size")


def _hf_sliding(p, i):
    pattern = p.get("sliding_window_pattern", "all")
    if not _window(p):
        return False
    return {"all": True, "alternating": i % 2 == 0, "5:1": i % 6 < 5, "4:1": i % 5 < 4, "3:1": i % 4 < 3}[pattern]


def expected_transformers(p, ctx, n):
    steady = peak = 0
    # DynamicCache builds layers for layer_types[: -num_kv_shared_layers] only (Gemma 3n)
    for i in range(p["layers"] - p.get("shared_kv_layers", 0)):
        if p.get("mla"):  # transformers ≥ 5.15 caches the latent: keys kv_lora_rank, values qk_rope_head_dim
            row = (p["mla"]["kv_lora_rank"] + p["mla"]["qk_rope_head_dim"]) * 2  # f16
        elif p.get("global_head_dim") and not _hf_sliding(p, i):  # Gemma 4: global_head_dim on full layers
            row = _kv_heads(p, i) * 2 * p["global_head_dim"] * 2  # f16
        else:
            row = _kv_heads(p, i) * (p["head_dim"] + p.get("v_head_dim", p["head_dim"])) * 2  # f16
        kept = min(ctx, _window(p)) if _hf_sliding(p, i) else ctx
        steady += row * kept * n
        peak += row * ctx * n
    return steady, peak


@pytest.fixture(scope="module")
def evaluate_json():
    from kvplan.profiles.catalog import Catalog
    from kvplan.cli.options import runtime as ro
    from kvplan.plan import Knobs, build_scenario
    from kvplan.plan import evaluate
    from kvplan.render.check import format_json

    catalog = Catalog()
    device = catalog.device(str(REF_PHONE)).profile

    def run(name, ctx, n, runtime, kv_type=None):
        knobs = Knobs(sequences=n, kv_type=kv_type, runtime=ro.runtime_knob(runtime))
        return format_json(evaluate(build_scenario(device, catalog.model(name).profile, ctx, knobs)))

    return run


@pytest.mark.parametrize("name", MODELS)
def test_llamacpp_exact_for_every_shipped_model(evaluate_json, name):
    p = _profile(name)
    for ctx in CTXS:
        for kv_type in ("f16", "q8_0", "q4_0"):
            for n in (1, 2, 3, 4):
                doc = evaluate_json(name, ctx, n, "llama.cpp", kv_type)
                assert doc["memory"]["kv_bytes"] == expected_llamacpp(p, ctx, n, kv_type), (ctx, kv_type, n)
                assert doc["memory"]["kv_peak_bytes"] == doc["memory"]["kv_bytes"]


@pytest.mark.parametrize("name", MODELS)
def test_transformers_exact_for_every_shipped_model(evaluate_json, name):
    p = _profile(name)
    for ctx in CTXS:
        for n in (1, 2, 3, 4):
            doc = evaluate_json(name, ctx, n, "transformers", "f16")
            assert (doc["memory"]["kv_bytes"], doc["memory"]["kv_peak_bytes"]) == expected_transformers(p, ctx, n)


@pytest.mark.parametrize("name", ["llama-3.1-8b", "gemma-3-1b", "deepseek-v2-lite", "mistral-7b-v0.1"])
def test_cli_json_matches(run_json, name):
    p = _profile(name)
    code, doc = run_json("check", "-d", REF_PHONE, "-m", name, "-c", "5000", "-n", "3", "--runtime", "llama.cpp",
                         "--kv-type", "q8_0")
    assert doc["memory"]["kv_bytes"] == expected_llamacpp(p, 5000, 3, "q8_0")
    assert doc["runtime"]["name"] == "llama.cpp" and doc["runtime"]["rules"]
    code, doc = run_json("check", "-d", REF_PHONE, "-m", name, "-c", "5000", "--runtime", "transformers")
    assert (doc["memory"]["kv_bytes"], doc["memory"]["kv_peak_bytes"]) == expected_transformers(p, 5000, 1)


_SIZE = re.compile(r"llama_kv_cache: size = +([\d.]+) MiB \( *(\d+) cells, +(\d+) layers, +(\d+)/(\d+) seqs\), "
                   r"K \((\w+)\): +([\d.]+) MiB, V \((\w+)\): +([\d.]+) MiB")


@pytest.mark.parametrize("log", LOGS, ids=[p.stem for p in LOGS])
def test_recorded_llamacpp_logs_are_reproduced(run_json, log):
    record = yaml.safe_load(log.read_text())
    lines = [m.groups() for m in _SIZE.finditer(record["log"])]
    assert lines, "no size line in the fixture"
    model = record["model"]
    model = str(DATA / "runtimes" / model) if model.endswith(".yaml") else model
    code, doc = run_json("check", "-d", REF_PHONE, "-m", model, *record["kvplan"])
    caches = doc["runtime"]["caches"]
    assert len(caches) == len(lines)
    total = 0
    for part, (size, cells, layers, n_seq, n_stream, k_type, k_mib, v_type, v_mib) in zip(caches, lines):
        assert (part["cells"], part["layers"], part["streams"]) == (int(cells), int(layers), int(n_stream))
        assert f"{(part['k_bytes'] + part['v_bytes']) / 2**20:.2f}" == size
        assert f"{part['k_bytes'] / 2**20:.2f}" == k_mib and f"{part['v_bytes'] / 2**20:.2f}" == v_mib
        assert (doc["runtime"]["k_type"], doc["runtime"]["v_type"]) == (k_type, v_type)
        assert doc["runtime"]["options"]["parallel"] == int(n_seq)
        total += part["k_bytes"] + part["v_bytes"]
    assert doc["memory"]["kv_bytes"] == total


def test_quantized_v_without_flash_attention_is_refused(run):
    result = run("check", "-d", REF_PHONE, "-m", "qwen3-1.7b", "-c", "4096", "--runtime", "llama.cpp",
                 "--kv-type", "q8_0", "--flash-attn", "off")
    assert result.exit_code == 2
    assert "flash attention" in result.stderr and result.stdout == ""


@pytest.mark.parametrize("args, message", [
    (("--runtime", "transformers", "--kv-type", "q8_0"), "model dtype"),
    (("--kv-unified",), "--runtime llama.cpp"),
    (("--runtime", "llama.cpp", "--parallel", "2", "-n", "3"), "disagree"),
    (("--runtime", "transformers", "--cache", "static", "--max-cache-len", "1000"), "max-cache-len"),
    (("--runtime", "vllm"), "unknown runtime"),
])
def test_usage_errors(run, args, message):
    result = run("check", "-d", REF_PHONE, "-m", "qwen3-1.7b", "-c", "4096", *args)
    assert result.exit_code == 2 and message in result.stderr


def test_table_says_which_rules_applied(run):
    result = run("check", "-d", REF_PHONE, "-m", "gemma-3-1b", "-c", "8192", "--parallel", "3",
                 "--runtime", "llama.cpp")
    assert "runtime: llama.cpp" in result.stdout
    assert "pad(8,192 / 3, 256) = 2,816 cells per stream" in result.stdout
    assert "windowed layers: pad(min(2,816, 512 × 1 + n_ubatch 512), 256) = 1,024 cells" in result.stdout


def test_ideal_is_the_default(run_json):
    _, doc = run_json("check", "-d", REF_PHONE, "-m", "qwen3-1.7b", "-c", "5000")
    assert doc["runtime"]["name"] == "ideal"
    assert doc["memory"]["kv_bytes"] == 5000 * 114_688  # 28 × 2 × 1024 × 2 B per token
