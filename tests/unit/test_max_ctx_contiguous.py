"""Under llama.cpp the fit is not monotone in context (its compute buffer can be smaller at a larger -c): kvplan
reports the largest context that fits and the largest below which every context fits (it said "max context
94,976" while 92,416–93,952 do not fit, with nothing to tell them apart)."""

from kvplan import Catalog
from kvplan.engine import llamacpp_process as lp
from kvplan.plan import Knobs, build_scenario, evaluate
from kvplan.profiles.runtime import runtime_spec

CAT = Catalog()
# found on build 0c1e57098's graph; each reserve is lowered by the process baseline the total now counts, so the
# budget left for the cache and the buffers is the one the figures were found at
OLD = runtime_spec("llama.cpp", build="0c1e57098")


def _ev(model, os_reserve_bytes, ctx=8192):
    m = CAT.model(model).profile
    process = lp.process_parts(0, 0, mmap=True, repack=True, n_vocab=m.vocab_size).extra_bytes
    return evaluate(build_scenario(CAT.device("pixel9-pro").profile, m, ctx,
                                   Knobs(runtime=OLD, os_reserve_bytes=os_reserve_bytes - process)))


def _fits(model, os_reserve_bytes, ctx):
    return _ev(model, os_reserve_bytes, ctx).fits


def test_both_answers_where_a_larger_context_fits_again():
    # Gemma-3-4B on a 16 GB Pixel 9 Pro with 11.375 GB reserved (a 4.625 GB budget)
    ev = _ev("gemma-3-4b", 11_375_000_000)
    assert (ev.max_ctx, ev.max_ctx_contiguous) == (94976, 91904)
    assert _fits("gemma-3-4b", 11_375_000_000, 91904)
    assert not _fits("gemma-3-4b", 11_375_000_000, 91905)  # the first context that does not fit
    assert not _fits("gemma-3-4b", 11_375_000_000, 93952)
    assert _fits("gemma-3-4b", 11_375_000_000, 94976)  # fits again: the compute buffer is smaller there
    assert not _fits("gemma-3-4b", 11_375_000_000, 94977)


def test_every_block_below_the_contiguous_answer_fits():
    # Gemma-3-1B at a 1.35 GB budget: bisection's first crossing (61,440) is not the first failure, so only a
    # scan of every 256-cell block can say where the unbroken run ends
    ev = _ev("gemma-3-1b", 14_650_000_000)
    assert ev.max_ctx == 69376
    contiguous = ev.max_ctx_contiguous
    assert contiguous < 61440
    assert all(_fits("gemma-3-1b", 14_650_000_000, c) for c in range(256, contiguous + 1, 256))
    assert _fits("gemma-3-1b", 14_650_000_000, contiguous)
    assert not _fits("gemma-3-1b", 14_650_000_000, contiguous + 1)


def test_the_same_answer_where_the_total_only_grows():
    ev = evaluate(build_scenario(CAT.device("pixel8").profile, CAT.model("llama-2-7b").profile, 4096, Knobs()))
    assert ev.max_ctx_contiguous == ev.max_ctx == 5016
