"""Axis and mark labels at the far end of the range: a 2^40-token context is 1T, not 1.04858e+06M; petabyte-scale
sizes keep their digit groups; a decode plot's two labels at near-equal rates do not print over each other."""

from __future__ import annotations

import pytest

from kvplan.plots.axes import ctx_label, size_label


@pytest.mark.parametrize("tokens, text", [(500, "500"), (1536, "1.5k"), (8192, "8k"), (2**20, "1M"), (2**39, "512G"),
                                          (2**40, "1T"), (5 * 2**38, "1.25T"), (3 * 2**40, "3T")])
def test_context_ticks(tokens, text):
    assert ctx_label(tokens) == text


def test_large_sizes_are_grouped():
    # 2^40 tokens × 524,288 B − 6e9 B of budget = 576,460,752,303,423,488 − ... : six digits of TB, grouped
    assert size_label(576_460_752_303_423_488 - 6 * 10**9 + 3_370_000_000) == "576,460.75 TB"


def test_near_equal_rates_put_the_labels_apart(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    from kvplan import curves as data
    from kvplan.plan import Scenario
    from kvplan.plots.decode import decode_figure
    from kvplan.profiles.catalog import Catalog

    scenario = Scenario(Catalog().device("pixel8").profile, Catalog().model("7b").profile, 2**40)
    figure = decode_figure([data.decode_curves(scenario)])
    figure.canvas.draw()
    boxes = {t.get_gid(): t.get_window_extent() for ax in figure.axes for t in ax.texts
             if t.get_gid() in ("ctx_label:0", "ctx_flash_label:0")}
    assert len(boxes) == 2 and not boxes["ctx_label:0"].overlaps(boxes["ctx_flash_label:0"])


def test_fitmap_colourbar_ticks_are_round_in_iec_units():
    import matplotlib

    matplotlib.use("Agg")
    from kvplan import curves as data
    from kvplan.plan import Scenario
    from kvplan.plots.fitmap import fitmap_figure
    from kvplan.profiles.catalog import Catalog

    catalog = Catalog()
    devices = [catalog.device(d).profile for d in ("pixel8", "galaxy-s24-ultra")]
    models = [catalog.model(m).profile for m in ("gemma-3-4b", "deepseek-v2-lite")]
    grid = [[Scenario(d, m, 16_384) for m in models] for d in devices]
    figure = fitmap_figure(data.fit_map(grid, 16_384), "iec")
    figure.canvas.draw()
    bar = figure.axes[-1]
    labels = [t.get_text().replace("−", "-") for t in bar.get_yticklabels() if t.get_text()]
    # whole GiB (or halves), never 1.86265 (2e9 B read in GiB)
    assert labels and all(float(v) * 2 == int(float(v) * 2) for v in labels), labels


def test_sweep_plot_titles_name_the_runtime_and_policy():
    from pathlib import Path

    from kvplan.plots.sweep import _cache_note
    from kvplan.plan import Scenario
    from kvplan.profiles.catalog import Catalog
    from kvplan.profiles.policy import load_policy_file
    from kvplan.profiles.runtime import runtime_spec
    from kvplan.sweep import evaluate_group as sweep_group

    device, model = Catalog().device("pixel8").profile, Catalog().model("llama-3.1-8b").profile
    policy = load_policy_file(Path(__file__).resolve().parents[2] / "examples" / "kv-policy.yaml")
    with_policy = sweep_group(Scenario(device, model, 1, kv_policy=policy), [1024, 2048], [1, 1])
    assert _cache_note(with_policy) == ", KV policy window4k-fp16-history20-k4v3"
    llama = sweep_group(Scenario(device, model, 1, runtime=runtime_spec("llama.cpp")), [1024], [1])
    assert _cache_note(llama) == ", runtime llama.cpp"
    assert _cache_note(sweep_group(Scenario(device, model, 1), [1024], [1])) == ""
