"""Only the documented error type ever escapes the loaders, whatever the input."""

from __future__ import annotations

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kvplan.errors import ProfileError
from kvplan.profiles.loading import validate_document
from kvplan.profiles.spec import Device, Model
from kvplan.files.yamlio import parse_yaml

FIELDS = list(Device.model_fields) + list(Model.model_fields)
scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**20, 10**20), st.floats(allow_nan=True),
                    st.text(max_size=20), st.sampled_from(["8 GB", "8 GiB", "51.2 GB/s", "6.74B", "8k", "5:1",
                                                           "all", "q8_0", "-1 GB", "1e400 B", "nan GB"]))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(st.text(max_size=8), inner, max_size=4)),
                      max_leaves=12)
documents = st.dictionaries(st.one_of(st.sampled_from(FIELDS), st.text(max_size=10)), values, max_size=12)
SETTINGS = settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _load(text: str) -> None:
    for cls in (Device, Model):
        try:
            validate_document(cls, parse_yaml(text, "fuzz.yaml"))
        except ProfileError as exc:
            assert exc.problems and all(p.startswith("fuzz.yaml") for p in exc.problems)


@SETTINGS
@given(documents)
def test_generated_documents_raise_only_profile_errors(doc):
    _load(yaml.safe_dump(doc, allow_unicode=True))


@SETTINGS
@given(st.text(max_size=300))
def test_arbitrary_strings_raise_only_profile_errors(text):
    _load(text)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["name: x\n", "ram: 8 GB\n", "a: &a [1, 2]\n", "b: *a\n", "- x\n", "? k\n",
                                 ": v\n", "!!str\n", "---\n", "...\n", "{\n", "}\n", "[\n", "'\n", "\"\n", "\t\n",
                                 "%YAML 1.1\n", "c: !!python/none\n", "<<: *a\n", "&x\n", "*x\n"]), max_size=12))
def test_yaml_fragments_raise_only_profile_errors(parts):
    _load("".join(parts))
