"""Options that set a KV cache compression policy (docs/kv-policies.md), shared by the commands that take one."""

from __future__ import annotations

from typing import Annotated

import typer

from kvplan.cli.options.declarations import TOKENS_HELP, knob_option
from kvplan.errors import UsageError

KvPolicyOpt = knob_option("kv_policy")  # the knob; the flags below build an inline policy
KvRecentWindowOpt = Annotated[str | None, typer.Option(
    "--kv-recent-window", help="Policy: keep the most recent this many tokens in the cache's own format "
    f"(8192, 4k); older tokens follow --kv-history-ratio. {TOKENS_HELP}")]
KvHistoryRatioOpt = Annotated[str | None, typer.Option(
    "--kv-history-ratio", help="Policy: fraction of the tokens older than the recent window kept after "
    "eviction: 0.2 or 20%; below 100% it needs --kv-recent-window.")]
KvHistoryBitsOpt = Annotated[str | None, typer.Option(
    "--kv-history-bits", help="Policy: bits of the kept older tokens, K and V (4) or K/V (4/3); "
    "default: the recent format.")]
KvHistoryGroupOpt = Annotated[int | None, typer.Option(
    "--kv-history-group-size", min=0, help="Policy: one fp16 scale per this many history values "
    "(default 128; 0: no groups).")]
KvEvictEveryOpt = Annotated[str | None, typer.Option(
    "--kv-evict-every", help="Policy: run eviction every this many new tokens (default 1); the tokens "
    f"waiting for it count in the peak. {TOKENS_HELP}")]


def policy_knob(kv_policy: str | None, recent_window: str | None, history_ratio: str | None,
                history_bits: str | None, history_group_size: int | None, evict_every: str | None):
    """The ``Knobs.kv_policy`` value of these options: a file path, ``none``, a PolicySpec, or None."""
    flags = (recent_window, history_ratio, history_bits, history_group_size, evict_every)
    if all(v is None for v in flags):
        return kv_policy
    if kv_policy is not None:
        raise UsageError("give --kv-policy or the --kv-recent-window / --kv-history-* / --kv-evict-every flags, "
                         "not both")
    from kvplan.cli.options.declarations import parse_ctx

    return policy_from_options(
        recent_window=parse_ctx(recent_window, "--kv-recent-window", "a window") if recent_window is not None
        else None, history_ratio=history_ratio, history_bits=history_bits, history_group_size=history_group_size,
        evict_every=parse_ctx(evict_every, "--kv-evict-every", "an eviction period") if evict_every is not None
        else None)


def policy_from_options(recent_window: int | None = None, history_ratio: str | None = None,
                        history_bits: str | None = None, history_group_size: int | None = None,
                        evict_every: int | None = None):
    """The simple policy of the ``--kv-recent-window`` … flags (None when no flag is given).

    ``history_bits`` is ``"4"`` (K and V) or ``"4/3"`` (K / V); the history format is
    group-quantized with one fp16 scale per ``history_group_size`` values (default 128, 0 = none).
    """
    from kvplan.cli.options.declarations import parse_option
    from kvplan.profiles.policy import PolicySpec
    from kvplan.units import parse_fraction

    given = [recent_window, history_ratio, history_bits, history_group_size, evict_every]
    if all(v is None for v in given):
        return None
    if history_ratio is None:
        raise UsageError("--kv-history-ratio is needed with the --kv-recent-window / --kv-history-* flags")
    ratio = parse_option("--kv-history-ratio", parse_fraction, history_ratio, zero_ok=True)
    history: dict = {"ratio": history_ratio}
    group = 128 if history_group_size is None else history_group_size
    if history_group_size is not None and history_bits is None:
        raise UsageError("--kv-history-group-size needs --kv-history-bits")
    if history_bits is not None:
        from kvplan.plan.knobs import check_bit_width

        parts = str(history_bits).split("/")
        if len(parts) > 2 or not all(p.strip().isdigit() for p in parts):
            raise UsageError(f"--kv-history-bits: expected bits like 4 or K/V bits like 4/3, got {history_bits!r}")
        for side, bits in zip("kv", parts if len(parts) == 2 else parts * 2):
            check_bit_width("kv_policy.history.bits", int(bits))  # the --kv-bits rule, in kvplan's words
            history[side] = {"bits": int(bits), "group_size": group} if group else {"bits": int(bits)}
    if ratio < 1 and not recent_window:  # the policy file's rule (PolicySpec), in the flags' words
        raise UsageError(f"--kv-history-ratio {history_ratio} without --kv-recent-window evicts the newest tokens "
                         f"too ({1 - ratio:.0%} of all tokens, the one just generated included): add "
                         "--kv-recent-window (the newest tokens kept whole, e.g. --kv-recent-window 4k), or keep "
                         "every token with --kv-history-ratio 100%")
    spec = {"recent_window": recent_window or 0, "history": history, "evict_every": evict_every or 1}
    name = f"window-{recent_window or 0}-history-{history_ratio}" + (f"-{history_bits}bit" if history_bits else "")
    from pydantic import ValidationError

    try:
        return PolicySpec.model_validate({"name": name, **spec})
    except ValidationError as exc:  # a rule of the policy file the checks above do not repeat
        from kvplan.errors import FieldError

        fields = {"recent_window": "kv_policy.recent_window", "ratio": "kv_policy.history.ratio",
                  "bits": "kv_policy.history.bits", "group_size": "kv_policy.history.group_size",
                  "evict_every": "kv_policy.evict_every"}
        e = exc.errors()[0]
        message = _in_kvplan_words(e)
        field = next((fields[p] for p in reversed(e["loc"]) if p in fields), None)
        if field is None:
            raise UsageError(f"the --kv-recent-window / --kv-history-* flags: {message}") from None
        raise FieldError(field, message) from None


def _in_kvplan_words(error: dict) -> str:
    """A pydantic error of the policy schema as kvplan words its own range errors."""
    bound = error.get("ctx", {})
    got = error.get("input")
    if error["type"] in ("less_than_equal", "less_than") and bound:
        limit = bound.get("le", bound.get("lt"))
        return f"must be {'at most' if 'le' in bound else 'below'} {limit:,}, got {got!r}"
    if error["type"] in ("greater_than_equal", "greater_than") and bound:
        limit = bound.get("ge", bound.get("gt"))
        return f"must be {'at least' if 'ge' in bound else 'above'} {limit:,}, got {got!r}"
    return error["msg"].removeprefix("Value error, ")


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
