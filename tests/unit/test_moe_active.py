"""Mixture of experts: decode reads the active parameters' weights, memory holds all of them."""

from __future__ import annotations

import json

import pytest

from kvplan.profiles.catalog import Catalog
from kvplan.errors import ProfileError
from kvplan.importers.hf import profile_from_hf_config
from kvplan.profiles.loading import load_model_file
from kvplan.plan import Scenario, evaluate, weights_of
from kvplan.profiles.spec import Model
from tests.conftest import DATA

COMPUTE_PHONE = str(DATA / "planning" / "compute-phone.yaml")


def _model(**fields) -> Model:
    base = {"name": "x", "params": "7e9", "layers": 32, "attention_heads": 32, "kv_heads": 32, "head_dim": 128,
            "weight_bits": 4}
    return Model.model_validate({**base, **fields})


def _dsv2():
    return Catalog().model("deepseek-v2-lite").profile


def test_deepseek_v2_lite_reads_the_active_weights_and_holds_all_of_them():
    weights, read, bits = weights_of(_dsv2(), None)
    assert bits == 4
    # resident: every expert, 15.7e9 · 4 / 8 = 7,850,000,000
    assert weights == 7_850_000_000
    # read per step: 2.66e9 active · 4 / 8 = 1,330,000,000, less the untied input-embedding table
    # 102,400 · 2,048 · 4 / 8 = 104,857,600 → 1,225,142,400 (it was 7,850,000,000 − 104,857,600 = 7,745,142,400)
    assert read == 1_330_000_000 - 104_857_600 == 1_225_142_400


def test_deepseek_v2_lite_decode_on_pixel8_at_4k():
    cat = Catalog()
    device = cat.device("pixel8").profile
    # the figures the arithmetic below uses (a changed device profile must change this test on purpose)
    assert (device.memory_bandwidth, device.bandwidth_efficiency, device.decode_latency) == (68.3e9, 0.5, 0.00237)
    ev = evaluate(Scenario(device, _dsv2(), 4096))
    # MLA cache: 27 layers · (512 + 64) · 2 bytes = 31,104 B/token; · 4,096 = 127,401,984
    assert ev.kv_bytes == 127_401_984
    # step: 1,225,142,400 + 127,401,984 = 1,352,544,384 bytes
    assert ev.weights_read_bytes == 1_225_142_400
    assert ev.bytes_per_step == 1_352_544_384
    # 1 / (1,352,544,384 / (68.3e9 · 0.5) + 2.37 ms) = 34.15e9 / (1,352,544,384 + 0.00237 · 34.15e9)
    # = 34.15e9 / (1,352,544,384 + 80,935,500) = 34.15e9 / 1,433,479,884 = 23.8231… tok/s (without the latency
    # 25.2487; dense pricing gave 34.15e9 / (7,745,142,400 + 127,401,984 + 80,935,500) = 4.29 tok/s)
    assert ev.decode_tokens_per_s == pytest.approx(23.8231, abs=1e-4)
    assert ev.decode_tokens_per_s_roofline == pytest.approx(68.3e9 / 1_352_544_384)  # the bound: no latency
    # memory still counts every expert: 7,850,000,000 + 127,401,984 = 7,977,401,984
    assert ev.weights_bytes == 7_850_000_000
    assert ev.total_bytes == 7_977_401_984


def test_dense_model_is_unchanged():
    # no embedding figures: read = weights = 7e9 · 4 / 8 = 3,500,000,000
    assert weights_of(_model(), None) == (3_500_000_000, 3_500_000_000, 4)
    # untied table 32,000 · 4,096 · 4 / 8 = 65,536,000 left out: 3,500,000,000 − 65,536,000 = 3,434,464,000
    dense = _model(vocab_size=32_000, hidden_size=4096)
    assert weights_of(dense, None) == (3_500_000_000, 3_434_464_000, 4)
    # params_active = params is the dense case, figure for figure
    assert weights_of(_model(vocab_size=32_000, hidden_size=4096, params_active="7e9"), None) == \
        weights_of(dense, None)
    # the contract's reference 7B (explicit 1.75 GB of weights) still streams all of them
    ref = load_model_file(Model, DATA / "profiles" / "ref-7b.yaml")
    assert weights_of(ref, None) == (1_750_000_000, 1_750_000_000, 4)


def test_explicit_weights_are_scaled_by_the_active_share():
    # 10B params in 5.5 GB, 2.5B active: ceil(5,500,000,000 · 2.5e9 / 10e9) = 1,375,000,000
    moe = _model(params="10B", params_active="2.5B", weights="5.5 GB")
    assert weights_of(moe, None) == (5_500_000_000, 1_375_000_000, 4)
    # --weight-bits overrides the explicit size: 10e9 · 3 / 8 = 3,750,000,000 resident, 2.5e9 · 3 / 8 = 937,500,000
    assert weights_of(moe, 3) == (3_750_000_000, 937_500_000, 3)


def test_params_active_above_params_is_an_error(tmp_path):
    path = tmp_path / "moe.yaml"
    path.write_text("name: moe\nparams: 2B\nparams_active: 3B\nlayers: 2\nattention_heads: 4\nkv_heads: 2\n"
                    "head_dim: 8\n")
    with pytest.raises(ProfileError) as exc:
        load_model_file(Model, path)
    assert exc.value.problems == [f"{path}:3: params_active: must be at most params (3,000,000,000 > "
                                  "2,000,000,000): the parameters one token uses are a subset of all of them"]


def test_prefill_uses_the_active_params():
    device = Catalog().device(COMPUTE_PHONE).profile
    ev = evaluate(Scenario(device, _dsv2(), 1000))
    # 2 · 2.66e9 · 1,000 = 5.32e12; attention 2 · 27 · 1,000² · 16 · 192 = 165,888,000,000;
    # 5,485,888,000,000 FLOPs at 1 TFLOP/s = 5.485888 s
    assert ev.prefill_s == pytest.approx(5.485888)


def test_importer_derives_params_active_and_agrees_with_the_shipped_profile():
    config = json.loads((DATA / "hf_configs" / "deepseek-v2-lite.json").read_text())
    model = profile_from_hf_config(config, name="x").model
    # per MoE layer (6 routed + 2 shared) · 3 · 2,048 · 1,408 + router 64 · 2,048 = 69,337,088;
    # 2 · 209,715,200 + 27 · 13,767,168 + 67,239,936 (dense layer 0) + 26 · 69,337,088 + 2,048
    assert model.params_active == 2 * 209_715_200 + 27 * 13_767_168 + 67_239_936 + 26 * 69_337_088 + 2_048
    assert model.params_active == 2_661_150_208
    # the shipped 2.66B is that figure rounded (within 0.05 %)
    assert abs(_dsv2().params_active - model.params_active) / model.params_active < 5e-4
    llama = profile_from_hf_config(json.loads((DATA / "hf_configs" / "llama-2-7b.json").read_text()), name="y")
    assert llama.model.params_active is None


def test_importer_with_given_params_notes_the_missing_active_count():
    config = json.loads((DATA / "hf_configs" / "deepseek-v2-lite.json").read_text())
    imported = profile_from_hf_config(config, name="x", params=15_700_000_000)
    assert imported.model.params_active is None
    assert any("params_active" in note for note in imported.notes)


@pytest.mark.parametrize("device", ["pixel8", COMPUTE_PHONE])
def test_sweep_rows_equal_evaluate_for_deepseek_v2_lite(device):
    from kvplan import sweep

    d = Catalog().device(device).profile
    base = Scenario(d, _dsv2(), 1)
    ctx, seq = sweep.grid([1, 4096, 32_768], [1, 2])
    cols = sweep.evaluate_group(base, ctx, seq)
    for i in range(len(cols)):
        ev = evaluate(base.with_changes(ctx=int(ctx[i]), sequences=int(seq[i])))
        assert cols.decode_tokens_per_s[i] == ev.decode_tokens_per_s
        assert cols.weights_bytes[i] == ev.weights_bytes == 7_850_000_000
        assert cols.total_bytes[i] == ev.total_bytes
        if ev.prefill_s is not None:
            assert cols.prefill_s[i] == ev.prefill_s
