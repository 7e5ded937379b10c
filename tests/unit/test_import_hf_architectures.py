"""`kvplan import hf` on configs kvplan must not price as a dense transformer (issue #17 point 1).

A recurrent or hybrid model is refused naming its architecture; a mixture of experts is priced with its
experts (or refused naming what its config lacks), never as a dense model; a config lacking keys names every
key it lacks. The configs in tests/data/hf_configs_other hold the shapes of the public config.json files they
are named after (Mixtral-8x7B-v0.1, Qwen1.5-MoE-A2.7B, Qwen3-30B-A3B, RWKV-4 169M, Mamba 130M).
"""

from __future__ import annotations

import json

import pytest

from kvplan.errors import FieldError, ProfileError
from kvplan.importers.hf import profile_from_hf_config, profile_from_hf_file
from tests.conftest import DATA

OTHER = DATA / "hf_configs_other"
LLAMA_2_7B = json.loads((DATA / "hf_configs" / "llama-2-7b.json").read_text())


def _config(name: str) -> dict:
    return json.loads((OTHER / f"{name}.json").read_text())


def _problem(call) -> str:
    with pytest.raises(ProfileError) as caught:
        call()
    assert len(caught.value.problems) == 1  # one line, everything in it
    return caught.value.problems[0]


# --- recurrent, state-space and hybrid models: refused, naming the architecture ------------------------------

@pytest.mark.parametrize("name, model_type, what", [
    ("rwkv-4-169m-pile", "rwkv", "a recurrent network (RWKV)"),
    ("mamba-130m-hf", "mamba", "a state-space model (Mamba)"),
])
def test_a_recurrent_model_is_refused_naming_its_architecture(name, model_type, what):
    path = OTHER / f"{name}.json"
    problem = _problem(lambda: profile_from_hf_file(path))
    assert problem == (f"{path}: model_type {model_type!r} is {what}: it keeps a fixed-size state instead of a KV "
                       "cache on every layer, and kvplan prices attention KV caches only, so it cannot plan this model")


def test_rwkv_is_refused_even_with_every_transformer_key():
    """Before, an RWKV config that also had num_attention_heads was priced with a KV cache it does not have."""
    config = {**_config("rwkv-4-169m-pile"), "num_attention_heads": 12, "intermediate_size": 3072}
    assert "model_type 'rwkv' is a recurrent network (RWKV)" in _problem(
        lambda: profile_from_hf_config(config, name="x", where="rwkv.json"))


@pytest.mark.parametrize("model_type", ["jamba", "recurrent_gemma", "zamba2", "kimi_linear"])
def test_hybrid_model_types_are_refused(model_type):
    config = {**LLAMA_2_7B, "model_type": model_type}
    assert f"model_type {model_type!r} is a hybrid of" in _problem(lambda: profile_from_hf_config(config, name="x"))


def test_falcon_h1_whose_mamba_heads_do_not_make_its_width_is_refused():
    """A parallel hybrid is priced (tests/unit/test_falcon_h1.py); one whose Mamba2 heads × head dim is not
    mamba_d_ssm is refused, as FalconH1Config.validate_architecture refuses it."""
    config = {**LLAMA_2_7B, "model_type": "falcon_h1", "mamba_d_ssm": 1536, "mamba_n_heads": 24, "mamba_d_head": 32}
    assert "mamba_n_heads 24 × mamba_d_head 32 is not the Mamba2 width mamba_d_ssm 1536" in \
        _problem(lambda: profile_from_hf_config(config, name="x"))


def test_a_hybrid_without_its_layer_layout_or_with_experts_is_refused_by_what_it_lacks():
    lfm2 = {**LLAMA_2_7B, "model_type": "lfm2"}
    assert "an lfm2 config needs layer_types or full_attn_idxs" in _problem(
        lambda: profile_from_hf_config(lfm2, name="x"))
    # Qwen3-Next is a mixture of experts: its state and attention layers are read, its expert weights are not
    nxt = {**LLAMA_2_7B, "model_type": "qwen3_next", "num_experts": 512, "num_experts_per_tok": 10,
           "moe_intermediate_size": 512}
    assert "whose expert layout kvplan does not know" in _problem(lambda: profile_from_hf_config(nxt, name="x"))


def test_an_unknown_model_type_with_state_space_keys_or_layer_types_is_refused():
    ssm = {**LLAMA_2_7B, "model_type": "new_hybrid", "mamba_d_state": 16}
    assert _problem(lambda: profile_from_hf_config(ssm, name="x", where="c.json")) == (
        "c.json: model_type 'new_hybrid' has layers kvplan does not price (it has mamba_d_state (a state-space or "
        "recurrent layer)); kvplan prices the KV caches of full and sliding-window attention only, so it cannot "
        "plan this model")
    linear = {**LLAMA_2_7B, "model_type": "new_linear",
              "layer_types": ["linear_attention", "linear_attention", "linear_attention", "full_attention"] * 8}
    assert "(its layer_types hold linear_attention layers)" in _problem(lambda: profile_from_hf_config(linear,
                                                                                                      name="x"))


def test_layer_types_of_attention_only_are_priced():
    config = {**LLAMA_2_7B, "layer_types": ["full_attention"] * 32}
    assert profile_from_hf_config(config, name="x").model.layers == 32


# --- a config without the keys a profile needs: every missing key named at once -------------------------------

def test_every_missing_key_is_named_at_once():
    path = OTHER / "only-model-type.json"
    assert _problem(lambda: profile_from_hf_file(path)) == (
        f"{path}: cannot build a model profile from this config (model_type 'foo'): missing num_hidden_layers, "
        "num_attention_heads, hidden_size, vocab_size, intermediate_size")


def test_wrong_values_are_named_with_the_missing_ones():
    # each wrong value on its own line, naming its key; then the keys that are missing (not the wrong ones again)
    config = {"model_type": "llama", "num_hidden_layers": -2, "hidden_size": [1], "num_attention_heads": 8}
    with pytest.raises(ProfileError) as caught:
        profile_from_hf_config(config, name="x", where="c.json")
    assert caught.value.problems == [
        "c.json: num_hidden_layers: expected a positive whole number, got -2",
        "c.json: hidden_size: expected a whole number, got a list [1]",
        "c.json: cannot build a model profile from this config (model_type 'llama'): missing vocab_size, "
        "intermediate_size"]


def test_given_params_needs_only_the_shape_keys():
    # head_dim given: hidden_size, vocab_size and intermediate_size only derive the parameter count
    config = {"model_type": "foo", "num_hidden_layers": 4, "num_attention_heads": 8, "head_dim": 64}
    model = profile_from_hf_config(config, name="x", params=2_000_000).model  # ≥ 4 × 512 × 512 = 1,048,576
    assert (model.layers, model.head_dim, model.params) == (4, 64, 2_000_000)


def test_the_label_names_the_source_as_the_user_gave_it():
    problem = _problem(lambda: profile_from_hf_config({"model_type": "foo"}, name="x",
                                                      where="https://hub/org/m/blob/abc/config.json",
                                                      label="hf:org/m"))
    assert problem.startswith("hf:org/m: cannot build a model profile")


# --- mixtures of experts: priced with their experts ----------------------------------------------------------

def test_mixtral_is_priced_as_a_mixture_of_experts():
    model = profile_from_hf_file(OTHER / "mixtral-8x7b.json").model
    assert (model.experts, model.experts_per_token, model.expert_intermediate_size, model.shared_experts,
            model.dense_layers) == (8, 2, 14336, 0, 0)
    # embeddings 32,000·4,096 = 131,072,000, untied: ×2 = 262,144,000; per layer attention 4,096·4,096·2 (q, o)
    # + 4,096·1,024·2 (k, v) = 41,943,040, norms 2·4,096 = 8,192, experts 8·3·4,096·14,336 = 1,409,286,144,
    # router 8·4,096 = 32,768 → 1,451,270,144; 32 layers = 46,440,644,608; + 262,144,000 + final norm 4,096
    assert model.params == 46_440_644_608 + 262_144_000 + 4_096 == 46_702_792_704  # Mixtral-8x7B's 46.7B
    # a token runs 2 experts: 2·176,160,768 + 32,768 = 352,354,304; per layer 41,943,040 + 8,192 + 352,354,304
    # = 394,305,536; 32 layers = 12,617,777,152; + 262,144,000 + 4,096
    assert model.params_active == 12_617_777_152 + 262_144_000 + 4_096 == 12_879_925_248  # the card's 12.9B


def test_qwen2_moe_counts_its_shared_expert_and_gate():
    model = profile_from_hf_file(OTHER / "qwen1.5-moe-a2.7b.json").model
    # shared_expert_intermediate_size 5,632 = 4 × moe_intermediate_size 1,408
    assert (model.experts, model.experts_per_token, model.expert_intermediate_size, model.shared_experts,
            model.dense_layers) == (60, 4, 1408, 4, 0)
    # embeddings 151,936·2,048 = 311,164,928, untied ×2 = 622,329,856; attention 4·2,048² = 16,777,216 + q/k/v
    # bias 3·2,048 = 16,783,360; norms 4,096; experts (60 + 4)·3·2,048·1,408 = 553,648,128, router 60·2,048 =
    # 122,880, shared-expert gate 2,048 → 553,773,056; per layer 570,560,512; 24 layers = 13,693,452,288
    assert model.params == 13_693_452_288 + 622_329_856 + 2_048 == 14_315_784_192  # the card's 14.3B
    # active: (4 + 4)·8,650,752 + 122,880 + 2,048 = 69,330,944; per layer 16,783,360 + 4,096 + 69,330,944 =
    # 86,118,400; 24 layers = 2,066,841,600
    assert model.params_active == 2_066_841_600 + 622_329_856 + 2_048 == 2_689_173_504  # the card's 2.7B


def test_qwen3_moe_has_no_dense_layer():
    model = profile_from_hf_file(OTHER / "qwen3-30b-a3b.json").model
    assert (model.experts, model.experts_per_token, model.expert_intermediate_size, model.shared_experts,
            model.dense_layers) == (128, 8, 768, 0, 0)
    # attention 2,048·32·128·2 (q, o) + 2,048·4·128·2 (k, v) = 18,874,368 + q/k norms 2·128 = 18,874,624;
    # norms 4,096; experts 128·3·2,048·768 = 603,979,776 + router 128·2,048 = 262,144 → 604,241,920;
    # per layer 623,120,640; 48 layers = 29,909,790,720; embeddings 2·151,936·2,048 = 622,329,856
    assert model.params == 29_909_790_720 + 622_329_856 + 2_048 == 30_532_122_624  # the card's 30.5B
    # active: 8·4,718,592 + 262,144 = 38,010,880; per layer 18,874,624 + 4,096 + 38,010,880 = 56,889,600
    assert model.params_active == 48 * 56_889_600 + 622_329_856 + 2_048 == 3_353_032_704  # the card's 3.3B


def test_deepseek_v2_lite_import_writes_its_expert_fields_as_the_shipped_profile():
    from kvplan.profiles.catalog import Catalog

    imported = profile_from_hf_file(DATA / "hf_configs" / "deepseek-v2-lite.json").model
    shipped = Catalog().model("deepseek-v2-lite").profile
    fields = ("experts", "experts_per_token", "expert_intermediate_size", "shared_experts", "dense_layers")
    assert {f: getattr(imported, f) for f in fields} == {f: getattr(shipped, f) for f in fields} == {
        "experts": 64, "experts_per_token": 6, "expert_intermediate_size": 1408, "shared_experts": 2,
        "dense_layers": 1}


def test_a_moe_lacking_its_expert_keys_names_them():
    config = {k: v for k, v in _config("qwen3-30b-a3b").items()
              if k not in ("num_experts_per_tok", "moe_intermediate_size")}
    assert _problem(lambda: profile_from_hf_config(config, name="x", where="c.json")) == (
        "c.json: cannot build a model profile from this config (model_type 'qwen3_moe'): missing "
        "num_experts_per_tok, moe_intermediate_size")


def test_a_moe_layout_the_profile_cannot_hold_is_refused():
    config = {**_config("qwen3-30b-a3b"), "decoder_sparse_step": 2}  # experts on odd layers only
    assert _problem(lambda: profile_from_hf_config(config, name="x", where="c.json")) == (
        "c.json: experts on layers 1, 3, 5, 7, 9, 11, 13, 15, … only (decoder_sparse_step 2): kvplan's profile "
        "fields express leading dense layers (dense_layers) followed by MoE layers, not this layout")
    # mlp_only_layers at the start is leading dense layers: priced
    model = profile_from_hf_config({**_config("qwen3-30b-a3b"), "mlp_only_layers": [0, 1]}, name="x").model
    assert model.dense_layers == 2


def test_a_moe_of_unknown_layout_is_refused_not_counted_dense():
    config = {**LLAMA_2_7B, "model_type": "olmoe", "num_local_experts": 16, "num_experts_per_tok": 1}
    problem = _problem(lambda: profile_from_hf_config(config, name="x", where="c.json"))
    assert problem.startswith("c.json: a mixture of experts (num_local_experts 16) of model_type 'olmoe', "
                              "whose expert layout kvplan does not know (it knows deepseek_v2, deepseek_v3, "
                              "gpt_oss, mixtral, qwen2_moe, qwen3_moe, qwen3_5_moe, qwen3_5_moe_text, lfm2_moe, "
                              "granitemoehybrid, llama4, llama4_text)")


def test_given_params_keeps_the_expert_fields():
    imported = profile_from_hf_config(_config("mixtral-8x7b"), name="x", params=46_700_000_000)
    assert imported.model.experts == 8 and imported.model.params_active is None
    assert any("params_active" in note for note in imported.notes)


# --- what the caller typed is checked first, as a field error ------------------------------------------------

def test_name_and_weight_bits_are_field_errors_before_any_work():
    with pytest.raises(FieldError) as caught:
        profile_from_hf_config({}, name="My Model")  # an empty config: the name is refused first
    assert str(caught.value) == ("name: 'My Model' is not a valid profile name: use lowercase letters, digits, "
                                 "'.', '_' and '-' (e.g. 'my-model')")
    with pytest.raises(FieldError) as caught:
        profile_from_hf_config({}, name="x", weight_bits=40)
    assert str(caught.value) == "weight_bits: must be above 0 and at most 32, got 40"
