"""An MLA model takes one cache type under llama.cpp (src/llama-context.cpp :: llama_init_from_model:
"model does not support different K (%s) and V (%s) cache types"); kvplan refuses it the same way."""

from __future__ import annotations

import pytest

from kvplan.caches.llamacpp import llamacpp_cache
from kvplan.engine.formats import format_from_name
from kvplan.errors import FieldError
from kvplan.profiles.catalog import Catalog
from kvplan.profiles.runtime import LlamaCppSpec
from tests.conftest import REF_PHONE

MESSAGE = ("kvplan: error: --k-type, --v-type: llama.cpp refuses different K (q8_0) and V (f16) cache types for an "
           "MLA model (llama_init_from_model: model does not support different K and V cache types); "
           "give one --kv-type\n")


def test_different_k_and_v_types_are_refused(run):
    r = run("check", "-d", REF_PHONE, "-m", "deepseek-v2-lite", "-c", "8k", "--runtime", "llama.cpp",
            "--k-type", "q8_0", "--v-type", "f16")
    assert (r.exit_code, r.stdout, r.stderr) == (2, "", MESSAGE)


def test_bit_widths_that_differ_are_refused_too(run):
    # --k-bits 8 is llama.cpp's q8_0, --v-bits 16 its f16: still two types
    r = run("check", "-d", REF_PHONE, "-m", "deepseek-v2-lite", "-c", "8k", "--runtime", "llama.cpp",
            "--k-bits", "8", "--v-bits", "16")
    assert r.exit_code == 2 and "different K (q8_0) and V (f16) cache types for an MLA model" in r.stderr


@pytest.mark.parametrize("flags", [("--kv-type", "q8_0"), ("--k-type", "q8_0", "--v-type", "q8_0"), ()])
def test_one_type_is_accepted(run_json, flags):
    # 27 layers × (512 + 64) values, one K row per cell and no V tensor; -c 8192 is already a multiple of 256:
    # q8_0: 576 / 32 = 18 blocks × 34 B = 612 B per row → 27 × 612 × 8192 = 135,364,608
    # f16 (the profile's kv_bits 16): 576 × 2 = 1,152 B → 27 × 1,152 × 8192 = 254,803,968
    code, doc = run_json("check", "-d", REF_PHONE, "-m", "deepseek-v2-lite", "-c", "8192", "--runtime", "llama.cpp",
                         *flags)
    assert code in (0, 1)
    assert doc["memory"]["kv_bytes"] == (254_803_968 if not flags else 135_364_608)


def test_a_model_without_mla_keeps_separate_types(run_json):
    # llama-3.1-8b: K q8_0 and V f16 are fine for llama.cpp (flash attention auto); per cell and layer
    # K 8 × 128 = 1024 values → 32 blocks × 34 = 1,088 B, V 1024 × 2 = 2,048 B;
    # 32 layers × 3,136 × 4096 = 411,041,792
    code, doc = run_json("check", "-d", REF_PHONE, "-m", "llama-3.1-8b", "-c", "4096", "--runtime", "llama.cpp",
                         "--k-type", "q8_0", "--v-type", "f16")
    assert code in (0, 1) and doc["memory"]["kv_bytes"] == 411_041_792


def test_the_core_names_the_fields():
    model = Catalog().model("deepseek-v2-lite").profile
    with pytest.raises(FieldError) as info:
        llamacpp_cache(LlamaCppSpec(), model, format_from_name("q4_0"), format_from_name("q8_0"))
    assert info.value.fields == ("k_type", "v_type")
    assert "different K (q4_0) and V (q8_0)" in str(info.value)
