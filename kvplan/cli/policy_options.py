"""Options that set a KV cache compression policy (docs/kv-policies.md), shared by the commands that take one."""

from __future__ import annotations

from typing import Annotated

import typer

from kvplan.errors import UsageError

KvPolicyOpt = Annotated[str | None, typer.Option(
    "--kv-policy", help="KV cache compression policy: a YAML file (docs/kv-policies.md), or 'none' for the "
    "plain cache even when the model profile has a kv_policy.")]
KvRecentWindowOpt = Annotated[str | None, typer.Option(
    "--kv-recent-window", help="Policy: keep the most recent this many tokens in the cache's own format "
    "(8192, 4k); older tokens follow --kv-history-ratio.")]
KvHistoryRatioOpt = Annotated[str | None, typer.Option(
    "--kv-history-ratio", help="Policy: fraction of the tokens older than the recent window kept after "
    "eviction: 0.2 or 20%.")]
KvHistoryBitsOpt = Annotated[str | None, typer.Option(
    "--kv-history-bits", help="Policy: bits of the kept older tokens, K and V (4) or K/V (4/3); "
    "default: the recent format.")]
KvHistoryGroupOpt = Annotated[int | None, typer.Option(
    "--kv-history-group-size", min=0, help="Policy: one fp16 scale per this many history values "
    "(default 128; 0: no groups).")]
KvEvictEveryOpt = Annotated[str | None, typer.Option(
    "--kv-evict-every", help="Policy: run eviction every this many new tokens (default 1); the tokens "
    "waiting for it count in the peak.")]


def policy_knob(kv_policy: str | None, recent_window: str | None, history_ratio: str | None,
                history_bits: str | None, history_group_size: int | None, evict_every: str | None):
    """The ``Knobs.kv_policy`` value of these options: a file path, ``none``, a PolicySpec, or None."""
    flags = (recent_window, history_ratio, history_bits, history_group_size, evict_every)
    if all(v is None for v in flags):
        return kv_policy
    if kv_policy is not None:
        raise UsageError("give --kv-policy or the --kv-recent-window / --kv-history-* / --kv-evict-every flags, "
                         "not both")
    from kvplan.cli.options import parse_ctx
    from kvplan.profiles.policy import policy_from_options

    return policy_from_options(
        recent_window=parse_ctx(recent_window, "--kv-recent-window") if recent_window is not None else None,
        history_ratio=history_ratio, history_bits=history_bits, history_group_size=history_group_size,
        evict_every=parse_ctx(evict_every, "--kv-evict-every") if evict_every is not None else None)


def policy_argv(kv_policy: str | None, recent_window: str | None, history_ratio: str | None,
                history_bits: str | None, history_group_size: int | None, evict_every: str | None) -> list[str]:
    """These options as command-line arguments (for a suggested ``kvplan check`` command)."""
    argv: list[str] = []
    for option, value in (("--kv-policy", kv_policy), ("--kv-recent-window", recent_window),
                          ("--kv-history-ratio", history_ratio), ("--kv-history-bits", history_bits),
                          ("--kv-history-group-size", history_group_size), ("--kv-evict-every", evict_every)):
        if value is not None:
            argv += [option, str(value)]
    return argv
