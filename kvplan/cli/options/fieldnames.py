"""The CLI's names for fields: the one table from a field (``runtime.parallel``) to the flag that sets it
(``--parallel``), and the wording of a :class:`~kvplan.errors.FieldError` with those flags.

The core raises errors about fields (:class:`~kvplan.errors.FieldError`, ``str()`` names the fields);
the CLI's error path (:class:`kvplan.cli.app.KvplanGroup`) words them with the flags the user typed, a
gate file (:mod:`kvplan.gate.spec`) with its keys.
"""

from __future__ import annotations

from kvplan.errors import FieldError

FLAGS = {
    "name": "--name",  # a profile's name: import, calibrate, profiles probe
    "ctx": "--ctx",
    "sequences": "--sequences",
    "pinned_prefix_tokens": "--pinned-prefix",
    "weight_bits": "--weight-bits",
    "weight_type": "--weight-type",
    "weight_group_size": "--weight-group-size",
    "kv_bits": "--kv-bits",
    "k_bits": "--k-bits",
    "v_bits": "--v-bits",
    "kv_group_size": "--kv-group-size",
    "kv_type": "--kv-type",
    "k_type": "--k-type",
    "v_type": "--v-type",
    "sliding_window": "--sliding-window",
    "os_reserve": "--os-reserve",
    "os_reserve_bytes": "--os-reserve",
    "target_tokens_per_s": "--target-tok-s",
    "margin": "--margin",
    "runtime": "--runtime",
    "runtime.parallel": "--parallel",
    "runtime.kv_unified": "--kv-unified",
    "runtime.ubatch": "--ubatch",
    "runtime.batch": "--batch",
    "runtime.swa_full": "--swa-full",
    "runtime.flash_attn": "--flash-attn",
    "runtime.cache": "--cache",
    "runtime.max_cache_len": "--max-cache-len",
    "kv_policy": "--kv-policy",
    "kv_policy.recent_window": "--kv-recent-window",
    "kv_policy.history.ratio": "--kv-history-ratio",
    "kv_policy.history.bits": "--kv-history-bits",
    "kv_policy.history.group_size": "--kv-history-group-size",
    "kv_policy.evict_every": "--kv-evict-every",
}


def flag(field: str) -> str:
    """The flag that sets ``field``; a name the table does not hold is kept as given."""
    return FLAGS.get(field, field)


def cli_message(exc: BaseException) -> str:
    """An error as the CLI shows it: a field error with the flags (``--parallel: must be at least 1``,
    ``add --runtime llama.cpp``), any other error as its text."""
    if not isinstance(exc, FieldError):
        return str(exc)

    def name(field: str, value: str | None) -> str:
        return flag(field) if value is None else f"{flag(field)} {value}"

    return exc.worded(name)
