"""``kvplan calibrate --model``: which model profile each ``model_type`` of the bench rows stands for (named with
``--model NAME`` / ``MODEL_TYPE=NAME``, else recognised, each outcome a note in the flags' words); the facts of each
model come from :mod:`kvplan.calibrate.models`."""

from __future__ import annotations


def model_facts(catalog, specs: list[str], rows, notes: list[str]) -> dict:
    """``model_type`` → ModelFacts from the model profiles named by --model (KV bytes per token, shape)."""
    from kvplan.calibrate.models import model_facts as model_facts_of
    from kvplan.errors import UsageError

    types = sorted({r.model_type for r in rows})
    by_type: dict[str, str] = {}
    for spec in specs:
        if "=" in spec:
            prefix, ref = (part.strip() for part in spec.split("=", 1))
            if not prefix or not ref:
                raise UsageError(f"--model {spec!r}: expected 'MODEL_TYPE=NAME', with a "
                                 f"{'model type before' if not prefix else 'model name after'} '='")
            matched = [t for t in types if t == prefix or t.startswith(prefix + " ")]
            if not matched:
                raise UsageError(f"--model {spec!r}: no bench row has model type {prefix!r} "
                                 f"(the rows have: {', '.join(types)})")
            by_type.update({t: ref for t in matched})
        elif not spec.strip():
            raise UsageError("--model '': expected a model name")
        elif len(specs) == 1:
            by_type.update({t: spec for t in types if t not in by_type})
        else:
            raise UsageError(f"--model {spec!r}: with several --model, write each as 'MODEL_TYPE=NAME'")
    unnamed = [t for t in types if t not in by_type]
    if unnamed:
        by_type.update(_recognised_models(catalog, rows, unnamed, notes))
    facts = {}
    resolved_refs: dict[str, object] = {}  # a GGUF header or a Hub config is read once, whatever rows name it
    for model_type, ref in by_type.items():
        if ref not in resolved_refs:
            resolved_refs[ref] = resolved = catalog.model(ref)
            if resolved.note:
                notes.append(resolved.note)
        facts[model_type], said = model_facts_of(resolved_refs[ref].profile, model_type, rows)
        notes.append(said)
    return facts


def _recognised_models(catalog, rows, model_types: list[str], notes: list[str]) -> dict[str, str]:
    """``model_type`` → the library model its rows name (kvplan.calibrate.recognise), each outcome in a note."""
    from kvplan.calibrate.library import recognise_models

    found = recognise_models(catalog, rows, model_types)
    by_outcome: dict[tuple[str | None, str], list[str]] = {}
    for model_type, recognition in found.items():
        by_outcome.setdefault((recognition.name, recognition.reason), []).append(model_type)
    for (name, reason), typed in by_outcome.items():
        if name:
            notes.append(f"model recognised: {', '.join(typed)} → {name}: {reason} (--model overrides)")
        else:
            notes.append(f"model not recognised: {', '.join(typed)}: {reason}; its model_size is taken as read in "
                         "full and the KV cache left out (give --model NAME)")
    return {t: r.name for t, r in found.items() if r.name}
