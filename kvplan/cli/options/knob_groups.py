"""The option groups every command that describes a configuration shares, declared once.

- :data:`CACHE`: one option per knob of the table's cache group (:data:`kvplan.knob_table.CACHE_KNOBS`: sequences,
  pinned prefix, weight and cache formats, OS reserve, margin, target, window);
- :data:`POLICY`: a KV compression policy (a file, or the ``--kv-recent-window`` … flags);
- :data:`RUNTIME`: ``--runtime`` and each runtime's own options.

:func:`knobs_of` turns the three, as given, into :class:`~kvplan.plan.Knobs`. A command takes a group by
naming a parameter after it and decorating itself with :func:`~kvplan.cli.options.groups.with_groups`.
"""

from __future__ import annotations

import inspect

from kvplan.cli.options import declarations as o
from kvplan.cli.options import policy as po
from kvplan.cli.options import runtime as ro
from kvplan.cli.options.groups import Given, OptionGroup
from kvplan.knob_table import CACHE_KNOBS


def _cache(**typed) -> dict:
    """The cache knobs as typed, keyed by knob name (:func:`kvplan.cli.options.declarations.knobs` parses them)."""
    return typed


# one option per knob of the table's cache group, in its order (kvplan.knob_table.CACHE_KNOBS)
_cache.__signature__ = inspect.Signature([
    inspect.Parameter(k.name, inspect.Parameter.KEYWORD_ONLY, default=o.knob_default(k.name),
                      annotation=o.knob_option(k.name)) for k in CACHE_KNOBS])


def _policy(
    kv_policy: po.KvPolicyOpt = None,
    kv_recent_window: po.KvRecentWindowOpt = None,
    kv_history_ratio: po.KvHistoryRatioOpt = None,
    kv_history_bits: po.KvHistoryBitsOpt = None,
    kv_history_group_size: po.KvHistoryGroupOpt = None,
    kv_evict_every: po.KvEvictEveryOpt = None,
):
    """The ``Knobs.kv_policy`` value of the policy options."""
    return po.policy_knob(kv_policy, kv_recent_window, kv_history_ratio, kv_history_bits, kv_history_group_size,
                          kv_evict_every)


def _runtime(runtime: ro.RuntimeOpt = None, **options):
    """The ``Knobs.runtime`` value of the runtime options."""
    return ro.runtime_knob(runtime, **options)


# --runtime, then each runtime's own options (kvplan.cli.options.runtime.RUNTIME_OPTIONS)
_runtime.__signature__ = inspect.Signature([
    inspect.Parameter("runtime", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=ro.RuntimeOpt),
    *(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=declared)
      for name, declared, default in ro.RUNTIME_OPTIONS)])


CACHE = OptionGroup(_cache)
POLICY = OptionGroup(_policy)
RUNTIME = OptionGroup(_runtime)


def knobs_of(cache: Given | dict, policy: Given, runtime: Given):
    """:class:`~kvplan.plan.Knobs` of the three groups as given (a dict stands for cache keywords a command
    assembled itself, e.g. one point of a sweep's lists)."""
    values = cache.values if isinstance(cache, Given) else cache
    return o.knobs(**values, kv_policy=policy.build(), runtime=runtime.build())


def knobs_side_by_side(cache: Given, policy: Given, runtime: Given) -> tuple[list, bool]:
    """:func:`knobs_of`, once per runtime a comma-separated ``--runtime`` names (each runtime taking its own options,
    the other knobs the same); and whether several were named."""
    named = runtime["runtime"]
    if named is None or "," not in named:
        return [knobs_of(cache, policy, runtime)], False
    from dataclasses import replace

    base = o.knobs(**cache.values, kv_policy=policy.build(), runtime=None)
    options = {k: v for k, v in runtime.values.items() if k != "runtime"}
    return [replace(base, runtime=spec) for spec in ro.runtime_knobs(named, **options)], True


def argv_of(policy: Given, runtime: Given, spec=None) -> list[str]:
    """The runtime and policy options as command-line arguments (for a suggested command): the runtime as ``spec``
    (the runtime a suggested change runs under, its options as changed) when given, else as given."""
    runtime_part = ro.spec_argv(spec) if spec is not None else ro.runtime_argv(**runtime.values)
    return runtime_part + po.policy_argv(*policy.values.values())
