"""A draft model for speculative decoding (kvplan.plan.draft, core.speculative_at): its parts and its speed, from
hand arithmetic.

Profiles: llama-3.1-8b (8,030,261,248 params, 32 layers × 8 KV heads × 128, untied 128,256 × 4,096 embeddings,
4-bit default: 131,072 B/token of f16 cache) with the draft llama-3.2-1b (1,235,814,400 params, 16 layers × 8 KV
heads × 64, tied embeddings, 4-bit default: 2 · 16 · 8 · 64 · 2 = 32,768 B/token of f16 cache), both of
vocabulary 128,256, on the contract's ref-phone (6e9 B budget, 50 GB/s at 100 %, no latency, no overhead).
"""

from __future__ import annotations

import json

import pytest

from kvplan.errors import FieldError
from kvplan.plan import Scenario, evaluate
from kvplan.profiles.catalog import Catalog
from tests.conftest import REF_PHONE

TARGET_WEIGHTS = 4_015_130_624  # 8,030,261,248 · 4 / 8
TARGET_READ = 3_752_462_336  # less the untied input embeddings 128,256 · 4,096 · 4 / 8 = 262,668,288
DRAFT_WEIGHTS = 617_907_200  # 1,235,814,400 · 4 / 8; tied embeddings: a step reads all of it


def _profiles(draft="llama-3.2-1b"):
    cat = Catalog()
    return cat.device(str(REF_PHONE)).profile, cat.model("llama-3.1-8b").profile, cat.model(draft).profile


def test_draft_parts_in_the_total_and_max_ctx():
    device, model, draft = _profiles()
    ev = evaluate(Scenario(device, model, 4096, draft=draft))
    assert [p.key for p in ev.parts] == ["draft_weights", "draft_kv"]
    assert ev.part("draft_weights").bytes == DRAFT_WEIGHTS
    assert ev.part("draft_kv").bytes == 4096 * 32_768  # 134,217,728
    # plain decode reads none of the draft's bytes: the target's step alone
    assert ev.bytes_per_step == TARGET_READ + 4096 * 131_072
    # 4,015,130,624 + 536,870,912 + 617,907,200 + 134,217,728
    assert ev.total_bytes == 5_304_126_464
    # ⌊(6e9 − 4,015,130,624 − 617,907,200) / (131,072 + 32,768)⌋ = ⌊1,366,962,176 / 163,840⌋ = 8,343
    assert ev.max_ctx == 8343
    assert ev.speculative is None  # no acceptance rate, no speed figure


def test_speculative_speed_by_hand():
    device, model, draft = _profiles()
    ev = evaluate(Scenario(device, model, 4096, draft=draft, acceptance_rate=0.7))
    spec = ev.speculative
    # k = 3 (llama.cpp build 11434's default n_max); E = (1 − 0.7^4) / (1 − 0.7) = 0.7599 / 0.3 = 2.533
    assert spec.draft_tokens == 3
    assert spec.expected_tokens_per_step == pytest.approx(2.533, rel=1e-12)
    # a draft step reads 617,907,200 + 134,217,728 = 752,124,928 B: 0.01504249856 s at 50 GB/s
    assert spec.draft_bytes_per_step == 752_124_928
    assert spec.draft_step_s == pytest.approx(0.01504249856, rel=1e-12)
    # verification = one plain step: (3,752,462,336 + 536,870,912) / 50e9 = 0.08578666496 s
    assert spec.verify_step_s == pytest.approx(0.08578666496, rel=1e-12)
    # 2.533 / (3 · 0.01504249856 + 0.08578666496) = 2.533 / 0.13091416064 = 19.3486… tok/s, 1.660× 11.657
    assert spec.tokens_per_s == pytest.approx(2.533 / 0.13091416064, rel=1e-12)
    assert spec.speedup == pytest.approx(2.533 / 0.13091416064 * 0.08578666496, rel=1e-12)
    assert not [w for w in ev.warnings if w.kind == "speculation_slower"]


def test_speculation_slower_is_a_warning():
    device, model, draft = _profiles("llama-3.2-3b")
    ev = evaluate(Scenario(device, model, 4096, draft=draft, acceptance_rate=0.2, draft_max_tokens=8))
    assert ev.speculative.speedup < 1
    assert [w.kind for w in ev.warnings if w.kind == "speculation_slower"] == ["speculation_slower"]


def test_draft_kv_under_llamacpp_takes_the_padded_ctx_and_its_own_type():
    device, model, draft = _profiles()
    # -c 5000 is padded to 5,120 cells (256 per stream): the draft's context is the target's n_ctx
    ev = evaluate(Scenario(device, model, 5000, draft=draft, runtime="llama.cpp"))
    assert ev.part("draft_kv").bytes == 5120 * 32_768  # 167,772,160
    assert ev.part("draft_kv").facts["ctx_tokens"] == 5120
    assert [p.key for p in ev.parts] == ["draft_weights", "draft_kv", "draft_buffers", "draft_verify_outputs"]
    # the target's logits for 1 + 3 verified positions instead of 1: 3 · 128,256 · 4 = 1,539,072 B more
    assert ev.part("draft_verify_outputs").bytes == 1_539_072
    # the target's q8_0 cache leaves the draft at f16 (-ctkd/-ctvd default F16)
    q8 = evaluate(Scenario(device, model, 8192, draft=draft, runtime="llama.cpp", k_format="q8_0", v_format="q8_0"))
    assert q8.part("draft_kv").bytes == 8192 * 32_768  # 268,435,456
    # -ctkd q8_0: 34 B per 32 values; a cell of one layer holds 8 · 64 = 512 K values = 16 blocks = 544 B, and as
    # many V: 1,088 B × 16 layers × 8,192 cells = 142,606,336 B
    ctkd = evaluate(Scenario(device, model, 8192, draft=draft, runtime="llama.cpp", draft_kv_type="q8_0"))
    assert ctkd.part("draft_kv").bytes == 142_606_336
    # the max-context search counts the draft's cache and buffers: the last -c that fits, and one more does not
    from kvplan.plan import core

    b = ev.basis
    import numpy as np

    at = core.memory_at(b, np.array([ev.max_ctx, ev.max_ctx + 1]), 1)
    assert int(at.headroom_bytes[0]) >= 0 > int(at.headroom_bytes[1])


def test_vocabulary_mismatch_is_refused():
    device, model, _ = _profiles()
    qwen = Catalog().model("qwen2.5-0.5b").profile  # 151,936 tokens against 128,256: 23,680 apart (> 128)
    with pytest.raises(FieldError, match="differs by more than 128"):
        Scenario(device, model, 4096, draft=qwen)


@pytest.mark.parametrize("knobs, field", [
    (dict(acceptance_rate=0.7), "acceptance_rate"), (dict(draft_kv_type="q8_0"), "draft_kv_type")])
def test_draft_knobs_without_a_draft_are_refused(knobs, field):
    device, model, _ = _profiles()
    with pytest.raises(FieldError, match="give the draft too"):
        Scenario(device, model, 4096, **knobs)


@pytest.mark.parametrize("rate", [0, 1, 1.5, -0.1])
def test_acceptance_rate_is_in_the_open_unit_interval(rate):
    device, model, draft = _profiles()
    with pytest.raises(FieldError, match="above 0 and below 1"):
        Scenario(device, model, 4096, draft=draft, acceptance_rate=rate)


def test_check_cli_rows_json_and_errors(run):
    args = ["check", "--device", str(REF_PHONE), "--model", "llama-3.1-8b", "--ctx", "4096", "--draft",
            "llama-3.2-1b", "--acceptance", "0.7"]
    out = run(*args).stdout
    assert "draft model llama-3.2-1b: weights (4-bit)" in out and "617,907,200" in out
    assert "speculative decode" in out and "1.66× plain decode" in out
    doc = json.loads(run(*args, "--format", "json").stdout)
    assert doc["memory"]["parts"]["draft_kv"]["bytes"] == 134_217_728
    assert doc["speculative"]["draft"] == "llama-3.2-1b" and doc["speculative"]["draft_max_tokens"] == 3
    assert doc["speculative"]["expected_tokens_per_step"] == pytest.approx(2.533)
    bad = run("check", "--device", str(REF_PHONE), "--model", "llama-3.1-8b", "-c", "4k", "--acceptance", "0.7")
    assert bad.exit_code == 2 and "--acceptance without --draft" in bad.stderr
    bad = run("check", "--device", str(REF_PHONE), "--model", "llama-3.1-8b", "-c", "4k", "--draft", "qwen2.5-0.5b")
    assert bad.exit_code == 2 and "--draft" in bad.stderr and "128" in bad.stderr


def test_fit_suggests_dropping_the_draft(run):
    # at 16k: 4,015,130,624 + 16,384 · 163,840 + 617,907,200 = 7,317,463,040 B, over 6e9; without the draft
    # 4,015,130,624 + 16,384 · 131,072 = 6,162,614,272, still over: dropping it is listed, not a fit
    doc = json.loads(run("check", "--device", str(REF_PHONE), "--model", "llama-3.1-8b", "--ctx", "8k", "--draft",
                         "llama-3.2-3b", "--format", "json").stdout)
    kinds = [c["change"] for c in doc["changes_to_fit"]]
    assert "draft" in kinds


def test_gate_file_takes_the_draft_keys(run, tmp_path):
    path = tmp_path / "gate.yaml"
    path.write_text(f"""configurations:
  - name: spec
    device: {REF_PHONE}
    model: llama-3.1-8b
    ctx: 4k
    draft: llama-3.2-1b
    acceptance_rate: 70%
    draft_max_tokens: 3
""")
    result = run("gate", str(path), "--format", "json")
    doc = json.loads(result.stdout)
    check = doc["configurations"][0]["check"]
    assert check["memory"]["parts"]["draft_weights"]["bytes"] == DRAFT_WEIGHTS
    assert check["memory"]["total_bytes"] == 5_304_126_464  # as test_draft_parts_in_the_total_and_max_ctx
    assert check["speculative"]["acceptance_rate"] == 0.7
    table = run("gate", str(path)).stdout
    assert "parts" in table


def test_sweep_rows_equal_the_evaluation_with_a_draft_under_llamacpp():
    import numpy as np

    from kvplan import sweep

    device, model, draft = _profiles()
    base = Scenario(device, model, 4096, draft=draft, runtime="llama.cpp")
    ctx, seq = sweep.grid([1, 4096, 5000, 8192], [1])
    cols = sweep.evaluate_group(base, ctx, seq)
    for i, c in enumerate(ctx):
        ev = evaluate(base.with_changes(ctx=int(c)))
        assert int(cols.total_bytes[i]) == ev.total_bytes
        assert int(cols.parts_bytes[i]) == ev.parts_bytes
        assert int(cols.max_ctx[i]) == ev.max_ctx
    assert np.all(cols.parts_bytes > 0)


def test_sweep_takes_a_draft(run):
    out = run("sweep", "--device", str(REF_PHONE), "--model", "llama-3.1-8b", "--ctx", "4096,8192", "--draft",
              "llama-3.2-1b", "--format", "csv").stdout
    header, *rows = out.splitlines()
    cols = [dict(zip(header.split(","), r.split(","))) for r in rows]
    # 617,907,200 + 4,096 · 32,768 = 752,124,928; at 8,192: 617,907,200 + 268,435,456 = 886,342,656
    assert [c["parts_bytes"] for c in cols] == ["752124928", "886342656"]
    assert cols[0]["total_bytes"] == "5304126464"


def test_fit_drops_a_draft_not_smaller_than_another_model():
    from kvplan.advice import judge

    device, model, draft = _profiles("llama-3.2-3b")
    cat = Catalog()
    ev = evaluate(Scenario(device, model, 8192, draft=draft))
    advice = judge(ev, [cat.model("llama-3.2-3b").profile, cat.model("llama-3.2-1b").profile])
    drafts = {c.value: getattr(c.evaluation.scenario.draft, "name", None) for c in advice.other_models}
    # a 3B draft beside a 3B or a 1B model is dropped; the target's own changes keep it, except "draft" itself
    assert drafts == {"llama-3.2-3b": None, "llama-3.2-1b": None}
    kept = {c.kind: getattr(c.evaluation.scenario.draft, "name", None) for c in advice.keep_model}
    assert kept.get("draft", "absent") is None and kept.get("ctx") == "llama-3.2-3b"
