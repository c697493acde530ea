"""JSON Schemas of a saved query's parameters: what `parameters.validate` accepts from JSON.

Pure functions (standard library only). The schema is exact where JSON Schema can be: types,
bounds (a number within a double's range, an integer within 64 bits), lengths, choices, an
operator's pattern (anchored at both ends the way `re.fullmatch` is), text without NUL or a lone
surrogate, dates as `YYYY-MM-DD` that exist on the calendar and lie within their bounds, times
of day and UTC offsets that exist (patterns; `format` alone asserts nothing). JSON Schema has no
range for instants, so a bounded timestamp's pattern keeps to dates at least three days inside
its bounds, where every UTC offset agrees; the exact bound is in its description.
"""

from __future__ import annotations

import calendar
from collections.abc import Mapping
from datetime import date, datetime, timedelta
from typing import Any

from reportexport.core.parameters import (
    FIRST_INSTANT_DAY,
    LARGEST_DOUBLE,
    LARGEST_INTEGER,
    LAST_INSTANT_DAY,
    ParamSpec,
    coerce,
    json_number,
)
from reportexport.core.text import STORABLE_PATTERNS

# End of text in both ECMA-262 and Python regexes ($ also matches before a final newline).
END = "(?![\\s\\S])"
HOUR = "(?:[01][0-9]|2[0-3])"
TIME = f"[Tt]{HOUR}:[0-5][0-9]:[0-5][0-9](?:\\.[0-9]+)?(?:[Zz]|[+-]{HOUR}:[0-5][0-9])"
OFFSET_SLACK = timedelta(days=3)
# Every month and day of a year that is not a leap year.
MONTH_DAYS = (
    "(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])"
    "|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)"
    "|02-(?:0[1-9]|1[0-9]|2[0-8]))"
)
# The years whose 1st of January to 31st of December is a date in Python and in the sources.
FIRST_DAY, LAST_DAY = date(1, 1, 1), date(9999, 12, 31)


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
        patterns = [{"pattern": pattern} for pattern in STORABLE_PATTERNS]
        if spec.pattern is not None:
            patterns.append({"pattern": f"^(?:{spec.pattern}){END}"})
        return {**schema, "allOf": patterns}
    if kind == "enum":
        return {"type": "string", "enum": list(spec.choices)}
    if kind in ("integer", "number"):
        largest = LARGEST_INTEGER if kind == "integer" else LARGEST_DOUBLE
        schema = {"type": kind, "minimum": -largest, "maximum": largest}
        for key, bound in (("minimum", spec.min), ("maximum", spec.max)):
            if bound is not None:
                value = coerce(spec, bound, from_text=True)
                schema[key] = int(value) if kind == "integer" else json_number(value)
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
        low = (low_at + OFFSET_SLACK).date() if low_at is not None else FIRST_INSTANT_DAY
        high = (high_at - OFFSET_SLACK).date() if high_at is not None else LAST_INSTANT_DAY
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


def _instant(moment: datetime) -> str:
    return moment.isoformat()


def _dates(low: date | None, high: date | None) -> str:
    """A regex of the `YYYY-MM-DD` texts of the dates from `low` to `high` (either may be
    open): dates that exist, February 29th in leap years only."""
    low, high = low or FIRST_DAY, high or LAST_DAY
    if low > high:
        return "(?!)"  # no date is in range
    if low.year == high.year:
        return _days_of_year(low, high)
    branches = [_days_of_year(low, date(low.year, 12, 31))]
    if high.year - low.year > 1:
        first, last = low.year + 1, high.year - 1
        branches.append(f"{between(f'{first:04d}', f'{last:04d}')}-{MONTH_DAYS}")
        leap = _leap_years(first, last)
        if leap is not None:
            branches.append(f"{leap}-02-29")
    branches.append(_days_of_year(date(high.year, 1, 1), high))
    return "(?:" + "|".join(branches) + ")"


def _days_of_year(low: date, high: date) -> str:
    """The dates from `low` to `high`, both in the same year."""
    branches = []
    for month in range(low.month, high.month + 1):
        first = low.day if month == low.month else 1
        last = high.day if month == high.month else calendar.monthrange(low.year, month)[1]
        branches.append(f"{month:02d}-{between(f'{first:02d}', f'{last:02d}')}")
    months = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
    return f"{low.year:04d}-{months}"


def _leap_years(first: int, last: int) -> str | None:
    """A regex of the leap years from `first` to `last` as four digits, or None if none."""
    head, tail = first // 100, last // 100
    if tail - head < 2:
        return _listed([y for y in range(first, last + 1) if calendar.isleap(y)])
    branches = [f"{between(f'{head + 1:02d}', f'{tail - 1:02d}')}(?:0[48]|[2468][048]|[13579][26])"]
    listed = [y for y in range(first, (head + 1) * 100) if calendar.isleap(y)]
    listed += [c * 100 for c in range(head + 1, tail) if c % 4 == 0]
    listed += [y for y in range(tail * 100, last + 1) if calendar.isleap(y)]
    if listed:
        branches.append(_listed(listed) or "(?!)")
    return "(?:" + "|".join(branches) + ")"


def _listed(years: list[int]) -> str | None:
    return "(?:" + "|".join(f"{y:04d}" for y in years) + ")" if years else None


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


# An RFC 3339 instant with its UTC offset, as `parameters.parse_timestamp` reads one.
INSTANT_PATTERN = f"^{_dates(FIRST_INSTANT_DAY, LAST_INSTANT_DAY)}{TIME}{END}"
