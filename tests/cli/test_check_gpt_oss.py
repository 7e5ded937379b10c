"""`kvplan check --model gpt-oss-20b --runtime llama.cpp`: the shipped profile priced end to end, figures by hand."""

from __future__ import annotations

import pytest


@pytest.fixture
def checked(run_json):
    return run_json("check", "--device", "pixel8", "--model", "gpt-oss-20b", "--ctx", "32k", "--runtime", "llama.cpp")


def test_weights_are_the_mxfp4_gguf(checked):
    _, data = checked
    weights = data["weights"]
    assert weights["type"] == "mxfp4"
    # experts 24 layers × 3 stacks × 32 × 2,880 × 2,880 values × 17 / 32 B = 10,152,345,600;
    # 16-bit matrices (token_embd, output, q/k/v/o) 1,795,276,800 values × 2 B; F32 biases, norms, sinks, routers
    assert weights["bytes_by_type"] == {"mxfp4": 10_152_345_600, "f16": 3_590_553_600, "f32": 36_731_136}
    assert data["memory"]["weights_bytes"] == 13_779_630_336
    # a decode step reads all but the input embedding (1,158,266,880 B) and 4 of the 32 experts:
    # 13,779,630,336 − 1,158,266,880 − 10,152,345,600 + 10,152,345,600 · 4 / 32
    assert data["memory"]["weights_read_bytes"] == 13_779_630_336 - 1_158_266_880 - 10_152_345_600 + 1_269_043_200


def test_kv_cache_is_llamacpps_iswa(checked):
    _, data = checked
    runtime = data["runtime"]
    # -c 32k: 32,768 cells on the 12 full layers; pad(min(32,768, 128 + 512), 256) = 768 on the 12 windowed ones
    assert (runtime["cells"]["n_ctx"], runtime["cells"]["swa_cells"]) == (32_768, 768)
    # each side: 12 layers × 8 heads × 64 × 2 B = 12,288 B per cell
    assert [(c["cells"], c["layers"], c["k_bytes"], c["v_bytes"]) for c in runtime["caches"]] == [
        (32_768, 12, 12_288 * 32_768, 12_288 * 32_768), (768, 12, 12_288 * 768, 12_288 * 768)]
    # 24,576 B per cell · (32,768 + 768)
    assert data["memory"]["kv_bytes"] == 24_576 * (32_768 + 768) == 824_180_736


def test_buffers_are_priced_as_measured(checked):
    _, data = checked
    # build 11434, -c 32768 -ub 512 -fa on -np 1, llama-server's one output row: llama.cpp's own CPU compute buffer for
    # that run is 134,637,600 B (tests/data/llamacpp/buffers/gpt-oss-20b.json); output 201,088 logits · 4 B = 804,352
    assert data["runtime"]["compute_buffer_bytes"] == 134_637_600
    assert data["runtime"]["output_buffer_bytes"] == 804_352
    assert data["memory"]["buffers_bytes"] == 134_637_600 + 804_352
    assert not any("not modelled" in w for w in data["warnings"])


def test_total_and_verdict(checked):
    code, data = checked
    memory = data["memory"]
    # the process: heap 10,506,240 + 189 B × 201,088 tokens = 48,511,872, binaries 15,568,896, and on the Pixel 8's
    # CPU the MXFP4 expert stacks (rows 2,880, a multiple of 4) repacked: a second copy of 10,152,345,600 B
    assert memory["process"]["repack_copy_bytes"] == 10_152_345_600
    buffers = 134_637_600 + 804_352
    assert memory["total_bytes"] == 13_779_630_336 + 824_180_736 + buffers + 48_511_872 + 15_568_896 + 10_152_345_600
    # 24,955,679,392 B against a budget of 8 GB − 2 GB reserve
    assert memory["headroom_bytes"] == 6_000_000_000 - 24_955_679_392
    assert (code, data["verdict"]) == (1, "over")
