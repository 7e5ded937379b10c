"""Options shared by every command that describes a configuration, and turning them into a Scenario."""

from __future__ import annotations

from enum import Enum
from typing import Annotated

import typer

from kvplan.errors import QuantityError, UsageError
from kvplan.units import TOKENS_RULE

# Every option that takes a token count ends its help with this, so the k/M rule is never a guess.
TOKENS_HELP = f"Tokens: {TOKENS_RULE}."


class Units(str, Enum):
    si = "si"
    iec = "iec"


DeviceOpt = Annotated[str, typer.Option("--device", "-d", help="Device: built-in name, alias, "
                                        "YAML path, or 'this' (this machine: its last probe, kept in kvplan's cache).")]
ModelOpt = Annotated[str, typer.Option("--model", "-m", help="Model: built-in name, alias, "
                                       "YAML path, or Hub id hf:ORG/NAME[@REV][:QUANT].")]
CtxOpt = Annotated[str, typer.Option("--ctx", "-c", help="Context length in tokens per sequence: 8192, 8,192, "
                                     f"8k, 32K. {TOKENS_HELP}")]
SequencesOpt = Annotated[int, typer.Option("--sequences", "-n", min=1, max=1_000_000,
                                           help="Concurrent sequences, each with its own cache.")]
PinnedOpt = Annotated[str, typer.Option("--pinned-prefix", help="Tokens of a shared prefix (system prompt) "
                                        f"whose cache stays resident, counted once (2k). {TOKENS_HELP}")]
WeightBitsOpt = Annotated[float | None, typer.Option("--weight-bits", help="Bits per weight (may be "
                                                     "fractional, q4_0 is 4.5); default: the model's.")]
WeightTypeOpt = Annotated[str | None, typer.Option("--weight-type", help="Weight format by name, priced tensor "
                                                   "by tensor: a GGUF type (q4_k_m, q4_0, q8_0, q6_k, iq4_xs, …) "
                                                   "or mlx-4bit, mlx-8bit, gptq-4bit, awq-4bit, executorch-8da4w.")]
WeightGroupOpt = Annotated[int | None, typer.Option("--weight-group-size", min=1, help="Group size of a "
                                                    "group-quantized --weight-type (MLX default 64, GPTQ/AWQ 128).")]
KvBitsOpt = Annotated[int | None, typer.Option("--kv-bits", help="Bits per cached K and V value (1-32).")]
KBitsOpt = Annotated[int | None, typer.Option("--k-bits", help="Bits per cached key value (overrides --kv-bits).")]
VBitsOpt = Annotated[int | None, typer.Option("--v-bits", help="Bits per cached value (overrides --kv-bits).")]
GroupOpt = Annotated[int | None, typer.Option("--kv-group-size", min=1, help="Group-quantize the cache: one fp16 "
                                              "scale per this many values.")]
KvTypeOpt = Annotated[str | None, typer.Option("--kv-type", help="Cache type by runtime name: f32, f16, bf16, "
                                               "fp8, q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl.")]
KTypeOpt = Annotated[str | None, typer.Option("--k-type", help="Key cache type (overrides --kv-type).")]
VTypeOpt = Annotated[str | None, typer.Option("--v-type", help="Value cache type (overrides --kv-type).")]
OsReserveOpt = Annotated[str | None, typer.Option("--os-reserve", help="Override the device's OS reserve, with "
                                                  "its unit: '3 GB', '2.5 GiB' (a bare 3 is refused).")]
MarginOpt = Annotated[str, typer.Option("--margin", help="Headroom under which a fit is 'tight': a "
                                        "fraction of the budget (0.1) or a percentage (10%); a bare number "
                                        "above 1 is refused.")]
TargetOpt = Annotated[float | None, typer.Option("--target-tok-s",
                                                 help="Decode target: also report the largest context at "
                                                 "or above this many tokens/s.")]
SlidingWindowOpt = Annotated[str | None, typer.Option("--sliding-window", help="Put every layer behind a "
                                                    f"sliding window of this many tokens (4096, 4k). {TOKENS_HELP}")]
UnitsOpt = Annotated[Units, typer.Option("--units", help="Sizes in SI (GB = 10^9) or IEC (GiB = 2^30).",
                                             case_sensitive=False)]
ProfilesDirOpt = Annotated[list[str] | None, typer.Option("--profiles-dir", help="Folder of your own "
                                                          "profiles, searched before the built-ins "
                                                          "(repeatable; also $KVPLAN_PROFILES).")]


def parse_option(option: str, parse, text, **how):
    """``parse(text, **how)`` (a :mod:`kvplan.units` parser) for the value of ``option``: the one place an
    option's quantity error gets the option's name (``--ram: 8 has no unit: did you mean 8 GB?``), since
    the parser knows the value and not where it was typed."""
    try:
        return parse(text, **how)
    except QuantityError as exc:
        raise UsageError(f"{option}: {exc}") from None


def parse_ctx(text: str, option: str = "--ctx", noun: str = "a context") -> int:
    """A token-count option (:func:`kvplan.units.parse_tokens`), errors naming ``option``."""
    from kvplan.units import parse_tokens

    return parse_option(option, parse_tokens, text, noun=noun)


def parse_margin(text: str) -> float:
    """``--margin``: a fraction of the budget in [0, 1), ``0.1`` or ``10%`` (:func:`kvplan.units.parse_fraction`)."""
    from kvplan.units import parse_fraction

    return parse_option("--margin", parse_fraction, text, zero_ok=True, one_ok=False)


def parse_size_option(text: str | None, option: str) -> int | None:
    """A size option (:func:`kvplan.units.parse_size_bytes`), None when not given; errors naming ``option``."""
    from kvplan.units import parse_size_bytes

    return None if text is None else parse_option(option, parse_size_bytes, text)


def pinned_tokens(text: str) -> int:
    return parse_ctx(text, "--pinned-prefix", "a prefix") if str(text).strip() not in ("0", "") else 0


def knobs(*, sequences: int = 1, pinned_prefix: str = "0", weight_bits=None, weight_type=None,
          weight_group_size=None, kv_bits=None, k_bits=None,
          v_bits=None, kv_group_size: int | None = None, kv_type: str | None = None, k_type: str | None = None,
          v_type: str | None = None, sliding_window: str | None = None, os_reserve: str | None = None,
          margin: str = "10%", target_tok_s: float | None = None, runtime=None, kv_policy=None):
    """:class:`~kvplan.plan.knobs.Knobs` from single-valued CLI options (parsed, errors naming the option),
    the one place every command that describes a configuration turns its options into knobs.

    ``runtime`` / ``kv_policy`` are already built by :func:`kvplan.cli.options.runtime.runtime_knob` /
    :func:`kvplan.cli.options.policy.policy_knob`."""
    from kvplan.plan import Knobs  # configure pulls in plan: only when a command runs

    window = parse_ctx(sliding_window, "--sliding-window", "a window") if sliding_window else None
    return Knobs(sequences=sequences, pinned_prefix_tokens=pinned_tokens(pinned_prefix), weight_bits=weight_bits,
                 weight_type=weight_type, weight_group_size=weight_group_size,
                 kv_bits=kv_bits, k_bits=k_bits, v_bits=v_bits, kv_group_size=kv_group_size, kv_type=kv_type,
                 k_type=k_type, v_type=v_type, sliding_window=window,
                 os_reserve_bytes=parse_size_option(os_reserve, "--os-reserve"),
                 margin_fraction=parse_margin(margin), target_tokens_per_s=target_tok_s,
                 runtime=runtime, kv_policy=kv_policy)
