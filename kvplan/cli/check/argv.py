"""The ``kvplan check`` command line that evaluates exactly a scenario (for the changes ``fit`` suggests)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvplan.engine import DEFAULT_MARGIN_FRACTION

if TYPE_CHECKING:
    from kvplan.plan import Scenario


def check_argv(s: Scenario, device_ref: str, model_ref: str, profiles_dirs: list[str] | None = None) -> list[str]:
    """Arguments of ``kvplan check`` that evaluate exactly ``s`` (knobs a planning command can set)."""
    argv = ["kvplan", "check", "--device", device_ref, "--model", model_ref, "--ctx", str(s.ctx)]
    if s.sequences != 1:
        argv += ["--sequences", str(s.sequences)]
    if s.pinned_prefix_tokens:
        argv += ["--pinned-prefix", str(s.pinned_prefix_tokens)]
    if s.weight_bits is not None:
        argv += ["--weight-bits", f"{s.weight_bits:g}"]
    if s.weight_type is not None:
        argv += ["--weight-type", s.weight_type]
    if s.weight_group_size is not None:
        argv += ["--weight-group-size", str(s.weight_group_size)]
    k, v = s.k_format, s.v_format
    if k is not None and k == v and not _by_bits(k):  # a runtime type (q8_0 …): bits alone would be another format
        argv += ["--kv-type", k.name]
    elif k is not None and v is not None and k == v and not k.group_size:
        argv += ["--kv-bits", str(k.bits)]
    else:
        for side, f in (("k", k), ("v", v)):
            if f is not None:
                argv += [f"--{side}-bits", str(f.bits)] if _by_bits(f) else [f"--{side}-type", f.name]
        group = next((f.group_size for f in (k, v) if f is not None and f.group_size and _by_bits(f)), 0)
        if group:
            argv += ["--kv-group-size", str(group)]
    if s.sliding_window is not None:
        argv += ["--sliding-window", str(s.sliding_window)]
    if s.os_reserve_bytes is not None:
        argv += ["--os-reserve", f"{s.os_reserve_bytes}B"]  # sizes always carry a unit
    if s.margin_fraction != DEFAULT_MARGIN_FRACTION:
        argv += ["--margin", f"{s.margin_fraction * 100:g}%"]
    for folder in profiles_dirs or []:
        argv += ["--profiles-dir", folder]
    return argv


def _by_bits(f) -> bool:
    """Whether ``--kv-bits`` (with ``--kv-group-size``) names exactly the format ``f``, else it needs ``--kv-type``."""
    from kvplan.engine.formats import format_from_bits

    return 1 <= f.bits <= 32 and f == format_from_bits(f.bits, f.group_size)
