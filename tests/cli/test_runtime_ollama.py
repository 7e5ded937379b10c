"""`--runtime ollama`: Ollama v0.32.15's llama-server command line priced by the llama.cpp cache model.

Under Ollama ``--ctx`` is ``num_ctx``, the context of each sequence; llama.cpp's ``-c`` is ``num_ctx × parallel``
(``llm/llama_server.go`` :: ``startLlamaServer``, 375-376). Every figure below is llama.cpp's for the arguments
Ollama passes, and the command printed is the one Ollama starts.
"""

from __future__ import annotations

import json

import pytest

MAC = "macbook-air-m2-16gb"
# qwen3-4b: 36 layers · 2 (K+V) · 8 KV heads · 128 · 2 B (f16) = 147,456 B per cell
QWEN3_4B_CELL = 36 * 2 * 8 * 128 * 2
assert QWEN3_4B_CELL == 147_456


OLLAMA_VARIABLES = ("OLLAMA_NUM_PARALLEL", "OLLAMA_KV_CACHE_TYPE", "OLLAMA_FLASH_ATTENTION", "OLLAMA_CONTEXT_LENGTH",
                    "OLLAMA_GPU_OVERHEAD", "OLLAMA_MODELS")


@pytest.fixture(autouse=True)
def _cli(monkeypatch, run):
    """``run_cli(*args, env={…})``: the CLI in-process with only the named Ollama variables set."""
    global run_cli

    def run_cli(*args, env=None):
        for name in OLLAMA_VARIABLES:
            monkeypatch.delenv(name, raising=False)
        for name, value in (env or {}).items():
            monkeypatch.setenv(name, value)
        return run(*args)


def _json(*args, env=None):
    r = run_cli("check", "--device", MAC, "-f", "json", *args, env=env)
    assert r.exit_code in (0, 1), r.stdout + r.stderr
    return json.loads(r.stdout)


def test_done_when_default_num_ctx_on_a_16_gb_mac():
    d = _json("--model", "qwen3-4b", "--runtime", "ollama")
    # 16 GiB of RAM < 23 GiB: whatever Metal's working set, Ollama's tier is 4096 (server/routes.go 2050-2056)
    assert d["ctx"] == 4096
    # -c 4096 × 1 → pad(4096, 256) = 4096 cells × 147,456 B = 603,979,776 B
    assert d["memory"]["kv_bytes"] == 4096 * QWEN3_4B_CELL == 603_979_776
    assert d["runtime"]["name"] == "ollama"
    assert d["runtime"]["command"] == "llama-server --model BLOB -c 4096 -np 1 --flash-attn auto -b 512 -ub 512"
    # Ollama's pinned b10488 reserves the logits of -np rows, as b11434 (ggml-org/llama.cpp#23861)
    assert d["memory"]["process"]["llamacpp_build"] == "b11434"


def test_equals_llamacpp_for_the_arguments_ollama_passes():
    """num_ctx 8192 with 2 slots is llama-server -c 16384 -np 2 -b 512 -ub 512 (build 11434's rules): every byte alike."""
    ours = _json("--model", "qwen3-4b", "--runtime", "ollama", "--ctx", "8192", "--num-parallel", "2")
    theirs = _json("--model", "qwen3-4b", "--runtime", "llama.cpp", "--ctx", "16384", "--parallel", "2",
                   "--batch", "512", "--ubatch", "512")
    for key in ("kv_bytes", "buffers_bytes", "total_bytes", "headroom_bytes"):
        assert ours["memory"][key] == theirs["memory"][key], key
    # 2 streams × pad(16384 / 2, 256) = 2 × 8192 cells × 147,456 B = 2,415,919,104 B
    assert ours["memory"]["kv_bytes"] == 2 * 8192 * QWEN3_4B_CELL == 2_415_919_104
    assert "-c 16384 -np 2" in ours["runtime"]["command"]
    assert ours["runtime"]["cells"] == theirs["runtime"]["cells"]  # n_ctx 16384, n_ctx_seq 8192, 2 streams


def test_num_ctx_is_ctx_and_kv_cache_type_passes_both_types():
    d = _json("--model", "qwen3-4b", "--runtime", "ollama", "--num-ctx", "4k", "--kv-cache-type", "Q8_0")
    # q8_0: 34 B per 32 values → 128 values = 136 B per row; 36 · 2 · 8 · 136 = 78,336 B per cell × 4096
    assert d["memory"]["kv_bytes"] == 36 * 2 * 8 * 136 * 4096 == 320_864_256
    assert "--cache-type-k q8_0 --cache-type-v q8_0" in d["runtime"]["command"]


def test_environment_is_read_as_ollama_serve_reads_it():
    env = {"OLLAMA_NUM_PARALLEL": "3", "OLLAMA_FLASH_ATTENTION": "0", "OLLAMA_CONTEXT_LENGTH": "2048"}
    d = _json("--model", "qwen3-4b", "--runtime", "ollama", env=env)
    assert (d["ctx"], d["sequences"]) == (2048, 3)
    # -c 2048 × 3 = 6144 → 3 streams × pad(2048) cells; flash attention off: V transposed (same size here)
    assert d["memory"]["kv_bytes"] == 3 * 2048 * QWEN3_4B_CELL
    assert "-c 6144 -np 3 --flash-attn off" in d["runtime"]["command"]
    # an option given beats the variable
    d = _json("--model", "qwen3-4b", "--runtime", "ollama", "--num-parallel", "1", env=env)
    assert d["sequences"] == 1


def test_one_slot_architectures_run_one_sequence():
    d = _json("--model", "lfm2-1.2b", "--runtime", "ollama", "--ctx", "4096", "--num-parallel", "4")
    assert d["sequences"] == 1  # server/sched.go 505-510: lfm2 forced to -np 1
    assert "-np 1" in d["runtime"]["command"]
    assert any("one slot" in r for r in d["runtime"]["rules"])


def test_num_ctx_above_training_context_is_lowered():
    d = _json("--model", "qwen3-4b", "--runtime", "ollama", "--ctx", "64k")
    # qwen3-4b trained to 40,960: llm/server.go 112-116 lowers num_ctx → -c 40960 → 40,960 cells
    assert d["memory"]["kv_bytes"] == 40960 * QWEN3_4B_CELL
    assert "-c 40960" in d["runtime"]["command"]


@pytest.mark.parametrize("args, needle", [
    (("--num-parallel", "0"), "--num-parallel: must be at least 1"),
    (("--kv-cache-type", "q3_k"), "--kv-cache-type: llama.cpp has no cache type 'q3_k'"),
    (("--num-ctx", "4k", "--ctx", "8k"), "disagree"),
])
def test_bad_values_are_one_line_exit_2(args, needle):
    r = run_cli("check", "--device", MAC, "--model", "qwen3-4b", "--runtime", "ollama", *args)
    assert r.exit_code == 2
    assert needle in r.stdout + r.stderr and "Traceback" not in r.stdout + r.stderr


def test_ollama_options_need_the_runtime_and_env_errors_name_the_variable():
    r = run_cli("check", "--device", MAC, "--model", "qwen3-4b", "--ctx", "4k", "--num-parallel", "2")
    assert r.exit_code == 2 and "--runtime ollama" in r.stdout + r.stderr
    r = run_cli("check", "--device", MAC, "--model", "qwen3-4b", "--num-ctx", "4k")
    assert r.exit_code == 2 and "--runtime ollama" in r.stdout + r.stderr
    r = run_cli("check", "--device", MAC, "--model", "qwen3-4b")
    assert r.exit_code == 2 and "--ctx" in r.stdout + r.stderr
    r = run_cli("check", "--device", MAC, "--model", "qwen3-4b", "--runtime", "ollama",
                env={"OLLAMA_FLASH_ATTENTION": "maybe"})
    assert r.exit_code == 2 and "OLLAMA_FLASH_ATTENTION" in r.stdout + r.stderr


def test_gate_file_runtime_ollama(tmp_path):
    gate = tmp_path / "release.yaml"
    gate.write_text("configurations:\n  - name: ollama-two-slots\n    device: pixel8\n    model: qwen3-4b\n"
                    "    ctx: 4096\n    runtime: {name: ollama, num_parallel: 2, kv_cache_type: q8_0}\n")
    out = tmp_path / "gate.json"
    r = run_cli("gate", str(gate), "--json", str(out))
    assert r.exit_code in (0, 1), r.stdout + r.stderr
    row = json.loads(out.read_text())["configurations"][0]["check"]
    assert row["runtime"]["cells"]["n_ctx_requested"] == 8192  # -c 4096 × 2
    # q8_0 78,336 B per cell × (2 streams × 4096 cells)
    assert row["memory"]["kv_bytes"] == 36 * 2 * 8 * 136 * 2 * 4096


def test_compare_ollama_beside_llamacpp():
    r = run_cli("compare", "--device", MAC, "--model", "qwen3-4b", "--ctx", "4096", "--runtime", "llama.cpp,ollama",
                "-f", "json")
    assert r.exit_code in (0, 1), r.stdout + r.stderr
    d = json.loads(r.stdout)
    rows = d["rows"] if "rows" in d else d["cells"]
    by_runtime = {row["runtime"]: row for row in rows}
    # the same 4096-token cache either way: -c 4096 -np 1
    assert by_runtime["ollama"]["kv_bytes"] == by_runtime["llama.cpp"]["kv_bytes"] == 603_979_776


def test_model_from_the_local_ollama_store(tmp_path):
    gguf = pytest.importorskip("gguf")
    from tests.cli.test_import_gguf_cmd import write_tiny_q4_k_m

    store = tmp_path / "models"
    blob_dir = store / "blobs"
    blob_dir.mkdir(parents=True)
    digest = "ab" * 32
    write_tiny_q4_k_m(blob_dir / f"sha256-{digest}")
    manifest = store / "manifests" / "registry.ollama.ai" / "library" / "tiny" / "q4"
    manifest.parent.mkdir(parents=True)
    manifest.write_text(json.dumps({"layers": [{"mediaType": "application/vnd.ollama.image.model",
                                                "digest": f"sha256:{digest}"}]}))
    r = run_cli("check", "--device", MAC, "--model", "ollama:tiny:q4", "--runtime", "ollama", "-f", "json",
                env={"OLLAMA_MODELS": str(store)})
    assert r.exit_code == 0, r.stdout + r.stderr
    d = json.loads(r.stdout)
    assert d["model"] == "tiny-q4"
    # tiny: 1 layer · 2 · 4 KV heads · 64 · 2 B = 1,024 B per cell × 4096 cells (the 4096 default)
    assert d["memory"]["kv_bytes"] == 1024 * 4096
    missing = run_cli("check", "--device", MAC, "--model", "ollama:nothere", "--runtime", "ollama",
                      env={"OLLAMA_MODELS": str(store)})
    assert missing.exit_code == 2 and "no Ollama manifest for 'nothere'" in missing.output
    del gguf


def test_the_largest_num_ctx_stops_at_the_training_context_and_says_why():
    # 16 GB Air: 11,456,825,262 B budget leaves room for ~62k cells of qwen3-4b, but Ollama lowers num_ctx to 40,960
    d = _json("--model", "qwen3-4b", "--runtime", "ollama")
    assert (d["max_ctx"], d["max_ctx_limited_by"]) == (40960, "n_ctx_train")
    r = run_cli("check", "--device", "pixel8", "--model", "qwen3-4b", "--runtime", "ollama", "--ctx", "8k",
                "-f", "json")
    d = json.loads(r.stdout)
    assert d["max_ctx_limited_by"] == "memory" and d["max_ctx"] < 40960  # the phone's budget binds first
