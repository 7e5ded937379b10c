"""kvplan fit (and check's "what would make it fit") judge the changes: the model kept first, another model
apart, caveats on a context past the trained length and on a window the model was not trained with."""

from __future__ import annotations

import csv
import io

import pytest

from tests.conftest import REF_PHONE

# The reference 7B shape (524,288 B/token at fp16, 1.75 GB of weights) with Llama-2's trained context and no
# window, and a smaller model of the same family (16 layers × 16 KV heads × 128 × 2 (K,V) × 2 B = 131,072 B/token).
BIG = """name: big-7b
family: fam
params: 7e9
layers: 32
attention_heads: 32
kv_heads: 32
head_dim: 128
weights: 1.75 GB
weight_bits: 4
kv_bits: 16
max_context: 4096
"""
SMALL = """name: small-1b
family: fam
params: 1e9
layers: 16
attention_heads: 16
kv_heads: 16
head_dim: 128
weights: 500 MB
weight_bits: 4
kv_bits: 16
max_context: 16384
"""


@pytest.fixture
def models(tmp_path):
    (tmp_path / "big-7b.yaml").write_text(BIG)
    (tmp_path / "small-1b.yaml").write_text(SMALL)
    return tmp_path


def _fit(run_json, models, *extra):
    return run_json("fit", "-d", REF_PHONE, "-m", "big-7b", "-c", "8k", "--profiles-dir", models, *extra)


def test_changes_keeping_the_model_come_first_ranked_by_caveats_then_headroom_least_lossy_first(run_json, models):
    code, doc = _fit(run_json, models)
    # 1.75e9 + 8,192 × 524,288 (4,294,967,296) = 6,044,967,296 > the 6e9 budget
    assert code == 1 and doc["memory"]["total_bytes"] == 6_044_967_296
    ranked = [(c["change"], c["value"], c["caveats"], c["headroom_bytes"]) for c in doc["changes_to_fit"]]
    assert ranked == [
        # the trained 4,096: 6e9 − (1.75e9 + 4,096 × 524,288) = 2,102,516,352, no caveat
        ("ctx", 4096, [], 2_102_516_352),
        # 8,192 tokens past the trained 4,096 (one caveat each). Both KV widths fit: the one that gives up less
        # comes first though the other leaves more headroom. KV at 8 bits: 8,192 × 262,144 = 2,147,483,648
        ("kv_bits", 8, ["ctx_beyond_trained"], 2_102_516_352),
        # KV at 4 bits: 8,192 × 131,072 = 1,073,741,824
        ("kv_bits", 4, ["ctx_beyond_trained"], 6_000_000_000 - 1_750_000_000 - 1_073_741_824),
        # the largest that fits, ⌊4.25e9 / 524,288⌋ = 8,106: 6e9 − 1.75e9 − 4,249,878,528 = 121,472 (tight)
        ("ctx", 8106, ["ctx_beyond_trained"], 121_472),
        # a 4,096 window on every layer: as the trained cut, but past the trained context and never trained
        ("sliding_window", 4096, ["ctx_beyond_trained", "window_not_trained"], 2_102_516_352),
    ]
    assert all(c["change"] != "model" for c in doc["changes_to_fit"])


def test_a_smaller_model_is_a_section_of_its_own(run_json, run, models):
    _, doc = _fit(run_json, models)
    (other,) = doc["other_models_that_fit"]
    # 0.5e9 + 8,192 × 131,072 (1,073,741,824) = 1,573,741,824 → headroom 4,426,258,176; 8,192 ≤ its 16,384
    assert (other["change"], other["value"], other["headroom_bytes"], other["caveats"]) == \
        ("model", "small-1b", 4_426_258_176, [])
    assert other["check_command"][:6] == ["kvplan", "check", "--device", str(REF_PHONE), "--model", "small-1b"]
    table = run("fit", "-d", REF_PHONE, "-m", "big-7b", "-c", "8k", "--profiles-dir", models).stdout
    keep, _, apart = table.partition("a different model that fits")
    # the smaller model has more headroom than any change, yet is not ranked with them
    assert "model small-1b" not in keep and "small-1b" in apart
    assert "ranked changes keeping big-7b" in keep


def test_caveats_are_in_the_table_with_their_reason(run, models):
    out = run("fit", "-d", REF_PHONE, "-m", "big-7b", "-c", "8k", "--profiles-dir", models).stdout
    assert "context 4,096 tokens (the trained length)" in out
    assert "past trained 4,096; window not trained" in out
    assert "window not trained: big-7b was not trained with a sliding window" in out
    assert "past trained 4,096: big-7b was trained to 4,096 tokens" in out


def test_csv_has_the_configuration_as_given_then_the_sections(run, models):
    result = run("fit", "-d", REF_PHONE, "-m", "big-7b", "-c", "8k", "--profiles-dir", models, "-f", "csv")
    assert result.exit_code == 1
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert (rows[0]["rank"], rows[0]["change"], rows[0]["section"], rows[0]["headroom_bytes"]) == \
        ("0", "none", "as_given", "-44967296")
    assert [r["section"] for r in rows[1:]] == ["keep_model"] * 5 + ["other_model"]
    assert rows[-1]["rank"] == "1" and rows[-1]["value"] == "small-1b"
    assert rows[5]["caveats"] == "ctx_beyond_trained;window_not_trained"


def test_csv_without_ctx_is_refused_with_the_reason(run):
    result = run("fit", "-d", REF_PHONE, "-m", "7b", "-f", "csv")
    assert result.exit_code == 2
    assert "--format csv lists the configuration at --ctx" in result.stderr and "give --ctx" in result.stderr


def test_no_window_is_offered_that_widens_a_models_own(run_json):
    # gemma-3-1b: 5 local (512-token window) : 1 global. A window on every layer replaces the local layers' 512
    # tokens too, so every step offered (1k … 8k) would widen them: none is suggested
    code, doc = run_json("fit", "-d", "pixel8", "-m", "gemma-3-1b", "-c", "32k", "-n", "64")
    assert code == 1 and not [c for c in doc["changes_to_fit"] if c["change"] == "sliding_window"]


def test_llama31_8b_keeps_the_model_first(run_json):
    """The case from the issue: a 1B model was "the best change" for an 8B one."""
    _, doc = run_json("fit", "-d", "pixel8", "-m", "llama-3.1-8b", "-c", "32k")
    assert doc["changes_to_fit"][0]["change"] == "kv_bits"
    assert {c["value"] for c in doc["other_models_that_fit"]} == {"llama-3.2-1b", "llama-3.2-3b"}
    (window,) = [c for c in doc["changes_to_fit"] if c["change"] == "sliding_window"]
    assert window["caveats"] == ["window_not_trained"] and window is doc["changes_to_fit"][-1]


def test_check_what_would_make_it_fit_carries_the_caveats(run, run_json, models):
    code, doc = run_json("check", "-d", REF_PHONE, "-m", "big-7b", "-c", "8k", "--profiles-dir", models)
    assert code == 1 and doc["changes_to_fit"][0]["value"] == 4096 and doc["changes_to_fit"][0]["caveats"] == []
    assert all(c["change"] != "model" for c in doc["changes_to_fit"])
    out = run("check", "-d", REF_PHONE, "-m", "big-7b", "-c", "8k", "--profiles-dir", models).stdout
    table = out[out.index("what would make it fit"):]
    assert "caveat" in table and "window not trained" in table
