"""The JSON Schema of a saved query's parameters accepts what `parameters.validate` accepts."""

from __future__ import annotations

import re
from datetime import date
from typing import Any

import jsonschema
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from reportexport.core.parameter_schema import (
    END,
    between,
    parameter_schema,
    parameters_schema,
)
from reportexport.core.parameters import ParameterError, ParamSpec, validate
from reportexport.core.text import STORABLE_PATTERNS

STORABLE = [{"pattern": pattern} for pattern in STORABLE_PATTERNS]

digits = st.text("0123456789", min_size=3, max_size=3)
dates = st.dates().map(lambda d: d.isoformat())


@given(digits, digits, digits)
@example("000", "999", "500")
@example("100", "299", "199")
@example("100", "399", "250")
@example("129", "130", "129")
def test_between_matches_exactly_the_texts_in_range(a: str, b: str, text: str) -> None:
    low, high = min(a, b), max(a, b)
    assert bool(re.fullmatch(between(low, high), text)) is (low <= text <= high)


@given(dates, dates, dates)
@example("2024-01-01", "2025-12-31", "2025-12-31")
@example("2024-01-01", "2025-12-31", "2023-12-31")
def test_between_matches_exactly_the_dates_in_range(a: str, b: str, text: str) -> None:
    low, high = min(a, b), max(a, b)
    assert bool(re.fullmatch(between(low, high), text)) is (low <= text <= high)


def test_between_writes_the_shortest_regex_it_can() -> None:
    assert between("2024-03-05", "2024-03-05") == "2024-03-05"
    assert between("000", "999") == "[0-9][0-9][0-9]"
    assert between("3", "7") == "[3-7]"
    assert between("10", "29") == "(?:1[0-9]|2[0-9])"
    assert between("15", "34") == "(?:1[5-9]|2[0-9]|3[0-4])"
    assert between("15", "44") == "(?:1[5-9]|[2-3][0-9]|4[0-4])"
    assert between("15", "54") == "(?:1[5-9]|[2-4][0-9]|5[0-4])"


SPECS = {
    "day": ParamSpec(name="day", type="date", min="2024-01-01", max="2025-12-31"),
    "n": ParamSpec(name="n", type="integer", min=1, max="100"),
    "amount": ParamSpec(name="amount", type="number", required=False, min="2.5", max=10),
    "paid": ParamSpec(name="paid", type="boolean", required=False, default=False),
    "since": ParamSpec(name="since", type="timestamp", required=False, min="2024-01-10T00:00:00Z"),
    "until": ParamSpec(name="until", type="timestamp", max="2024-12-31T00:00:00+01:00"),
    "code": ParamSpec(
        name="code", type="string", required=False, min_length=2, max_length=3, pattern="[A-Z]+"
    ),
    "note": ParamSpec(name="note", type="string"),
    "color": ParamSpec(name="color", type="enum", required=False, choices=("red", "blue")),
    "on": ParamSpec(name="on", type="date", required=False),
}
BASE = {"day": "2024-03-05", "n": 7, "until": "2024-06-01T10:00:00Z", "note": "x"}
CANDIDATES: list[dict[str, Any]] = [
    {},
    {"day": "2024-01-01"},
    {"day": "2025-12-31"},
    {"day": "2023-12-31"},
    {"day": "2026-01-01"},
    {"day": "2024-03-05\n"},
    {"day": None},
    {"n": 1},
    {"n": 100},
    {"n": 0},
    {"n": 101},
    {"n": "7"},
    {"n": True},
    {"amount": 2.5},
    {"amount": 2.4},
    {"amount": 10},
    {"amount": 10.5},
    {"amount": None},
    {"amount": ""},
    {"paid": True},
    {"paid": "true"},
    {"since": "2024-02-01T00:00:00Z"},
    {"since": "2024-02-01T00:00:00"},
    {"since": "2023-02-01T00:00:00Z"},
    {"until": "2025-02-01T00:00:00Z"},
    {"code": "AB"},
    {"code": "ABC"},
    {"code": "ABCD"},
    {"code": "A"},
    {"code": "ab"},
    {"code": "AB\n"},
    {"code": ""},
    {"note": ""},
    {"note": "a\x00b"},
    {"color": "red"},
    {"color": "green"},
    {"on": "2024-02-30x"},
    {"on": "1999-12-31"},
    {"extra": 1},
]


@pytest.mark.parametrize("change", CANDIDATES, ids=repr)
def test_the_schema_accepts_what_validation_accepts(change: dict[str, Any]) -> None:
    """Every candidate the schema refuses, validation refuses, and the other way round."""
    values = {**BASE, **change}
    schema_says = jsonschema.Draft202012Validator(parameters_schema(SPECS)).is_valid(values)
    try:
        validate(SPECS, values)
    except ParameterError:
        accepted = False
    else:
        accepted = True
    assert schema_says is accepted


@given(
    low=st.dates(),
    high=st.dates(),
    text=st.from_regex(r"[0-9]{4}-(?:0[0-9]|1[0-3])-(?:[0-2][0-9]|3[0-2])", fullmatch=True),
)
@example(low=date(2023, 1, 1), high=date(2025, 1, 1), text="2024-02-29")
@example(low=date(1, 1, 1), high=date(9999, 12, 31), text="1900-02-29")
def test_a_date_pattern_matches_exactly_the_dates_in_range(
    low: date, high: date, text: str
) -> None:
    """The calendar decides: a month's length, February 29th in leap years only, no year 0."""
    spec = ParamSpec(name="d", type="date", min=low.isoformat(), max=high.isoformat())
    try:
        real = date.fromisoformat(text)
    except ValueError:
        wanted = False
    else:
        wanted = low <= real <= high
    assert bool(re.fullmatch(parameter_schema(spec)["pattern"], text)) is wanted


def test_the_object_schema_names_what_is_required() -> None:
    schema = parameters_schema(SPECS)
    assert schema["type"] == "object"
    assert schema["required"] == ["day", "n", "until", "note"]
    assert schema["additionalProperties"] is False
    assert list(schema["properties"]) == list(SPECS)


def test_each_type_has_its_exact_schema() -> None:
    assert parameter_schema(SPECS["n"]) == {"type": "integer", "minimum": 1, "maximum": 100}
    assert parameter_schema(ParamSpec(name="x", type="number", min="2.5", max="1e1")) == {
        "type": "number",
        "minimum": 2.5,
        "maximum": 10,
    }
    assert parameter_schema(ParamSpec(name="b", type="boolean")) == {"type": "boolean"}
    assert parameter_schema(ParamSpec(name="e", type="enum", choices=("a", "b"))) == {
        "type": "string",
        "enum": ["a", "b"],
    }
    assert parameter_schema(ParamSpec(name="s", type="string")) == {
        "type": "string",
        "minLength": 1,
        "allOf": [*STORABLE],
    }
    assert parameter_schema(ParamSpec(name="s", type="string", min_length=3)) == {
        "type": "string",
        "minLength": 3,
        "allOf": [*STORABLE],
    }
    day = parameter_schema(ParamSpec(name="d", type="date"))
    assert (day["type"], day["format"]) == ("string", "date")
    days = (("2024-02-29", True), ("2023-02-29", False), ("2000-02-29", True),
            ("1900-02-29", False), ("2024-04-31", False), ("0000-01-01", False),
            ("0001-01-01", True), ("9999-12-31", True), ("2024-13-01", False))  # fmt: skip
    for text, exists in days:
        assert bool(re.fullmatch(day["pattern"], text)) is exists, text


def test_an_optional_parameter_also_takes_null_and_the_empty_text() -> None:
    spec = ParamSpec(
        name="code",
        type="string",
        required=False,
        default="AB",
        description="A code",
        max_length=3,
        pattern="[A-Z]+",
    )
    assert parameter_schema(spec) == {
        "anyOf": [
            {
                "type": "string",
                "minLength": 0,
                "maxLength": 3,
                "allOf": [*STORABLE, {"pattern": f"^(?:[A-Z]+){END}"}],
                "description": "A code",
            },
            {"type": "null"},
            {"const": ""},
        ],
        "description": "A code",
        "default": "AB",
    }
    required = ParamSpec(name="n", type="integer", description="How many")
    assert parameter_schema(required) == {
        "type": "integer",
        "minimum": -(2**63 - 1),
        "maximum": 2**63 - 1,
        "description": "How many",
    }


def test_a_bounded_timestamp_says_its_exact_bounds() -> None:
    spec = ParamSpec(
        name="at", type="timestamp", min="2024-01-01T00:00:00Z", max="2024-12-31T00:00:00+01:00"
    )
    schema = parameter_schema(spec)
    assert schema["description"] == (
        "an instant from 2024-01-01T00:00:00+00:00 until 2024-12-31T00:00:00+01:00, "
        "with its UTC offset"
    )
    assert schema["format"] == "date-time"
    pattern = re.compile(schema["pattern"])
    # three days inside each bound, where every UTC offset agrees
    assert pattern.fullmatch("2024-01-04T00:00:00Z")
    assert not pattern.fullmatch("2024-01-03T23:59:59Z")
    assert pattern.fullmatch("2024-12-28T10:00:00+14:00")
    assert not pattern.fullmatch("2024-12-29T00:00:00Z")
    unbounded = parameter_schema(ParamSpec(name="t", type="timestamp"))
    assert (unbounded["type"], unbounded["format"]) == ("string", "date-time")
    instants = (("2024-02-29T23:59:59.5+23:59", True), ("2023-02-29T00:00:00Z", False),
                ("2024-01-01T24:00:00Z", False), ("2024-01-01T00:00:60Z", False),
                ("2024-01-01T00:00:00-00:60", False), ("2024-01-01T00:00:00", False),
                ("0001-01-01T12:00:00Z", False), ("0001-01-02T00:00:00+01:00", True),
                ("9999-12-31T00:00:00Z", False), ("9999-12-30t00:00:00z", True),
                ("2024-01-01 00:00:00Z", False))  # fmt: skip
    for text, exists in instants:
        assert bool(re.fullmatch(unbounded["pattern"], text)) is exists, text
    only_until = parameter_schema(ParamSpec(name="t", type="timestamp", max="2024-12-31T00:00:00Z"))
    assert (
        only_until["description"]
        == "an instant until 2024-12-31T00:00:00+00:00, with its UTC offset"
    )


def test_bounds_that_leave_no_date_match_nothing() -> None:
    spec = ParamSpec(name="d", type="date", min="2025-01-01", max="2024-01-01")
    assert parameter_schema(spec)["pattern"] == f"^(?!){END}"
    only_min = ParamSpec(name="d", type="date", min="2024-06-15")
    pattern = re.compile(parameter_schema(only_min)["pattern"])
    assert pattern.fullmatch("9999-12-31")
    assert pattern.fullmatch("2024-06-15")
    assert not pattern.fullmatch("2024-06-14")
    only_max = ParamSpec(name="d", type="date", max="2024-06-15")
    pattern = re.compile(parameter_schema(only_max)["pattern"])
    assert pattern.fullmatch("0001-01-01")
    assert not pattern.fullmatch("2024-06-16")


def test_an_unknown_type_has_no_schema() -> None:
    with pytest.raises(ValueError, match=r"^unknown parameter type 'colour'$"):
        parameter_schema(ParamSpec(name="x", type="colour"))
