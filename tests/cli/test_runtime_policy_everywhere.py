"""``--runtime`` and KV policies on fit, sweep, compare, the plots, gate files and the report.

Figures on tests/data/gate/models/tiny-llama.yaml (16 layers × 4 KV heads × 64 dims, f16) on
ref-phone (6 GB budget): one token is 16 × 2 × 4 × 64 × 2 B = 16,384 B; weights 0.5 GB.
"""

from __future__ import annotations

import json

import pytest

from tests.conftest import DATA, REF_PHONE

GATE = DATA / "gate"
TINY = GATE / "models" / "tiny-llama.yaml"
HALF = GATE / "policies" / "half-history.yaml"
WINDOWED = DATA / "planning" / "windowed-1b.yaml"


def _scenario(model=TINY, ctx=1000, **knobs):
    from kvplan.profiles.catalog import Catalog
    from kvplan.plan import Knobs, build_scenario

    catalog = Catalog()
    return build_scenario(catalog.device(str(REF_PHONE)).profile, catalog.model(str(model)).profile, ctx,
                          Knobs(**knobs))


# --- gate files ---------------------------------------------------------------------------------


def test_gate_runtime_and_policy_figures(run_json):
    code, doc = run_json("gate", GATE / "pass" / "runtime-policy.yaml")
    assert code == 0
    by_name = {c["name"]: c["check"] for c in doc["configurations"]}
    llama = by_name["llama.cpp-1000"]
    # -c 1000 padded to 1024 cells × 16,384 B = 16,777,216 B; + 500,000,000 B weights + the llama.cpp process (heap
    # 10,506,240 B with no vocabulary, libraries 15,568,896 B) = 542,852,352 B
    assert llama["memory"]["kv_bytes"] == 16_777_216 and llama["memory"]["total_bytes"] == 542_852_352
    # largest -c: 256 · k · 16,384 ≤ 5.5e9 − 26,075,136 → k = 1305 → 334,080
    assert llama["max_ctx"] == 334_080
    assert llama["runtime"]["name"] == "llama.cpp"
    # parallel 2: pad(1024 / 2) = 512 cells × 2 streams = 1024 cells, the same 16,777,216 B
    assert by_name["llama.cpp-mapping"]["memory"]["kv_bytes"] == 16_777_216
    assert by_name["llama.cpp-mapping"]["runtime"]["options"]["parallel"] == 2
    for name in ("policy-file", "policy-inline"):
        check = by_name[name]
        assert check["runtime"]["name"] == "ideal"  # `runtime: ideal` overrides the defaults' llama.cpp
        # 256 recent + ⌈0.5 × (1000 − 256)⌉ = 372 kept → 628 tokens × 16,384 B = 10,289,152 B
        assert check["memory"]["kv_bytes"] == 10_289_152
        # 256 + ⌈(c − 256) / 2⌉ ≤ ⌊5.5e9 / 16,384⌋ = 335,693 → c − 256 ≤ 670,874 → c = 671,130
        assert check["max_ctx"] == 671_130


def _gate_file(tmp_path, body: str):
    path = tmp_path / "gate.yaml"
    path.write_text(f"configurations:\n  - name: one\n    device: {REF_PHONE}\n    model: {TINY}\n"
                    f"    ctx: 1000\n{body}")
    return path


@pytest.mark.parametrize("body, message", [
    ("    runtime: {name: llama.cpp, parallel: two}\n",
     "gate.yaml:6: configurations.0.runtime: parallel: expected a whole number, got 'two'"),
    ("    runtime: {name: ideal, ubatch: 64}\n",
     "gate.yaml:6: configurations.0.runtime: ubatch: llama.cpp options; they need name: llama.cpp"),
    ("    runtime: 3\n", "gate.yaml:6: configurations.0.runtime: expected a name or a mapping, got int"),
    ("    kv_policy: 3\n",
     "gate.yaml:6: configurations.0.kv_policy: expected a policy file path, 'none' or a policy mapping"),
    ("    runtime: llama.cpp\n    kv_policy: {recent_window: 256, history: {ratio: 0.5}}\n",
     "gate.yaml:7: configurations.0.kv_policy: kv_policy and runtime: a compression policy"),
    ("    runtime: llama.cpp\n    sliding_window: 512\n",
     "gate.yaml:7: configurations.0.sliding_window: llama.cpp has no option"),
])
def test_gate_bad_runtime_or_policy(run, tmp_path, body, message):
    result = run("gate", _gate_file(tmp_path, body))
    assert result.exit_code == 2
    assert message in result.stderr, result.stderr


def test_gate_policy_path_is_relative_to_the_gate_file(run, tmp_path):
    (tmp_path / "policies").mkdir()
    (tmp_path / "policies" / "p.yaml").write_text(HALF.read_text())
    gate = _gate_file(tmp_path, "    kv_policy: policies/p.yaml\n    max_total: 510289152 B\n")
    result = run("gate", gate)  # the working directory is not tmp_path
    assert result.exit_code == 0, result.stderr


def test_gate_kv_policy_none_overrides_the_model_policy(run_json, tmp_path):
    model = DATA / "kv_policies" / "tiny-with-policy.yaml"
    gate = tmp_path / "gate.yaml"
    gate.write_text(f"defaults: {{device: {REF_PHONE}, model: {model}, ctx: 100}}\nconfigurations:\n"
                    "  - name: profile-policy\n  - name: plain\n    kv_policy: none\n")
    code, doc = run_json("gate", gate)
    assert code == 0
    profile, plain = (c["check"] for c in doc["configurations"])
    # plain: 2 layers × (64 + 64) values × 2 B = 512 B/token × 100 = 51,200 B
    assert plain["memory"]["kv_bytes"] == 51_200 and plain["kv_policy"] is None
    # keep-half: 10 recent f16 (512 B) + ⌈0.5 × 90⌉ = 45 int8 tokens (2 × 128 × 1 B = 256 B) = 5,120 + 11,520
    assert profile["memory"]["kv_bytes"] == 16_640


def test_report_renders_runtime_and_policy_tables(run):
    result = run("report", GATE / "pass" / "runtime-policy.yaml")
    assert result.exit_code == 0, result.stderr
    assert "runtime: llama.cpp" in result.stdout
    assert "-c 1,000 padded to 1,024 cells" in result.stdout
    assert "KV policy half-history at 1,000 tokens" in result.stdout


# --- fit and compare --------------------------------------------------------------------------------


def test_fit_with_runtime_and_its_check_command(run_json, run):
    code, doc = run_json("fit", "-d", REF_PHONE, "-m", TINY, "--runtime", "llama.cpp")
    assert code == 0
    assert doc["max_ctx"] == 334_080  # see test_gate_runtime_and_policy_figures
    # 400,000 tokens: pad → 400,128 cells × 16,384 = 6,555,697,152 B > 5.5e9: over; the ctx change is 334,080
    result = run("fit", "-d", REF_PHONE, "-m", TINY, "--runtime", "llama.cpp", "--ctx", "400000", "-f", "csv")
    assert result.exit_code == 1
    row = next(line for line in result.stdout.splitlines() if ",ctx,334080," in line)
    assert "--ctx 334080 --runtime llama.cpp," in row  # the command column, then fit's later columns


def test_fit_with_policy_flags(run_json):
    code, doc = run_json("fit", "-d", REF_PHONE, "-m", TINY, "--kv-policy", HALF)
    assert code == 0 and doc["max_ctx"] == 671_130
    code, doc = run_json("fit", "-d", REF_PHONE, "-m", TINY, "--kv-recent-window", "256",
                         "--kv-history-ratio", "0.5", "--kv-history-bits", "16", "--kv-history-group-size", "0")
    assert code == 0 and doc["max_ctx"] == 671_130


def test_compare_with_runtime_matches_check(run_json):
    code, doc = run_json("compare", "--ctx", "1000", "-d", REF_PHONE, "-m", TINY, "--runtime", "llama.cpp")
    assert code == 0
    text = json.dumps(doc)
    assert "16777216" in text and "334080" in text


# --- plots --------------------------------------------------------------------------------------------


def _capture(monkeypatch, module: str, name: str) -> list:
    import importlib

    mod = importlib.import_module(module)
    original, seen = getattr(mod, name), []

    def spy(curves, *args, **kwargs):
        seen.append(curves)
        return original(curves, *args, **kwargs)

    monkeypatch.setattr(mod, name, spy)
    return seen


def test_plot_memory_runtime_line_is_the_runtime_cache(run, tmp_path, monkeypatch):
    from kvplan.profiles.catalog import Catalog
    from kvplan.profiles.runtime import runtime_spec
    from kvplan.caches.llamacpp import llamacpp_cache

    seen = _capture(monkeypatch, "kvplan.plots.memory", "memory_figure")
    result = run("plot", "memory", "--device", "pixel8", "--model", "gemma-3-1b", "--runtime", "llama.cpp",
                 "-o", tmp_path / "m.svg")
    assert result.exit_code == 0, result.stderr
    (curves,) = seen[0]
    cache = llamacpp_cache(runtime_spec("llama.cpp"), Catalog().model("gemma-3-1b").profile)
    assert type(curves.evaluation.cache).__name__ == "LlamaCppCache"
    for i in range(0, len(curves.ctx_tokens), 37):
        c = int(curves.ctx_tokens[i])
        assert int(curves.kv_bytes[i]) == cache.kv_bytes(c, 1), c


def test_plot_memory_policy_and_tiny_runtime_figures(run, tmp_path, monkeypatch):
    seen = _capture(monkeypatch, "kvplan.plots.memory", "memory_figure")
    for extra in (["--kv-policy", HALF], ["--runtime", "llama.cpp"]):
        result = run("plot", "memory", "-d", REF_PHONE, "-m", TINY, "--ctx", "1000", *extra, "-o", tmp_path / "m.png")
        assert result.exit_code == 0, result.stderr
    policy, llama = (curves for (curves,) in seen)
    at = {int(c): int(b) for c, b in zip(policy.ctx_tokens, policy.kv_bytes)}
    assert at[1000] == 10_289_152  # 628 tokens × 16,384 B
    at = {int(c): int(b) for c, b in zip(llama.ctx_tokens, llama.kv_bytes)}
    assert at[1000] == 16_777_216  # 1024 cells × 16,384 B
    assert at[0] == 0


@pytest.mark.parametrize("kind", ["decode", "attention", "fitmap"])
@pytest.mark.parametrize("extra", [["--runtime", "llama.cpp"], ["--runtime", "transformers"],
                                   ["--kv-policy", str(HALF)]])
def test_other_plots_take_runtime_and_policy(run, tmp_path, kind, extra):
    args = ["-m", "gemma-3-1b"] if kind == "attention" else ["-d", "pixel8", "-m", "gemma-3-1b"]
    result = run("plot", kind, *args, *extra, "-o", tmp_path / f"{kind}.png")
    assert result.exit_code == 0, result.stderr
    assert (tmp_path / f"{kind}.png").stat().st_size > 0


def test_plot_decode_runtime_rate_matches_evaluate(run, tmp_path, monkeypatch):
    from kvplan.plan import evaluate

    seen = _capture(monkeypatch, "kvplan.plots.decode", "decode_figure")
    result = run("plot", "decode", "-d", REF_PHONE, "-m", TINY, "--ctx", "1000", "--runtime", "llama.cpp",
                 "-o", tmp_path / "d.png")
    assert result.exit_code == 0, result.stderr
    (curves,) = seen[0]
    i = list(curves.ctx_tokens).index(1000)
    assert curves.decode_tokens_per_s[i] == evaluate(_scenario(runtime="llama.cpp")).decode_tokens_per_s


# --- sweep --------------------------------------------------------------------------------------------

COLUMNS = ("kv_bytes", "total_bytes", "headroom_bytes", "decode_tokens_per_s", "max_ctx", "kv_bytes_per_token")


def _evaluate_row(ev):
    return {"kv_bytes": ev.kv_bytes, "total_bytes": ev.total_bytes, "headroom_bytes": ev.headroom_bytes,
            "decode_tokens_per_s": ev.decode_tokens_per_s, "max_ctx": ev.max_ctx if ev.max_ctx is not None else -1,
            "kv_bytes_per_token": ev.kv_bytes_per_token}


@pytest.mark.parametrize("model", ["gemma-3-1b", str(TINY), str(WINDOWED)])
@pytest.mark.parametrize("extra, knobs", [
    (["--runtime", "llama.cpp"], {"runtime": "llama.cpp"}),
    (["--runtime", "llama.cpp", "--kv-unified"], {"runtime": {"name": "llama.cpp", "kv_unified": True}}),
    (["--runtime", "transformers"], {"runtime": "transformers"}),
    (["--kv-policy", str(HALF)], {"kv_policy": str(HALF)}),
])
def test_sweep_rows_equal_evaluate(run, model, extra, knobs):
    from kvplan.plan import evaluate

    result = run("sweep", "-d", REF_PHONE, "-m", model, "--ctx", "1,255,256,257,1000,4096,5000,40000",
                 "--sequences", "1,2,3", *extra, "-f", "json")
    assert result.exit_code == 0, result.stderr
    rows = json.loads(result.stdout)["rows"]
    assert len(rows) == 24
    for row in rows:
        ev = evaluate(_scenario(model, row["ctx"], sequences=row["sequences"], **knobs))
        assert {k: row[k] for k in COLUMNS} == _evaluate_row(ev), (row["ctx"], row["sequences"])


def test_sweep_llamacpp_hand_figures(run):
    result = run("sweep", "-d", REF_PHONE, "-m", TINY, "--ctx", "1000,1025", "-n", "1,2", "--runtime", "llama.cpp",
                 "-f", "csv")
    assert result.exit_code == 0, result.stderr
    header, *lines = result.stdout.splitlines()
    kv = [int(line.split(",")[header.split(",").index("kv_bytes")]) for line in lines]
    # 1000 → 1024 cells; 1025 → 1280 cells; 2 sequences: 1000 → pad(1024/2)=512 × 2 = 1024 cells,
    # 1025 → pad(1280/2 = 640) = 768 × 2 = 1536 cells; × 16,384 B each
    assert kv == [1024 * 16_384, 1280 * 16_384, 1024 * 16_384, 1536 * 16_384]


@pytest.mark.parametrize("args, message", [
    (["--runtime", "llama.cpp", "--parallel", "2", "-n", "1,2"], "--parallel and --sequences"),
    (["--runtime", "llama.cpp", "-n", "300"], "llama.cpp allows 1 to 256 sequences, got 300"),
    (["--runtime", "transformers", "--cache", "static", "--max-cache-len", "2000"],
     "ctx 4,096 exceeds --max-cache-len 2,000"),
    (["--runtime", "llama.cpp", "--kv-policy", str(HALF)], "--kv-policy and --runtime"),
    (["--ubatch", "64"], "--ubatch: llama.cpp options; they need --runtime llama.cpp"),
])
def test_sweep_runtime_usage_errors(run, args, message):
    result = run("sweep", "-d", REF_PHONE, "-m", TINY, "--ctx", "1000,4096", *args)
    assert result.exit_code == 2
    assert message in result.stderr, result.stderr


def test_sweep_parallel_is_the_sequences(run):
    result = run("sweep", "-d", REF_PHONE, "-m", TINY, "--ctx", "1025", "--runtime", "llama.cpp", "--parallel", "2",
                 "-f", "csv")
    assert result.exit_code == 0, result.stderr
    header, row = result.stdout.splitlines()
    row = dict(zip(header.split(","), row.split(",")))
    assert row["sequences"] == "2" and int(row["kv_bytes"]) == 1536 * 16_384 and row["runtime"] == "llama.cpp"
