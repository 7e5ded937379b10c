"""The vectorized JSON rows of `kvplan sweep` are byte for byte what json.dumps writes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvplan import sweep
from kvplan.profiles.catalog import Catalog
from kvplan.plan import Knobs, build_scenario
from kvplan.render import csvfast
from kvplan.render import sweep as render

DATA = Path(__file__).parents[1] / "data"
REF_PHONE = str(DATA / "profiles" / "ref-phone.yaml")
REF_7B = str(DATA / "profiles" / "ref-7b.yaml")
COMPUTE_PHONE = str(DATA / "planning" / "compute-phone.yaml")
WINDOWED = str(DATA / "planning" / "windowed-1b.yaml")


def _parts():
    cat = Catalog()
    parts = []
    for device, model, knobs in [(REF_PHONE, REF_7B, Knobs()), (COMPUTE_PHONE, WINDOWED, Knobs(kv_bits=8)),
                                 (REF_PHONE, REF_7B, Knobs(weight_bits=20)),  # 20-bit weights: nothing fits
                                 ("pixel8", "7b", Knobs())]:  # llama-2-7b's trained context: 4,096
        base = build_scenario(cat.device(device).profile, cat.model(model).profile, 1, knobs)
        ctx, seq = sweep.grid([1, 511, 4096, 100_000, 10_000_000], [1, 3])
        parts.append(sweep.evaluate_group(base, ctx, seq))
    return parts


def _document(parts, chunk_rows):
    rows = sum(len(p) for p in parts)
    body = b"".join(data for _, data in render.json_chunks(parts, chunk_rows))
    return render.json_head(rows, parts[0].columns()) + body + render.JSON_TAIL


@pytest.mark.parametrize("chunk_rows", [1, 3, 7, 1000])
def test_fast_json_equals_json_dumps(chunk_rows):
    parts = _parts()
    cols = sweep.concat(parts)
    expected = json.dumps({**render.json_fields(len(cols), cols.columns()),
                           "rows": render.json_rows(cols)}, allow_nan=False) + "\n"
    text = _document(parts, chunk_rows).decode("ascii")
    assert text == expected
    doc = json.loads(text)
    # the fixtures cover null max_ctx (20-bit weights exceed the budget), null prefill_s (no compute) and numbers
    assert any(r["max_ctx"] is None for r in doc["rows"]) and any(r["max_ctx"] for r in doc["rows"])
    assert any(r["prefill_s"] is None for r in doc["rows"]) and any(r["prefill_s"] for r in doc["rows"])
    assert any(r["headroom_bytes"] < 0 for r in doc["rows"])
    assert {r["max_ctx_trained"] for r in doc["rows"]} == {None, 4096}
    assert {r["max_ctx_limited_by"] for r in doc["rows"]} == {"memory", "weights"}
    assert "max_ctx_at_target" not in doc["columns"]  # only a sweep with a decode target has it


def test_fast_json_with_a_target_and_a_runtime_equals_json_dumps():
    cat = Catalog()
    d, m = cat.device(REF_PHONE).profile, cat.model(REF_7B).profile
    parts = [sweep.evaluate_group(build_scenario(d, m, 1, knobs), *sweep.grid([1, 4096, 100_000], [1, 2]))
             for knobs in (Knobs(target_tokens_per_s=5.0, runtime="transformers"),
                           Knobs(target_tokens_per_s=5.0, weight_bits=20, runtime="transformers"))]
    cols = sweep.concat(parts)
    assert cols.columns()[-1] == "max_ctx_at_target"
    expected = json.dumps({**render.json_fields(len(cols), cols.columns()),
                           "rows": render.json_rows(cols)}, allow_nan=False) + "\n"
    text = _document(parts, 4).decode("ascii")
    assert text == expected
    rows = json.loads(text)["rows"]
    assert {r["runtime"] for r in rows} == {"transformers"} and {r["kv_policy"] for r in rows} == {"none"}
    assert any(r["max_ctx_at_target"] is None for r in rows) and any(r["max_ctx_at_target"] for r in rows)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=1, max_size=20))
def test_repr_field_is_float_repr(values):
    out = csvfast.repr_field(np.array(values, dtype=np.float64))
    got = [bytes(row[row != 0]).decode() for row in out]
    assert got == [repr(v) if np.isfinite(v) else "null" for v in values]
