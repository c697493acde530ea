"""Typed parameters of a saved query: validation with errors that name the rule broken.

Values come in one of two forms. JSON (the HTTP API) carries typed values: an integer is a JSON
integer, a boolean `true`/`false`, a number a JSON number; dates, timestamps and text are
strings. Text (a form field, a command-line `NAME=VALUE`, a stored job's parameters) carries
every value as text, which is parsed by its type. Either way a date is `YYYY-MM-DD`, a
timestamp is RFC 3339 with its UTC offset (`2024-03-05T10:00:00Z`, `...+01:00`), and text is
valid Unicode without NUL (see `reportexport.core.text`).
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from reportexport.core.text import quoted, unsafe_text

TYPES = ("string", "integer", "number", "boolean", "date", "timestamp", "enum")


class ParameterError(ValueError):
    """A parameter value that breaks a rule; `parameter` and `rule` say which."""

    def __init__(self, parameter: str, rule: str, message: str) -> None:
        super().__init__(f"parameter {quoted(parameter)}: {message}")
        self.parameter = parameter
        self.rule = rule
        self.message = message


class InvalidParametersError(ParameterError):
    """Every problem of a set of parameters, in order; its own fields are the first one's."""

    def __init__(self, problems: Iterable[ParameterError]) -> None:
        self.problems = tuple(problems)
        first = self.problems[0]
        super().__init__(first.parameter, first.rule, first.message)


@dataclass(frozen=True, kw_only=True)
class ParamSpec:
    name: str
    type: str
    required: bool = True
    default: Any = None
    description: str = ""
    min: Any = None
    max: Any = None
    min_length: int | None = None
    max_length: int | None = None
    pattern: str | None = None
    choices: tuple[str, ...] = field(default_factory=tuple)
    bind: str | None = None  # the person's attribute its value comes from (core.access)

    def describe(self) -> dict[str, Any]:
        """The spec as plain JSON-able data (for a job's snapshot and the API)."""
        data: dict[str, Any] = {"name": self.name, "type": self.type, "required": self.required}
        for key in ("default", "min", "max", "min_length", "max_length", "pattern"):
            value = getattr(self, key)
            if value is not None:
                data[key] = encode(value)
        if self.choices:
            data["choices"] = list(self.choices)
        if self.description:
            data["description"] = self.description
        if self.bind is not None:
            data["bind"] = self.bind
        return data


# What the sources can bind: a 64-bit integer (BIGINT), a finite double (DOUBLE PRECISION).
LARGEST_INTEGER = 2**63 - 1
LARGEST_DOUBLE = sys.float_info.max
# The days an instant may be written on: a day inside the range of dates, so that it is an
# instant in UTC whatever its offset.
FIRST_INSTANT_DAY, LAST_INSTANT_DAY = date(1, 1, 2), date(9999, 12, 30)
_INTEGER_TEXT = re.compile(r"[+-]?[0-9]+")
_NUMBER_TEXT = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_DATE_TEXT = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_TIMESTAMP_TEXT = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?"
    r"(?P<offset>[Zz]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])?"
)
BOOLEAN_WORDS = dict.fromkeys(("true", "yes", "on", "1"), True) | dict.fromkeys(
    ("false", "no", "off", "0"), False
)


def coerce(spec: ParamSpec, raw: Any, *, from_text: bool = False) -> Any:
    """The typed value of `raw`, or ParameterError.

    `from_text` takes every value as text as well (forms, the command line, stored jobs);
    otherwise integers, numbers and booleans must be JSON's own.
    """
    name = spec.name
    kind = spec.type
    try:
        if kind in ("string", "enum"):
            value: Any = _text(name, raw, "text")
        elif kind == "integer":
            value = _integer(name, raw, from_text)
        elif kind == "number":
            value = _number(name, raw, from_text)
        elif kind == "boolean":
            value = _boolean(name, raw, from_text)
        elif kind == "date":
            text = _text(name, raw, "a date (YYYY-MM-DD)")
            if not _DATE_TEXT.fullmatch(text):
                raise ParameterError(name, "type", f"{quoted(text)} is not a date (YYYY-MM-DD)")
            value = date.fromisoformat(text)
        elif kind == "timestamp":
            text = _text(name, raw, "a timestamp (RFC 3339)")
            value = parse_timestamp(name, text, from_text=from_text)
        else:
            raise ParameterError(name, "type", f"unknown parameter type {kind!r}")
    except (ValueError, ArithmeticError) as exc:
        if isinstance(exc, ParameterError):
            raise
        raise ParameterError(name, "type", f"{_shown(raw)} is not a valid {kind}") from None
    return value


def check_rules(spec: ParamSpec, value: Any) -> None:
    name = spec.name
    if spec.type == "enum" and value not in spec.choices:
        choices = ", ".join(spec.choices)
        raise ParameterError(name, "choices", f"{quoted(value)} is not one of {choices}")
    if isinstance(value, str):
        if spec.min_length is not None and len(value) < spec.min_length:
            raise ParameterError(name, "min_length", f"needs at least {spec.min_length} characters")
        if spec.max_length is not None and len(value) > spec.max_length:
            raise ParameterError(name, "max_length", f"takes at most {spec.max_length} characters")
        if spec.pattern is not None and not re.fullmatch(spec.pattern, value):
            raise ParameterError(name, "pattern", f"must match {spec.pattern}")
    if spec.min is not None and value < coerce(spec, spec.min, from_text=True):
        raise ParameterError(name, "min", f"must be at least {encode(spec.min)}")
    if spec.max is not None and value > coerce(spec, spec.max, from_text=True):
        raise ParameterError(name, "max", f"must be at most {encode(spec.max)}")


def validate(
    specs: Mapping[str, ParamSpec],
    raw: Mapping[str, Any],
    *,
    from_text: bool = False,
    every_problem: bool = False,
) -> dict[str, Any]:
    """Typed values for every parameter, defaults filled in; unknown names are refused.

    An absent value, `null` and the empty text all mean "not given". The first problem is
    raised as a ParameterError; with `every_problem`, every parameter is checked and all the
    problems found are raised at once as InvalidParametersError (a form shows each by its field).
    """
    problems: list[ParameterError] = []

    def refuse(problem: ParameterError) -> None:
        if not every_problem:
            raise problem
        problems.append(problem)

    for given in raw:
        if not isinstance(given, str) or unsafe_text(given) is not None:
            refuse(ParameterError(str(given), "unknown", "is not a parameter of this saved query"))
    names = {given for given in raw if isinstance(given, str) and unsafe_text(given) is None}
    for unknown in sorted(names - set(specs)):
        refuse(ParameterError(unknown, "unknown", "is not a parameter of this saved query"))
    values: dict[str, Any] = {}
    for name, spec in specs.items():
        try:
            value = _value(spec, raw, from_text)
        except ParameterError as exc:
            refuse(exc)
            continue
        values[name] = value
    if problems:
        raise InvalidParametersError(problems)
    return values


def _value(spec: ParamSpec, raw: Mapping[str, Any], from_text: bool) -> Any:
    name = spec.name
    if name in raw and raw[name] is not None and raw[name] != "":
        value = coerce(spec, raw[name], from_text=from_text)
    elif spec.default is not None:
        value = coerce(spec, spec.default, from_text=True)
    elif spec.required:
        raise ParameterError(name, "required", "is required")
    else:
        return None
    check_rules(spec, value)
    return value


def single_values(pairs: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    """Named values as a mapping, refusing a name given twice (a form field or a `--param`
    repeated): which one was meant cannot be known, so neither is kept."""
    values: dict[str, Any] = {}
    for name, value in pairs:
        if name in values:
            raise ParameterError(name, "repeated", "is given more than once; give it once")
        values[name] = value
    return values


def encode(value: Any) -> Any:
    """A typed value as JSON: dates and timestamps in ISO 8601, numbers as exact text."""
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    return value


def json_number(value: Decimal | str) -> int | float:
    """A number parameter's value (kept as exact text) as JSON carries a number: an integer when
    it is whole, else the nearest double. That is exact for every value the API took (a JSON
    number reaches the service as a double) and for any of up to 15 significant digits; the
    exact text stays on the job, and is what its query is run with."""
    number = value if isinstance(value, Decimal) else Decimal(value)
    if number == number.to_integral_value():
        return int(number)
    return float(number)


def json_described(described: Mapping[str, Any]) -> dict[str, Any]:
    """A parameter's description (`ParamSpec.describe`) with a number parameter's default,
    minimum and maximum as JSON numbers."""
    shown = dict(described)
    if shown.get("type") == "number":
        for key in ("default", "min", "max"):
            if isinstance(shown.get(key), str):
                shown[key] = json_number(shown[key])
    return shown


def decode(spec: ParamSpec, value: Any) -> Any:
    """A stored (encoded) value back to its type."""
    return None if value is None else coerce(spec, value, from_text=True)


def _boolean(name: str, raw: Any, from_text: bool) -> bool:
    _readable(name, raw)
    if isinstance(raw, bool):
        return raw
    if from_text and isinstance(raw, str) and raw.strip().lower() in BOOLEAN_WORDS:
        return BOOLEAN_WORDS[raw.strip().lower()]
    expected = "true or false" + (" (or yes/no, on/off, 1/0)" if from_text else "")
    raise ParameterError(name, "type", f"expected {expected}, got {_shown(raw)}")


def _integer(name: str, raw: Any, from_text: bool) -> int:
    _readable(name, raw)
    if isinstance(raw, int) and not isinstance(raw, bool):
        value = raw
    elif isinstance(raw, float) and raw.is_integer():
        value = int(raw)
    elif from_text and isinstance(raw, str) and _INTEGER_TEXT.fullmatch(raw.strip()):
        value = int(raw.strip())
    else:
        raise ParameterError(name, "type", f"expected an integer, got {_shown(raw)}")
    if abs(value) > LARGEST_INTEGER:
        raise ParameterError(name, "range", "is beyond the range of a 64-bit integer")
    return value


def _number(name: str, raw: Any, from_text: bool) -> Decimal:
    _readable(name, raw)
    if isinstance(raw, int | float) and not isinstance(raw, bool):
        value = Decimal(str(raw))
    elif from_text and isinstance(raw, str) and _NUMBER_TEXT.fullmatch(raw.strip()):
        value = Decimal(raw.strip())
    else:
        raise ParameterError(name, "type", f"expected a number, got {_shown(raw)}")
    if not value.is_finite():
        raise ParameterError(name, "type", "expected a finite number")
    if abs(value) > Decimal(LARGEST_DOUBLE):  # exactly: a float would round it into range
        raise ParameterError(
            name, "range", f"{_shown_number(value)} is beyond the range of a double"
        )
    return value


def parse_timestamp(name: str, text: str, *, from_text: bool = False) -> datetime:
    """An RFC 3339 instant with its UTC offset, or ParameterError naming `name`. JSON carries
    RFC 3339's own form (its `date-time`: a T between the date and the time); text typed in a
    form or on a command line may have a space there instead (`from_text`)."""
    match = _TIMESTAMP_TEXT.fullmatch(text)
    if match is None:
        raise ParameterError(name, "type", f"{quoted(text)} is not a timestamp (RFC 3339)")
    if not from_text and text[10] == " ":
        raise ParameterError(
            name, "type", f"{quoted(text)} is not an RFC 3339 timestamp: a T goes between the "
            "date and the time"
        )  # fmt: skip
    if match.group("offset") is None:
        example = "as in 2024-03-05T10:00:00Z or +01:00"
        raise ParameterError(name, "offset", f"{quoted(text)} needs a UTC offset, {example}")
    try:
        value = datetime.fromisoformat(text.upper())
    except ValueError:  # a day, hour, minute or second the calendar and the clock do not have
        raise ParameterError(name, "type", f"{quoted(text)} is not a valid timestamp") from None
    if not FIRST_INSTANT_DAY <= value.date() <= LAST_INSTANT_DAY:
        raise ParameterError(
            name, "range", f"{quoted(text)} is not within {FIRST_INSTANT_DAY} to {LAST_INSTANT_DAY}"
        )
    return value


def _text(name: str, raw: Any, what: str) -> str:
    if not isinstance(raw, str):
        raise ParameterError(name, "type", f"expected {what}, got {_kind(raw)}")
    problem = unsafe_text(raw)
    if problem is not None:
        raise ParameterError(name, "text", f"the value {problem}")
    return raw


def _shown_number(value: Decimal) -> str:
    text = str(value)
    return text if len(text) <= 40 else f"{text[:20]}... ({len(text):,} characters)"


def _shown(raw: Any) -> str:
    return quoted(raw) if isinstance(raw, str) else _kind(raw)


def _readable(name: str, raw: Any) -> None:
    """Text that is not text at all (bytes that are not UTF-8, NUL) is refused as such, never
    quoted back in a type's refusal."""
    problem = unsafe_text(raw) if isinstance(raw, str) else None
    if problem is not None:
        raise ParameterError(name, "text", f"the value {problem}")


def _kind(raw: Any) -> str:
    if isinstance(raw, bool):
        return "a boolean"
    if isinstance(raw, int | float):
        return "a number" if not (isinstance(raw, float) and math.isnan(raw)) else "NaN"
    if raw is None:
        return "nothing"
    return type(raw).__name__
