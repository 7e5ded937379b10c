"""The CLI's names for fields: the table from a field (``runtime.parallel``) to the flag that sets it
(``--parallel``), and the wording of a :class:`~kvplan.errors.FieldError` with those flags.

The core raises errors about fields (:class:`~kvplan.errors.FieldError`, ``str()`` names the fields);
the CLI's error path (:class:`kvplan.cli.app.KvplanGroup`) words them with the flags the user typed, a
gate file (:mod:`kvplan.gate.spec`) with its keys.
"""

from __future__ import annotations

from kvplan.errors import FieldError, FieldText, ProfileError
from kvplan.knob_table import KNOBS

FLAGS = {
    "name": "--name",  # a profile's name: import, calibrate, profiles probe
    "kind": "--kind",  # profiles list / validate: device or model
    "params": "--params",  # import: the parameter count written instead of the derived one
    "ctx": "--ctx",
    **{k.name: k.flag for k in KNOBS},  # every knob of the table (kvplan.knob_table) by its one name
    # the fields inside the runtime and policy knobs, set by those groups' own options (runtime.py, policy.py)
    "runtime.parallel": "--parallel",
    "runtime.kv_unified": "--kv-unified",
    "runtime.ubatch": "--ubatch",
    "runtime.batch": "--batch",
    "runtime.swa_full": "--swa-full",
    "runtime.flash_attn": "--flash-attn",
    "runtime.mmap": "--mmap",
    "runtime.repack": "--repack",
    "runtime.build": "--llamacpp-build",
    "runtime.prompt_tokens": "--prompt-tokens",
    "runtime.judge": "--judge",
    "runtime.cache": "--cache",
    "runtime.max_cache_len": "--max-cache-len",
    "runtime.max_kv_size": "--max-kv-size",
    "runtime.prefill_step_size": "--prefill-step-size",
    "runtime.quantized_kv_start": "--quantized-kv-start",
    "runtime.num_parallel": "--num-parallel",
    "runtime.kv_cache_type": "--kv-cache-type",
    "runtime.flash_attention": "--flash-attention",
    "runtime.num_batch": "--num-batch",
    "runtime.use_mmap": "--use-mmap",
    "runtime.max_length": "--max-length",
    "runtime.past_present_share_buffer": "--past-present-share-buffer",
    "runtime.max_num_tokens": "--max-num-tokens",
    "runtime.kv_cache_tokens": "--kv-cache-tokens",
    "runtime.litert_backend": "--litert-backend",
    "runtime.max_context_length": "--max-context-length",
    "runtime.dtype_override": "--et-dtype",
    "runtime.quantize_kv_cache": "--quantize-kv-cache",
    "runtime.prompt_cache_size": "--prompt-cache-size",
    "kv_policy.recent_window": "--kv-recent-window",
    "kv_policy.history.ratio": "--kv-history-ratio",
    "kv_policy.history.bits": "--kv-history-bits",
    "kv_policy.history.group_size": "--kv-history-group-size",
    "kv_policy.evict_every": "--kv-evict-every",
}


def flag(field: str) -> str:
    """The flag that sets ``field``; a name the table does not hold is kept as given."""
    return FLAGS.get(field, field)


def cli_message(exc: BaseException | str) -> str:
    """An error (or a note) as the CLI shows it: a field error or :class:`~kvplan.errors.FieldText` with the
    flags (``--parallel: must be at least 1``, ``add --runtime llama.cpp``), a profile error's problems each so,
    anything else as its text."""
    if isinstance(exc, ProfileError):
        return "\n".join(cli_message(p) for p in exc.problems)
    if not isinstance(exc, (FieldError, FieldText)):
        return str(exc)

    def name(field: str, value: str | None) -> str:
        return flag(field) if value is None else f"{flag(field)} {value}"

    return exc.worded(name)
