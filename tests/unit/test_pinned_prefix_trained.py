"""The pinned prefix is attended in front of every sequence's own tokens, so it counts against the trained
context (it was left out: --ctx 3k --pinned-prefix 2k on a 4k model said ctx_beyond_trained: false); and fit
suggests only weight formats a runtime reads (uniform widths were offered under an MLX format)."""

from kvplan import Catalog
from kvplan.advice import candidate_changes
from kvplan.plan import Knobs, build_scenario, evaluate

CAT = Catalog()


def _ev(ctx, prefix):
    return evaluate(build_scenario(CAT.device("pixel8").profile, CAT.model("llama-2-7b").profile, ctx,
                                   Knobs(pinned_prefix_tokens=prefix)))


def test_prefix_and_context_together_past_the_trained_context():
    ev = _ev(3072, 2048)  # 3,072 + 2,048 = 5,120 attended > 4,096 trained
    assert ev.attended_tokens == 5120
    assert ev.ctx_beyond_trained


def test_prefix_and_context_exactly_the_trained_context():
    ev = _ev(2048, 2048)  # 2,048 + 2,048 = 4,096 = trained: no extension needed
    assert ev.attended_tokens == 4096
    assert not ev.ctx_beyond_trained


def test_fit_offers_the_trained_length_less_the_prefix():
    # over at 3k + 2k; the largest context that fits (2,968) is past trained once the prefix counts, so the
    # context that stays within training is offered too: 4,096 − 2,048 = 2,048
    ctx_values = [c.value for c in candidate_changes(_ev(3072, 2048)) if c.kind == "ctx"]
    assert 2048 in ctx_values


def test_fit_in_an_mlx_format_suggests_the_smaller_mlx_format_not_a_uniform_width():
    # Llama-3.1-8B in mlx-8bit at 4k on the Pixel 8: over; mlx-4bit (4 bits + an fp16 scale and bias per 64
    # weights = 4.5 bits) fits. A uniform "weights at 4 bits" is no format MLX reads, so it is not offered.
    ev = evaluate(build_scenario(CAT.device("pixel8").profile, CAT.model("llama-3.1-8b").profile, 4096,
                                 Knobs(weight_type="mlx-8bit")))
    kinds = {(c.kind, c.value) for c in candidate_changes(ev)}
    assert ("weight_type", "mlx-4bit") in kinds
    assert not any(kind == "weight_bits" for kind, _ in kinds)


def test_below_mlx_4bit_no_weight_format_is_offered():
    ev = evaluate(build_scenario(CAT.device("pixel8").profile, CAT.model("llama-3.1-8b").profile, 16384,
                                 Knobs(weight_type="mlx-4bit")))
    assert not any(c.kind in ("weight_type", "weight_bits") for c in candidate_changes(ev))
