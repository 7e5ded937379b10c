"""The gate's spec, thresholds and caching, with figures derived by hand from ref-phone × ref-7b.

ref-phone: 8 GB RAM, 2 GB reserve → budget 6,000,000,000 B; 50 GB/s; flash 2 GB/s.
ref-7b: 1,750,000,000 B of weights (all read each step), 2 · 32 layers · 32 heads · 128 · 2 B = 524,288 B/token.
At 4,096 tokens: kv = 4,096 · 524,288 = 2,147,483,648 B; total = 1,750,000,000 + 2,147,483,648 = 3,897,483,648 B;
headroom = 6,000,000,000 − 3,897,483,648 = 2,102,516,352 B; decode = 50e9 / 3,897,483,648 = 12.8288 tok/s;
swap-in = 2,147,483,648 / 2e9 = 1.073741824 s; max ctx = floor(4,250,000,000 / 524,288) = 8,106 tokens.
"""

from __future__ import annotations

import dataclasses

import pytest

from kvplan.plan import Knobs
from kvplan.errors import ProfileError
from kvplan.gate import spec as gate_spec
from kvplan.gate.checker import check_gate
from kvplan.gate.spec import KNOB_ALIASES, KnobSpec, load_gate, to_knobs
from tests.conftest import REF_7B, REF_PHONE

HEAD = f"defaults:\n  device: {REF_PHONE}\n  model: {REF_7B}\n  ctx: 4k\nconfigurations:\n"


def gate(tmp_path, body: str, name: str = "gate.yaml"):
    path = tmp_path / name
    path.write_text(HEAD + body)
    return check_gate(load_gate(str(path)))


def thresholds(tmp_path, lines: str) -> dict:
    result = gate(tmp_path, "  - name: c\n" + "".join(f"    {line}\n" for line in lines.split(";")))
    return {t.name: t for t in result.configurations[0].thresholds}


def test_every_knob_key_fills_a_knobs_field():
    knob_fields = {f.name for f in dataclasses.fields(Knobs)}
    for name in KnobSpec.model_fields:
        assert name in knob_fields, name  # a gate file's key is the knob's name
    assert set(KNOB_ALIASES.values()) <= knob_fields  # an older key names a knob too


def test_to_knobs_maps_yaml_names():
    k = to_knobs({"pinned_prefix": 512, "os_reserve": 3_000_000_000, "margin": 0.2, "kv_bits": 8, "min_max_ctx": 1})
    assert (k.pinned_prefix_tokens, k.os_reserve_bytes, k.margin_fraction, k.kv_bits) == (512, 3_000_000_000, 0.2, 8)
    k = to_knobs({"pinned_prefix_tokens": 256, "os_reserve_bytes": 2_000_000_000, "margin_fraction": 0.3})
    assert (k.pinned_prefix_tokens, k.os_reserve_bytes, k.margin_fraction) == (256, 2_000_000_000, 0.3)


def test_figures_at_4k(tmp_path):
    (c,) = gate(tmp_path, "  - name: c\n").configurations
    ev = c.evaluation
    # 1,750,000,000 + 4,096 · 524,288 = 3,897,483,648; 6e9 − that = 2,102,516,352
    assert ev.total_bytes == 3_897_483_648 and ev.headroom_bytes == 2_102_516_352
    assert ev.decode_tokens_per_s == pytest.approx(12.8288, abs=1e-4)  # 50e9 / 3,897,483,648
    assert ev.max_ctx == 8_106  # ⌊(6e9 − 1.75e9) / 524,288⌋ = ⌊8,106.2⌋


def test_must_fit_is_on_by_default_and_is_headroom_at_least_zero(tmp_path):
    t = thresholds(tmp_path, "ctx: 8k")
    # 8,192 · 524,288 = 4,294,967,296; total 6,044,967,296 > 6e9 → 44,967,296 B over
    assert t["must_fit"].passed is False
    assert (t["must_fit"].limit, t["must_fit"].actual, t["must_fit"].miss) == (0, -44_967_296, 44_967_296)
    assert "must_fit" not in thresholds(tmp_path, "ctx: 8k;must_fit: false")


def test_min_headroom_absolute_and_percent(tmp_path):
    t = thresholds(tmp_path, "min_headroom: 2.2 GB")["min_headroom"]
    # 2,200,000,000 − 2,102,516,352 = 97,483,648 short
    assert (t.passed, t.limit, t.miss, t.limit_fraction) == (False, 2_200_000_000, 97_483_648, None)
    t = thresholds(tmp_path, "min_headroom: 35%")["min_headroom"]
    # 35 % of 6e9 = 2,100,000,000 ≤ 2,102,516,352 → passes
    assert (t.passed, t.limit, t.limit_fraction, t.miss) == (True, 2_100_000_000, 0.35, None)
    t = thresholds(tmp_path, "min_headroom: 36%")["min_headroom"]
    # 36 % of 6e9 = 2,160,000,000; short by 57,483,648
    assert (t.passed, t.miss) == (False, 57_483_648)


def test_min_decode(tmp_path):
    assert thresholds(tmp_path, "min_decode_tok_s: 12.8")["min_decode_tok_s"].passed
    t = thresholds(tmp_path, "min_decode_tok_s: 13")["min_decode_tok_s"]
    # 13 − 12.82879 = 0.17121
    assert not t.passed and t.miss == pytest.approx(13 - 50e9 / 3_897_483_648)
    assert t.miss == pytest.approx(0.1712, abs=1e-4)


def test_max_total_and_max_weights(tmp_path):
    t = thresholds(tmp_path, "max_total: 3.9 GB;max_weights: 1.75 GB")
    assert t["max_total"].passed and t["max_weights"].passed  # 3,897,483,648 ≤ 3.9e9; 1.75e9 ≤ 1.75e9
    t = thresholds(tmp_path, "max_total: 3.8 GB;max_weights: 1.7 GB")
    assert t["max_total"].miss == 97_483_648  # 3,897,483,648 − 3,800,000,000
    assert t["max_weights"].miss == 50_000_000  # 1,750,000,000 − 1,700,000,000


def test_max_swap_in(tmp_path):
    assert thresholds(tmp_path, "max_swap_in_s: 1.1")["max_swap_in_s"].passed
    t = thresholds(tmp_path, "max_swap_in_s: 1")["max_swap_in_s"]
    # 2,147,483,648 / 2e9 = 1.073741824 s; over by 0.073741824 s
    assert t.actual == pytest.approx(1.073741824) and t.miss == pytest.approx(0.073741824)


def test_min_max_ctx(tmp_path):
    assert thresholds(tmp_path, "min_max_ctx: 8106")["min_max_ctx"].passed
    t = thresholds(tmp_path, "min_max_ctx: 8k")["min_max_ctx"]
    assert (t.limit, t.actual, t.miss) == (8192, 8106, 86)  # 8,192 − 8,106


def test_knobs_change_the_figures(tmp_path):
    # kv_bits 8: 262,144 B/token; at 8k: 2,147,483,648 B → total 3,897,483,648 B, as fp16 at 4k.
    (c,) = gate(tmp_path, "  - name: c\n    ctx: 8k\n    kv_bits: 8\n").configurations
    assert c.evaluation.total_bytes == 3_897_483_648 and c.passed
    # os_reserve 3 GB → budget 5e9; pinned_prefix 1k → 1,024 · 524,288 = 536,870,912 B more
    (c,) = gate(tmp_path, "  - name: c\n    os_reserve: 3 GB\n    pinned_prefix: 1k\n").configurations
    assert c.evaluation.budget_bytes == 5_000_000_000
    assert c.evaluation.total_bytes == 3_897_483_648 + 536_870_912


def test_per_configuration_overrides_and_null_clears_a_default(tmp_path):
    body = ("  - name: a\n  - name: b\n    min_decode_tok_s: null\n  - name: c\n    min_decode_tok_s: 1\n")
    (tmp_path / "g.yaml").write_text(HEAD.replace("ctx: 4k", "ctx: 4k\n  min_decode_tok_s: 13") + body)
    a, b, c = check_gate(load_gate(str(tmp_path / "g.yaml"))).configurations
    assert [t.name for t in a.thresholds] == ["must_fit", "min_decode_tok_s"] and not a.passed
    assert [t.name for t in b.thresholds] == ["must_fit"] and b.passed
    assert c.passed


def test_every_configuration_is_evaluated(tmp_path):
    result = gate(tmp_path, "  - name: over\n    ctx: 8k\n  - name: fine\n  - name: over2\n    ctx: 16k\n")
    assert [c.passed for c in result.configurations] == [False, True, False]
    assert [c.name for c in result.failed] == ["over", "over2"]


def test_each_profile_is_loaded_once_per_run(tmp_path, monkeypatch):
    calls = []
    real = gate_spec.Catalog.device

    def counting(self, ref):
        calls.append(ref)
        return real(self, ref)

    monkeypatch.setattr(gate_spec.Catalog, "device", counting)
    body = "".join(f"  - name: c{i}\n    ctx: {i + 1}k\n" for i in range(100))
    result = gate(tmp_path, body)
    assert len(result.configurations) == 100
    assert len(calls) == 1


def test_all_problems_at_once(tmp_path):
    path = tmp_path / "g.yaml"
    path.write_text(HEAD + "  - name: a\n    ctx: lots\n  - name: b\n    device: nowhere-phone\n    sequences: 0\n")
    with pytest.raises(ProfileError) as info:
        load_gate(str(path))
    text = str(info.value)
    assert f"{path}:7: configurations.0.ctx: expected a token count like '8k'" in text
    assert f"{path}:9: configurations.1.device: unknown device 'nowhere-phone'" in text
    assert f"{path}:10: configurations.1.sequences:" in text
    assert len(info.value.problems) == 3
