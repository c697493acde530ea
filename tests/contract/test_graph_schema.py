"""The hand-written schema check agrees with the `jsonschema` package on the schema file."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from frozen_lifecycle.graph import load_schema
from frozen_lifecycle.schema_check import UnsupportedSchemaError, schema_errors
from tests.helpers import FIXTURE_PATH

SCHEMA = load_schema()
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)
FIXTURE = json.loads(FIXTURE_PATH.read_text())

names = st.sampled_from(["queued", "running", "failed", "x", "Bad", "9lives", "", "a b", "ok_2"])
json_leaves = st.one_of(st.none(), st.booleans(), st.integers(), names)
json_values = st.recursive(
    json_leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(["from", "to", "x"]), inner)
    ),
    max_leaves=6,
)


@st.composite
def mutated_fixtures(draw: st.DrawFn) -> Any:
    """The real fixture with a few keys replaced, dropped or added."""
    document = json.loads(json.dumps(FIXTURE))
    for _ in range(draw(st.integers(0, 3))):
        key = draw(st.sampled_from([*FIXTURE, "extra"]))
        action = draw(st.sampled_from(["replace", "drop", "edge", "effect"]))
        if action == "replace":
            document[key] = draw(json_values)
        elif action == "drop":
            document.pop(key, None)
        elif action == "edge" and isinstance(document.get("transitions"), list):
            document["transitions"].append(
                draw(st.dictionaries(st.sampled_from(["from", "to", "actor", "x"]), names))
            )
        elif action == "effect" and isinstance(document.get("side_effects"), dict):
            document["side_effects"][draw(names)] = draw(st.lists(names, max_size=3))
    return document


@settings(max_examples=400, deadline=None)
@given(mutated_fixtures())
def test_hand_written_check_agrees_with_jsonschema(document: Any) -> None:
    assert (schema_errors(document, SCHEMA) == []) == VALIDATOR.is_valid(document)


@pytest.mark.parametrize(
    "document",
    [FIXTURE, {}, [], "graph", {**FIXTURE, "states": []}, {**FIXTURE, "terminal": ["failed"] * 2}],
)
def test_agreement_on_hand_picked_samples(document: Any) -> None:
    assert (schema_errors(document, SCHEMA) == []) == VALIDATOR.is_valid(document)


def test_the_schema_file_is_a_valid_2020_12_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


def test_an_unknown_schema_keyword_is_refused_not_ignored() -> None:
    with pytest.raises(UnsupportedSchemaError, match="maxItems"):
        schema_errors([], {"type": "array", "maxItems": 2})
