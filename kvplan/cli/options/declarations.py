"""Options shared by every command that describes a configuration, and turning them into a Scenario."""

from __future__ import annotations

from enum import Enum
from typing import Annotated

import typer

from kvplan.errors import QuantityError, UsageError

# Every option that takes a token count ends its help with this, so the k/M rule is never a guess.
from kvplan.knob_table import TOKENS_HELP  # noqa: E402 (one text for the knobs' help and the other options')


class Units(str, Enum):
    si = "si"
    iec = "iec"


DeviceOpt = Annotated[str, typer.Option("--device", "-d", help="Device: built-in name, alias, "
                                        "YAML path, or 'this' (this machine: its last probe, kept in kvplan's cache).")]
ModelOpt = Annotated[str, typer.Option("--model", "-m", help="Model: built-in name, alias, "
                                       "YAML path, or Hub id hf:ORG/NAME[@REV][:QUANT].")]
CtxOpt = Annotated[str, typer.Option("--ctx", "-c", help="Context length in tokens per sequence: 8192, 8,192, "
                                     f"8k, 32K. {TOKENS_HELP}")]
CheckCtxOpt = Annotated[str | None, typer.Option(
    "--ctx", "-c", help="Context length in tokens per sequence: 8192, 8,192, 8k, 32K. Required, except under "
    f"--runtime ollama, where it is Ollama's num_ctx and defaults as Ollama's does. {TOKENS_HELP}",
    show_default=False)]
NumCtxOpt = Annotated[str | None, typer.Option(
    "--num-ctx", help="ollama: Ollama's num_ctx, the context of each sequence (the same as --ctx under --runtime "
    "ollama; default OLLAMA_CONTEXT_LENGTH, else by GPU memory: 4096, 32768 from 23 GiB, 262144 from 47 GiB).",
    show_default=False)]
# typer's type for each kind of knob (kvplan.knob_table): the parsed kinds are taken as typed text and read by
# parse_knob, so an error names the option and shows the value as typed
_CLI_TYPES = {"count": int, "bits": int, "fractional_bits": float, "rate": float, "tokens": str, "size": str,
              "fraction": str, "weight_format": str, "cache_type": str, "runtime": str, "policy": str,
              "model": str, "image_size": str, "seconds": float, "path": str, "layers": int, "text": str, "app_limit": str}


def knob_option(name: str):
    """The option of the knob ``name`` (:data:`kvplan.knob_table.KNOBS`): its flag, its help, its CLI type."""
    from kvplan.knob_table import BY_NAME

    k = BY_NAME[name]
    bounds = {key: v for key, v in (("min", k.minimum), ("max", k.maximum)) if v is not None}
    kind = _CLI_TYPES[k.kind]
    return Annotated[kind if knob_default(name) is not None else kind | None,
                     typer.Option(*(k.flag, k.short) if k.short else (k.flag,), help=k.option_help, **bounds)]


def knob_default(name: str):
    """The knob's default as the CLI takes it: as a user types it (``10%``), else the value itself."""
    from kvplan.knob_table import BY_NAME

    k = BY_NAME[name]
    return k.typed_default if k.typed_default is not None else k.default


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


def check_ctx(ctx: str | None, num_ctx: str | None, runtime: str | None) -> int | None:
    """check's context: ``--ctx``, or under Ollama its ``--num-ctx`` (the same number; both must agree), or None
    under Ollama with neither (its default, decided with the device)."""
    from kvplan.errors import UsageError

    if num_ctx is not None and runtime != "ollama":
        raise UsageError("--num-ctx is Ollama's num_ctx; it needs --runtime ollama (else give --ctx)")
    tokens = parse_ctx(ctx) if ctx is not None else None
    num = parse_ctx(num_ctx, "--num-ctx") if num_ctx is not None else None
    if tokens is not None and num is not None and tokens != num:
        raise UsageError(f"--ctx {tokens:,} and --num-ctx {num:,} disagree; under --runtime ollama both are "
                         "num_ctx, give one")
    if tokens is None and num is None and runtime != "ollama":
        # worded as typer's own missing-option error (only Ollama has a default, so typer cannot require it)
        raise UsageError("Missing option '--ctx' / '-c'. (see 'kvplan check --help')")
    return tokens if tokens is not None else num


def parse_ctx(text: str, option: str = "--ctx", noun: str = "a context") -> int:
    """A token-count option (:func:`kvplan.units.parse_tokens`), errors naming ``option``."""
    from kvplan.units import parse_tokens

    return parse_option(option, parse_tokens, text, noun=noun)


def parse_size_option(text: str | None, option: str) -> int | None:
    """A size option (:func:`kvplan.units.parse_size_bytes`), None when not given; errors naming ``option``."""
    from kvplan.units import parse_size_bytes

    return None if text is None else parse_option(option, parse_size_bytes, text)


def parse_knob(name: str, value):
    """The value of knob ``name`` as typed on the command line, read by its kind (errors naming its flag)."""
    from kvplan.knob_table import BY_NAME

    k = BY_NAME[name]
    if value is None:
        return None
    if k.kind == "tokens":
        if k.default == 0 and str(value).strip() in ("0", ""):  # --pinned-prefix 0: none
            return 0
        return parse_ctx(value, k.flag, k.noun) if value else None
    if k.kind == "size":
        return parse_size_option(value, k.flag)
    if k.kind == "fraction":
        from kvplan.units import parse_fraction

        return parse_option(k.flag, parse_fraction, value, zero_ok=True, one_ok=False)
    return value


def knobs(**typed):
    """:class:`~kvplan.plan.knobs.Knobs` from the single-valued knob options as typed (keyed by knob name, parsed
    here, errors naming the option): the one place every command that describes a configuration turns its
    options into knobs. ``runtime`` / ``kv_policy`` are already built by
    :func:`kvplan.cli.options.runtime.runtime_knob` / :func:`kvplan.cli.options.policy.policy_knob`."""
    from kvplan.knob_table import BY_NAME
    from kvplan.plan import Knobs  # configure pulls in plan: only when a command runs

    values = {name: parse_knob(name, value) for name, value in typed.items()}
    for name in typed:
        if values[name] is None and BY_NAME[name].default is not None:
            values[name] = BY_NAME[name].default
    return Knobs(**values)


def with_draft_resolved(knobs, catalog):
    """``knobs`` with a draft model named by a string resolved through ``catalog`` (the command's own: its
    ``--profiles-dir``, ``hf:`` references, ``.gguf`` files), as ``--model`` is; unchanged without a draft."""
    from kvplan.plan.mtp_head import is_mtp

    if not isinstance(getattr(knobs, "draft", None), str) or is_mtp(knobs.draft):  # mtp: the model's own head
        return knobs
    from dataclasses import replace

    resolved = catalog.model(knobs.draft)
    return replace(knobs, draft=resolved.profile)
