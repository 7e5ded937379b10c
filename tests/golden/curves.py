"""Record (or compare) the numbers behind the plots: memory, decode, attention curves and a fit map.

    python tests/golden/curves.py            # write expected_curves.json from the current code
    python tests/golden/curves.py --check    # compare; exit 1 and list the differences

Every array is stored in full (integers exactly, rates as Python's repr of a float), so a refactor that
changes any point of any curve shows here, whatever the plot would look like.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
EXPECTED = HERE / "expected_curves.json"

# (device, model, ctx, knobs) — the cache models and runtimes the plots draw
CASES = [
    ("pixel8", "7b", 8192, {}),
    ("pixel8", "llama-3.1-8b", 8192, {"sequences": 2, "pinned_prefix_tokens": 512, "kv_bits": 8}),
    ("pixel8", "gemma-3-4b", 32768, {"runtime": "llama.cpp"}),
    ("pixel8", "gemma-2-2b", 16384, {"runtime": "transformers"}),
    ("pixel8", "7b", 4096, {"runtime": {"name": "transformers", "cache": "static", "max_cache_len": 8192}}),
    ("pixel8", "7b", 8192, {"kv_policy": {"recent_window": 1024, "history": {"ratio": 0.2, "k": {"bits": 4, "group_size": 128}}}}),
    ("iphone-15-pro", "qwen3-4b", 16384, {"target_tokens_per_s": 8.0}),
    ("pixel8", "deepseek-v2-lite", 4096, {"runtime": "llama.cpp", "sequences": 2}),
    ("pixel8", "mistral-7b-v0.1", 32768, {}),
]


def _plain(value):
    import numpy as np

    from kvplan.plan.facts import WarningFact
    from kvplan.render.warnings import word

    if isinstance(value, WarningFact):  # recorded as the plot commands print it
        return word(value)
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value.tolist()]
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (np.integer, np.floating)):
        return _plain(value.item())
    return value


def record() -> dict:
    from kvplan import Catalog
    from kvplan.curves import attention_curves, decode_curves, fit_map, memory_curves
    from kvplan.plan.knobs import Knobs, build_scenario

    cat = Catalog()
    out = {}
    scenarios = []
    for device, model, ctx, knobs in CASES:
        s = build_scenario(cat.device(device).profile, cat.model(model).profile, ctx, Knobs(**knobs))
        scenarios.append(s)
        key = f"{device} {model} {ctx} {json.dumps(knobs, sort_keys=True)}"
        m = memory_curves(s)
        d = decode_curves(s)
        out[key] = {
            "memory": {name: _plain(getattr(m, name)) for name in
                       ("ctx_tokens", "kv_bytes", "total_bytes", "buffers_bytes", "ctx_limit", "warnings")},
            "decode": {name: _plain(getattr(d, name)) for name in
                       ("ctx_tokens", "decode_tokens_per_s", "roofline_tokens_per_s", "streamed_tokens_per_s",
                        "verdict_codes", "fit_ctx", "aggregate_tokens_per_s", "ctx_limit", "warnings")},
        }
        try:
            a = attention_curves(s)
        except Exception as exc:  # noqa: BLE001 — a refusal is part of the record
            out[key]["attention"] = type(exc).__name__
        else:
            out[key]["attention"] = [{"ctx_tokens": _plain(a.ctx_tokens)}] + [
                {k: _plain(v) for k, v in vars(variant).items()} for variant in a.variants]
    fm = fit_map([scenarios[:3], scenarios[3:6]], ctx=8192)
    out["fit_map"] = {k: _plain(v) for k, v in vars(fm).items() if k != "evaluations"}
    return out


def main(argv: list[str]) -> int:
    got = json.loads(json.dumps(record()))
    if "--check" in argv:
        want = json.loads(EXPECTED.read_text(encoding="utf-8"))
        bad = [key for key in want.keys() | got.keys() if want.get(key) != got.get(key)]
        for key in sorted(bad):
            print(f"differs: {key}")
        return 1 if bad else 0
    EXPECTED.write_text(json.dumps(got, indent=0, sort_keys=True) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
