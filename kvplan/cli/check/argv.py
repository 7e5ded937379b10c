"""The ``kvplan check`` command line that evaluates exactly a scenario (for the changes ``fit`` suggests)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvplan.knob_table import KNOBS, argv_value

if TYPE_CHECKING:
    from kvplan.plan import Scenario


def check_argv(s: Scenario, device_ref: str, model_ref: str, profiles_dirs: list[str] | None = None) -> list[str]:
    """Arguments of ``kvplan check`` that evaluate exactly ``s`` (knobs a planning command can set): every knob of
    the table written back by its kind (:func:`kvplan.knob_table.argv_value`), the cache formats by
    :func:`format_argv`, in the table's order."""
    argv = ["kvplan", "check", "--device", device_ref, "--model", model_ref, "--ctx", str(s.ctx)]
    formats_written = False
    for knob in KNOBS:
        if knob.argv:
            text = argv_value(knob, getattr(s, knob.name))
            if text is not None:
                argv += [knob.flag, text]
        elif not knob.in_scenario and not formats_written:  # the cache-format knobs made s.k_format / v_format
            argv += format_argv(s.k_format, s.v_format)
            formats_written = True
    for folder in profiles_dirs or []:
        argv += ["--profiles-dir", folder]
    return argv


def format_argv(k, v) -> list[str]:
    """The cache-format options that give the (K, V) element formats ``k``, ``v`` (None: the model's)."""
    if k is not None and k == v and not _by_bits(k):  # a runtime type (q8_0 …): bits alone would be another format
        return ["--kv-type", k.name]
    if k is not None and v is not None and k == v and not k.group_size:
        return ["--kv-bits", str(k.bits)]
    argv: list[str] = []
    for side, f in (("k", k), ("v", v)):
        if f is not None:
            argv += [f"--{side}-bits", str(f.bits)] if _by_bits(f) else [f"--{side}-type", f.name]
    group = next((f.group_size for f in (k, v) if f is not None and f.group_size and _by_bits(f)), 0)
    if group:
        argv += ["--kv-group-size", str(group)]
    return argv


def _by_bits(f) -> bool:
    """Whether ``--kv-bits`` (with ``--kv-group-size``) names exactly the format ``f``, else it needs ``--kv-type``."""
    from kvplan.engine.formats import format_from_bits

    return 1 <= f.bits <= 32 and f == format_from_bits(f.bits, f.group_size)
