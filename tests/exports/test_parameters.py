"""Typed parameters: each rule broken gives an error naming the parameter and the rule."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import pytest

from reportexport.parameters import ParameterError, ParamSpec, encode, validate

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


def test_valid_values_are_typed_and_defaults_filled_in() -> None:
    values = validate(SPECS, good(since="2024-01-01T10:00:00", code="AB", color="red"))
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


@pytest.mark.parametrize(
    ("raw", "parameter", "rule"),
    [
        ({"n": "7"}, "day", "required"),
        (good(day="2024-13-01"), "day", "type"),
        (good(day="2023-12-31"), "day", "min"),
        (good(day="2026-01-01"), "day", "max"),
        (good(n="seven"), "n", "type"),
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
        validate(SPECS, raw)
    assert (raised.value.parameter, raised.value.rule) == (parameter, rule)
    assert f"parameter {parameter!r}" in str(raised.value)
