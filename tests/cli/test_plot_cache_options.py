"""``kvplan plot KIND`` takes check's cache options (the shared CACHE group), plot decode quotes check's rates,
and every kind draws at most 12 series with a warning naming what was left out.

SVG keeps each text as a comment, so the figures a plot shows can be read back from the file."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("matplotlib")

# Llama-2-7B (library): 32 layers × 4,096 K/V values per token and layer.
# q8_0: 4,096 / 32 blocks × 34 B = 4,352 B; q4_0: 128 × 18 B = 2,304 B → 32 × (4,352 + 2,304) = 212,992 B/token.
CACHE_OPTIONS = ("--pinned-prefix", "512", "--k-type", "q8_0", "--v-type", "q4_0", "--sliding-window", "2k",
                 "--weight-type", "q4_k_m")


def test_plot_memory_takes_checks_cache_options_and_draws_checks_figures(run, run_json, tmp_path):
    path = tmp_path / "m.svg"
    result = run("plot", "memory", "-d", "pixel8", "-m", "7b", "-c", "4k", *CACHE_OPTIONS, "-o", path)
    assert result.exit_code == 0, result.stderr
    text = path.read_text()
    code, doc = run_json("check", "-d", "pixel8", "-m", "7b", "-c", "4k", *CACHE_OPTIONS)
    memory = doc["memory"]
    # weights: the Q4_K_M tensor bytes of Llama-2-7B, 4,080,263,168 B
    assert memory["weights_bytes"] == 4_080_263_168 and "weights (4.08 GB)" in text
    # pinned prefix: 512 × 212,992 = 109,051,904 B; the cache behind a 2,048-token window: 2,048 × 212,992
    assert memory["pinned_prefix_bytes"] == 109_051_904 and "pinned prefix (109.05 MB)" in text
    assert memory["kv_bytes"] == 436_207_616 and "KV cache (K q8_0 / V q4_0)" in text
    # total 4,080,263,168 + 436,207,616 + 109,051,904 = 4,625,522,688 B → 4.63 GB, headroom 1.37 GB ≥ 10 %: fit
    assert memory["total_bytes"] == 4_625_522_688 and "4k: 4.63 GB" in text and "FIT" in text
    assert code == 0


@pytest.mark.parametrize("kind", ["memory", "decode", "fitmap", "attention"])
def test_every_kind_takes_bits_groups_and_windows(run, tmp_path, kind):
    path = tmp_path / f"{kind}.svg"
    args = ["-m", "7b", "--k-bits", "8", "--v-bits", "4", "--kv-group-size", "32", "--sliding-window", "4k",
            "-n", "2"]
    if kind != "attention":
        args += ["-d", "pixel8", "--weight-bits", "4.5", "--os-reserve", "2.5 GB", "--margin", "5%",
                 "--pinned-prefix", "1k"]
    result = run("plot", kind, *args, "-o", path)
    assert result.exit_code == 0, result.stderr
    assert path.read_text().lstrip().startswith("<?xml")


def test_attention_refuses_options_that_do_not_change_it(run, tmp_path):
    result = run("plot", "attention", "-m", "7b", "--weight-bits", "4", "-o", tmp_path / "a.png")
    assert result.exit_code == 2 and "--weight-bits" in result.stderr
    result = run("plot", "memory", "-d", "pixel8", "-m", "7b", "--target-tok-s", "5", "-o", tmp_path / "m.png")
    assert result.exit_code == 2 and "--target-tok-s" in result.stderr  # a target is drawn by decode only


def test_plot_options_are_parsed_as_check_parses_them(run, tmp_path):
    path = tmp_path / "x.png"
    result = run("plot", "memory", "-d", "pixel8", "-m", "7b", "--weight-type", "q9", "-o", path)
    assert result.exit_code == 2 and result.stderr.startswith("kvplan: error: --weight-type: unknown weight format")
    result = run("plot", "decode", "-d", "pixel8", "-m", "7b", "--margin", "150%", "-o", path)
    assert result.exit_code == 2 and "--margin" in result.stderr
    result = run("plot", "decode", "-d", "pixel8", "-m", "7b", "--sliding-window", "lots", "-o", path)
    assert result.exit_code == 2 and "--sliding-window" in result.stderr
    assert not path.exists()


def test_check_and_plot_decode_agree_over_budget_and_say_which_rate_is_which(run, run_json, tmp_path):
    code, doc = run_json("check", "-d", "pixel8", "-m", "7b", "-c", "32k")
    assert code == 1  # over budget
    ram, flash = doc["decode_tokens_per_s"], doc["flash"]["streamed_decode_tokens_per_s"]
    # 7b on pixel8 at 32k: 3.37e9 + 524,288 × 32,768 = 20,549,869,184 B, 14,549,869,184 B over the 6 GB budget
    assert doc["flash"]["overflow_bytes"] == 14_549_869_184
    path = tmp_path / "d.svg"
    result = run("plot", "decode", "-d", "pixel8", "-m", "7b", "-c", "32k", "-o", path)
    assert result.exit_code == 0, result.stderr
    text = path.read_text()
    assert f"32k: {ram:.1f} tok/s from RAM" in text and "(as if it fit)" in text
    assert f"{flash:.1f} tok/s: the 14.55 GB" in text and "overflow streamed from flash" in text
    assert "check's decode rate" in text and "past the budget: overflow streamed from flash" in text
    result = run("plot", "decode", "-d", "pixel8", "-m", "7b", "-c", "32k", "--units", "iec", "--margin", "20%",
                 "-o", path)
    assert result.exit_code == 0, result.stderr
    text = path.read_text()
    assert "tok/s: the 13.55 GiB" in text  # 14,549,869,184 / 2^30 = 13.5506 GiB
    assert "tight: headroom under the 20 % margin" in text


SEVEN_MODELS = "7b,llama-3.2-1b,qwen3-0.6b,llama-3.2-3b,llama-3.1-8b,qwen2.5-0.5b,phi-3-mini-4k"


@pytest.mark.parametrize("kind, what", [("decode", "configurations"), ("memory", "panels")])
def test_more_than_twelve_series_draws_twelve_and_warns(run, tmp_path, kind, what):
    path = tmp_path / f"{kind}.svg"
    result = run("plot", kind, "-d", "pixel8,iphone-15-pro", "-m", SEVEN_MODELS, "-c", "4k", "--ctx-max", "8k",
                 "-o", path)
    assert result.exit_code == 0, result.stderr
    # 2 devices × 7 models = 14; phi-3 is drawn (pixel8's row), so check's warning about its window is printed,
    # once: llama.cpp keeps 4,096 × 32 layers × 2 (K, V) × 32 heads × 96 × 2 B = 1,610,612,736 B at 4k
    assert result.stderr.splitlines() == [
        f"kvplan: warning: plot {kind}: 14 {what} (--device × --model); drew the first 12, left out 2: give fewer "
        "--device/--model values, or split them over several plots",
        "kvplan: warning: llama.cpp ignores phi-3-mini-4k's 2,047-token sliding window (llama.cpp disables Phi-3's "
        "window on purpose, ggml-org/llama.cpp#13676): it allocates 1.61 GB of KV cache here, not 804.91 MB",
        f"kvplan: note: wrote {path}"]
    assert "(first 12 of 14 series shown, 2 left out)" in path.read_text()


def test_twelve_series_draw_without_a_warning(run, tmp_path):
    result = run("plot", "decode", "-d", "pixel8,iphone-15-pro", "-m", SEVEN_MODELS.rsplit(",", 1)[0], "-c", "4k",
                 "-o", tmp_path / "d.png")
    assert result.exit_code == 0 and "warning" not in result.stderr


def test_sweep_plot_past_twelve_series_warns_naming_the_swept_options(run, tmp_path):
    path = tmp_path / "s.png"
    result = run("sweep", "-d", "pixel8", "-m", SEVEN_MODELS, "-c", "1k,4k", "--kv-bits", "16,8", "-f", "csv",
                 "--plot", path)
    assert result.exit_code == 0, result.stderr
    # 7 models × 2 cache widths = 14 series
    assert ("kvplan: warning: sweep --plot: 14 series (--model × --kv-bits/--kv-type); drew the first 12, left out "
            "2: list fewer values, or split the sweep over several plots") in result.stderr.splitlines()
    assert len(result.stdout.splitlines()) == 1 + 28  # the CSV keeps every row
    result = run("sweep", "-d", "pixel8", "-m", "7b", "-c", "1k,4k", "--kv-bits", "16,8", "--plot", path)
    assert "warning" not in result.stderr


def test_sweep_weight_types_are_rows_priced_as_check(run, run_json, tmp_path):
    result = run("sweep", "-d", "pixel8", "-m", "7b", "-c", "4k", "--weight-bits", "4", "--weight-type",
                 "q4_k_m,Q8_0", "-f", "json")
    assert result.exit_code == 0, result.stderr
    rows = json.loads(result.stdout)["rows"]
    # bits first, then types in the order given; 4-bit: 6.74e9 × 4 / 8 = 3,370,000,000 B
    assert [r["weights_bytes"] for r in rows[:1]] == [3_370_000_000]
    for row, name in zip(rows[1:], ("q4_k_m", "q8_0")):
        _, doc = run_json("check", "-d", "pixel8", "-m", "7b", "-c", "4k", "--weight-type", name)
        assert row["weights_bytes"] == doc["memory"]["weights_bytes"]
        assert row["total_bytes"] == doc["memory"]["total_bytes"]
        assert row["decode_tokens_per_s"] == doc["decode_tokens_per_s"]
    assert rows[1]["weights_bytes"] == 4_080_263_168  # Llama-2-7B Q4_K_M tensor bytes
    result = run("sweep", "-d", "pixel8", "-m", "7b", "-c", "4k", "--weight-type", "q4_k_m,q9")
    assert result.exit_code == 2 and result.stderr.startswith("kvplan: error: --weight-type: unknown weight format")
    result = run("sweep", "-d", "pixel8", "-m", "7b", "-c", "4k", "--weight-type", "q4_k_m,")
    assert result.exit_code == 2 and "--weight-type: empty value" in result.stderr


def test_sweep_plot_of_weight_types_labels_the_effective_bits(run, tmp_path):
    path = tmp_path / "w.svg"
    result = run("sweep", "-d", "pixel8", "-m", "7b", "-c", "1k..8k:1k", "--weight-type", "q4_k_m,q8_0",
                 "--plot", path)
    assert result.exit_code == 0, result.stderr
    text = path.read_text()
    # the effective bits per weight check prints ("q4_k_m, 4.84 bits/weight"; q8_0: 34 B per 32 weights = 8.5,
    # plus the F32 norms), to 3 digits
    assert "4.84-bit weights" in text and "8.5-bit weights" in text
