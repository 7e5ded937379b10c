"""The closed-form engine: pure math on plain numbers and numpy arrays, base units only.

Every function takes numbers (int/float) or numpy arrays and returns the same kind;
nothing here reads files, prints, or knows about profiles or the CLI.
"""

from kvplan.engine._ops import maximum
from kvplan.engine.decode import bytes_per_step, decode_tokens_per_s, mean_decode_tokens_per_s, step_bytes_at_rate
from kvplan.engine.flash import overflow_bytes, streamed_time_per_token_s, swap_in_s
from kvplan.engine.kv import kv_bytes, kv_bytes_per_token, kv_bytes_sum_over_generation
from kvplan.engine.maxctx import NO_CONTEXT_FITS, kv_allowance_bytes, largest_fitting, max_context_tokens
from kvplan.engine.memory import (
    DEFAULT_MARGIN_FRACTION,
    VERDICTS,
    Verdict,
    budget_bytes,
    embedding_bytes,
    headroom_bytes,
    total_bytes,
    verdict_code,
    weights_bytes,
)
from kvplan.engine.prefill import DEFAULT_N_UBATCH, prefill_compute_s, prefill_flops, prefill_memory_s

__all__ = [
    "DEFAULT_MARGIN_FRACTION", "DEFAULT_N_UBATCH", "NO_CONTEXT_FITS", "VERDICTS", "Verdict", "budget_bytes",
    "bytes_per_step", "decode_tokens_per_s", "embedding_bytes", "headroom_bytes", "kv_allowance_bytes",
    "kv_bytes", "kv_bytes_per_token", "kv_bytes_sum_over_generation", "largest_fitting", "max_context_tokens",
    "maximum", "mean_decode_tokens_per_s", "overflow_bytes", "prefill_compute_s", "prefill_flops",
    "prefill_memory_s", "step_bytes_at_rate",
    "streamed_time_per_token_s", "swap_in_s",
    "total_bytes", "verdict_code", "weights_bytes",
]
