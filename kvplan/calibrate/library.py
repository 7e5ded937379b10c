"""The library profiles llama-bench rows name, when the caller names none (``kvplan calibrate`` without a model
or a base device).

The rules are :mod:`kvplan.calibrate.recognise`; this module lists the library's profiles for it (only the
built-in ones: a user folder may hold copies or calibrated profiles of the same device and model).
"""

from __future__ import annotations

from kvplan.calibrate.recognise import DeviceCandidate, ModelCandidate, Recognition


def _builtin(catalog, kind: str):
    from kvplan.profiles.catalog import load_profile

    for _name, _aliases, path, origin in catalog.entries(kind):
        if origin == "builtin":
            yield load_profile(kind, path, fast=True)


def _model_candidate(model) -> ModelCandidate:
    from kvplan.engine.tensors import GGUF_ARCH, n_params, tensor_inventory
    from kvplan.errors import FieldError
    from kvplan.plan.weights import model_shape

    arch = GGUF_ARCH.get(model.architecture or "", model.architecture or "")
    try:
        gguf = n_params(tensor_inventory(model_shape(model)))
    except (FieldError, ValueError):  # no tensor layout for this architecture or shape
        gguf = None
    params = int(model.params) if model.params else None
    return ModelCandidate(model.name, arch, gguf, params)


def recognise_models(catalog, rows, model_types) -> dict[str, Recognition]:
    """``model_type`` → what recognition made of its rows, for each of ``model_types``."""
    from kvplan.calibrate.recognise import recognise_model

    candidates = [_model_candidate(m) for m in _builtin(catalog, "model")]
    result = {}
    for model_type in model_types:
        counts = sorted({r.model_n_params for r in rows if r.model_type == model_type})
        if len(counts) > 1:
            result[model_type] = Recognition(None, f"its rows disagree on model_n_params "
                                                   f"({', '.join(f'{n:,}' for n in counts)})")
        else:
            result[model_type] = recognise_model(model_type, counts[0], candidates)
    return result


def recognise_base(catalog, rows) -> Recognition:
    """The library device the rows' ``gpu_info``/``cpu_info`` (and backends) name."""
    from kvplan.calibrate.recognise import recognise_device

    candidates = [DeviceCandidate(d.name, d.description or "", d.platform, int(d.ram), _ram_text(d.ram))
                  for d in _builtin(catalog, "device")]
    hardware = [h for r in rows for h in (r.gpu_info, r.cpu_info) if h]
    return recognise_device(hardware, [r.backend for r in rows if r.backend], candidates)


def _ram_text(ram_bytes: int) -> str:
    gib = ram_bytes / 2**30
    return f"{gib:g} GiB" if gib == int(gib) else f"{ram_bytes / 1e9:g} GB"
