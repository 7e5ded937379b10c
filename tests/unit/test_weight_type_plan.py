"""``weight_type``: a scenario's weights are the real quantizer's tensor bytes, for every library model and type.

The expected totals are what llama.cpp's own quantizer (0c1e57098, via tests/harness/quantize_all.py) wrote
for weight-less GGUFs with each profile's shapes (tests/data/llamacpp/quant/*.json.gz).
"""

import gzip
import json
from pathlib import Path

import pytest

from kvplan import Catalog, Scenario, evaluate
from kvplan.errors import KvplanError

QUANT = Path(__file__).parents[1] / "data" / "llamacpp" / "quant"


def _cases():
    for path in sorted(QUANT.glob("*.json.gz")):
        if path.name.startswith("verify_"):
            continue
        doc = json.loads(gzip.decompress(path.read_bytes()))
        for ftype, data in sorted(doc["types"].items()):
            yield pytest.param(doc["model"], ftype, data["total_bytes"], id=f"{doc['model']}-{ftype}")


CASES = list(_cases())


def test_every_library_model_has_ground_truth():
    assert len({c.values[0] for c in CASES}) >= 22 and len(CASES) >= 22 * 19


@pytest.mark.parametrize("model, ftype, measured_bytes", CASES)
def test_weights_bytes_equal_the_quantizer(model, ftype, measured_bytes):
    cat = Catalog()
    ev = evaluate(Scenario(cat.device("pixel8").profile, cat.model(model).profile, 4096, weight_type=ftype))
    assert ev.weights_bytes == measured_bytes
    assert ev.weights_pricing.format.lower().removeprefix("gguf-") == ftype


def test_llama2_7b_q4_k_m_by_hand():
    # 4,080,263,168 B: q4_K rows of 4096 are 16 blocks × 144 B; output, half of attn_v and half of ffn_down
    # (the use_more_bits layers) q6_K (210 B per 256); norms F32. 8 · 4,080,263,168 / 6,738,415,616 = 4.844 bits.
    cat = Catalog()
    ev = evaluate(Scenario(cat.device("pixel8").profile, cat.model("7b").profile, 4096, weight_type="Q4_K_M"))
    assert ev.weights_bytes == 4_080_263_168
    assert round(ev.weight_bits, 3) == 4.844
    # a decode step does not stream the input embedding: token_embd q4_K 32000 rows × 16 × 144 = 73,728,000
    assert ev.weights_read_bytes == 4_080_263_168 - 73_728_000


def test_weight_bits_and_weight_type_together_are_refused():
    cat = Catalog()
    with pytest.raises(KvplanError, match="weight_bits and weight_type"):
        Scenario(cat.device("pixel8").profile, cat.model("7b").profile, 4096, weight_bits=4, weight_type="q4_0")


def test_unknown_weight_type_names_the_known_ones():
    cat = Catalog()
    with pytest.raises(KvplanError, match="unknown weight format 'q4_x'.*q4_k_m"):
        Scenario(cat.device("pixel8").profile, cat.model("7b").profile, 4096, weight_type="q4_x")
