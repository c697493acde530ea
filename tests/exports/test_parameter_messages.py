"""The exact words of every parameter refusal, and the helpers around validation."""

from __future__ import annotations

import math
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import pytest

from reportexport.core.parameters import (
    ParameterError,
    ParamSpec,
    coerce,
    decode,
    encode,
    single_values,
    validate,
)

DAY = ParamSpec(name="day", type="date", min="2024-01-01", max="2025-12-31")
SINCE = ParamSpec(name="since", type="timestamp")
N = ParamSpec(name="n", type="integer", min=1, max=100)
AMOUNT = ParamSpec(name="amount", type="number", min=0)
PAID = ParamSpec(name="paid", type="boolean")
CODE = ParamSpec(name="code", type="string", min_length=2, max_length=3, pattern="[A-Z]+")
COLOR = ParamSpec(name="color", type="enum", choices=("red", "blue"))


def _refusal(spec: ParamSpec, raw: Any, *, from_text: bool) -> ParameterError:
    try:
        if raw is None:  # validate takes None for "not given"; coerce sees it as a value
            coerce(spec, raw, from_text=from_text)
        else:
            validate({spec.name: spec}, {spec.name: raw}, from_text=from_text)
    except ParameterError as exc:
        return exc
    raise AssertionError(f"{raw!r} was accepted")


UNKNOWN = "is not a parameter of this saved query"


@pytest.mark.parametrize(
    ("spec", "raw", "from_text", "rule", "message"),
    [
        (DAY, "20240305", True, "type", "'20240305' is not a date (YYYY-MM-DD)"),
        (DAY, "2024-13-01", True, "type", "'2024-13-01' is not a valid date"),
        (DAY, 20240305, False, "type", "expected a date (YYYY-MM-DD), got a number"),
        (DAY, "2023-12-31", True, "min", "must be at least 2024-01-01"),
        (DAY, "2026-01-01", True, "max", "must be at most 2025-12-31"),
        (SINCE, "yesterday", True, "type", "'yesterday' is not a timestamp (RFC 3339)"),
        (SINCE, None, False, "type", "expected a timestamp (RFC 3339), got nothing"),
        (
            SINCE,
            "2024-01-01T10:00:00",
            True,
            "offset",
            "'2024-01-01T10:00:00' needs a UTC offset, as in 2024-03-05T10:00:00Z or +01:00",
        ),
        (N, "seven", True, "type", "expected an integer, got 'seven'"),
        (N, "7", False, "type", "expected an integer, got '7'"),
        (N, True, False, "type", "expected an integer, got a boolean"),
        (N, 7.5, False, "type", "expected an integer, got a number"),
        (N, math.nan, False, "type", "expected an integer, got NaN"),
        (N, [7], False, "type", "expected an integer, got list"),
        (N, 0, False, "min", "must be at least 1"),
        (N, 101, False, "max", "must be at most 100"),
        (AMOUNT, "abc", True, "type", "expected a number, got 'abc'"),
        (AMOUNT, "2.5", False, "type", "expected a number, got '2.5'"),
        (AMOUNT, math.inf, False, "type", "expected a finite number"),
        (AMOUNT, math.nan, False, "type", "expected a finite number"),
        (AMOUNT, "1e400", True, "range", "1E+400 is beyond the range of a double"),
        (AMOUNT, "-1", True, "min", "must be at least 0"),
        (
            PAID,
            "maybe",
            True,
            "type",
            "expected true or false (or yes/no, on/off, 1/0), got 'maybe'",
        ),
        (PAID, "true", False, "type", "expected true or false, got 'true'"),
        (PAID, 1, False, "type", "expected true or false, got a number"),
        (PAID, None, False, "type", "expected true or false, got nothing"),
        (CODE, 12, False, "type", "expected text, got a number"),
        (CODE, "A", False, "min_length", "needs at least 2 characters"),
        (CODE, "ABCD", False, "max_length", "takes at most 3 characters"),
        (CODE, "ab", False, "pattern", "must match [A-Z]+"),
        (COLOR, "green", False, "choices", "'green' is not one of red, blue"),
        (COLOR, False, False, "type", "expected text, got a boolean"),
        (
            ParamSpec(name="x", type="colour"),
            "red",
            True,
            "type",
            "unknown parameter type 'colour'",
        ),
    ],
)
def test_each_refusal_says_exactly_what_is_wrong(
    spec: ParamSpec, raw: Any, from_text: bool, rule: str, message: str
) -> None:
    error = _refusal(spec, raw, from_text=from_text)
    assert (error.parameter, error.rule, error.message) == (spec.name, rule, message)
    assert str(error) == f"parameter {spec.name!r}: {message}"


@pytest.mark.parametrize(
    ("raw", "parameter", "rule", "message"),
    [
        ({}, "day", "required", "is required"),
        ({"day": "2024-03-05", "extra": "x"}, "extra", "unknown", UNKNOWN),
        ({"day": "2024-03-05", 3: "x"}, "3", "unknown", UNKNOWN),
        ({"day": "2024-03-05", "a\x00": "x"}, "a\x00", "unknown", UNKNOWN),
        ({"b": 1, "a": 2}, "a", "unknown", UNKNOWN),
    ],
)
def test_a_missing_or_unknown_parameter_is_named(
    raw: dict[Any, Any], parameter: str, rule: str, message: str
) -> None:
    with pytest.raises(ParameterError) as raised:
        validate({"day": DAY}, raw)
    assert (raised.value.parameter, raised.value.rule, raised.value.message) == (
        parameter,
        rule,
        message,
    )


def test_a_long_value_is_cut_in_the_message() -> None:
    with pytest.raises(ParameterError) as raised:
        coerce(N, "9" * 100 + "x", from_text=True)
    assert raised.value.message == (
        "expected an integer, got '" + "9" * 80 + "'... (101 characters)"
    )


def test_values_are_taken_as_json_unless_said_otherwise() -> None:
    assert coerce(N, 7) == 7
    with pytest.raises(ParameterError, match="expected an integer"):
        coerce(N, "7")
    assert coerce(N, "7", from_text=True) == 7


def test_bounds_given_as_text_are_read_as_text() -> None:
    """A catalog may write a bound as text: it is read the way a form's value is."""
    spec = ParamSpec(name="n", type="integer", min="1", max="10")
    assert validate({"n": spec}, {"n": 1}) == {"n": 1}
    assert validate({"n": spec}, {"n": 10}) == {"n": 10}
    with pytest.raises(ParameterError) as raised:
        validate({"n": spec}, {"n": 11})
    assert raised.value.message == "must be at most 10"


def test_a_repeated_name_is_refused_and_single_values_pass() -> None:
    assert single_values([("a", "1"), ("b", "2")]) == {"a": "1", "b": "2"}
    with pytest.raises(ParameterError) as raised:
        single_values([("a", "1"), ("b", "2"), ("a", "1")])
    error = raised.value
    assert (error.parameter, error.rule) == ("a", "repeated")
    assert str(error) == "parameter 'a': is given more than once; give it once"


def test_encode_gives_json_and_decode_reads_it_back() -> None:
    moment = datetime(2024, 3, 5, 10, tzinfo=UTC)
    assert encode(moment) == "2024-03-05T10:00:00+00:00"
    assert encode(date(2024, 3, 5)) == "2024-03-05"
    assert encode(Decimal("2.50")) == "2.50"
    assert encode(7) == 7
    assert encode("x") == "x"
    assert decode(SINCE, "2024-03-05T10:00:00+00:00") == moment
    assert decode(N, "7") == 7
    assert decode(N, None) is None
    assert decode(PAID, "yes") is True


def test_a_spec_describes_itself_as_json() -> None:
    spec = ParamSpec(
        name="day",
        type="date",
        required=False,
        default="2024-03-05",
        description="The day",
        min=date(2024, 1, 1),
        max="2025-12-31",
    )
    assert spec.describe() == {
        "name": "day",
        "type": "date",
        "required": False,
        "default": "2024-03-05",
        "min": "2024-01-01",
        "max": "2025-12-31",
        "description": "The day",
    }
    assert CODE.describe() == {
        "name": "code",
        "type": "string",
        "required": True,
        "min_length": 2,
        "max_length": 3,
        "pattern": "[A-Z]+",
    }
    assert COLOR.describe() == {
        "name": "color",
        "type": "enum",
        "required": True,
        "choices": ["red", "blue"],
    }
