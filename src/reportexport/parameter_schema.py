"""JSON Schemas of a saved query's parameters: what `parameters.validate` accepts from JSON.

Pure functions (standard library only). The schema is exact where JSON Schema can be: types,
bounds, lengths, choices, an operator's pattern (anchored at both ends the way `re.fullmatch`
is), text without NUL, dates as `YYYY-MM-DD` within their bounds (a pattern: ISO dates sort as
text). JSON Schema has no range for instants, so a bounded timestamp's pattern keeps to dates at
least three days inside its bounds, where every UTC offset agrees; the exact bound is in its
description.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any

from reportexport.parameters import ParamSpec, coerce

NO_NUL = "^[^\\u0000]*$"
# End of text in both ECMA-262 and Python regexes ($ also matches before a final newline).
END = "(?![\\s\\S])"
DATE = "[0-9]{4}-[0-9]{2}-[0-9]{2}"
TIME = "[Tt ][0-9]{2}:[0-9]{2}:[0-9]{2}(?:\\.[0-9]+)?(?:[Zz]|[+-][0-9]{2}:[0-9]{2})"
OFFSET_SLACK = timedelta(days=3)


def parameters_schema(specs: Mapping[str, ParamSpec]) -> dict[str, Any]:
    """An object schema of every parameter; unknown names are refused."""
    return {
        "type": "object",
        "properties": {name: parameter_schema(spec) for name, spec in specs.items()},
        "required": [
            name for name, spec in specs.items() if spec.required and spec.default is None
        ],
        "additionalProperties": False,
    }


def parameter_schema(spec: ParamSpec) -> dict[str, Any]:
    schema = _value_schema(spec)
    if spec.description:
        schema["description"] = spec.description
    given = spec.required and spec.default is None
    if not given:  # null and "" mean "not given": the default, or nothing
        return {"anyOf": [schema, {"type": "null"}, {"const": ""}], **_about(spec)}
    return schema


def _about(spec: ParamSpec) -> dict[str, Any]:
    about: dict[str, Any] = {}
    if spec.description:
        about["description"] = spec.description
    if spec.default is not None:
        about["default"] = spec.default
    return about


def _value_schema(spec: ParamSpec) -> dict[str, Any]:
    kind = spec.type
    given = spec.required and spec.default is None
    if kind == "string":
        schema: dict[str, Any] = {"type": "string", "minLength": spec.min_length or 0}
        if given:  # the empty text means "not given", so a required text has a character
            schema["minLength"] = max(1, spec.min_length or 0)
        if spec.max_length is not None:
            schema["maxLength"] = spec.max_length
        patterns = [{"pattern": NO_NUL}]
        if spec.pattern is not None:
            patterns.append({"pattern": f"^(?:{spec.pattern}){END}"})
        return {**schema, "allOf": patterns}
    if kind == "enum":
        return {"type": "string", "enum": list(spec.choices)}
    if kind in ("integer", "number"):
        schema = {"type": kind}
        for key, bound in (("minimum", spec.min), ("maximum", spec.max)):
            if bound is not None:
                value = coerce(spec, bound, from_text=True)
                schema[key] = int(value) if kind == "integer" else _json_number(value)
        return schema
    if kind == "boolean":
        return {"type": "boolean"}
    if kind == "date":
        low = coerce(spec, spec.min, from_text=True) if spec.min is not None else None
        high = coerce(spec, spec.max, from_text=True) if spec.max is not None else None
        return {"type": "string", "format": "date", "pattern": f"^{_dates(low, high)}{END}"}
    if kind == "timestamp":
        low_at = coerce(spec, spec.min, from_text=True) if spec.min is not None else None
        high_at = coerce(spec, spec.max, from_text=True) if spec.max is not None else None
        low = (low_at + OFFSET_SLACK).date() if low_at is not None else None
        high = (high_at - OFFSET_SLACK).date() if high_at is not None else None
        schema = {
            "type": "string",
            "format": "date-time",
            "pattern": f"^{_dates(low, high)}{TIME}{END}",
        }
        bounds = [f"from {_instant(low_at)}"] if low_at is not None else []
        bounds += [f"until {_instant(high_at)}"] if high_at is not None else []
        if bounds:
            schema["description"] = "an instant " + " ".join(bounds) + ", with its UTC offset"
        return schema
    raise ValueError(f"unknown parameter type {kind!r}")


def _json_number(value: Decimal) -> int | float:
    return int(value) if value == value.to_integral_value() else float(value)


def _instant(moment: datetime) -> str:
    return moment.isoformat()


def _dates(low: date | None, high: date | None) -> str:
    """A regex of the `YYYY-MM-DD` texts from `low` to `high` (either may be open)."""
    if low is None and high is None:
        return DATE
    start = low.isoformat() if low is not None else "0000-00-00"
    end = high.isoformat() if high is not None else "9999-99-99"
    if start > end:
        return "(?!)"  # no date is in range
    return between(start, end)


def between(low: str, high: str) -> str:
    """A regex of every text of the same shape from `low` to `high`, where the texts are digits
    and `-` separators in the same places (`2024-01-31`): such texts sort like the numbers."""
    if low == high:
        return low
    if low == _bottom(low) and high == _top(high):
        return _any(low)
    if low[0] == high[0]:
        return low[0] + between(low[1:], high[1:])
    first, last = int(low[0]), int(high[0])
    if len(low) == 1:
        return f"[{first}-{last}]"
    branches = [low[0] + between(low[1:], _top(low[1:]))]
    if last - first > 1:
        middle = f"[{first + 1}-{last - 1}]" if last - first > 2 else str(first + 1)
        branches.append(middle + _any(low[1:]))
    branches.append(high[0] + between(_bottom(high[1:]), high[1:]))
    return "(?:" + "|".join(branches) + ")"


def _top(shape: str) -> str:
    return "".join("9" if ch.isdigit() else ch for ch in shape)


def _bottom(shape: str) -> str:
    return "".join("0" if ch.isdigit() else ch for ch in shape)


def _any(shape: str) -> str:
    return "".join("[0-9]" if ch.isdigit() else ch for ch in shape)
