"""kvplan: will this model, at this context, fit on this device, and how fast will it decode?

The library is usable without the CLI::

    from kvplan import Catalog
    from kvplan import Scenario
    from kvplan import evaluate
    cat = Catalog()
    ev = evaluate(Scenario(cat.device("pixel8").profile, cat.model("7b").profile, ctx=8192))
    ev.kv_bytes, ev.verdict

Heavy modules are imported on first use so that ``import kvplan`` stays cheap.
"""

from __future__ import annotations

__all__ = ["Catalog", "Scenario", "Evaluation", "evaluate", "__version__"]


def __getattr__(name: str):
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("kvplan")
        except PackageNotFoundError:  # running from a checkout that was never installed
            return "0+unknown"
    if name == "Catalog":
        from kvplan.profiles.catalog import Catalog

        return Catalog
    if name in {"Scenario", "Evaluation", "evaluate"}:
        import kvplan.plan

        return getattr(kvplan.plan, name)
    raise AttributeError(f"module 'kvplan' has no attribute {name!r}")
