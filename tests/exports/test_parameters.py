"""Typed parameters: each rule broken gives an error naming the parameter and the rule."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import pytest

from reportexport.core.parameters import (
    InvalidParametersError,
    ParameterError,
    ParamSpec,
    encode,
    validate,
)

SPECS = {
    "day": ParamSpec(name="day", type="date", min="2024-01-01", max="2025-12-31"),
    "n": ParamSpec(name="n", type="integer", min=1, max=100),
    "amount": ParamSpec(name="amount", type="number", required=False, default="0", min=0),
    "paid": ParamSpec(name="paid", type="boolean", required=False, default=False),
    "since": ParamSpec(name="since", type="timestamp", required=False),
    "code": ParamSpec(
        name="code", type="string", required=False, min_length=2, max_length=3, pattern="[A-Z]+"
    ),
    "color": ParamSpec(name="color", type="enum", required=False, choices=("red", "blue")),
}


def good(**extra: Any) -> dict[str, Any]:
    return {"day": "2024-03-05", "n": "7", **extra}


def test_text_values_are_typed_and_defaults_filled_in() -> None:
    values = validate(
        SPECS, good(since="2024-01-01T10:00:00Z", code="AB", color="red"), from_text=True
    )
    assert values == {
        "day": date(2024, 3, 5),
        "n": 7,
        "amount": Decimal("0"),
        "paid": False,
        "since": datetime(2024, 1, 1, 10, 0, tzinfo=UTC),
        "code": "AB",
        "color": "red",
    }
    assert encode(values["since"]) == "2024-01-01T10:00:00+00:00"


def test_json_values_must_be_of_their_json_type() -> None:
    """From JSON an integer is a JSON integer and a boolean a JSON boolean, not their text."""
    typed = validate(SPECS, {"day": "2024-03-05", "n": 7, "amount": 2.5, "paid": True})
    assert (typed["n"], typed["amount"], typed["paid"]) == (7, Decimal("2.5"), True)
    assert validate(SPECS, {"day": "2024-03-05", "n": 7.0})["n"] == 7  # 7.0 is an integer
    for raw, name in (({"n": "7"}, "n"), ({"n": 7, "paid": "true"}, "paid"),
                      ({"n": 7, "amount": "2.5"}, "amount")):  # fmt: skip
        with pytest.raises(ParameterError) as raised:
            validate(SPECS, {"day": "2024-03-05", **raw})
        assert (raised.value.parameter, raised.value.rule) == (name, "type")


@pytest.mark.parametrize(
    ("text", "expected"),
    [("true", True), ("YES", True), ("on", True), ("1", True), (" true ", True),
     ("false", False), ("no", False), ("Off", False), ("0", False)],
)  # fmt: skip
def test_text_booleans_mean_what_they_say(text: str, expected: bool) -> None:
    assert validate(SPECS, good(paid=text), from_text=True)["paid"] is expected


def test_the_upper_bounds_are_inclusive() -> None:
    values = validate(SPECS, good(day="2025-12-31", n="100", code="ABC"), from_text=True)
    assert (values["day"], values["n"], values["code"]) == (date(2025, 12, 31), 100, "ABC")
    lower = validate(SPECS, good(day="2024-01-01", n="1", code="AB", amount="0"), from_text=True)
    assert (lower["day"], lower["n"], lower["amount"]) == (date(2024, 1, 1), 1, Decimal("0"))


def test_an_optional_parameter_left_out_is_none_not_its_neighbours_value() -> None:
    values = validate(SPECS, good(code="AB"), from_text=True)
    assert (values["since"], values["color"], values["code"]) == (None, None, "AB")
    assert validate(SPECS, good(code="", color=None), from_text=True)["code"] is None


def test_a_timestamp_keeps_its_offset_and_needs_one() -> None:
    values = validate(SPECS, good(since="2024-01-01T10:00:00.5+05:30"), from_text=True)
    offset = timezone(timedelta(hours=5, minutes=30))
    assert values["since"] == datetime(2024, 1, 1, 10, 0, 0, 500_000, tzinfo=offset)
    with pytest.raises(ParameterError, match="needs a UTC offset") as raised:
        validate(SPECS, good(since="2024-01-01T10:00:00"), from_text=True)
    assert raised.value.rule == "offset"


@pytest.mark.parametrize("text", ["20240305", "2024-W10-2", "2024-03-05T00:00", " 2024-03-05"])
def test_a_date_is_exactly_yyyy_mm_dd(text: str) -> None:
    with pytest.raises(ParameterError) as raised:
        validate(SPECS, good(day=text), from_text=True)
    assert (raised.value.parameter, raised.value.rule) == ("day", "type")


@pytest.mark.parametrize(
    ("value", "why"),
    [("A\x00B", "NUL"), ("\ud800", r"lone surrogate \(U\+D800\)"), ("x\udcff", "byte 0xff")],
)
def test_text_that_cannot_be_stored_is_refused_naming_the_parameter(value: str, why: str) -> None:
    spec = {"note": ParamSpec(name="note", type="string")}
    with pytest.raises(ParameterError, match=why) as raised:
        validate(spec, {"note": value})
    assert (raised.value.parameter, raised.value.rule) == ("note", "text")
    str(raised.value).encode("utf-8")  # the message itself is printable


@pytest.mark.parametrize("kind", ["integer", "number", "boolean"])
def test_text_that_is_not_utf8_is_refused_as_such_by_a_typed_parameter_not_quoted_back(
    kind: str,
) -> None:
    spec = {"n": ParamSpec(name="n", type=kind)}
    with pytest.raises(ParameterError) as raised:
        validate(spec, {"n": "x\udcff"}, from_text=True)
    assert (raised.value.parameter, raised.value.rule) == ("n", "text")
    assert raised.value.message == "the value is not valid UTF-8 (byte 0xff at position 1)"


def test_a_parameter_name_that_cannot_be_stored_is_unknown() -> None:
    with pytest.raises(ParameterError) as raised:
        validate(SPECS, good(**{"\ud800": "x"}))
    assert raised.value.rule == "unknown"


@pytest.mark.parametrize(
    ("raw", "parameter", "rule"),
    [
        ({"n": "7"}, "day", "required"),
        (good(day="2024-13-01"), "day", "type"),
        (good(day="2023-12-31"), "day", "min"),
        (good(day="2026-01-01"), "day", "max"),
        (good(n="seven"), "n", "type"),
        (good(n="7.5"), "n", "type"),
        (good(n=True), "n", "type"),
        (good(n=0), "n", "min"),
        (good(n=101), "n", "max"),
        (good(amount="-1"), "amount", "min"),
        (good(amount="NaN"), "amount", "type"),
        (good(paid="maybe"), "paid", "type"),
        (good(since="yesterday"), "since", "type"),
        (good(code="A"), "code", "min_length"),
        (good(code="ABCD"), "code", "max_length"),
        (good(code="ab"), "code", "pattern"),
        (good(code=12), "code", "type"),
        (good(color="green"), "color", "choices"),
        (good(extra="x"), "extra", "unknown"),
    ],
)
def test_each_broken_rule_names_the_parameter_and_the_rule(
    raw: dict[str, Any], parameter: str, rule: str
) -> None:
    with pytest.raises(ParameterError) as raised:
        validate(SPECS, raw, from_text=True)
    assert (raised.value.parameter, raised.value.rule) == (parameter, rule)
    assert f"parameter {parameter!r}" in str(raised.value)


def test_every_problem_is_collected_in_order_when_asked() -> None:
    raw = {"day": "2023-01-01", "n": "x", "code": "a", "nope": "1", 3: "x"}
    with pytest.raises(InvalidParametersError) as caught:
        validate(SPECS, raw, from_text=True, every_problem=True)
    found = [(p.parameter, p.rule) for p in caught.value.problems]
    assert found == [
        ("3", "unknown"),
        ("nope", "unknown"),
        ("day", "min"),
        ("n", "type"),
        ("code", "min_length"),
    ]
    assert (caught.value.parameter, caught.value.rule) == ("3", "unknown")
    assert str(caught.value) == str(caught.value.problems[0])


def test_without_every_problem_the_first_is_raised_alone() -> None:
    raw = {"day": "2023-01-01", "n": "x"}
    with pytest.raises(ParameterError) as caught:
        validate(SPECS, raw, from_text=True)
    assert not isinstance(caught.value, InvalidParametersError)
    assert (caught.value.parameter, caught.value.rule) == ("day", "min")


def test_every_problem_still_returns_values_when_there_is_none() -> None:
    assert validate(SPECS, good(), from_text=True, every_problem=True) == validate(
        SPECS, good(), from_text=True
    )


def test_a_required_parameter_missing_is_one_of_every_problem() -> None:
    with pytest.raises(InvalidParametersError) as caught:
        validate(SPECS, {"n": "0"}, from_text=True, every_problem=True)
    assert [(p.parameter, p.rule) for p in caught.value.problems] == [
        ("day", "required"),
        ("n", "min"),
    ]
