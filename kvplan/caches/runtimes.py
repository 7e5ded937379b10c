"""The runtime-exact cache models: the one a runtime spec names, from the table of every runtime's cache model."""

from __future__ import annotations

from kvplan.caches.errors import CacheTypeError
from kvplan.errors import FieldError
from kvplan.profiles.runtime import MlxLmSpec, RuntimeSpec, llamacpp_spec_of


def asked_as(s, side: str) -> tuple[str | None, str]:
    """How the scenario ``s`` asked for its ``side`` ("k" or "v") cache type: (the field, the value).

    ``kv_…`` when K and V are the same, ``k_…`` / ``v_…`` otherwise; ``(kv_type, q8_0)`` for a named
    type, ``(kv_bits, 3 bits (int3))`` for a bit width (``format_from_bits``' ``intN``, ``intN/gG``);
    ``(None, the model's own type)`` when the scenario sets none."""
    from kvplan.engine.formats import NAMED_FORMATS

    k, v = s.k_format, s.v_format
    fmt = k if side == "k" else v
    if fmt is None:
        own = s.model.k_format() if side == "k" else s.model.v_format()
        return None, f"{s.model.name}'s {own.name} cache (its profile's kv_type / kv_bits)"
    prefix = "kv" if k is not None and v is not None and k == v else side
    if NAMED_FORMATS.get(fmt.name) is fmt or not fmt.name.startswith("int"):
        return f"{prefix}_type", fmt.name
    return f"{prefix}_bits", f"{fmt.bits} bits ({fmt.name})"


# each runtime's cache model: "module:function", imported only when that runtime is asked for (a check stays fast)
CACHE_MODELS = {
    "llama.cpp": "kvplan.caches.llamacpp:llamacpp_cache",
    "ollama": "kvplan.caches.ollama:ollama_cache",
    "transformers": "kvplan.caches.transformers:transformers_cache",
    "mlx-lm": "kvplan.caches.mlx:mlx_cache",
    "onnxruntime-genai": "kvplan.caches.ortgenai:ortgenai_cache",
    "litert-lm": "kvplan.caches.litertlm:litertlm_cache",
    "executorch": "kvplan.caches.executorch:executorch_cache",
}


def cache_model(spec: RuntimeSpec, model, k_format=None, v_format=None, sliding_window=None):
    """The runtime-exact :class:`~kvplan.plan.CacheModel` for ``model`` under ``spec`` (``sliding_window``:
    every layer behind that window, for a runtime that can put one on a model; only such a runtime's cache
    function takes it)."""
    import importlib

    where = CACHE_MODELS.get(getattr(spec, "name", None))
    if not isinstance(spec, RuntimeSpec) or where is None:
        raise FieldError("runtime", f"not a runtime spec: {spec!r}")
    module, function = where.split(":")
    build = getattr(importlib.import_module(module), function)
    window = {} if sliding_window is None else {"sliding_window": sliding_window}
    return build(spec, model, k_format, v_format, **window)


def runtime_cache_for(s):
    """The runtime-exact cache of a :class:`~kvplan.plan.Scenario` whose ``runtime`` is set."""
    policy = getattr(s, "kv_policy", None)
    if policy is not None and not getattr(policy, "is_plain", False):
        raise FieldError(("kv_policy", "runtime"), "a compression policy is not modelled inside a runtime; "
                         "give one of them", lead=" and ")
    if s.sliding_window is not None and llamacpp_spec_of(s.runtime) is not None:
        raise FieldError("sliding_window", "llama.cpp has no option to put a window on a model; "
                         f"drop it with {{runtime={s.runtime.name}}}", mentions=("runtime",))
    if s.sliding_window is not None and isinstance(s.runtime, MlxLmSpec):
        raise FieldError("sliding_window", "MLX-LM puts a window on a model with {runtime.max_kv_size}; drop "
                         "{sliding_window} with {runtime=mlx-lm}", mentions=("runtime", "runtime.max_kv_size"))
    try:
        return cache_model(s.runtime, s.model, s.k_format, s.v_format, s.sliding_window)
    except CacheTypeError as exc:  # name the field the user set, not k_type
        raise exc.given_as(*asked_as(s, exc.side)) from None
    except FieldError as exc:
        if exc.fields != ("k_type", "v_type"):
            raise
        # K and V refused as a pair (an MLA model): name the fields the user set, --k-bits/--v-bits or the types
        given = tuple(dict.fromkeys(f for f in (asked_as(s, "k")[0], asked_as(s, "v")[0]) if f)) or exc.fields
        one = "kv_bits" if all(f.endswith("_bits") for f in given) else "kv_type"
        raise FieldError(given, exc.message.replace("{kv_type}", "{" + one + "}"), about=exc.about,
                         mentions=tuple(dict.fromkeys(exc.mentions + (one,)))) from None
