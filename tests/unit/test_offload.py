"""llama.cpp's placement rules (kvplan.engine.offload) on hand-built inventories, figures derived by hand."""

from __future__ import annotations

import pytest

from kvplan.engine import offload as eo


def _model(n_layer=4, experts=False, tied=False):
    """(name, kind, layer, bytes): embedding 1,000 B, output norm 10 B, output 1,000 B (untied), per layer a
    norm 10 B, attention 100 B and either a dense FFN 300 B or three expert stacks of 800 B + a router 8 B."""
    out = [("token_embd.weight", "embedding", -1, 1000), ("output_norm.weight", "norm", -1, 10)]
    if not tied:
        out.append(("output.weight", "output", -1, 1000))
    for i in range(n_layer):
        out += [(f"blk.{i}.attn_norm.weight", "norm", i, 10), (f"blk.{i}.attn_q.weight", "linear", i, 100)]
        if experts:
            out += [(f"blk.{i}.ffn_gate_inp.weight", "router", i, 8)]
            out += [(f"blk.{i}.ffn_{p}_exps.weight", "experts", i, 800) for p in ("gate", "up", "down")]
        else:
            out += [(f"blk.{i}.ffn_up.weight", "linear", i, 300)]
    return out


@pytest.mark.parametrize("ngl, gpu_layers, output_on_gpu", [
    (0, [], False),        # i_gpu_start = max(4 + 1 − 0, 0) = 5: nothing
    (1, [], True),         # i_gpu_start = 4: only il = 4, the output layer
    (3, [2, 3], True),     # i_gpu_start = 2: the LAST two repeating layers and the output
    (5, [0, 1, 2, 3], True),
    (99, [0, 1, 2, 3], True),
    (-1, [0, 1, 2, 3], True),  # negative: all (llama_model::n_gpu_layers)
])
def test_ngl_offloads_the_output_first_then_the_last_layers(ngl, gpu_layers, output_on_gpu):
    assert [il for il in range(4) if eo.layer_on_gpu(il, 4, ngl)] == gpu_layers
    assert eo.layer_on_gpu(4, 4, ngl) is output_on_gpu
    p = eo.place_tensors(_model(), 4, ngl)
    # per layer 10 + 100 + 300 = 410 B; the output layer 10 + 1,000 = 1,010 B; the embedding always host
    assert p.bytes_in(eo.GPU) == 410 * len(gpu_layers) + (1010 if output_on_gpu else 0)
    assert p.bytes_in(eo.HOST) == 1000 + 410 * (4 - len(gpu_layers)) + (0 if output_on_gpu else 1010)
    assert p.kv_layers[eo.GPU] == len(gpu_layers)
    # a step reads everything but the input embedding
    assert p.read_bytes_in(eo.GPU) + p.read_bytes_in(eo.HOST) == 410 * 4 + 1010


def test_a_tied_embedding_is_loaded_twice_when_the_output_is_offloaded():
    p = eo.place_tensors(_model(tied=True), 4, 1, tied_embeddings=True)
    # TENSOR_DUPLICATED: the input copy stays host, the output copy (1,000 B) + output norm (10 B) on the GPU
    assert p.bytes_in(eo.HOST, "embedding") == 1000
    assert p.bytes_in(eo.GPU, "output") == 1010
    # output in host memory too: the duplicate reuses the input's copy (one buffer type), so it is held once
    host_only = eo.place_tensors(_model(tied=True), 4, 0, tied_embeddings=True)
    assert host_only.bytes_in(eo.HOST) == 1000 + 10 + 4 * 410
    assert host_only.read_bytes_in(eo.HOST) == 1000 + 10 + 4 * 410  # the output reads the whole table


def test_n_cpu_moe_keeps_the_experts_of_the_first_layers_in_host_memory():
    rules = [(rx, eo.HOST) for rx in eo.n_cpu_moe_patterns(3)]
    assert eo.n_cpu_moe_patterns(2) == (r"blk\.0\.ffn_(up|down|gate|gate_up)_(ch|)exps",
                                        r"blk\.1\.ffn_(up|down|gate|gate_up)_(ch|)exps")
    p = eo.place_tensors(_model(experts=True), 4, 99, rules, experts=8, experts_per_token=2)
    # 3 layers × 3 stacks × 800 B in host memory; layer 3's stacks, every router and attention on the GPU
    assert p.bytes_in(eo.HOST, "experts") == 7200
    assert p.bytes_in(eo.GPU, "experts") == 2400
    assert p.bytes_in(eo.GPU, "layers") == 4 * (10 + 100 + 8)
    # a step reads 2 of 8 experts: ceil(800 · 2 / 8) = 200 B of each stack
    assert p.read_bytes_in(eo.HOST) == 9 * 200
    assert p.read_bytes_in(eo.GPU) == 3 * 200 + 4 * 118 + 1010


def test_blk_1_does_not_match_blk_10():
    rules = [(rx, eo.HOST) for rx in eo.n_cpu_moe_patterns(2)]
    p = eo.place_tensors(_model(n_layer=11, experts=True), 11, 99, rules)
    assert {t.name for t in p.tensors if t.memory == eo.HOST and t.role == "experts"} == {
        f"blk.{i}.ffn_{s}_exps.weight" for i in (0, 1) for s in ("gate", "up", "down")}


def test_override_rules_first_match_wins_and_name_their_memory():
    rules = eo.parse_override_rules(r"blk\.[0-1]\.ffn_.*_exps=CPU, exps=FLASH ,attn_q=CUDA0")
    assert rules == ((r"blk\.[0-1]\.ffn_.*_exps", eo.HOST), ("exps", eo.FLASH), ("attn_q", eo.GPU))
    p = eo.place_tensors(_model(experts=True), 4, 0, rules)
    assert p.bytes_in(eo.HOST, "experts") == 2 * 3 * 800
    assert p.bytes_in(eo.FLASH, "experts") == 2 * 3 * 800
    assert p.bytes_in(eo.GPU) == 4 * 100  # attn_q forced onto the GPU with -ngl 0
    for bad in ("exps", "=CPU", "exps=", "(=CPU", ""):
        with pytest.raises(ValueError):
            eo.parse_override_rules(bad)


def test_decode_time_adds_each_memory_at_its_own_rate():
    # 4 GB from a 400 GB/s GPU and 1 GB from 100 GB/s RAM at 80 %, 1 ms: 4/320 + 1/80 + 0.001 = 0.026 s
    t = eo.decode_time_s({eo.GPU: 4e9, eo.HOST: 1e9}, {eo.GPU: 400e9, eo.HOST: 100e9}, 0.8, 0.001)
    assert t == pytest.approx(0.0125 + 0.0125 + 0.001)
    # flash is read at its own rate, never scaled by the RAM's efficiency: 0.5 GB at 2 GB/s = 0.25 s
    assert eo.decode_time_s({eo.FLASH: 5e8}, {eo.FLASH: 2e9}, 0.5) == pytest.approx(0.25)


def test_streamed_experts_after_cache_hits():
    assert eo.streamed_expert_bytes(1000, 0.0) == (1000, 0)
    assert eo.streamed_expert_bytes(1000, 0.3) == (700, 300)
    assert eo.streamed_expert_bytes(1001, 0.5) == (501, 500)  # ceil(500.5)
    assert eo.kv_share_bytes(3_221_225_472, 24, 48) == 1_610_612_736
